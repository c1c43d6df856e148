/* EMBEDDING_BAG (contract in ops/tpu_ops_nn.h): bags over the thread pool, each bag's rows
 * accumulated in index order into one float (double for float64) row, rounded once, as PyTorch
 * CPU's fbgemm path accumulates. A bag's indices are first read into a batch of checked row
 * numbers, then a typed loop adds the contiguous weight rows, prefetching ahead of the random
 * gather. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/kernels/index/index_util.h"
#include "drivers/host/kernels/kernels.h"
#include "drivers/host/host_driver.h"
#include "drivers/host/engine/engine_pool.h"
#include "drivers/host/engine/engine_simd.h"

enum { MODE_SUM = 0, MODE_MEAN = 1, MODE_MAX = 2 };

/* A 1-d tensor's elements as raw bytes: read once per call, as the per-position reads are the
 * kernel's inner loop. */
typedef struct raw_vector {
  const char *base;
  int64_t step; /* bytes between elements */
  int64_t size; /* bytes of one element */
} raw_vector;

typedef struct bag_call {
  const tpu_tensor *out, *offset2bag, *bag_size, *max_indices;
  raw_vector indices, offsets, psw; /* psw.base is NULL without per-sample weights */
  const char *rows;                 /* the weight's first element */
  int64_t row_bytes;                /* bytes between weight rows */
  int64_t prefetch_bytes;           /* of a row's first bytes, up to PREFETCH_BYTES */
  tpu_dtype wdt;
  int64_t V, D, N, B, padding;
  int mode;
  atomic_bool bad; /* an index outside [0, V) */
} bag_call;

static raw_vector raw_of(const tpu_tensor *t) {
  int64_t e = (int64_t)tpu_dtype_size(t->dtype);
  return (raw_vector){(const char *)tpu_tensor_data(t), t->strides[0] * e, e};
}

static inline int64_t index_at(const raw_vector *v, int64_t i) {
  return tpu_index_load(v->base + i * v->step, v->size);
}

/* Whether a position's index is padding_idx; a negative padding_idx is none, so a negative index
 * is always out of range. */
static inline bool is_padding(const bag_call *c, int64_t row) {
  return c->padding >= 0 && row == c->padding;
}

/* Bag b's positions [*lo, *hi): the last bag ends at N. */
static void bag_range(const bag_call *c, int64_t b, int64_t *lo, int64_t *hi) {
  *lo = index_at(&c->offsets, b);
  *hi = b + 1 < c->B ? index_at(&c->offsets, b + 1) : c->N;
}

/* How many of a bag's positions are read and checked at a time, and how far ahead of the add a
 * row is prefetched: the rows are gathered at random from a table larger than the caches, and the
 * out-of-order window covers only a row or two. At most PREFETCH_BYTES of a row are prefetched,
 * as the hardware prefetcher follows a long row by itself. */
enum { ROW_BATCH = 256, PREFETCH_AHEAD = 16, PREFETCH_BYTES = 512 };

/* The rows of positions [lo, hi) that are not padding, with their per-sample weights (scales is
 * left alone without them); an index outside [0, V) is flagged and skipped. Returns how many. */
static int64_t read_rows(bag_call *c, int64_t lo, int64_t hi, int64_t *rows, double *scales) {
  int64_t n = 0;
  bool bad = false;
  for (int64_t p = lo; p < hi; p++) { /* without branches: padding is as likely as not */
    const int64_t row = index_at(&c->indices, p);
    const bool padding = is_padding(c, row), outside = (uint64_t)row >= (uint64_t)c->V;
    bad |= outside & !padding;
    if (c->psw.base)
      scales[n] = tpu_real_load(c->psw.base + p * c->psw.step, c->wdt);
    rows[n] = row;
    n += !padding & !outside;
  }
  if (bad)
    atomic_store_explicit(&c->bad, true, memory_order_relaxed);
  return n;
}

/* The prefetch of the row PREFETCH_AHEAD positions after the k-th of the n rows read from the
 * positions [lo, hi), into the next bags (clamped to the last position). The address is formed
 * in unsigned arithmetic and never checked: a prefetch of any address is harmless, and the row
 * loop then runs no branch for it. Inline in the row loops: GCC finds a function of nothing but
 * prefetches const and deletes its calls. */
#define PREFETCH_AHEAD_OF(c, k, n, lo, hi)                                                         \
  do {                                                                                             \
    int64_t ahead_ = (k) + PREFETCH_AHEAD;                                                         \
    int64_t p_ = ahead_ < (hi) - (lo) ? (lo) + ahead_ : (hi) + ahead_ - (n);                       \
    p_ = p_ < (c)->N ? p_ : (c)->N - 1;                                                            \
    uintptr_t row_ = (uintptr_t)(c)->rows +                                                        \
                     (uintptr_t)index_at(&(c)->indices, p_) * (uintptr_t)(c)->row_bytes;          \
    for (int64_t at_ = 0; at_ < (c)->prefetch_bytes; at_ += 64)                                    \
      __builtin_prefetch((const void *)(row_ + (uintptr_t)at_));                                   \
  } while (0)

