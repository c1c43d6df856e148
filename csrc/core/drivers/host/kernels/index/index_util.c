#include "drivers/host/kernels/index/index_util.h"

#include <stdatomic.h>

#include "drivers/host/engine/engine_pool.h"
#include "drivers/host/engine/engine_simd.h"

/* ASSIGN moves bytes: one loop per element size. */
#define ASSIGN_LOOP(N)                                                                             \
  static void assign_##N(char *restrict d, int64_t ds, const char *restrict s, int64_t ss,         \
                         int64_t n, const tpu_accum_alpha *alpha) {                                \
    (void)alpha;                                                                                   \
    if (ds == N && ss == N) {                                                                      \
      memcpy(d, s, (size_t)n * N);                                                                 \
      return;                                                                                      \
    }                                                                                              \
    for (int64_t i = 0; i < n; i++)                                                                \
      memcpy(d + i * ds, s + i * ss, N);                                                           \
  }
ASSIGN_LOOP(1)
ASSIGN_LOOP(2)
ASSIGN_LOOP(4)
ASSIGN_LOOP(8)
ASSIGN_LOOP(16)

/* Real dtypes: storage type T, math type M (uint64_t for integers, so sums wrap without UB), the
 * widening load and the narrowing store. */
#define L_INT(x) ((uint64_t)(int64_t)(x))
#define L_F16(x) tpu_f16_to_f32(x)
#define L_BF16(x) tpu_bf16_to_f32(x)
#define L_SAME(x) (x)
#define S_F16(x) tpu_f32_to_f16(x)
#define S_BF16(x) tpu_f32_to_bf16(x)
#define ALPHA_INT(a) ((uint64_t)(a)->i)
#define ALPHA_F32(a) ((float)(a)->re)
#define ALPHA_F64(a) ((a)->re)

/* The element step of ADD and MUL for one real dtype. Contiguous runs get their own call with
 * constant strides so the compiler can vectorize them. */
#define REAL_LOOPS(NAME, T, M, LOAD, STORE, ALPHA)                                                 \
  static inline void add_run_##NAME(char *restrict d, int64_t ds, const char *restrict s,          \
                                    int64_t ss, int64_t n, M alpha) {                              \
    for (int64_t i = 0; i < n; i++) {                                                              \
      T x, y;                                                                                      \
      memcpy(&x, d + i * ds, sizeof x);                                                            \
      memcpy(&y, s + i * ss, sizeof y);                                                            \
      T r = (T)STORE(LOAD(x) + alpha * LOAD(y));                                                   \
      memcpy(d + i * ds, &r, sizeof r);                                                            \
    }                                                                                              \
  }                                                                                                \
  static inline void mul_run_##NAME(char *restrict d, int64_t ds, const char *restrict s,          \
                                    int64_t ss, int64_t n) {                                       \
    for (int64_t i = 0; i < n; i++) {                                                              \
      T x, y;                                                                                      \
      memcpy(&x, d + i * ds, sizeof x);                                                            \
      memcpy(&y, s + i * ss, sizeof y);                                                            \
      T r = (T)STORE(LOAD(x) * LOAD(y));                                                           \
      memcpy(d + i * ds, &r, sizeof r);                                                            \
    }                                                                                              \
  }                                                                                                \
  TPU_TARGET_CLONES("avx2", "default") static void add_dense_##NAME(                             \
      char *d, const char *s, int64_t n, M alpha) {                                                \
    add_run_##NAME(d, sizeof(T), s, sizeof(T), n, alpha);                                          \
  }                                                                                                \
  static void add_##NAME(char *d, int64_t ds, const char *s, int64_t ss, int64_t n,                \
                         const tpu_accum_alpha *a) {                                               \
    if (ds == sizeof(T) && ss == sizeof(T))                                                        \
      add_dense_##NAME(d, s, n, ALPHA(a));                                                         \
    else                                                                                           \
      add_run_##NAME(d, ds, s, ss, n, ALPHA(a));                                                   \
  }                                                                                                \
  static void mul_##NAME(char *d, int64_t ds, const char *s, int64_t ss, int64_t n,                \
                         const tpu_accum_alpha *a) {                                               \
    (void)a;                                                                                       \
    if (ds == sizeof(T) && ss == sizeof(T))                                                        \
      mul_run_##NAME(d, sizeof(T), s, sizeof(T), n);                                               \
    else                                                                                           \
      mul_run_##NAME(d, ds, s, ss, n);                                                             \
  }

