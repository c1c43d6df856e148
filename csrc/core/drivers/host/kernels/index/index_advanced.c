/* The INDEX and INDEX_PUT kernels (contract in ops/tpu_ops_index.h).
 *
 * Pass 1 turns the indices into one byte offset per position of I, wrapping negative indices
 * once, and finds any index out of range before anything is written. Pass 2 gathers (INDEX, in
 * parallel over everything) or scatters (INDEX_PUT): the positions that may hit the same element
 * of self differ only in their I coordinates, so the B and A coordinates are split over threads
 * and each walks all of I in row-major order, the contract's order on any thread count. */
#include <stdatomic.h>

#include "drivers/host/kernels/index/index_util.h"
#include "drivers/host/kernels/kernels.h"

typedef struct offsets_ctx {
  int64_t size;       /* the indexed dimension's size */
  int64_t stride;     /* its stride in bytes */
  int64_t index_size; /* bytes per index element */
  bool first;         /* the first index tensor assigns, the others add */
  atomic_bool bad;
} offsets_ctx;

/* Operands: 0 = offsets (int64), 1 = index. */
static void offsets_loop(char **data, const int64_t *strides, int64_t n, void *ctx) {
  offsets_ctx *o = ctx;
  bool bad = false;
  for (int64_t i = 0; i < n; i++) {
    int64_t k = tpu_index_load(data[1] + i * strides[1], o->index_size);
    bad |= k < -o->size || k >= o->size;
    k = k < 0 ? k + o->size : k;
    int64_t off = k >= 0 && k < o->size ? k * o->stride : 0;
    if (!o->first) {
      int64_t prev;
      memcpy(&prev, data[0] + i * strides[0], sizeof prev);
      off += prev;
    }
    memcpy(data[0] + i * strides[0], &off, sizeof off);
  }
  if (bad)
    atomic_store_explicit(&o->bad, true, memory_order_relaxed);
}

/* Pass 1: offsets = sum over k of wrap(index_k) * stride_k, in bytes of src's dtype. */
static tpu_status compute_offsets(const tpu_op_call *call, int k, int64_t elsize,
                                  const tpu_tensor *offsets) {
  for (int j = 0; j < k; j++) {
    const tpu_tensor *index = &call->tensors[1 + j], *along = &call->tensors[1 + k + j];
    if (!tpu_index_dtype_ok(index->dtype) || index->ndim != offsets->ndim || along->ndim != 1)
      return tpu_error(TPU_ERR_VALUE, "%s: malformed index %d", tpu_op_name(call->op), j);
    if (!tpu_tensor_same_sizes(index, offsets))
      return tpu_error(TPU_ERR_VALUE, "%s: index %d has the wrong sizes", tpu_op_name(call->op), j);
    offsets_ctx o = {.size = along->sizes[0],
                     .stride = along->sizes[0] == 1 ? 0 : along->strides[0] * elsize,
                     .index_size = (int64_t)tpu_dtype_size(index->dtype),
                     .first = j == 0};
    atomic_init(&o.bad, false);
    tpu_iter it;
    tpu_iter_init(&it, offsets->ndim, offsets->sizes);
    tpu_iter_add_tensor(&it, offsets);
    tpu_iter_add_tensor(&it, index);
    tpu_iter_build(&it, 0);
    tpu_iter_run_parallel(&it, offsets_loop, &o);
    int64_t value;
    if (atomic_load(&o.bad) && tpu_index_find_bad(index, -o.size, o.size, &value))
      return tpu_error(TPU_ERR_INDEX, "index %lld is out of bounds for dimension %d with size "
                       "%lld", (long long)value, j, (long long)o.size);
  }
  return TPU_OK;
}

/* The problem's common checks; fills k, nb and ni. */
static tpu_status check_layout(const tpu_op_call *call, const tpu_tensor *big, int *k, int *nb,
                               int *ni) {
  *k = (call->n_inputs - 1) / 2;
  const tpu_tensor *offsets = &call->tensors[call->n_inputs];
  *nb = (int)call->scalars[0].i;
  *ni = offsets->ndim;
  if (*k < 1 || call->n_inputs != 2 * *k + 1 || call->n_outputs != 2 ||
      offsets->dtype != TPU_INT64 || !tpu_tensor_is_contiguous(offsets) || *nb < 0 ||
      *nb + *ni > big->ndim)
    return tpu_error(TPU_ERR_VALUE, "%s: malformed call", tpu_op_name(call->op));
  for (int d = 0; d < *ni; d++)
    if (big->sizes[*nb + d] != offsets->sizes[d])
      return tpu_error(TPU_ERR_VALUE, "%s: indexed sizes differ", tpu_op_name(call->op));
  return TPU_OK;
}

