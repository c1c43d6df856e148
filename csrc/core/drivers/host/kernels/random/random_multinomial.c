/* The MULTINOMIAL kernel (contract in ops/tpu_ops_random.h), on the Philox stream random.c also
 * draws from. A first pass over the rows finds each row's first problem, and the call fails,
 * writing nothing, with the one PyTorch CPU reports. A second pass draws: each row's weights
 * become integers q, and a draw finds its category by a binary search of q's running sums (with
 * replacement) or by descending a Fenwick tree of q that drawn categories leave (without), so a
 * row of K categories costs O(K + n log K). Integers make the running sums exact, so the result
 * does not depend on the order they are added in, and the PJRT driver draws the same categories.
 * Both passes split the rows over the pool. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "drivers/host/engine/engine_iter.h"
#include "drivers/host/engine/engine_philox.h"
#include "drivers/host/engine/engine_pool.h"
#include "drivers/host/kernels/kernels.h"

/* Draws whose Philox words are made at once: bounds a stack buffer. */
#define DRAW_CHUNK 64

/* A row's first problem, in PyTorch CPU's terms. */
typedef enum row_error {
  ROW_OK,
  ROW_NEGATIVE, /* an element NaN or negative */
  ROW_INFINITE,
  ROW_ZERO, /* every element zero */
} row_error;

typedef struct mn {
  const char *w;
  int64_t w_row, w_col; /* byte strides */
  tpu_dtype dtype;
  char *out;
  int64_t out_row, out_col;
  int64_t rows, K, n;
  bool replacement;
  int k; /* 53 - bit_width(K - 1): q <= 2^k, so K q's sum to at most 2^53 */
  tpu_philox_stream stream;
  uint8_t *errors; /* per row, a row_error */
  atomic_bool out_of_memory;
} mn;

static double weight(const mn *m, int64_t b, int64_t j) {
  return tpu_real_load(m->w + b * m->w_row + j * m->w_col, m->dtype);
}

static row_error row_check(const mn *m, int64_t b) {
  bool all_zero = true;
  for (int64_t j = 0; j < m->K; j++) {
    double x = weight(m, b, j);
    if (!(x >= 0))
      return ROW_NEGATIVE;
    if (isinf(x))
      return ROW_INFINITE;
    all_zero = all_zero && x == 0;
  }
  return all_zero ? ROW_ZERO : ROW_OK;
}

static void check_rows(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  mn *m = ctx;
  for (int64_t b = begin; b < end; b++)
    m->errors[b] = (uint8_t)row_check(m, b);
}

/* The error PyTorch CPU raises for the rows' problems, or TPU_OK: with n = 1 or without
 * replacement it checks the whole tensor's values, then the sums; else row by row. */
static tpu_status call_error(const mn *m) {
  if (!m->replacement || m->n == 1) {
    bool invalid = false, zero = false;
    for (int64_t b = 0; b < m->rows; b++) {
      invalid = invalid || m->errors[b] == ROW_NEGATIVE || m->errors[b] == ROW_INFINITE;
      zero = zero || m->errors[b] == ROW_ZERO;
    }
    return invalid ? tpu_error(TPU_ERR_RUNTIME, TPU_MULTINOMIAL_INVALID)
           : zero  ? tpu_error(TPU_ERR_RUNTIME, TPU_MULTINOMIAL_ZERO_SUM)
                   : TPU_OK;
  }
  for (int64_t b = 0; b < m->rows; b++) {
    switch ((row_error)m->errors[b]) {
    case ROW_NEGATIVE: return tpu_error(TPU_ERR_RUNTIME, TPU_MULTINOMIAL_NEGATIVE);
    case ROW_INFINITE: return tpu_error(TPU_ERR_RUNTIME, TPU_MULTINOMIAL_INFINITE);
    case ROW_ZERO: return tpu_error(TPU_ERR_RUNTIME, TPU_MULTINOMIAL_ZERO_SUM);
    case ROW_OK: break;
    }
  }
  return TPU_OK;
}

/* Fills q[0..K) with row b's integer weights (contract) and returns their sum. The row passed
 * row_check, so its largest weight is positive and finite. */
static int64_t integer_weights(const mn *m, int64_t b, int64_t *q) {
  double largest = 0;
  for (int64_t j = 0; j < m->K; j++) {
    double x = weight(m, b, j);
    largest = x > largest ? x : largest;
  }
  int e;
  frexp(largest, &e); /* 2^(e-1) <= largest < 2^e */
  int s = m->k - e, s1 = s < 0 ? s : s / 2;
  double p1 = ldexp(1.0, s1), p2 = ldexp(1.0, s - s1);
  int64_t total = 0;
  for (int64_t j = 0; j < m->K; j++) {
    q[j] = (int64_t)ceil(weight(m, b, j) * p1 * p2);
    total += q[j];
  }
  return total;
}

/* min(floor(u * total), total - 1) for the double uniform u of words lo and hi. */
static int64_t pick(uint32_t lo, uint32_t hi, int64_t total) {
  double x = tpu_philox_uniform_f64(lo, hi) * (double)total;
  int64_t r = (int64_t)floor(x);
  return r < total ? r : total - 1;
}

static void store(const mn *m, int64_t b, int64_t s, int64_t category) {
  memcpy(m->out + b * m->out_row + s * m->out_col, &category, sizeof category);
}

