/* The GATHER and scatter kernels (contract in ops/tpu_ops_index.h). The views' sizes are checked
 * here, so they never reach outside their tensors, and a scatter checks every index before
 * writing anything. The positions that can hit the same element of self differ only in their dim
 * coordinate: a scatter iterates over the other coordinates in parallel and, for each, walks dim
 * in increasing order on one thread, which gives the contract's fixed order on any thread
 * count. */
#include <stdatomic.h>

#include "drivers/host/kernels/index/index_util.h"
#include "drivers/host/kernels/kernels.h"

typedef struct gather_ctx {
  int64_t size;       /* self.size(dim): the bound of every index */
  int64_t stride;     /* bytes between self's elements along dim */
  int64_t index_size; /* bytes per index element */
  atomic_bool bad;
} gather_ctx;

/* Operands: 0 = out, 1 = index, 2 = self. */
#define GATHER_LOOP(N)                                                                             \
  static void gather_##N(char **data, const int64_t *strides, int64_t n, void *ctx) {              \
    gather_ctx *g = ctx;                                                                           \
    char *restrict out = data[0];                                                                  \
    const char *restrict index = data[1], *restrict self = data[2];                                \
    for (int64_t i = 0; i < n; i++) {                                                              \
      int64_t k = tpu_index_load(index + i * strides[1], g->index_size);                           \
      if (k < 0 || k >= g->size) {                                                                 \
        atomic_store_explicit(&g->bad, true, memory_order_relaxed);                                \
        continue;                                                                                  \
      }                                                                                            \
      memcpy(out + i * strides[0], self + i * strides[2] + k * g->stride, N);                      \
    }                                                                                              \
  }
GATHER_LOOP(1)
GATHER_LOOP(2)
GATHER_LOOP(4)
GATHER_LOOP(8)
GATHER_LOOP(16)

/* lo is -size where negative indices count from the end, else 0. */
static tpu_status index_error(const tpu_op_call *call, const tpu_tensor *index, int64_t lo,
                              int64_t size, int64_t dim) {
  int64_t value = 0;
  tpu_index_find_bad(index, lo, size, &value);
  return tpu_error(TPU_ERR_INDEX, "%s(): index %lld is out of bounds for dimension %lld with size "
                   "%lld", tpu_op_name(call->op), (long long)value, (long long)dim,
                   (long long)size);
}

/* Checks ranks, dtypes and the size rules of the header; fills dim. */
static tpu_status check_shapes(const tpu_op_call *call, const tpu_tensor *self,
                               const tpu_tensor *index, const tpu_tensor *other, int64_t *dim) {
  const char *name = tpu_op_name(call->op);
  if (!tpu_index_dtype_ok(index->dtype))
    return tpu_error(TPU_ERR_TYPE, "%s(): expected an int64 or int32 index", name);
  if (other->dtype != self->dtype)
    return tpu_error(TPU_ERR_TYPE, "%s(): dtypes of self and src/out differ", name);
  int nd = self->ndim;
  if (nd < 1 || index->ndim != nd || other->ndim != nd)
    return tpu_error(TPU_ERR_VALUE, "%s(): tensors must have the same rank, at least 1", name);
  *dim = call->scalars[0].i;
  if (*dim < 0 || *dim >= nd)
    return tpu_error(TPU_ERR_INDEX, "%s(): dimension %lld out of range", name, (long long)*dim);
  for (int d = 0; d < nd; d++)
    if ((d != *dim && index->sizes[d] > self->sizes[d]) || index->sizes[d] > other->sizes[d])
      return tpu_error(TPU_ERR_VALUE, "%s(): index size %lld exceeds the tensors' in dimension %d",
                       name, (long long)index->sizes[d], d);
  return TPU_OK;
}

/* `t` viewed with index's sizes (its own strides), for the iterator. */
static tpu_tensor with_sizes(const tpu_tensor *t, const tpu_tensor *index) {
  tpu_tensor v = *t;
  for (int d = 0; d < v.ndim; d++)
    v.sizes[d] = index->sizes[d];
  return v;
}

tpu_status tpu_kernel_gather(const tpu_op_call *call) {
  const tpu_tensor *self = &call->tensors[0], *index = &call->tensors[1], *out = &call->tensors[2];
  int64_t dim = 0;
  tpu_status st = check_shapes(call, self, index, out, &dim);
  if (st != TPU_OK)
    return st;
  for (int d = 0; d < out->ndim; d++)
    if (out->sizes[d] != index->sizes[d])
      return tpu_error(TPU_ERR_VALUE, "gather(): out and index sizes differ");
  if (tpu_tensor_numel(index) == 0)
    return TPU_OK;
  int64_t elsize = (int64_t)tpu_dtype_size(self->dtype);
  gather_ctx g = {.size = self->sizes[dim],
                  .stride = self->sizes[dim] == 1 ? 0 : self->strides[dim] * elsize,
                  .index_size = (int64_t)tpu_dtype_size(index->dtype)};
  atomic_init(&g.bad, false);
  tpu_tensor src = with_sizes(self, index);
  src.strides[dim] = 0;
  tpu_iter it;
  tpu_iter_init(&it, out->ndim, out->sizes);
  tpu_iter_add_tensor(&it, out);
  tpu_iter_add_tensor(&it, index);
  tpu_iter_add_tensor(&it, &src);
  tpu_iter_build(&it, 0);
  tpu_loop_fn loop = elsize == 1 ? gather_1 : elsize == 2 ? gather_2 : elsize == 4 ? gather_4
                   : elsize == 8 ? gather_8 : gather_16;
  tpu_iter_run_parallel(&it, loop, &g);
  return atomic_load(&g.bad) ? index_error(call, index, 0, self->sizes[dim], dim) : TPU_OK;
}