/* MAX and MIN for one real dtype, PyTorch CPU's step: a NaN src wins, else std::max/min, which
 * keep a NaN dst. The result is one of the operands, so it is stored as is. */
#define EXTREMUM_LOOPS(NAME, T, LOAD)                                                              \
  static void max_##NAME(char *d, int64_t ds, const char *s, int64_t ss, int64_t n,                \
                         const tpu_accum_alpha *a) {                                               \
    (void)a;                                                                                       \
    for (int64_t i = 0; i < n; i++) {                                                              \
      T x, y;                                                                                      \
      memcpy(&x, d + i * ds, sizeof x);                                                            \
      memcpy(&y, s + i * ss, sizeof y);                                                            \
      if (LOAD(y) != LOAD(y) || LOAD(x) < LOAD(y))                                                 \
        memcpy(d + i * ds, &y, sizeof y);                                                          \
    }                                                                                              \
  }                                                                                                \
  static void min_##NAME(char *d, int64_t ds, const char *s, int64_t ss, int64_t n,                \
                         const tpu_accum_alpha *a) {                                               \
    (void)a;                                                                                       \
    for (int64_t i = 0; i < n; i++) {                                                              \
      T x, y;                                                                                      \
      memcpy(&x, d + i * ds, sizeof x);                                                            \
      memcpy(&y, s + i * ss, sizeof y);                                                            \
      if (LOAD(y) != LOAD(y) || LOAD(y) < LOAD(x))                                                 \
        memcpy(d + i * ds, &y, sizeof y);                                                          \
    }                                                                                              \
  }
EXTREMUM_LOOPS(u8, uint8_t, L_SAME)
EXTREMUM_LOOPS(i8, int8_t, L_SAME)
EXTREMUM_LOOPS(i16, int16_t, L_SAME)
EXTREMUM_LOOPS(i32, int32_t, L_SAME)
EXTREMUM_LOOPS(i64, int64_t, L_SAME)
EXTREMUM_LOOPS(f16, uint16_t, L_F16)
EXTREMUM_LOOPS(bf16, uint16_t, L_BF16)
EXTREMUM_LOOPS(f32, float, L_SAME)
EXTREMUM_LOOPS(f64, double, L_SAME)

REAL_LOOPS(u8, uint8_t, uint64_t, L_INT, L_SAME, ALPHA_INT)
REAL_LOOPS(i8, int8_t, uint64_t, L_INT, L_SAME, ALPHA_INT)
REAL_LOOPS(i16, int16_t, uint64_t, L_INT, L_SAME, ALPHA_INT)
REAL_LOOPS(i32, int32_t, uint64_t, L_INT, L_SAME, ALPHA_INT)
REAL_LOOPS(i64, int64_t, uint64_t, L_INT, L_SAME, ALPHA_INT)
REAL_LOOPS(f16, uint16_t, float, L_F16, S_F16, ALPHA_F32)
REAL_LOOPS(bf16, uint16_t, float, L_BF16, S_BF16, ALPHA_F32)
REAL_LOOPS(f32, float, float, L_SAME, L_SAME, ALPHA_F32)
REAL_LOOPS(f64, double, double, L_SAME, L_SAME, ALPHA_F64)

/* bool: a + alpha * b != 0 is `a or (alpha and b)`; a * b is `a and b`. Bytes are read as
 * bytes, so a stored value other than 0 or 1 cannot trap. alpha converts to bool as PyTorch's
 * Scalar::to<bool>() does, true when nonzero: a floating alpha of 0.5 is true, though its integer
 * slot holds it truncated to 0. */
static void add_bool(char *d, int64_t ds, const char *s, int64_t ss, int64_t n,
                     const tpu_accum_alpha *a) {
  const bool alpha = a->i != 0 || a->re != 0 || a->im != 0;
  for (int64_t i = 0; i < n; i++)
    d[i * ds] = (char)(d[i * ds] != 0 || (alpha && s[i * ss] != 0));
}

static void mul_bool(char *d, int64_t ds, const char *s, int64_t ss, int64_t n,
                     const tpu_accum_alpha *a) {
  (void)a;
  for (int64_t i = 0; i < n; i++)
    d[i * ds] = (char)(d[i * ds] != 0 && s[i * ss] != 0);
}

