/* The POOL and POOL_BACKWARD kernels (contract in ops/tpu_ops_conv.h): max (with indices),
 * average and their adaptive forms. One unit is one (n, c) plane; backward passes accumulate a
 * plane in double and round it once, so overlapping windows add up the same way on any thread
 * count. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/kernels/conv/conv.h"
#include "drivers/host/kernels/index/index_util.h"
#include "drivers/host/kernels/kernels.h"
#include "drivers/host/engine/engine_pool.h"

typedef struct pool_job {
  conv_view x, y, idx; /* x-like (input or its gradient), y-like (output or its gradient) */
  int64_t ker[3], stride[3], pad[3], dil[3], in[3], out[3], ip;
  unsigned mode;
  bool count_pad;
  int64_t divisor; /* 0: none; negative ones divide as PyTorch's do */
  atomic_bool bad_index, no_memory;
} pool_job;

/* The input positions lo, lo + step, ... below hi of output o along dim d, and (average
 * pooling) the window's extent inside the padded input. */
typedef struct window {
  int64_t lo, hi, step, padded;
} window;

static window window_of(const pool_job *j, int d, int64_t o) {
  window w = {0, 0, 1, 0};
  int64_t in = j->in[d];
  if (j->mode == TPU_POOL_ADAPTIVE_AVG || j->mode == TPU_POOL_ADAPTIVE_MAX) {
    int64_t out = j->out[d];
    w.lo = (o / out) * in + ((o % out) * in) / out;
    w.hi = 1 + ((o + 1) * in - 1) / out;
    w.padded = w.hi - w.lo;
    return w;
  }
  int64_t start = o * j->stride[d] - j->pad[d];
  if (j->mode == TPU_POOL_AVG) {
    int64_t end = start + j->ker[d] < in + j->pad[d] ? start + j->ker[d] : in + j->pad[d];
    w.padded = end - start;
    w.lo = start > 0 ? start : 0;
    w.hi = end < in ? end : in;
    return w;
  }
  w.step = j->dil[d];
  int64_t end = start + (j->ker[d] - 1) * j->dil[d] + 1;
  w.hi = end < in ? end : in;
  while (start < 0)
    start += j->dil[d];
  w.lo = start;
  return w;
}

static bool is_max(const pool_job *j) {
  return j->mode == TPU_POOL_MAX || j->mode == TPU_POOL_ADAPTIVE_MAX;
}

static int64_t extent(const window *w) {
  return w->hi > w->lo ? (w->hi - w->lo + w->step - 1) / w->step : 0;
}

static const char *element(const conv_view *v, int64_t n, int64_t c, int64_t i0, int64_t i1,
                           int64_t i2) {
  int64_t off = n * v->stride[0] + c * v->stride[1] + i0 * v->stride[2] + i1 * v->stride[3] +
                i2 * v->stride[4];
  return v->data + off * (int64_t)tpu_dtype_size(v->dtype);
}

/* The divisor of an average window. */
static double divisor_of(const pool_job *j, const window w[3]) {
  if (j->divisor)
    return (double)j->divisor;
  if (j->count_pad && j->mode == TPU_POOL_AVG)
    return (double)(w[0].padded * w[1].padded * w[2].padded);
  return (double)(extent(&w[0]) * extent(&w[1]) * extent(&w[2]));
}

/* An integer element (uint8 through int64) widened to int64. */
static int64_t load_int(const char *p, tpu_dtype d) {
  switch (d) {
  case TPU_UINT8: return *(const uint8_t *)p;
  case TPU_INT8: return *(const int8_t *)p;
  case TPU_INT16: return *(const int16_t *)p;
  case TPU_INT32: return *(const int32_t *)p;
  default: return *(const int64_t *)p;
  }
}

/* The smallest value of an integer dtype: the max of an empty window, as on CPU. */
static int64_t lowest(tpu_dtype d) {
  switch (d) {
  case TPU_UINT8: return 0;
  case TPU_INT8: return INT8_MIN;
  case TPU_INT16: return INT16_MIN;
  case TPU_INT32: return INT32_MIN;
  default: return INT64_MIN;
  }
}

/* One output of max pooling: the winning element's bytes are copied, so every dtype keeps its
 * exact value. */
