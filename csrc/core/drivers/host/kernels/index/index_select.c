/* The INDEX_SELECT kernel (contract in ops/tpu_ops_index.h). One iterator walks the output; self
 * enters it with stride 0 along the selected dimension and the index with stride 0 along every
 * other one, so the inner loop gathers out[i] = self[i] displaced by index[i] slices: memcpy-speed
 * for whole slices (embedding rows), and any layout works. */
#include <string.h>

#include "drivers/host/kernels/index/index_util.h"
#include "drivers/host/kernels/kernels.h"
#include "drivers/host/engine/engine_iter.h"

typedef struct gather {
  int64_t slice_stride; /* bytes between self's slices along the selected dimension */
  bool index64;
} gather;

static inline int64_t load_index(const char *p, bool index64) {
  if (index64) {
    int64_t v;
    memcpy(&v, p, sizeof v);
    return v;
  }
  int32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* Operands: 0 = output, 1 = self, 2 = index. */
#define GATHER_LOOP(N)                                                                             \
  static void gather_##N(char **data, const int64_t *strides, int64_t n, void *ctx) {              \
    const gather *g = ctx;                                                                         \
    char *restrict out = data[0];                                                                  \
    const char *restrict self = data[1], *restrict index = data[2];                                \
    if (strides[2] == 0 && strides[0] == N && strides[1] == N) {                                   \
      memcpy(out, self + load_index(index, g->index64) * g->slice_stride, (size_t)n * N);          \
      return;                                                                                      \
    }                                                                                              \
    for (int64_t i = 0; i < n; i++) {                                                              \
      int64_t k = load_index(index + i * strides[2], g->index64);                                  \
      memcpy(out + i * strides[0], self + i * strides[1] + k * g->slice_stride, N);                \
    }                                                                                              \
  }
GATHER_LOOP(1)
GATHER_LOOP(2)
GATHER_LOOP(4)
GATHER_LOOP(8)
GATHER_LOOP(16)

tpu_status tpu_kernel_index_select(const tpu_op_call *call) {
  const tpu_tensor *self = &call->tensors[0], *index = &call->tensors[1], *out = &call->tensors[2];
  if (index->dtype != TPU_INT32 && index->dtype != TPU_INT64)
    return tpu_error(TPU_ERR_TYPE, "index_select(): Expected dtype int32 or int64 for index");
  if (index->ndim > 1)
    return tpu_error(TPU_ERR_INDEX, "index_select(): Index is supposed to be a vector");
  if (out->dtype != self->dtype || out->ndim != self->ndim)
    return tpu_error(TPU_ERR_VALUE, "index_select(): output dtype or rank differs from self's");
  int64_t self_sizes[TPU_MAX_DIMS], self_strides[TPU_MAX_DIMS];
  int64_t out_sizes[TPU_MAX_DIMS], out_strides[TPU_MAX_DIMS];
  int ndim = tpu_view_shape(self, self_sizes, self_strides);
  tpu_view_shape(out, out_sizes, out_strides);
  int64_t dim = call->scalars[0].i;
  if (dim < -ndim || dim >= ndim)
    return tpu_error(TPU_ERR_INDEX, "index_select(): dimension %lld out of range for %d dimensions",
                     (long long)dim, ndim);
  if (dim < 0)
    dim += ndim;
  int64_t count = tpu_tensor_numel(index);
  for (int d = 0; d < ndim; d++)
    if (out_sizes[d] != (d == dim ? count : self_sizes[d]))
      return tpu_error(TPU_ERR_VALUE, "index_select(): output size %lld in dimension %d, "
                       "expected %lld", (long long)out_sizes[d], d,
                       (long long)(d == dim ? count : self_sizes[d]));

  bool index64 = index->dtype == TPU_INT64;
  int64_t index_stride = index->ndim == 1 && count > 1 ? index->strides[0] * (index64 ? 8 : 4) : 0;
  const char *index_data = tpu_tensor_data(index);
  for (int64_t i = 0; i < count; i++) {
    int64_t k = load_index(index_data + i * index_stride, index64);
    if (k < 0 || k >= self_sizes[dim])
      return tpu_error(TPU_ERR_INDEX,
                       "index_select(): index %lld is out of bounds for dimension %lld with size "
                       "%lld", (long long)k, (long long)dim, (long long)self_sizes[dim]);
  }
  if (tpu_tensor_numel(out) == 0)
    return TPU_OK;

  gather g = {.slice_stride = self_strides[dim], .index64 = index64};
  int64_t index_strides[TPU_MAX_DIMS] = {0};
  index_strides[dim] = index_stride;
  self_strides[dim] = 0;
  tpu_iter it;
  tpu_iter_init(&it, ndim, out_sizes);
  tpu_iter_add(&it, tpu_tensor_data(out), (int64_t)tpu_dtype_size(out->dtype), out_strides);
  tpu_iter_add(&it, tpu_tensor_data(self), (int64_t)tpu_dtype_size(self->dtype), self_strides);
  tpu_iter_add(&it, (void *)index_data, index64 ? 8 : 4, index_strides);
  tpu_iter_build(&it, 0);
  size_t size = tpu_dtype_size(out->dtype);
  tpu_loop_fn loop = size == 1 ? gather_1 : size == 2 ? gather_2 : size == 4 ? gather_4
                   : size == 8 ? gather_8 : gather_16;
  tpu_iter_run_parallel(&it, loop, &g);
  return TPU_OK;
}