/* With replacement: the first category whose running sum exceeds r. */
static void draw_with(const mn *m, int64_t b, int64_t *sums) {
  int64_t total = integer_weights(m, b, sums);
  for (int64_t j = 1; j < m->K; j++)
    sums[j] += sums[j - 1];
  uint32_t w[2 * DRAW_CHUNK];
  for (int64_t s0 = 0; s0 < m->n; s0 += DRAW_CHUNK) {
    int64_t count = m->n - s0 < DRAW_CHUNK ? m->n - s0 : DRAW_CHUNK;
    tpu_philox_words(&m->stream, 2 * (uint64_t)(b * m->n + s0), 2 * count, w);
    for (int64_t i = 0; i < count; i++) {
      int64_t r = pick(w[2 * i], w[2 * i + 1], total), lo = 0, hi = m->K - 1;
      while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (sums[mid] > r)
          hi = mid;
        else
          lo = mid + 1;
      }
      store(m, b, s0 + i, lo);
    }
  }
}

/* Without replacement: tree[1..K] is a Fenwick tree of q (tree[i] sums q over (i - lowbit(i),
 * i]); a drawn category's q leaves it and becomes -1 in q. */
static void draw_without(const mn *m, int64_t b, int64_t *q, int64_t *tree) {
  const int64_t K = m->K;
  int64_t total = integer_weights(m, b, q), top = 1, first_left = 0;
  for (int64_t i = 1; i <= K; i++)
    tree[i] = q[i - 1];
  for (int64_t i = 1; i <= K; i++)
    if (i + (i & -i) <= K)
      tree[i + (i & -i)] += tree[i];
  while (top * 2 <= K)
    top *= 2;
  uint32_t w[2 * DRAW_CHUNK];
  for (int64_t s0 = 0; s0 < m->n; s0 += DRAW_CHUNK) {
    int64_t count = m->n - s0 < DRAW_CHUNK ? m->n - s0 : DRAW_CHUNK;
    tpu_philox_words(&m->stream, 2 * (uint64_t)(b * m->n + s0), 2 * count, w);
    for (int64_t i = 0; i < count; i++) {
      int64_t j = 0;
      if (total > 0) { /* the largest j whose running sum before it is at most r */
        int64_t r = pick(w[2 * i], w[2 * i + 1], total);
        for (int64_t step = top; step > 0; step /= 2)
          if (j + step <= K && tree[j + step] <= r)
            r -= tree[j += step];
        for (int64_t t = j + 1; t <= K; t += t & -t)
          tree[t] -= q[j];
        total -= q[j];
      } else { /* only zero weights are left: the first category not drawn */
        while (q[first_left] < 0)
          first_left++;
        j = first_left;
      }
      q[j] = -1;
      store(m, b, s0 + i, j);
    }
  }
}

static void draw_rows(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  mn *m = ctx;
  int64_t *scratch = malloc((size_t)(2 * m->K + 1) * sizeof *scratch);
  if (!scratch) {
    atomic_store(&m->out_of_memory, true);
    return;
  }
  for (int64_t b = begin; b < end; b++) {
    if (m->replacement)
      draw_with(m, b, scratch);
    else
      draw_without(m, b, scratch, scratch + m->K);
  }
  free(scratch);
}

static bool supported(const tpu_op_call *call) {
  const tpu_tensor *w = &call->tensors[0], *out = &call->tensors[1];
  return call->n_inputs == 1 && call->n_outputs == 1 && tpu_dtype_is_floating(w->dtype) &&
         out->dtype == TPU_INT64 && w->ndim == 2 && out->ndim == 2 &&
         w->sizes[0] == out->sizes[0] && w->sizes[1] >= 1 && w->sizes[1] <= (1 << 24) &&
         out->sizes[1] >= 1 && (call->scalars[0].i != 0 || out->sizes[1] <= w->sizes[1]);
}

tpu_status tpu_kernel_multinomial(const tpu_op_call *call) {
  if (!supported(call))
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "multinomial: unsupported call");
  const tpu_tensor *w = &call->tensors[0], *out = &call->tensors[1];
  int64_t w_size = (int64_t)tpu_dtype_size(w->dtype), out_size = (int64_t)sizeof(int64_t);
  mn m = {.w = tpu_tensor_data(w), .w_row = w->strides[0] * w_size,
          .w_col = w->strides[1] * w_size, .dtype = w->dtype, .out = tpu_tensor_data(out),
          .out_row = out->strides[0] * out_size, .out_col = out->strides[1] * out_size,
          .rows = w->sizes[0], .K = w->sizes[1], .n = out->sizes[1],
          .replacement = call->scalars[0].i != 0, .k = 53,
          .stream = tpu_philox_stream_of(call->scalars[2].u, call->scalars[3].u)};
  for (int64_t left = m.K - 1; left > 0; left /= 2)
    m.k--;
  atomic_init(&m.out_of_memory, false);
  if (m.rows == 0)
    return TPU_OK;
  m.errors = malloc((size_t)m.rows);
  if (!m.errors)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "multinomial: cannot allocate %lld rows",
                     (long long)m.rows);
  int64_t grain = 1 + TPU_ITER_GRAIN / (m.K + m.n);
  tpu_parallel_for(m.rows, grain, check_rows, &m);
  tpu_status st = call_error(&m);
  free(m.errors);
  if (st != TPU_OK)
    return st;
  tpu_parallel_for(m.rows, grain, draw_rows, &m);
  if (atomic_load(&m.out_of_memory))
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "multinomial: cannot allocate %lld categories",
                     (long long)m.K);
  return TPU_OK;
}
