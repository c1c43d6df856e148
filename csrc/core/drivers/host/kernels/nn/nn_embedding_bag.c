/* EMBEDDING_BAG (contract in ops/tpu_ops_nn.h): bags over the thread pool, each bag's rows
 * accumulated in index order into one float (double for float64) row, rounded once, as PyTorch
 * CPU's fbgemm path accumulates. Typed loops over contiguous weight rows keep the inner loop a
 * vectorizable axpy. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/kernels/index/index_util.h"
#include "drivers/host/kernels/kernels.h"
#include "drivers/host/host_driver.h"
#include "drivers/host/engine/engine_pool.h"
#include "drivers/host/engine/engine_simd.h"

enum { MODE_SUM = 0, MODE_MEAN = 1, MODE_MAX = 2 };

typedef struct bag_call {
  const tpu_tensor *weight, *indices, *offsets, *psw;
  const tpu_tensor *out, *offset2bag, *bag_size, *max_indices;
  int64_t V, D, N, B, padding;
  int mode;
  atomic_bool bad; /* an index outside [0, V) */
} bag_call;

static int64_t load_index(const tpu_tensor *t, int64_t i) {
  int64_t e = (int64_t)tpu_dtype_size(t->dtype);
  return tpu_index_load((const char *)tpu_tensor_data(t) + i * t->strides[0] * e, e);
}

/* Bag b's positions [*lo, *hi): the last bag ends at N. */
static void bag_range(const bag_call *c, int64_t b, int64_t *lo, int64_t *hi) {
  *lo = load_index(c->offsets, b);
  *hi = b + 1 < c->B ? load_index(c->offsets, b + 1) : c->N;
}

/* Weight element (row, col) and output element (bag, col) as float or double. */
static double weight_at(const bag_call *c, int64_t row, int64_t col) {
  const tpu_tensor *w = c->weight;
  int64_t e = (int64_t)tpu_dtype_size(w->dtype);
  return tpu_real_load((const char *)tpu_tensor_data(w) + (row * w->strides[0] + col) * e,
                       w->dtype);
}

static double psw_at(const bag_call *c, int64_t p) {
  if (!c->psw)
    return 1.0;
  int64_t e = (int64_t)tpu_dtype_size(c->psw->dtype);
  return tpu_real_load((const char *)tpu_tensor_data(c->psw) + p * c->psw->strides[0] * e,
                       c->psw->dtype);
}

TPU_SIMD static void add_f32(float *restrict acc, const float *restrict src, int64_t n) {
  for (int64_t d = 0; d < n; d++)
    acc[d] += src[d];
}

TPU_SIMD static void scaled_add_f32(float *restrict acc, const float *restrict src, int64_t n,
                                    float scale) {
  for (int64_t d = 0; d < n; d++)
    acc[d] += src[d] * scale;
}

/* acc[0..D) += scale * row, in float: the typed fast paths of sum and mean. */
static void axpy_f32(float *acc, const bag_call *c, int64_t row, float scale) {
  const tpu_tensor *w = c->weight;
  int64_t D = c->D;
  if (w->dtype == TPU_FLOAT32) {
    const float *src = (const float *)tpu_tensor_data(w) + row * w->strides[0];
    if (scale == 1.0f)
      add_f32(acc, src, D);
    else
      scaled_add_f32(acc, src, D, scale);
    return;
  }
  const uint16_t *src = (const uint16_t *)tpu_tensor_data(w) + row * w->strides[0];
  if (w->dtype == TPU_BFLOAT16)
    for (int64_t d = 0; d < D; d++)
      acc[d] += tpu_bf16_to_f32(src[d]) * scale;
  else
    for (int64_t d = 0; d < D; d++)
      acc[d] += tpu_f16_to_f32(src[d]) * scale;
}

static void axpy_f64(double *acc, const bag_call *c, int64_t row, double scale) {
  const double *src = (const double *)tpu_tensor_data(c->weight) + row * c->weight->strides[0];
  for (int64_t d = 0; d < c->D; d++)
    acc[d] += src[d] * scale;
}

static char *out_row(const bag_call *c, int64_t b) {
  const tpu_tensor *o = c->out;
  return (char *)tpu_tensor_data(o) + b * o->strides[0] * (int64_t)tpu_dtype_size(o->dtype);
}

static void store_row(const bag_call *c, int64_t b, const void *acc, bool f64) {
  tpu_dtype dt = c->out->dtype;
  char *dst = out_row(c, b);
  if (dt == TPU_FLOAT64 || dt == TPU_FLOAT32) {
    if ((dt == TPU_FLOAT64) == f64) {
      memcpy(dst, acc, (size_t)c->D * tpu_dtype_size(dt));
      return;
    }
  }
  for (int64_t d = 0; d < c->D; d++)
    tpu_real_store(dst + d * (int64_t)tpu_dtype_size(dt), dt,
                   f64 ? ((const double *)acc)[d] : ((const float *)acc)[d]);
}

