/* The RESAMPLE and RESAMPLE_BACKWARD kernels (contract in ops/tpu_ops_vision.h), on the taps of
 * ops/tpu_resample.h. Spatial geometry is seen as three dimensions (missing ones of size 1) under
 * "planes", the leading dimensions. The gather modes copy elements bit for bit, rows over the
 * pool. Interpolation and every backward run planes over the pool: a plane is loaded into the
 * compute type, resampled one dimension per pass (forward the last first, as PyTorch's nested
 * sums; backward each pass transposed) and rounded once into its output, so results do not
 * depend on the thread count. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/engine/engine_iter.h"
#include "drivers/host/engine/engine_pool.h"
#include "drivers/host/kernels/conv/conv.h"
#include "drivers/host/kernels/kernels.h"
#include "ops/tpu_resample.h"

typedef struct resample_job {
  const tpu_op_call *call;
  const tpu_tensor *src, *dst;
  tpu_dtype dtype;
  int lead;                    /* leading (plane) dimensions */
  int64_t planes;              /* their element count */
  tpu_resample_axis ax[3];     /* spatial dimensions, outermost first; missing ones trivial */
  bool trivial[3];             /* in = out = 1: the pass is the identity */
  int64_t src_st[3], dst_st[3]; /* spatial strides in elements */
  void *w[3];                  /* each axis's weights in the compute type */
  int64_t buf_elems;           /* the largest intermediate plane */
  atomic_bool no_memory;
} resample_job;

/* Offsets (in elements) of plane p in the source and the destination. */
static void plane_offsets(const resample_job *j, int64_t p, int64_t *src, int64_t *dst) {
  *src = *dst = 0;
  for (int d = j->lead - 1; d >= 0; d--) {
    int64_t size = j->src->sizes[d], i = p % size;
    p /= size;
    *src += i * j->src->strides[d];
    *dst += i * j->dst->strides[d];
  }
}

/* ---- Gathers: one input element per output element, any dtype ---- */

#define GATHER_ROW(T)                                                                              \
  for (int64_t o = 0; o < n; o++)                                                                  \
    memcpy(d + o * dst_step, s + index[o] * src_step, sizeof(T));

static void gather_rows(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  const resample_job *j = ctx;
  const size_t size = tpu_dtype_size(j->dtype);
  const int64_t out0 = j->ax[0].out, out1 = j->ax[1].out, n = j->ax[2].out;
  const int64_t *index = j->ax[2].index;
  const int64_t src_step = j->src_st[2] * (int64_t)size, dst_step = j->dst_st[2] * (int64_t)size;
  const char *src = tpu_tensor_data(j->src);
  char *dst = tpu_tensor_data(j->dst);
  for (int64_t r = begin; r < end; r++) {
    const int64_t p = r / (out0 * out1), o0 = r / out1 % out0, o1 = r % out1;
    int64_t so, dof;
    plane_offsets(j, p, &so, &dof);
    so += j->ax[0].index[o0] * j->src_st[0] + j->ax[1].index[o1] * j->src_st[1];
    dof += o0 * j->dst_st[0] + o1 * j->dst_st[1];
    const char *s = src + so * (int64_t)size;
    char *d = dst + dof * (int64_t)size;
    switch (size) {
    case 1: GATHER_ROW(uint8_t) break;
    case 2: GATHER_ROW(uint16_t) break;
    case 4: GATHER_ROW(uint32_t) break;
    case 8: GATHER_ROW(uint64_t) break;
    default: GATHER_ROW(uint64_t[2]) break;
    }
  }
}

/* ---- Passes over one dimension of a dense plane [outer][size][inner] in type T ---- */