static void max_one(const pool_job *j, int64_t n, int64_t c, const int64_t o[3]) {
  window w[3] = {window_of(j, 0, o[0]), window_of(j, 1, o[1]), window_of(j, 2, o[2])};
  bool integer = !tpu_dtype_is_floating(j->x.dtype);
  double best = -INFINITY;
  int64_t best_int = lowest(j->x.dtype);
  const char *winner = NULL;
  int64_t at = (w[0].lo * j->in[1] + w[1].lo) * j->in[2] + w[2].lo;
  for (int64_t i0 = w[0].lo; i0 < w[0].hi; i0 += w[0].step)
    for (int64_t i1 = w[1].lo; i1 < w[1].hi; i1 += w[1].step)
      for (int64_t i2 = w[2].lo; i2 < w[2].hi; i2 += w[2].step) {
        const char *p = element(&j->x, n, c, i0, i1, i2);
        bool wins;
        if (integer) {
          int64_t v = load_int(p, j->x.dtype);
          wins = v > best_int;
          best_int = wins ? v : best_int;
        } else {
          double v = tpu_real_load(p, j->x.dtype);
          wins = v > best || isnan(v);
          best = wins ? v : best;
        }
        if (wins) {
          winner = p;
          at = (i0 * j->in[1] + i1) * j->in[2] + i2;
        }
      }
  char *dst = (char *)element(&j->y, n, c, o[0], o[1], o[2]);
  size_t es = tpu_dtype_size(j->y.dtype);
  if (winner)
    memcpy(dst, winner, es);
  else if (integer)
    memcpy(dst, &(int64_t){lowest(j->x.dtype)}, es); /* little-endian: the low bytes */
  else
    tpu_real_store(dst, j->y.dtype, -INFINITY);
  *(int64_t *)element(&j->idx, n, c, o[0], o[1], o[2]) = at;
}

/* One output of average pooling; int64 sums and divides as integers (truncating), as on CPU. */
static void avg_one(const pool_job *j, int64_t n, int64_t c, const int64_t o[3]) {
  window w[3] = {window_of(j, 0, o[0]), window_of(j, 1, o[1]), window_of(j, 2, o[2])};
  bool integer = j->x.dtype == TPU_INT64;
  double sum = 0;
  int64_t isum = 0;
  for (int64_t i0 = w[0].lo; i0 < w[0].hi; i0++)
    for (int64_t i1 = w[1].lo; i1 < w[1].hi; i1++)
      for (int64_t i2 = w[2].lo; i2 < w[2].hi; i2++) {
        const char *p = element(&j->x, n, c, i0, i1, i2);
        if (integer)
          isum = (int64_t)((uint64_t)isum + (uint64_t)load_int(p, TPU_INT64));
        else
          sum += tpu_real_load(p, j->x.dtype);
      }
  char *dst = (char *)element(&j->y, n, c, o[0], o[1], o[2]);
  double div = divisor_of(j, w);
  if (integer) {
    /* INT64_MIN / -1 overflows: wrap it as the hardware's two's complement does. */
    int64_t d = (int64_t)div;
    int64_t q = d == -1 ? (int64_t)(0u - (uint64_t)isum) : d != 0 ? isum / d : 0;
    memcpy(dst, &q, sizeof q);
  } else {
    tpu_real_store(dst, j->y.dtype, div != 0 ? sum / div : 0.0);
  }
}

static void pool_forward_plane(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  pool_job *j = ctx;
  int64_t channels = j->x.size[1];
  for (int64_t plane = begin; plane < end; plane++) {
    int64_t n = plane / channels, c = plane % channels, o[3];
    for (o[0] = 0; o[0] < j->out[0]; o[0]++)
      for (o[1] = 0; o[1] < j->out[1]; o[1]++)
        for (o[2] = 0; o[2] < j->out[2]; o[2]++) {
          if (is_max(j))
            max_one(j, n, c, o);
          else
            avg_one(j, n, c, o);
        }
  }
}

static void pool_backward_plane(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  pool_job *j = ctx;
  int64_t channels = j->x.size[1];
  double *acc = malloc((size_t)(j->ip > 0 ? j->ip : 1) * sizeof *acc);
  if (!acc) {
    atomic_store(&j->no_memory, true);
    return;
  }
  for (int64_t plane = begin; plane < end; plane++) {
    int64_t n = plane / channels, c = plane % channels;
    for (int64_t i = 0; i < j->ip; i++)
      acc[i] = 0;
    for (int64_t o0 = 0; o0 < j->out[0]; o0++)
      for (int64_t o1 = 0; o1 < j->out[1]; o1++)
        for (int64_t o2 = 0; o2 < j->out[2]; o2++) {
          double g = tpu_real_load(element(&j->y, n, c, o0, o1, o2), j->y.dtype);
          if (is_max(j)) {
            int64_t at = *(const int64_t *)element(&j->idx, n, c, o0, o1, o2);
            if (at < 0 || at >= j->ip)
              atomic_store_explicit(&j->bad_index, true, memory_order_relaxed);
            else
              acc[at] += g;
            continue;
          }
          window w[3] = {window_of(j, 0, o0), window_of(j, 1, o1), window_of(j, 2, o2)};
          double div = divisor_of(j, w), share = div != 0 ? g / div : 0.0;
          for (int64_t i0 = w[0].lo; i0 < w[0].hi; i0++)
            for (int64_t i1 = w[1].lo; i1 < w[1].hi; i1++)
              for (int64_t i2 = w[2].lo; i2 < w[2].hi; i2++)
                acc[(i0 * j->in[1] + i1) * j->in[2] + i2] += share;
        }
    for (int64_t i0 = 0; i0 < j->in[0]; i0++)
      for (int64_t i1 = 0; i1 < j->in[1]; i1++)
        tpu_conv_store_double_run((char *)element(&j->x, n, c, i0, i1, 0), j->x.stride[4],
                                  acc + (i0 * j->in[1] + i1) * j->in[2], j->in[2], j->x.dtype);
  }
  free(acc);
}