#define COMPLEX_LOOPS(NAME, T, R)                                                                  \
  static void add_##NAME(char *d, int64_t ds, const char *s, int64_t ss, int64_t n,                \
                         const tpu_accum_alpha *a) {                                               \
    R ar = (R)a->re, ai = (R)a->im;                                                                \
    /* alpha 1 adds as is: (1 + 0i) * (0.75 - inf i) would be NaN - inf i. */                      \
    const bool plain = ar == 1 && ai == 0 && !a->always_scale;                                     \
    for (int64_t i = 0; i < n; i++) {                                                              \
      T x, y;                                                                                      \
      memcpy(&x, d + i * ds, sizeof x);                                                            \
      memcpy(&y, s + i * ss, sizeof y);                                                            \
      x.re += plain ? y.re : ar * y.re - ai * y.im;                                                \
      x.im += plain ? y.im : ar * y.im + ai * y.re;                                                \
      memcpy(d + i * ds, &x, sizeof x);                                                            \
    }                                                                                              \
  }                                                                                                \
  static void mul_##NAME(char *d, int64_t ds, const char *s, int64_t ss, int64_t n,                \
                         const tpu_accum_alpha *a) {                                               \
    (void)a;                                                                                       \
    for (int64_t i = 0; i < n; i++) {                                                              \
      T x, y, r;                                                                                   \
      memcpy(&x, d + i * ds, sizeof x);                                                            \
      memcpy(&y, s + i * ss, sizeof y);                                                            \
      r.re = x.re * y.re - x.im * y.im;                                                            \
      r.im = x.re * y.im + x.im * y.re;                                                            \
      memcpy(d + i * ds, &r, sizeof r);                                                            \
    }                                                                                              \
  }
COMPLEX_LOOPS(c64, tpu_c64, float)
COMPLEX_LOOPS(c128, tpu_c128, double)

static const tpu_accum_fn add_loops[TPU_COMPLEX128 + 1] = {
    [TPU_BOOL] = add_bool,   [TPU_UINT8] = add_u8,      [TPU_INT8] = add_i8,
    [TPU_INT16] = add_i16,   [TPU_INT32] = add_i32,     [TPU_INT64] = add_i64,
    [TPU_FLOAT16] = add_f16, [TPU_BFLOAT16] = add_bf16, [TPU_FLOAT32] = add_f32,
    [TPU_FLOAT64] = add_f64, [TPU_COMPLEX64] = add_c64, [TPU_COMPLEX128] = add_c128,
};

static const tpu_accum_fn mul_loops[TPU_COMPLEX128 + 1] = {
    [TPU_BOOL] = mul_bool,   [TPU_UINT8] = mul_u8,      [TPU_INT8] = mul_i8,
    [TPU_INT16] = mul_i16,   [TPU_INT32] = mul_i32,     [TPU_INT64] = mul_i64,
    [TPU_FLOAT16] = mul_f16, [TPU_BFLOAT16] = mul_bf16, [TPU_FLOAT32] = mul_f32,
    [TPU_FLOAT64] = mul_f64, [TPU_COMPLEX64] = mul_c64, [TPU_COMPLEX128] = mul_c128,
};

static const tpu_accum_fn max_loops[TPU_COMPLEX128 + 1] = {
    [TPU_UINT8] = max_u8,    [TPU_INT8] = max_i8,       [TPU_INT16] = max_i16,
    [TPU_INT32] = max_i32,   [TPU_INT64] = max_i64,     [TPU_FLOAT16] = max_f16,
    [TPU_BFLOAT16] = max_bf16, [TPU_FLOAT32] = max_f32, [TPU_FLOAT64] = max_f64,
};

static const tpu_accum_fn min_loops[TPU_COMPLEX128 + 1] = {
    [TPU_UINT8] = min_u8,    [TPU_INT8] = min_i8,       [TPU_INT16] = min_i16,
    [TPU_INT32] = min_i32,   [TPU_INT64] = min_i64,     [TPU_FLOAT16] = min_f16,
    [TPU_BFLOAT16] = min_bf16, [TPU_FLOAT32] = min_f32, [TPU_FLOAT64] = min_f64,
};

tpu_accum_fn tpu_accum_loop(tpu_dtype dtype, tpu_accum op) {
  if (op == TPU_ACCUM_ASSIGN) {
    switch (tpu_dtype_size(dtype)) {
    case 1: return assign_1;
    case 2: return assign_2;
    case 4: return assign_4;
    case 8: return assign_8;
    case 16: return assign_16;
    default: return NULL;
    }
  }
  if (!tpu_dtype_is_computable(dtype))
    return NULL;
  switch (op) {
  case TPU_ACCUM_ADD: return add_loops[dtype];
  case TPU_ACCUM_MUL: return mul_loops[dtype];
  case TPU_ACCUM_MAX: return max_loops[dtype];
  case TPU_ACCUM_MIN: return min_loops[dtype];
  default: return NULL;
  }
}