#define DEFINE_PASSES(T, suffix)                                                                   \
  /* dst[q][o][k] = sum over taps t of w[o][t] * src[q][index[o][t]][k], in tap order. */          \
  static void forward_pass_##suffix(const tpu_resample_axis *a, const T *w, const T *src,       \
                                    T *dst, int64_t outer, int64_t inner) {                        \
    const int taps = a->taps;                                                                      \
    if (inner == 1 && taps == 2) {                                                                 \
      for (int64_t q = 0; q < outer; q++) {                                                        \
        const T *restrict s = src + q * a->in;                                                     \
        T *restrict d = dst + q * a->out;                                                          \
        for (int64_t o = 0; o < a->out; o++)                                                       \
          d[o] = w[2 * o] * s[a->index[2 * o]] + w[2 * o + 1] * s[a->index[2 * o + 1]];            \
      }                                                                                            \
      return;                                                                                      \
    }                                                                                              \
    for (int64_t q = 0; q < outer; q++)                                                            \
      for (int64_t o = 0; o < a->out; o++) {                                                       \
        T *restrict d = dst + (q * a->out + o) * inner;                                            \
        const T *restrict s = src + (q * a->in + a->index[o * taps]) * inner;                      \
        const T w0 = w[o * taps];                                                                  \
        for (int64_t k = 0; k < inner; k++)                                                        \
          d[k] = w0 * s[k];                                                                        \
        for (int t = 1; t < taps; t++) {                                                           \
          const T *restrict st = src + (q * a->in + a->index[o * taps + t]) * inner;               \
          const T wt = w[o * taps + t];                                                            \
          for (int64_t k = 0; k < inner; k++)                                                      \
            d[k] += wt * st[k];                                                                    \
        }                                                                                          \
      }                                                                                            \
  }                                                                                                \
  /* The transposed pass: dst[q][index[o][t]][k] += w[o][t] * src[q][o][k] from zero. */           \
  static void backward_pass_##suffix(const tpu_resample_axis *a, const T *w, const T *src,      \
                                     T *dst, int64_t outer, int64_t inner) {                       \
    const int taps = a->taps;                                                                      \
    memset(dst, 0, (size_t)(outer * a->in * inner) * sizeof(T));                                   \
    for (int64_t q = 0; q < outer; q++)                                                            \
      for (int64_t o = 0; o < a->out; o++) {                                                       \
        const T *restrict s = src + (q * a->out + o) * inner;                                      \
        for (int t = 0; t < taps; t++) {                                                           \
          T *restrict d = dst + (q * a->in + a->index[o * taps + t]) * inner;                      \
          const T wt = w[o * taps + t];                                                            \
          for (int64_t k = 0; k < inner; k++)                                                      \
            d[k] += wt * s[k];                                                                     \
        }                                                                                          \
      }                                                                                            \
  }                                                                                                \
  /* One plane: load, the passes (forward from the last dimension, backward from the first),     \
   * store. bufs[0] and bufs[1] each hold j->buf_elems. */                                         \
  static void plane_##suffix(const resample_job *j, int64_t p, T *bufs[2]) {                       \
    const bool backward = j->call->op == TPU_OP_RESAMPLE_BACKWARD;                                 \
    int64_t size[3], so, dof;                                                                      \
    plane_offsets(j, p, &so, &dof);                                                                \
    for (int d = 0; d < 3; d++)                                                                    \
      size[d] = backward ? j->ax[d].out : j->ax[d].in;                                             \
    const char *src = (const char *)tpu_tensor_data(j->src) +                                      \
                      so * (int64_t)tpu_dtype_size(j->dtype);                                      \
    T *cur = bufs[0], *next = bufs[1];                                                             \
    for (int64_t r = 0; r < size[0] * size[1]; r++) {                                              \
      const int64_t off = r / size[1] * j->src_st[0] + r % size[1] * j->src_st[1];                 \
      tpu_conv_load_run(cur + r * size[2], src + off * (int64_t)tpu_dtype_size(j->dtype),        \
                        j->src_st[2], size[2], j->dtype);                                          \
    }                                                                                              \
    for (int step = 0; step < 3; step++) {                                                         \
      const int d = backward ? step : 2 - step;                                                    \
      if (j->trivial[d])                                                                           \
        continue;                                                                                  \
      int64_t outer = 1, inner = 1;                                                                \
      for (int e = 0; e < d; e++)                                                                  \
        outer *= size[e];                                                                          \
      for (int e = d + 1; e < 3; e++)                                                              \
        inner *= size[e];                                                                          \
      if (backward)                                                                                \
        backward_pass_##suffix(&j->ax[d], j->w[d], cur, next, outer, inner);                       \
      else                                                                                         \
        forward_pass_##suffix(&j->ax[d], j->w[d], cur, next, outer, inner);                        \
      size[d] = backward ? j->ax[d].in : j->ax[d].out;                                             \
      T *t = cur;                                                                                  \
      cur = next;                                                                                  \
      next = t;                                                                                    \
    }                                                                                              \
    char *dst = (char *)tpu_tensor_data(j->dst) + dof * (int64_t)tpu_dtype_size(j->dtype);        \
    for (int64_t r = 0; r < size[0] * size[1]; r++) {                                              \
      const int64_t off = r / size[1] * j->dst_st[0] + r % size[1] * j->dst_st[1];                 \
      tpu_conv_store_run(dst + off * (int64_t)tpu_dtype_size(j->dtype), j->dst_st[2],            \
                         cur + r * size[2], 1, size[2], j->dtype, NULL, 0);                        \
    }                                                                                              \
  }