static void store_i64(const tpu_tensor *t, int64_t i, int64_t v) {
  ((int64_t *)tpu_tensor_data(t))[i * t->strides[0]] = v;
}

/* The rows are gathered at random from a table larger than the caches, so each is fetched
 * PREFETCH_AHEAD positions before it is added (the out-of-order window covers only a row or two);
 * at most PREFETCH_BYTES of it, as the hardware prefetcher follows a long row by itself. */
#define PREFETCH_AHEAD 16
#define PREFETCH_BYTES 512

static void prefetch_row(const bag_call *c, int64_t p) {
  if (p >= c->N)
    return;
  int64_t row = load_index(c->indices, p);
  if (row < 0 || row >= c->V)
    return;
  const tpu_tensor *w = c->weight;
  int64_t e = (int64_t)tpu_dtype_size(w->dtype), bytes = c->D * e;
  const char *start = (const char *)tpu_tensor_data(w) + row * w->strides[0] * e;
  for (int64_t at = 0; at < bytes && at < PREFETCH_BYTES; at += 64)
    __builtin_prefetch(start + at);
}

/* Bag b by sum or mean: returns the count of positions that are not padding. */
static int64_t sum_bag(bag_call *c, int64_t b, void *acc, bool f64) {
  int64_t lo, hi, count = 0;
  bag_range(c, b, &lo, &hi);
  memset(acc, 0, (size_t)c->D * (f64 ? sizeof(double) : sizeof(float)));
  for (int64_t p = lo; p < hi; p++) {
    prefetch_row(c, p + PREFETCH_AHEAD);
    int64_t row = load_index(c->indices, p);
    if (row == c->padding)
      continue;
    if (row < 0 || row >= c->V) {
      atomic_store_explicit(&c->bad, true, memory_order_relaxed);
      continue;
    }
    count++;
    if (f64)
      axpy_f64(acc, c, row, psw_at(c, p));
    else
      axpy_f32(acc, c, row, (float)psw_at(c, p));
  }
  if (c->mode == MODE_MEAN && count > 0) {
    for (int64_t d = 0; d < c->D; d++) {
      if (f64)
        ((double *)acc)[d] /= (double)count;
      else
        ((float *)acc)[d] /= (float)count;
    }
  }
  return count;
}

/* Bag b by max: the first strictly greater element wins, as on PyTorch CPU; an empty bag is 0. */
static int64_t max_bag(bag_call *c, int64_t b, double *acc) {
  int64_t lo, hi, count = 0;
  bag_range(c, b, &lo, &hi);
  const tpu_tensor *mi = c->max_indices;
  int64_t *arg = (int64_t *)tpu_tensor_data(mi) + b * mi->strides[0];
  for (int64_t d = 0; d < c->D; d++) {
    acc[d] = 0;
    arg[d * mi->strides[1]] = 0;
  }
  for (int64_t p = lo; p < hi; p++) {
    int64_t row = load_index(c->indices, p);
    if (row == c->padding)
      continue;
    if (row < 0 || row >= c->V) {
      atomic_store_explicit(&c->bad, true, memory_order_relaxed);
      continue;
    }
    for (int64_t d = 0; d < c->D; d++) {
      double v = weight_at(c, row, d);
      if (count == 0 || v > acc[d]) {
        acc[d] = v;
        arg[d * mi->strides[1]] = row;
      }
    }
    count++;
  }
  return count;
}

static void bags_range(int64_t begin, int64_t end, int chunk, void *arg) {
  (void)chunk;
  bag_call *c = arg;
  bool f64 = c->weight->dtype == TPU_FLOAT64 || c->mode == MODE_MAX;
  void *acc = malloc((size_t)(c->D ? c->D : 1) * (f64 ? sizeof(double) : sizeof(float)));
  if (!acc) { /* reported by the caller's second look */
    atomic_store_explicit(&c->bad, true, memory_order_relaxed);
    return;
  }
  for (int64_t b = begin; b < end; b++) {
    int64_t count = c->mode == MODE_MAX ? max_bag(c, b, acc) : sum_bag(c, b, acc, f64);
    store_row(c, b, acc, f64);
    int64_t size = c->mode == MODE_SUM ? 0 : count;
    store_i64(c->bag_size, b, size);
    if (c->mode != MODE_MAX)
      store_i64(c->max_indices, b, size);
    if (c->offset2bag->sizes[0] == c->N) {
      int64_t lo, hi;
      bag_range(c, b, &lo, &hi);
      for (int64_t p = lo; p < hi; p++)
        store_i64(c->offset2bag, p, b);
    }
  }
  free(acc);
}