/* Reads the scalars and the views; x and y have the same rank, batch and channels. Forward max
 * pooling also takes the integer dtypes, forward average pooling int64, as PyTorch CPU does. */
static tpu_status pool_setup(pool_job *j, const tpu_op_call *call, const tpu_tensor *x,
                             const tpu_tensor *y, const tpu_tensor *idx, bool backward,
                             const char *op) {
  j->mode = (unsigned)(call->scalars[4].u & 3);
  j->count_pad = call->scalars[4].u & TPU_POOL_COUNT_PAD;
  j->divisor = call->scalars[5].i;
  int nd = x->ndim;
  bool integer = x->dtype >= TPU_UINT8 && x->dtype <= TPU_INT64;
  bool dtype_ok = tpu_dtype_is_floating(x->dtype) ||
                  (!backward && ((is_max(j) && integer) ||
                                 (j->mode == TPU_POOL_AVG && x->dtype == TPU_INT64)));
  if (nd < 3 || nd > 5 || y->ndim != nd || y->dtype != x->dtype || !dtype_ok ||
      y->sizes[0] != x->sizes[0] ||
      y->sizes[1] != x->sizes[1] || (is_max(j) != (idx != NULL)))
    return tpu_error(TPU_ERR_VALUE, "%s: malformed call", op);
  if (idx) {
    if (idx->dtype != TPU_INT64 || !tpu_tensor_same_sizes(idx, y))
      return tpu_error(TPU_ERR_VALUE, "%s: indices must be int64 of the output's shape", op);
    j->idx = tpu_conv_view(idx);
  }
  j->x = tpu_conv_view(x);
  j->y = tpu_conv_view(y);
  j->ip = 1;
  bool adaptive = j->mode == TPU_POOL_ADAPTIVE_AVG || j->mode == TPU_POOL_ADAPTIVE_MAX;
  for (int d = 0; d < 3; d++) {
    bool used = !adaptive && d >= 3 - (nd - 2);
    j->ker[d] = used ? tpu_conv_unpack(call->scalars[0].u, d) : 1;
    j->stride[d] = used ? tpu_conv_unpack(call->scalars[1].u, d) : 1;
    j->pad[d] = used ? tpu_conv_unpack(call->scalars[2].u, d) : 0;
    j->dil[d] = used ? tpu_conv_unpack(call->scalars[3].u, d) : 1;
    j->in[d] = j->x.size[2 + d];
    j->out[d] = j->y.size[2 + d];
    j->ip *= j->in[d];
    if (j->ker[d] < 1 || j->stride[d] < 1 || j->dil[d] < 1)
      return tpu_error(TPU_ERR_VALUE, "%s: kernel, stride and dilation must be positive", op);
  }
  atomic_init(&j->bad_index, false);
  atomic_init(&j->no_memory, false);
  return TPU_OK;
}

tpu_status tpu_kernel_pool(const tpu_op_call *call) {
  if (call->n_inputs != 1 || call->n_outputs < 1 || call->n_outputs > 2)
    return tpu_error(TPU_ERR_VALUE, "pool: expected x and y[, indices]");
  pool_job j = {0};
  const tpu_tensor *idx = call->n_outputs == 2 ? &call->tensors[2] : NULL;
  tpu_status st = pool_setup(&j, call, &call->tensors[0], &call->tensors[1], idx, false, "pool");
  if (st != TPU_OK)
    return st;
  tpu_parallel_for(j.x.size[0] * j.x.size[1], 1, pool_forward_plane, &j);
  return TPU_OK;
}

tpu_status tpu_kernel_pool_backward(const tpu_op_call *call) {
  if (call->n_inputs < 1 || call->n_inputs > 2 || call->n_outputs != 1)
    return tpu_error(TPU_ERR_VALUE, "pool_backward: expected dy[, indices] and dx");
  pool_job j = {0};
  const tpu_tensor *idx = call->n_inputs == 2 ? &call->tensors[1] : NULL;
  const tpu_tensor *dx = &call->tensors[call->n_inputs];
  tpu_status st = pool_setup(&j, call, dx, &call->tensors[0], idx, true, "pool_backward");
  if (st != TPU_OK)
    return st;
  tpu_parallel_for(j.x.size[0] * j.x.size[1], 1, pool_backward_plane, &j);
  if (atomic_load(&j.no_memory))
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "pool_backward: out of host memory");
  if (atomic_load(&j.bad_index))
    return tpu_error(TPU_ERR_INDEX, "pool_backward: index out of bounds");
  return TPU_OK;
}