typedef struct grain_run {
  const tpu_iter *it;
  tpu_loop_fn loop;
  void *ctx;
} grain_run;

static void grain_chunk(int64_t begin, int64_t end, int chunk, void *arg) {
  (void)chunk;
  const grain_run *r = arg;
  tpu_iter_run(r->it, begin, end, r->loop, r->ctx);
}

void tpu_iter_run_grain(const tpu_iter *it, int64_t grain, tpu_loop_fn loop, void *ctx) {
  grain_run r = {.it = it, .loop = loop, .ctx = ctx};
  tpu_parallel_for(it->numel, grain < 1 ? 1 : grain, grain_chunk, &r);
}

typedef struct any_bad {
  int64_t lo, hi, size;
  atomic_bool bad;
} any_bad;

static void any_bad_loop(char **data, const int64_t *strides, int64_t n, void *ctx) {
  any_bad *a = ctx;
  bool bad = false;
  for (int64_t i = 0; i < n; i++) {
    int64_t v = tpu_index_load(data[0] + i * strides[0], a->size);
    bad |= v < a->lo || v >= a->hi;
  }
  if (bad)
    atomic_store_explicit(&a->bad, true, memory_order_relaxed);
}

static void iter_over(tpu_iter *it, const tpu_tensor *t, unsigned flags) {
  tpu_iter_init(it, t->ndim, t->sizes);
  tpu_iter_add_tensor(it, t);
  tpu_iter_build(it, flags);
}

bool tpu_index_any_bad(const tpu_tensor *index, int64_t lo, int64_t hi) {
  any_bad a = {.lo = lo, .hi = hi, .size = (int64_t)tpu_dtype_size(index->dtype)};
  atomic_init(&a.bad, false);
  tpu_iter it;
  iter_over(&it, index, 0);
  tpu_iter_run_parallel(&it, any_bad_loop, &a);
  return atomic_load(&a.bad);
}

typedef struct find_bad {
  int64_t lo, hi, size;
  bool found;
  int64_t value;
} find_bad;

static void find_bad_loop(char **data, const int64_t *strides, int64_t n, void *ctx) {
  find_bad *f = ctx;
  for (int64_t i = 0; i < n && !f->found; i++) {
    int64_t v = tpu_index_load(data[0] + i * strides[0], f->size);
    if (v < f->lo || v >= f->hi) {
      f->found = true;
      f->value = v;
    }
  }
}

bool tpu_index_find_bad(const tpu_tensor *index, int64_t lo, int64_t hi, int64_t *value) {
  find_bad f = {.lo = lo, .hi = hi, .size = (int64_t)tpu_dtype_size(index->dtype)};
  tpu_iter it;
  iter_over(&it, index, TPU_ITER_LOGICAL_ORDER);
  tpu_iter_run(&it, 0, it.numel, find_bad_loop, &f);
  *value = f.value;
  return f.found;
}

int tpu_view_shape(const tpu_tensor *t, int64_t *sizes, int64_t *byte_strides) {
  if (t->ndim == 0) {
    sizes[0] = 1;
    byte_strides[0] = 0;
    return 1;
  }
  int64_t elsize = (int64_t)tpu_dtype_size(t->dtype);
  for (int d = 0; d < t->ndim; d++) {
    sizes[d] = t->sizes[d];
    byte_strides[d] = t->sizes[d] == 1 ? 0 : t->strides[d] * elsize;
  }
  return t->ndim;
}

static void zero_loop(char **data, const int64_t *strides, int64_t n, void *ctx) {
  size_t elsize = *(const size_t *)ctx;
  if (strides[0] == (int64_t)elsize) {
    memset(data[0], 0, (size_t)n * elsize);
    return;
  }
  for (int64_t i = 0; i < n; i++)
    memset(data[0] + i * strides[0], 0, elsize);
}

void tpu_zero_fill(const tpu_tensor *t) {
  size_t elsize = tpu_dtype_size(t->dtype);
  tpu_iter it;
  iter_over(&it, t, 0);
  tpu_iter_run_parallel(&it, zero_loop, &elsize);
}