/* The offsets viewed with big's sizes: stride 0 outside I, its own strides across I. */
static tpu_tensor offsets_broadcast(const tpu_tensor *offsets, const tpu_tensor *big, int nb) {
  tpu_tensor v = *offsets;
  v.ndim = big->ndim;
  for (int d = 0; d < big->ndim; d++) {
    bool in_i = d >= nb && d < nb + offsets->ndim;
    v.sizes[d] = big->sizes[d];
    v.strides[d] = in_i ? offsets->strides[d - nb] : 0;
  }
  return v;
}

/* Operands: 0 = out, 1 = src, 2 = offsets (bytes). */
#define INDEX_LOOP(N)                                                                              \
  static void index_##N(char **data, const int64_t *strides, int64_t n, void *ctx) {               \
    (void)ctx;                                                                                     \
    char *restrict out = data[0];                                                                  \
    const char *restrict src = data[1], *restrict offsets = data[2];                               \
    if (strides[2] == 0) {                                                                         \
      int64_t off;                                                                                 \
      memcpy(&off, offsets, sizeof off);                                                           \
      if (strides[0] == N && strides[1] == N) {                                                    \
        memcpy(out, src + off, (size_t)n * N);                                                     \
        return;                                                                                    \
      }                                                                                            \
      for (int64_t i = 0; i < n; i++)                                                              \
        memcpy(out + i * strides[0], src + i * strides[1] + off, N);                               \
      return;                                                                                      \
    }                                                                                              \
    for (int64_t i = 0; i < n; i++) {                                                              \
      int64_t off;                                                                                 \
      memcpy(&off, offsets + i * strides[2], sizeof off);                                          \
      memcpy(out + i * strides[0], src + i * strides[1] + off, N);                                 \
    }                                                                                              \
  }
INDEX_LOOP(1)
INDEX_LOOP(2)
INDEX_LOOP(4)
INDEX_LOOP(8)
INDEX_LOOP(16)

tpu_status tpu_kernel_index(const tpu_op_call *call) {
  const tpu_tensor *src = &call->tensors[0];
  const tpu_tensor *offsets = &call->tensors[call->n_inputs];
  const tpu_tensor *out = &call->tensors[call->n_inputs + 1];
  int k, nb, ni;
  tpu_status st = check_layout(call, out, &k, &nb, &ni);
  if (st != TPU_OK)
    return st;
  if (!tpu_tensor_same_sizes(src, out) || src->dtype != out->dtype)
    return tpu_error(TPU_ERR_VALUE, "index: src and out differ");
  int64_t elsize = (int64_t)tpu_dtype_size(out->dtype);
  st = compute_offsets(call, k, elsize, offsets);
  if (st != TPU_OK || tpu_tensor_numel(out) == 0)
    return st;
  tpu_tensor offs = offsets_broadcast(offsets, out, nb);
  tpu_iter it;
  tpu_iter_init(&it, out->ndim, out->sizes);
  tpu_iter_add_tensor(&it, out);
  tpu_iter_add_tensor(&it, src);
  tpu_iter_add_tensor(&it, &offs);
  tpu_iter_build(&it, 0);
  tpu_loop_fn loop = elsize == 1 ? index_1 : elsize == 2 ? index_2 : elsize == 4 ? index_4
                   : elsize == 8 ? index_8 : index_16;
  tpu_iter_run_parallel(&it, loop, NULL);
  return TPU_OK;
}

typedef struct put_ctx {
  tpu_accum_fn fn;
  tpu_iter inner;          /* over I: operands values (I strides), offsets */
  const char *values_base; /* values' element [0, ..., 0]: inner offsets are relative to it */
} put_ctx;