/* The error of a call whose bags saw a bad index (or ran out of memory). */
static tpu_status bag_index_error(const bag_call *c) {
  for (int64_t p = 0; p < c->N; p++) {
    int64_t row = load_index(c->indices, p);
    if (row != c->padding && (row < 0 || row >= c->V))
      return tpu_error(TPU_ERR_RUNTIME, "Expected i < index_size to be true, but got false.  "
                       "(index %lld is out of range for %lld embeddings)", (long long)row,
                       (long long)c->V);
  }
  return tpu_error(TPU_ERR_OUT_OF_MEMORY, "embedding_bag: out of host memory");
}

/* Offsets start at 0, never decrease and end by N, as PyTorch CPU requires. */
static tpu_status check_offsets(const bag_call *c) {
  int64_t prev = 0;
  for (int64_t b = 0; b < c->B; b++) {
    int64_t o = load_index(c->offsets, b);
    if (b == 0 && o != 0)
      return tpu_error(TPU_ERR_RUNTIME, "offsets[0] has to be 0, i.e., the first sequence in "
                       "the mini-batch has to start from position 0. However, got %lld",
                       (long long)o);
    if (o > c->N)
      return tpu_error(TPU_ERR_RUNTIME, "offsets[-1] can not be greater than input's length "
                       "%lld but got offsets[-1] of %lld", (long long)c->N, (long long)o);
    if (o < prev)
      return tpu_error(TPU_ERR_RUNTIME, "Expected i < index_size to be true, but got false.  "
                       "(offsets decrease at bag %lld)", (long long)b);
    prev = o;
  }
  return TPU_OK;
}

static bool is_index(const tpu_tensor *t) {
  return t->ndim == 1 && (t->dtype == TPU_INT64 || t->dtype == TPU_INT32);
}

static bool is_i64(const tpu_tensor *t, int ndim) {
  return t->dtype == TPU_INT64 && t->ndim == ndim;
}

tpu_status tpu_kernel_embedding_bag(const tpu_op_call *call) {
  bag_call c = {.weight = &call->tensors[0], .indices = &call->tensors[1],
                .offsets = &call->tensors[2],
                .psw = call->n_inputs == 4 ? &call->tensors[3] : NULL};
  const tpu_tensor *o = &call->tensors[call->n_inputs];
  c.out = o;
  c.offset2bag = o + 1;
  c.bag_size = o + 2;
  c.max_indices = o + 3;
  c.mode = (int)call->scalars[0].i;
  c.padding = call->scalars[1].i;
  atomic_init(&c.bad, false);
  const tpu_tensor *w = c.weight;
  if (call->n_outputs != 4 || w->ndim != 2 || !tpu_dtype_is_floating(w->dtype) ||
      tpu_dtype_is_complex(w->dtype) || (w->sizes[1] > 1 && w->strides[1] != 1) ||
      !is_index(c.indices) || !is_index(c.offsets) || c.offsets->dtype != c.indices->dtype ||
      c.mode < MODE_SUM || c.mode > MODE_MAX || (c.psw && c.mode != MODE_SUM))
    return tpu_error(TPU_ERR_VALUE, "embedding_bag: malformed call");
  c.V = w->sizes[0];
  c.D = w->sizes[1];
  c.N = c.indices->sizes[0];
  c.B = c.offsets->sizes[0];
  bool max = c.mode == MODE_MAX;
  if (o->ndim != 2 || o->sizes[0] != c.B || o->sizes[1] != c.D || o->dtype != w->dtype ||
      (o->sizes[1] > 1 && o->strides[1] != 1) || !is_i64(c.offset2bag, 1) ||
      (c.offset2bag->sizes[0] != 0 && c.offset2bag->sizes[0] != c.N) ||
      !is_i64(c.bag_size, 1) || c.bag_size->sizes[0] != c.B ||
      !is_i64(c.max_indices, max ? 2 : 1) || c.max_indices->sizes[0] != c.B ||
      (max && c.max_indices->sizes[1] != c.D) ||
      (c.psw && (c.psw->ndim != 1 || c.psw->sizes[0] != c.N || c.psw->dtype != w->dtype)))
    return tpu_error(TPU_ERR_VALUE, "embedding_bag: malformed outputs");
  tpu_status st = check_offsets(&c);
  if (st != TPU_OK)
    return st;
  int64_t per_bag = c.B > 0 ? (c.N / c.B + 1) * (c.D + 1) : 1;
  int64_t grain = TPU_ITER_GRAIN / per_bag;
  tpu_parallel_for(c.B, grain > 1 ? grain : 1, bags_range, &c);
  return atomic_load(&c.bad) ? bag_index_error(&c) : TPU_OK;
}