DEFINE_PASSES(float, f)
DEFINE_PASSES(double, d)

static void run_planes(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  resample_job *j = ctx;
  const bool wide = j->dtype == TPU_FLOAT64;
  const size_t elem = wide ? sizeof(double) : sizeof(float);
  char *mem = malloc(2 * (size_t)j->buf_elems * elem);
  if (!mem) {
    atomic_store(&j->no_memory, true);
    return;
  }
  void *bufs[2] = {mem, mem + (size_t)j->buf_elems * elem};
  for (int64_t p = begin; p < end; p++) {
    if (wide)
      plane_d(j, p, (double **)bufs);
    else
      plane_f(j, p, (float **)bufs);
  }
  free(mem);
}

/* The job's weights in the compute type, and the largest intermediate plane. */
static bool prepare(resample_job *j) {
  const bool wide = j->dtype == TPU_FLOAT64;
  for (int d = 0; d < 3; d++) {
    const tpu_resample_axis *a = &j->ax[d];
    const int64_t n = a->out * a->taps;
    j->w[d] = malloc((size_t)(n > 0 ? n : 1) * (wide ? sizeof(double) : sizeof(float)));
    if (!j->w[d])
      return false;
    for (int64_t k = 0; k < n; k++) {
      if (wide)
        ((double *)j->w[d])[k] = a->weight[k];
      else
        ((float *)j->w[d])[k] = (float)a->weight[k];
    }
  }
  /* The passes go from all-input sizes to all-output ones, one dimension at a time, in either
   * order: each intermediate is a mix of the two. */
  j->buf_elems = 1;
  for (int mask = 0; mask < 8; mask++) {
    int64_t n = 1;
    for (int d = 0; d < 3; d++)
      n *= mask >> d & 1 ? j->ax[d].out : j->ax[d].in;
    j->buf_elems = n > j->buf_elems ? n : j->buf_elems;
  }
  return true;
}

static tpu_status run(const tpu_op_call *call) {
  int spatial = 0;
  tpu_status st = tpu_resample_check(call, &spatial);
  if (st != TPU_OK)
    return st;
  static const int64_t zero = 0;
  static const double one = 1;
  resample_job j = {.call = call, .src = &call->tensors[0], .dst = &call->tensors[1]};
  j.dtype = j.src->dtype;
  j.lead = j.src->ndim - spatial;
  j.planes = 1;
  for (int d = 0; d < j.lead; d++)
    j.planes *= j.src->sizes[d];
  atomic_init(&j.no_memory, false);
  int made = 0;
  for (int d = 0; d < 3; d++) {
    const int s = d - (3 - spatial);
    if (s < 0) {
      j.ax[d] = (tpu_resample_axis){1, 1, 1, (int64_t *)&zero, (double *)&one};
      j.trivial[d] = true;
      continue;
    }
    st = tpu_resample_axis_init(call, s, &j.ax[d]);
    if (st != TPU_OK)
      break;
    made |= 1 << d;
    j.src_st[d] = j.src->strides[j.lead + s];
    j.dst_st[d] = j.dst->strides[j.lead + s];
  }
  if (st == TPU_OK && tpu_tensor_numel(j.dst) > 0) {
    if (call->op == TPU_OP_RESAMPLE && tpu_resample_gathers(call)) {
      const int64_t rows = j.planes * j.ax[0].out * j.ax[1].out, row = j.ax[2].out;
      tpu_parallel_for(rows, TPU_ITER_GRAIN / row > 1 ? TPU_ITER_GRAIN / row : 1, gather_rows,
                       &j);
    } else if (!prepare(&j)) {
      st = tpu_error(TPU_ERR_OUT_OF_MEMORY, "resample: out of host memory for weights");
    } else {
      const int64_t plane = j.buf_elems;
      tpu_parallel_for(j.planes, TPU_ITER_GRAIN / plane > 1 ? TPU_ITER_GRAIN / plane : 1,
                       run_planes, &j);
      if (atomic_load(&j.no_memory))
        st = tpu_error(TPU_ERR_OUT_OF_MEMORY, "resample: out of host memory for a plane");
    }
  }
  for (int d = 0; d < 3; d++) {
    free(j.w[d]);
    if (made >> d & 1)
      tpu_resample_axis_free(&j.ax[d]);
  }
  return st;
}

tpu_status tpu_kernel_resample(const tpu_op_call *call) {
  return run(call);
}

tpu_status tpu_kernel_resample_backward(const tpu_op_call *call) {
  return run(call);
}
