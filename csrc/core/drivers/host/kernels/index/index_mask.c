/* The kernels of the ops driven by nonzero elements (contract in ops/tpu_ops_index.h). The work
 * is cut into fixed chunks: a first pass counts each chunk's nonzero elements, a prefix sum gives
 * each chunk's first output position, and a second pass writes, so threads never share an output
 * element and the result does not depend on the thread count. */
#include <stdlib.h>

#include "drivers/host/kernels/index/index_util.h"
#include "drivers/host/kernels/kernels.h"
#include "drivers/host/engine/engine_pool.h"

static bool nonzero_at(const char *p, tpu_dtype dtype) {
  switch (dtype) {
  case TPU_INT16:
  case TPU_FLOAT16:
  case TPU_BFLOAT16: {
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return dtype == TPU_INT16 ? v != 0 : (v & 0x7fff) != 0;
  }
  case TPU_INT32: {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v != 0;
  }
  case TPU_INT64: {
    int64_t v;
    memcpy(&v, p, sizeof v);
    return v != 0;
  }
  case TPU_FLOAT32:
  case TPU_COMPLEX64: {
    float v[2];
    memcpy(v, p, dtype == TPU_FLOAT32 ? sizeof v[0] : sizeof v);
    return v[0] != 0 || (dtype == TPU_COMPLEX64 && v[1] != 0);
  }
  case TPU_FLOAT64:
  case TPU_COMPLEX128: {
    double v[2];
    memcpy(v, p, dtype == TPU_FLOAT64 ? sizeof v[0] : sizeof v);
    return v[0] != 0 || (dtype == TPU_COMPLEX128 && v[1] != 0);
  }
  default: /* bool, uint8, int8 */
    return *p != 0;
  }
}

/* A logical-order walk of operand 0 (the tested tensor) and up to two more operands, cut into
 * fixed chunks. */
typedef struct scan {
  tpu_iter it;
  tpu_dtype dtype; /* of operand 0 */
  int chunks;
  int64_t *start; /* [chunks + 1]: output position of each chunk's first nonzero; then total */
  const tpu_op_call *call;
  const tpu_tensor *out;
} scan;

static int64_t chunk_begin(const scan *s, int c) { return s->it.numel * c / s->chunks; }

static void count_loop(char **data, const int64_t *strides, int64_t n, void *ctx) {
  int64_t *count = ctx;
  tpu_dtype dtype = (tpu_dtype)count[1];
  int64_t found = 0;
  if (tpu_dtype_size(dtype) == 1 && strides[0] == 1) {
    for (int64_t i = 0; i < n; i++)
      found += data[0][i] != 0;
  } else {
    for (int64_t i = 0; i < n; i++)
      found += nonzero_at(data[0] + i * strides[0], dtype);
  }
  count[0] += found;
}

static void count_chunks(int64_t begin, int64_t end, int chunk, void *arg) {
  (void)chunk;
  scan *s = arg;
  for (int64_t c = begin; c < end; c++) {
    int64_t count[2] = {0, (int64_t)s->dtype};
    tpu_iter_run(&s->it, chunk_begin(s, (int)c), chunk_begin(s, (int)c + 1), count_loop, count);
    s->start[c + 1] = count[0];
  }
}

/* Prepares `s` over operand-0 tensor `t` plus the given extra operands (same sizes) and counts
 * the chunks; start[chunks] is the total. */
static tpu_status scan_init(scan *s, const tpu_tensor *t, const tpu_tensor *a, const tpu_tensor *b,
                            bool count) {
  s->dtype = t->dtype;
  tpu_iter_init(&s->it, t->ndim, t->sizes);
  tpu_iter_add_tensor(&s->it, t);
  if (a)
    tpu_iter_add_tensor(&s->it, a);
  if (b)
    tpu_iter_add_tensor(&s->it, b);
  tpu_iter_build(&s->it, TPU_ITER_LOGICAL_ORDER);
  s->chunks = tpu_parallel_chunks(s->it.numel, TPU_ITER_GRAIN);
  s->start = calloc((size_t)s->chunks + 1, sizeof *s->start);
  if (!s->start)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "%s: out of host memory", tpu_op_name(s->call->op));
  if (count && s->it.numel > 0) {
    tpu_parallel_for(s->chunks, 1, count_chunks, s);
    for (int c = 0; c < s->chunks; c++)
      s->start[c + 1] += s->start[c];
  }
  return TPU_OK;
}