/* Columns of a plain float sum held in registers across a bag's rows: the accumulator then never
 * waits on its own store, row after row. 64 (eight AVX2 registers) take a 256-byte row in one
 * pass: a second pass over a bag's rows costs more than the registers it frees. */
enum { SUM_TILE = 64 };

/* acc[0..D) += weight[rows[k]] for each of the n rows, in index order, a tile of columns at a
 * time (the rows of a bag stay in L1 for the later tiles). */
static inline void sum_f32_tiles(const bag_call *c, float *restrict acc, const int64_t *rows,
                                 int64_t n, int64_t lo, int64_t hi) {
  int64_t D = c->D, d0 = 0;
  for (; d0 + SUM_TILE <= D; d0 += SUM_TILE) {
    float t[SUM_TILE];
    for (int j = 0; j < SUM_TILE; j++)
      t[j] = acc[d0 + j];
    for (int64_t k = 0; k < n; k++) {
      if (d0 == 0)
        PREFETCH_AHEAD_OF(c, k, n, lo, hi);
      const float *restrict src = (const float *)(c->rows + rows[k] * c->row_bytes) + d0;
      for (int j = 0; j < SUM_TILE; j++)
        t[j] += src[j];
    }
    for (int j = 0; j < SUM_TILE; j++)
      acc[d0 + j] = t[j];
  }
  if (d0 == D)
    return;
  for (int64_t k = 0; k < n; k++) {
    if (d0 == 0)
      PREFETCH_AHEAD_OF(c, k, n, lo, hi);
    const float *restrict src = (const float *)(c->rows + rows[k] * c->row_bytes);
    for (int64_t d = d0; d < D; d++)
      acc[d] += src[d];
  }
}

/* acc[0..D) += scales[k] * weight[rows[k]] for each of the n rows, in index order, read from the
 * positions [lo, hi); the prefetch runs PREFETCH_AHEAD positions ahead, into the next bags. One
 * clone per ISA with the row loops inlined: few instructions a row leave the out-of-order window
 * room for the loads of rows ahead, whose misses this loop waits on. */
TPU_SIMD static void add_rows(const bag_call *c, void *acc_, const int64_t *rows,
                              const double *scales, int64_t n, int64_t lo, int64_t hi) {
  int64_t D = c->D;
  if (c->wdt == TPU_FLOAT32 && !c->psw.base) {
    sum_f32_tiles(c, acc_, rows, n, lo, hi);
    return;
  }
  for (int64_t k = 0; k < n; k++) {
    PREFETCH_AHEAD_OF(c, k, n, lo, hi);
    const char *row = c->rows + rows[k] * c->row_bytes;
    if (c->wdt == TPU_FLOAT64) {
      double *restrict acc = acc_, scale = c->psw.base ? scales[k] : 1.0;
      const double *restrict src = (const double *)row;
      for (int64_t d = 0; d < D; d++)
        acc[d] += src[d] * scale;
      continue;
    }
    float *restrict acc = acc_, scale = c->psw.base ? (float)scales[k] : 1.0f;
    if (c->wdt == TPU_FLOAT32) {
      const float *restrict src = (const float *)row;
      if (scale == 1.0f)
        for (int64_t d = 0; d < D; d++)
          acc[d] += src[d];
      else
        for (int64_t d = 0; d < D; d++)
          acc[d] += src[d] * scale;
    } else {
      const uint16_t *restrict src = (const uint16_t *)row;
      if (c->wdt == TPU_BFLOAT16)
        for (int64_t d = 0; d < D; d++)
          acc[d] += tpu_bits_f32((uint32_t)src[d] << 16) * scale;
      else
        for (int64_t d = 0; d < D; d++)
          acc[d] += tpu_f16_to_f32_simd(src[d]) * scale;
    }
  }
}