/* One run of the outer (B and A) iteration, applied for one position of I at a time. */
typedef struct put_run {
  const put_ctx *p;
  char *self;
  const char *values;
  int64_t self_stride, values_stride, n;
} put_run;

static const tpu_accum_alpha one = {1.0, 0.0, 1, false};

/* Inner operands: 0 = values at the position of I, 1 = offsets. */
static void put_inner_loop(char **data, const int64_t *strides, int64_t n, void *ctx) {
  const put_run *r = ctx;
  for (int64_t t = 0; t < n; t++) {
    int64_t off;
    memcpy(&off, data[1] + t * strides[1], sizeof off);
    const char *v = r->values + ((data[0] + t * strides[0]) - r->p->values_base);
    r->p->fn(r->self + off, r->self_stride, v, r->values_stride, r->n, &one);
  }
}

/* Outer operands: 0 = self, 1 = values, over B + A. */
static void put_outer_loop(char **data, const int64_t *strides, int64_t n, void *ctx) {
  const put_ctx *p = ctx;
  put_run r = {p, data[0], data[1], strides[0], strides[1], n};
  tpu_iter_run(&p->inner, 0, p->inner.numel, put_inner_loop, &r);
}

tpu_status tpu_kernel_index_put(const tpu_op_call *call) {
  const tpu_tensor *values = &call->tensors[0];
  const tpu_tensor *offsets = &call->tensors[call->n_inputs];
  const tpu_tensor *self = &call->tensors[call->n_inputs + 1];
  int k, nb, ni;
  tpu_status st = check_layout(call, self, &k, &nb, &ni);
  if (st != TPU_OK)
    return st;
  if (!tpu_tensor_same_sizes(values, self) || values->dtype != self->dtype)
    return tpu_error(TPU_ERR_VALUE, "index_put_: values and self differ");
  tpu_accum_fn fn = tpu_accum_loop(self->dtype, call->scalars[1].i ? TPU_ACCUM_ADD
                                                                   : TPU_ACCUM_ASSIGN);
  if (!fn)
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "index_put_ with accumulate=True is not "
                     "implemented for %s", tpu_dtype_name(self->dtype));
  int64_t elsize = (int64_t)tpu_dtype_size(self->dtype);
  st = compute_offsets(call, k, elsize, offsets);
  if (st != TPU_OK || tpu_tensor_numel(self) == 0)
    return st;

  /* Outer: B + A with self's and values' strides. Inner: I with values' strides, offsets. */
  int64_t outer_sizes[TPU_MAX_DIMS], self_strides[TPU_MAX_DIMS], outer_vstrides[TPU_MAX_DIMS];
  int64_t vsizes[TPU_MAX_DIMS], vstrides[TPU_MAX_DIMS], ssizes[TPU_MAX_DIMS];
  tpu_view_shape(values, vsizes, vstrides);
  tpu_view_shape(self, ssizes, self_strides);
  int outer = 0;
  for (int d = 0; d < self->ndim; d++) {
    if (d >= nb && d < nb + ni)
      continue;
    outer_sizes[outer] = ssizes[d];
    self_strides[outer] = self_strides[d];
    outer_vstrides[outer] = vstrides[d];
    outer++;
  }
  int64_t offset_strides[TPU_MAX_DIMS];
  for (int d = 0; d < ni; d++)
    offset_strides[d] = offsets->sizes[d] == 1 ? 0 : offsets->strides[d] * 8;
  put_ctx p = {.fn = fn, .values_base = tpu_tensor_data(values)};
  tpu_iter_init(&p.inner, ni, offsets->sizes);
  tpu_iter_add(&p.inner, (void *)p.values_base, elsize, vstrides + nb);
  tpu_iter_add(&p.inner, tpu_tensor_data(offsets), 8, offset_strides);
  tpu_iter_build(&p.inner, TPU_ITER_LOGICAL_ORDER);
  tpu_iter it;
  tpu_iter_init(&it, outer, outer_sizes);
  tpu_iter_add(&it, tpu_tensor_data(self), elsize, self_strides);
  tpu_iter_add(&it, (void *)p.values_base, elsize, outer_vstrides);
  tpu_iter_build(&it, 0);
  tpu_iter_run_grain(&it, TPU_ITER_GRAIN / p.inner.numel, put_outer_loop, &p);
  return TPU_OK;
}