static void scan_run(scan *s, tpu_chunk_fn fn) {
  if (s->it.numel > 0)
    tpu_parallel_for(s->chunks, 1, fn, s);
}

static tpu_status check_same_sizes(const tpu_op_call *call, const tpu_tensor *a,
                                   const tpu_tensor *b) {
  if (!tpu_tensor_same_sizes(a, b))
    return tpu_error(TPU_ERR_VALUE, "%s: sizes differ", tpu_op_name(call->op));
  return TPU_OK;
}

static tpu_status check_mask(const tpu_op_call *call, const tpu_tensor *mask) {
  if (mask->dtype != TPU_BOOL && mask->dtype != TPU_UINT8)
    return tpu_error(TPU_ERR_TYPE, "%s: expected a bool or uint8 mask", tpu_op_name(call->op));
  return TPU_OK;
}

tpu_status tpu_kernel_nonzero_count(const tpu_op_call *call) {
  const tpu_tensor *self = &call->tensors[0], *count = &call->tensors[1];
  if (!tpu_dtype_is_computable(self->dtype) || count->dtype != TPU_INT64 || count->ndim != 0)
    return tpu_error(TPU_ERR_VALUE, "nonzero_count: unsupported dtype or output");
  scan s = {.call = call};
  tpu_status st = scan_init(&s, self, NULL, NULL, true);
  if (st == TPU_OK)
    memcpy(tpu_tensor_data(count), &s.start[s.chunks], sizeof(int64_t));
  free(s.start);
  return st;
}

/* NONZERO: decodes the first logical index of each run into coordinates, then steps them. */
typedef struct nz_run {
  scan *s;
  int64_t row;  /* next output row */
  int64_t *idx; /* coordinates of the run's current element */
} nz_run;

static void nonzero_loop(char **data, const int64_t *strides, int64_t n, int64_t index,
                         void *ctx) {
  nz_run *r = ctx;
  const tpu_tensor *out = r->s->out;
  int nd = (int)out->sizes[1];
  const int64_t *sizes = r->s->call->tensors[0].sizes;
  for (int d = nd - 1; d >= 0; d--) {
    r->idx[d] = index % sizes[d];
    index /= sizes[d];
  }
  char *base = tpu_tensor_data(out);
  int64_t s0 = out->strides[0] * 8, s1 = out->strides[1] * 8;
  for (int64_t i = 0; i < n; i++) {
    if (nonzero_at(data[0] + i * strides[0], r->s->dtype)) {
      for (int d = 0; d < nd; d++)
        memcpy(base + r->row * s0 + d * s1, &r->idx[d], sizeof r->idx[d]);
      r->row++;
    }
    for (int d = nd - 1; d >= 0 && ++r->idx[d] == sizes[d]; d--)
      r->idx[d] = 0;
  }
}

static void nonzero_chunks(int64_t begin, int64_t end, int chunk, void *arg) {
  (void)chunk;
  scan *s = arg;
  int64_t idx[TPU_MAX_DIMS];
  for (int64_t c = begin; c < end; c++) {
    nz_run r = {s, s->start[c], idx};
    tpu_iter_run_indexed(&s->it, chunk_begin(s, (int)c), chunk_begin(s, (int)c + 1),
                         nonzero_loop, &r);
  }
}

tpu_status tpu_kernel_nonzero(const tpu_op_call *call) {
  const tpu_tensor *self = &call->tensors[0], *out = &call->tensors[1];
  if (!tpu_dtype_is_computable(self->dtype) || out->dtype != TPU_INT64 || out->ndim != 2 ||
      out->sizes[1] != self->ndim)
    return tpu_error(TPU_ERR_VALUE, "nonzero: unsupported dtype or output");
  scan s = {.call = call, .out = out};
  tpu_status st = scan_init(&s, self, NULL, NULL, true);
  if (st == TPU_OK && s.start[s.chunks] != out->sizes[0])
    st = tpu_error(TPU_ERR_RUNTIME, "nonzero: the input changed between counting and writing");
  if (st == TPU_OK && self->ndim > 0)
    scan_run(&s, nonzero_chunks);
  free(s.start);
  return st;
}

/* One chunk's walk for MASKED_SELECT and MASKED_SCATTER: the next position in the packed side
 * (out, or source), its base and byte stride. */