typedef struct scatter_ctx {
  tpu_accum_fn fn;
  tpu_accum_alpha alpha;
  int64_t count;        /* index.size(dim): the walk of each position */
  int64_t self_stride;  /* bytes between self's elements along dim */
  int64_t index_stride; /* bytes between index's elements along dim */
  int64_t src_stride;   /* bytes between src's elements along dim */
  int64_t index_size;   /* bytes per index element */
  int64_t wrap;         /* added to a negative index: self.size(dim) for INDEX_FILL, else 0 */
} scatter_ctx;

/* Operands: 0 = self, 1 = index, 2 = src, over index's sizes with dim collapsed; each element
 * walks dim. When one index value serves the whole run (a broadcast index), the run is combined
 * as one strided call. Indices were checked before. */
static void scatter_loop(char **data, const int64_t *strides, int64_t n, void *ctx) {
  const scatter_ctx *s = ctx;
  for (int64_t j = 0; j < s->count; j++) {
    const char *index = data[1] + j * s->index_stride;
    const char *src = data[2] + j * s->src_stride;
    if (strides[1] == 0) {
      int64_t k = tpu_index_load(index, s->index_size);
      k += k < 0 ? s->wrap : 0;
      s->fn(data[0] + k * s->self_stride, strides[0], src, strides[2], n, &s->alpha);
      continue;
    }
    for (int64_t e = 0; e < n; e++) {
      int64_t k = tpu_index_load(index + e * strides[1], s->index_size);
      k += k < 0 ? s->wrap : 0;
      s->fn(data[0] + e * strides[0] + k * s->self_stride, 0, src + e * strides[2], 0, 1,
            &s->alpha);
    }
  }
}

tpu_status tpu_kernel_scatter(const tpu_op_call *call) {
  const tpu_tensor *index = &call->tensors[0], *src = &call->tensors[1], *self = &call->tensors[2];
  int64_t dim = 0;
  tpu_status st = check_shapes(call, self, index, src, &dim);
  if (st != TPU_OK)
    return st;
  tpu_accum op = (tpu_accum)call->scalars[1].i;
  tpu_accum_fn fn = tpu_accum_loop(self->dtype, op);
  if (!fn)
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "%s() is not implemented for %s",
                     tpu_op_name(call->op), tpu_dtype_name(self->dtype));
  if (tpu_tensor_numel(index) == 0)
    return TPU_OK;
  /* index_fill_ alone, in PyTorch too, counts negative indices from the end. */
  const int64_t wrap = call->op == TPU_OP_INDEX_FILL ? self->sizes[dim] : 0;
  if (tpu_index_any_bad(index, -wrap, self->sizes[dim]))
    return index_error(call, index, -wrap, self->sizes[dim], dim);

  int64_t elsize = (int64_t)tpu_dtype_size(self->dtype);
  int64_t index_elsize = (int64_t)tpu_dtype_size(index->dtype);
  scatter_ctx s = {
      .fn = fn,
      /* PyTorch's index_add_ of a 1-d self multiplies by alpha even when it is 1. */
      .alpha = {call->scalars[2].f, call->scalars[3].f, call->scalars[4].i,
                call->op == TPU_OP_INDEX_ADD && self->ndim == 1},
      .count = index->sizes[dim],
      .self_stride = self->sizes[dim] == 1 ? 0 : self->strides[dim] * elsize,
      .index_stride = index->sizes[dim] == 1 ? 0 : index->strides[dim] * index_elsize,
      .src_stride = index->sizes[dim] == 1 ? 0 : src->strides[dim] * elsize,
      .index_size = index_elsize,
      .wrap = wrap,
  };
  tpu_tensor outer_index = *index, outer_self = with_sizes(self, index);
  tpu_tensor outer_src = with_sizes(src, index);
  outer_index.sizes[dim] = outer_self.sizes[dim] = outer_src.sizes[dim] = 1;
  tpu_iter it;
  tpu_iter_init(&it, index->ndim, outer_index.sizes);
  tpu_iter_add_tensor(&it, &outer_self);
  tpu_iter_add_tensor(&it, &outer_index);
  tpu_iter_add_tensor(&it, &outer_src);
  tpu_iter_build(&it, 0);
  tpu_iter_run_grain(&it, TPU_ITER_GRAIN / s.count, scatter_loop, &s);
  return TPU_OK;
}
