/* The TRILU and ARANGE kernels (contract in ops/tpu_ops_index.h). TRILU zeroes with all-zero
 * bytes, which are 0 in every dtype. */
#include "drivers/host/kernels/index/index_util.h"
#include "drivers/host/kernels/kernels.h"
#include "drivers/host/engine/engine_pool.h"

typedef struct trilu {
  const tpu_tensor *self, *out;
  int64_t rows, cols, k;
  bool upper, in_place;
  int64_t elsize;
  int nbatch; /* batch dimensions, ahead of the matrix ones */
} trilu;

/* Element offsets of batch b in self and out. */
static void batch_offsets(const trilu *t, int64_t b, int64_t *self_off, int64_t *out_off) {
  *self_off = *out_off = 0;
  for (int d = t->nbatch - 1; d >= 0; d--) {
    int64_t size = t->out->sizes[d], i = b % size;
    b /= size;
    *self_off += i * t->self->strides[d];
    *out_off += i * t->out->strides[d];
  }
}

/* One row: columns [lo, hi) take self's values, the others become zero. */
static void do_row(const trilu *t, char *src, char *dst, int64_t lo, int64_t hi) {
  const int64_t ss = t->self->strides[t->nbatch + 1] * t->elsize;
  const int64_t ds = t->out->strides[t->nbatch + 1] * t->elsize;
  const size_t e = (size_t)t->elsize;
  if (ds == t->elsize && ss == t->elsize) {
    memset(dst, 0, (size_t)lo * e);
    if (!t->in_place && hi > lo)
      memcpy(dst + lo * ds, src + lo * ss, (size_t)(hi - lo) * e);
    memset(dst + hi * ds, 0, (size_t)(t->cols - hi) * e);
    return;
  }
  for (int64_t j = 0; j < t->cols; j++) {
    if (j < lo || j >= hi)
      memset(dst + j * ds, 0, e);
    else if (!t->in_place)
      memcpy(dst + j * ds, src + j * ss, e);
  }
}

static void trilu_rows(int64_t begin, int64_t end, int chunk, void *arg) {
  (void)chunk;
  const trilu *t = arg;
  char *self = tpu_tensor_data(t->self), *out = tpu_tensor_data(t->out);
  const int64_t srs = t->self->strides[t->nbatch], drs = t->out->strides[t->nbatch];
  for (int64_t r = begin; r < end; r++) {
    int64_t i = r % t->rows, self_off, out_off;
    batch_offsets(t, r / t->rows, &self_off, &out_off);
    self_off += i * srs;
    out_off += i * drs;
    /* Columns kept: tril j <= i + k, triu j >= i + k, clamped to [0, cols]. */
    int64_t edge = i + t->k;
    int64_t lo = t->upper ? edge : 0, hi = t->upper ? t->cols : edge + 1;
    lo = lo < 0 ? 0 : lo > t->cols ? t->cols : lo;
    hi = hi < lo ? lo : hi > t->cols ? t->cols : hi;
    do_row(t, self + self_off * t->elsize, out + out_off * t->elsize, lo, hi);
  }
}

tpu_status tpu_kernel_trilu(const tpu_op_call *call) {
  const tpu_tensor *self = &call->tensors[0], *out = &call->tensors[1];
  int nd = out->ndim;
  bool same = self->ndim == nd && self->dtype == out->dtype && nd >= 2;
  for (int d = 0; same && d < nd; d++)
    same = self->sizes[d] == out->sizes[d];
  if (!same)
    return tpu_error(TPU_ERR_VALUE, "trilu: self and out must have equal sizes and dtype, 2-d "
                     "at least");
  int64_t k = call->scalars[0].i;
  trilu t = {self, out, out->sizes[nd - 2], out->sizes[nd - 1], k, call->scalars[1].i != 0,
             false, (int64_t)tpu_dtype_size(out->dtype), nd - 2};
  /* Clamp k so that i + k cannot overflow; beyond +-(rows + cols) every row looks the same. */
  int64_t bound = t.rows + t.cols + 1;
  t.k = k > bound ? bound : k < -bound ? -bound : k;
  t.in_place = tpu_tensor_data(self) == tpu_tensor_data(out);
  for (int d = 0; t.in_place && d < nd; d++)
    t.in_place = self->sizes[d] == 1 || self->strides[d] == out->strides[d];
  int64_t all_rows = tpu_tensor_numel(out) / (t.cols ? t.cols : 1);
  if (tpu_tensor_numel(out) == 0)
    return TPU_OK;
  tpu_parallel_for(all_rows, TPU_ITER_GRAIN / t.cols + 1, trilu_rows, &t);
  return TPU_OK;
}

static void store_arange(tpu_dtype dtype, char *p, double f, float h, uint64_t i) {
  switch (dtype) {
  case TPU_UINT8:
  case TPU_INT8: *p = (char)(uint8_t)i; break;
  case TPU_INT16: { uint16_t v = (uint16_t)i; memcpy(p, &v, sizeof v); break; }
  case TPU_INT32: { uint32_t v = (uint32_t)i; memcpy(p, &v, sizeof v); break; }
  case TPU_INT64: memcpy(p, &i, sizeof i); break;
  case TPU_FLOAT16: { uint16_t v = tpu_f32_to_f16(h); memcpy(p, &v, sizeof v); break; }
  case TPU_BFLOAT16: { uint16_t v = tpu_f32_to_bf16(h); memcpy(p, &v, sizeof v); break; }
  case TPU_FLOAT32: { float v = (float)f; memcpy(p, &v, sizeof v); break; }
  default: memcpy(p, &f, sizeof f); break;
  }
}

static void arange_loop(char **data, const int64_t *strides, int64_t n, int64_t index,
                        void *ctx) {
  const tpu_op_call *call = ctx;
  tpu_dtype dtype = call->tensors[0].dtype;
  double start = call->scalars[0].f, step = call->scalars[1].f;
  float hstart = (float)start, hstep = (float)step;
  uint64_t istart = call->scalars[2].u, istep = call->scalars[3].u;
  for (int64_t i = 0; i < n; i++) {
    int64_t idx = index + i;
    store_arange(dtype, data[0] + i * strides[0], start + step * (double)idx,
                 hstart + hstep * (float)idx, istart + istep * (uint64_t)idx);
  }
}

tpu_status tpu_kernel_arange(const tpu_op_call *call) {
  const tpu_tensor *out = &call->tensors[0];
  if (out->ndim != 1 || out->dtype == TPU_BOOL || out->dtype > TPU_FLOAT64)
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "arange is not implemented for %s (or a rank other "
                     "than 1)", tpu_dtype_name(out->dtype));
  tpu_iter it;
  tpu_iter_init(&it, 1, out->sizes);
  tpu_iter_add_tensor(&it, out);
  tpu_iter_build(&it, TPU_ITER_LOGICAL_ORDER);
  tpu_iter_run_indexed_parallel(&it, arange_loop, (void *)call);
  return TPU_OK;
}