typedef struct packed {
  int64_t pos;
  char *base;
  int64_t stride;
  size_t elsize;
} packed;

static packed packed_at(const scan *s, int64_t c, const tpu_tensor *t) {
  size_t elsize = tpu_dtype_size(t->dtype);
  return (packed){s->start[c], tpu_tensor_data(t), t->strides[0] * (int64_t)elsize, elsize};
}

/* Operands: 0 = mask, 1 = self. */
static void select_loop(char **data, const int64_t *strides, int64_t n, void *ctx) {
  packed *p = ctx;
  for (int64_t i = 0; i < n; i++)
    if (data[0][i * strides[0]] != 0)
      memcpy(p->base + p->pos++ * p->stride, data[1] + i * strides[1], p->elsize);
}

static void select_chunks(int64_t begin, int64_t end, int chunk, void *arg) {
  (void)chunk;
  scan *s = arg;
  for (int64_t c = begin; c < end; c++) {
    packed p = packed_at(s, c, s->out);
    tpu_iter_run(&s->it, chunk_begin(s, (int)c), chunk_begin(s, (int)c + 1), select_loop, &p);
  }
}

tpu_status tpu_kernel_masked_select(const tpu_op_call *call) {
  const tpu_tensor *self = &call->tensors[0], *mask = &call->tensors[1], *out = &call->tensors[2];
  tpu_status st = check_mask(call, mask);
  if (st == TPU_OK)
    st = check_same_sizes(call, self, mask);
  if (st == TPU_OK && (out->ndim != 1 || out->dtype != self->dtype))
    st = tpu_error(TPU_ERR_VALUE, "masked_select: out must be 1-d of self's dtype");
  if (st != TPU_OK)
    return st;
  scan s = {.call = call, .out = out};
  st = scan_init(&s, mask, self, NULL, true);
  if (st == TPU_OK && s.start[s.chunks] != out->sizes[0])
    st = tpu_error(TPU_ERR_RUNTIME, "masked_select: the mask changed between counting and "
                   "writing");
  if (st == TPU_OK)
    scan_run(&s, select_chunks);
  free(s.start);
  return st;
}

/* Operands: 0 = mask, 1 = self. */
static void scatter_loop(char **data, const int64_t *strides, int64_t n, void *ctx) {
  packed *p = ctx;
  for (int64_t i = 0; i < n; i++)
    if (data[0][i * strides[0]] != 0)
      memcpy(data[1] + i * strides[1], p->base + p->pos++ * p->stride, p->elsize);
}

static void scatter_chunks(int64_t begin, int64_t end, int chunk, void *arg) {
  (void)chunk;
  scan *s = arg;
  for (int64_t c = begin; c < end; c++) {
    packed p = packed_at(s, c, &s->call->tensors[1]);
    p.stride = (int64_t)p.elsize; /* the source is contiguous, of any rank */
    tpu_iter_run(&s->it, chunk_begin(s, (int)c), chunk_begin(s, (int)c + 1), scatter_loop, &p);
  }
}

tpu_status tpu_kernel_masked_scatter(const tpu_op_call *call) {
  const tpu_tensor *mask = &call->tensors[0], *source = &call->tensors[1];
  const tpu_tensor *self = &call->tensors[2];
  tpu_status st = check_mask(call, mask);
  if (st == TPU_OK)
    st = check_same_sizes(call, self, mask);
  /* An empty source has no layout to check: it only fails the count check below. */
  if (st == TPU_OK && (source->dtype != self->dtype ||
                       (tpu_tensor_numel(source) > 0 && !tpu_tensor_is_contiguous(source))))
    st = tpu_error(TPU_ERR_VALUE, "masked_scatter_: source must be contiguous, of self's dtype");
  if (st != TPU_OK)
    return st;
  scan s = {.call = call, .out = self};
  st = scan_init(&s, mask, self, NULL, true);
  if (st == TPU_OK && s.start[s.chunks] > tpu_tensor_numel(source))
    st = tpu_error(TPU_ERR_RUNTIME, "masked_scatter_: expected source to have at least as many "
                   "elements as ones in mask (%lld), got %lld", (long long)s.start[s.chunks],
                   (long long)tpu_tensor_numel(source));
  if (st == TPU_OK)
    scan_run(&s, scatter_chunks);
  free(s.start);
  return st;
}