/* Bag b by sum or mean: returns the count of positions that are not padding. */
static int64_t sum_bag(bag_call *c, int64_t b, void *acc, bool f64, int64_t *rows,
                       double *scales) {
  int64_t lo, hi, count = 0;
  bag_range(c, b, &lo, &hi);
  memset(acc, 0, (size_t)c->D * (f64 ? sizeof(double) : sizeof(float)));
  for (int64_t at = lo; at < hi; at += ROW_BATCH) {
    int64_t end = at + ROW_BATCH < hi ? at + ROW_BATCH : hi;
    int64_t n = read_rows(c, at, end, rows, scales);
    add_rows(c, acc, rows, scales, n, at, end);
    count += n;
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
  int64_t e = (int64_t)tpu_dtype_size(c->wdt);
  for (int64_t d = 0; d < c->D; d++) {
    acc[d] = 0;
    arg[d * mi->strides[1]] = 0;
  }
  for (int64_t p = lo; p < hi; p++) {
    int64_t row = index_at(&c->indices, p);
    if (is_padding(c, row))
      continue;
    if (row < 0 || row >= c->V) {
      atomic_store_explicit(&c->bad, true, memory_order_relaxed);
      continue;
    }
    const char *src = c->rows + row * c->row_bytes;
    for (int64_t d = 0; d < c->D; d++) {
      double v = tpu_real_load(src + d * e, c->wdt);
      if (count == 0 || v > acc[d]) {
        acc[d] = v;
        arg[d * mi->strides[1]] = row;
      }
    }
    count++;
  }
  return count;
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

static void bags_range(int64_t begin, int64_t end, int chunk, void *arg) {
  (void)chunk;
  bag_call *c = arg;
  bool f64 = c->wdt == TPU_FLOAT64 || c->mode == MODE_MAX;
  void *acc = malloc((size_t)(c->D ? c->D : 1) * (f64 ? sizeof(double) : sizeof(float)));
  int64_t rows[ROW_BATCH];
  double scales[ROW_BATCH];
  if (!acc) { /* reported by the caller's second look */
    atomic_store_explicit(&c->bad, true, memory_order_relaxed);
    return;
  }
  for (int64_t b = begin; b < end; b++) {
    int64_t count =
        c->mode == MODE_MAX ? max_bag(c, b, acc) : sum_bag(c, b, acc, f64, rows, scales);
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
    int64_t row = index_at(&c->indices, p);
    if (!is_padding(c, row) && (row < 0 || row >= c->V))
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
    int64_t o = index_at(&c->offsets, b);
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
  const tpu_tensor *w = &call->tensors[0], *indices = &call->tensors[1],
                   *offsets = &call->tensors[2],
                   *psw = call->n_inputs == 4 ? &call->tensors[3] : NULL;
  const tpu_tensor *o = &call->tensors[call->n_inputs];
  bag_call c = {.out = o, .offset2bag = o + 1, .bag_size = o + 2,
                .max_indices = o + 3, .wdt = w->dtype, .mode = (int)call->scalars[0].i,
                .padding = call->scalars[1].i};
  atomic_init(&c.bad, false);
  if (call->n_outputs != 4 || w->ndim != 2 || !tpu_dtype_is_floating(w->dtype) ||
      tpu_dtype_is_complex(w->dtype) || (w->sizes[1] > 1 && w->strides[1] != 1) ||
      !is_index(indices) || !is_index(offsets) || offsets->dtype != indices->dtype ||
      c.mode < MODE_SUM || c.mode > MODE_MAX || (psw && c.mode != MODE_SUM))
    return tpu_error(TPU_ERR_VALUE, "embedding_bag: malformed call");
  c.V = w->sizes[0];
  c.D = w->sizes[1];
  c.N = indices->sizes[0];
  c.B = offsets->sizes[0];
  bool max = c.mode == MODE_MAX;
  if (o->ndim != 2 || o->sizes[0] != c.B || o->sizes[1] != c.D || o->dtype != w->dtype ||
      (o->sizes[1] > 1 && o->strides[1] != 1) || !is_i64(c.offset2bag, 1) ||
      (c.offset2bag->sizes[0] != 0 && c.offset2bag->sizes[0] != c.N) ||
      !is_i64(c.bag_size, 1) || c.bag_size->sizes[0] != c.B ||
      !is_i64(c.max_indices, max ? 2 : 1) || c.max_indices->sizes[0] != c.B ||
      (max && c.max_indices->sizes[1] != c.D) ||
      (psw && (psw->ndim != 1 || psw->sizes[0] != c.N || psw->dtype != w->dtype)))
    return tpu_error(TPU_ERR_VALUE, "embedding_bag: malformed outputs");
  c.indices = raw_of(indices);
  c.offsets = raw_of(offsets);
  if (psw)
    c.psw = raw_of(psw);
  c.rows = (const char *)tpu_tensor_data(w);
  c.row_bytes = w->strides[0] * (int64_t)tpu_dtype_size(w->dtype);
  c.prefetch_bytes = c.D * (int64_t)tpu_dtype_size(w->dtype);
  if (c.prefetch_bytes > PREFETCH_BYTES)
    c.prefetch_bytes = PREFETCH_BYTES;
  tpu_status st = check_offsets(&c);
  if (st != TPU_OK)
    return st;
  int64_t per_bag = c.B > 0 ? (c.N / c.B + 1) * (c.D + 1) : 1;
  int64_t grain = TPU_ITER_GRAIN / per_bag;
  tpu_parallel_for(c.B, grain > 1 ? grain : 1, bags_range, &c);
  return atomic_load(&c.bad) ? bag_index_error(&c) : TPU_OK;
}
