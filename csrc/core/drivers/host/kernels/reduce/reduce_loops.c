/* The reduction engine's loops: loaders (input dtype -> accumulation class) and, per kind and
 * class, a row loop (many values into one state) and a column loop (one value into each of many
 * states). See reduce.h.
 *
 * Row loops keep several independent partial results ("lanes") so GCC vectorizes them without
 * reassociating anything itself; the lanes are combined at the end of each call. Float lanes
 * accumulate at most one loaded piece before they are added to the double state, which keeps sums
 * of millions of floats accurate (as PyTorch's cascade sum does). Column states are double (or
 * int64), so a float only rounds where PyTorch's would: products and squares, in float. */
#include <math.h>
#include <string.h>

#include "drivers/host/kernels/reduce/reduce.h"
#include "drivers/host/engine/engine_simd.h"

/* ---- Loaders ---- */

/* Float to int64 as x86's cvttss2si/cvttsd2si (PyTorch's cast): NaN and out of range give the
 * minimum; C leaves those conversions undefined, so the range is tested first. */
static inline int64_t i64_of(double x) {
  return x >= -0x1p63 && x < 0x1p63 ? (int64_t)x : INT64_MIN;
}

/* One element of each input dtype as float (F), double (D) and int64 (I). */
#define F_BOOL(x) ((float)((x) != 0))
#define F_UINT8(x) ((float)(x))
#define F_INT8(x) ((float)(x))
#define F_INT16(x) ((float)(x))
#define F_INT32(x) ((float)(x))
#define F_INT64(x) ((float)(x))
#define F_FLOAT16(x) tpu_f16_to_f32_simd(x)
#define F_BFLOAT16(x) tpu_bf16_to_f32(x)
#define F_FLOAT32(x) (x)
#define F_FLOAT64(x) ((float)(x))
#define D_BOOL(x) ((double)((x) != 0))
#define D_UINT8(x) ((double)(x))
#define D_INT8(x) ((double)(x))
#define D_INT16(x) ((double)(x))
#define D_INT32(x) ((double)(x))
#define D_INT64(x) ((double)(x))
#define D_FLOAT16(x) ((double)tpu_f16_to_f32_simd(x))
#define D_BFLOAT16(x) ((double)tpu_bf16_to_f32(x))
#define D_FLOAT32(x) ((double)(x))
#define D_FLOAT64(x) (x)
#define I_BOOL(x) ((int64_t)((x) != 0))
#define I_UINT8(x) ((int64_t)(x))
#define I_INT8(x) ((int64_t)(x))
#define I_INT16(x) ((int64_t)(x))
#define I_INT32(x) ((int64_t)(x))
#define I_INT64(x) (x)
#define I_FLOAT16(x) i64_of(tpu_f16_to_f32_simd(x))
#define I_BFLOAT16(x) i64_of(tpu_bf16_to_f32(x))
#define I_FLOAT32(x) i64_of(x)
#define I_FLOAT64(x) i64_of(x)

#define RK_REAL_INPUTS(X)                                                                          \
  X(BOOL, uint8_t)                                                                                 \
  X(UINT8, uint8_t)                                                                                \
  X(INT8, int8_t)                                                                                  \
  X(INT16, int16_t)                                                                                \
  X(INT32, int32_t)                                                                                \
  X(INT64, int64_t)                                                                                \
  X(FLOAT16, uint16_t)                                                                             \
  X(BFLOAT16, uint16_t)                                                                            \
  X(FLOAT32, float)                                                                                \
  X(FLOAT64, double)

/* A loader: d[i] = WRAP(CONV(element i)); the dense case is its own loop so it vectorizes. */
#define LOADER(NAME, T, OUT_T, CONV, WRAP)                                                         \
  TPU_SIMD static void NAME(void *dst, const char *src, int64_t n, int64_t stride) {              \
    OUT_T *restrict d = dst;                                                                       \
    if (stride == (int64_t)sizeof(T)) {                                                            \
      const T *restrict s = (const T *)(const void *)src;                                          \
      for (int64_t i = 0; i < n; i++)                                                              \
        d[i] = WRAP(CONV(s[i]));                                                                   \
    } else {                                                                                       \
      for (int64_t i = 0; i < n; i++)                                                              \
        d[i] = WRAP(CONV(*(const T *)(const void *)(src + i * stride)));                           \
    }                                                                                              \
  }

#define KEEP(x) (x)
#define NONZERO(x) ((int64_t)((x) != 0))
#define LOADERS(DT, T)                                                                             \
  LOADER(load_f_##DT, T, float, F_##DT, KEEP)                                                      \
  LOADER(load_d_##DT, T, double, D_##DT, KEEP)                                                     \
  LOADER(load_i_##DT, T, int64_t, I_##DT, KEEP)                                                    \
  LOADER(load_b_##DT, T, int64_t, D_##DT, NONZERO)                                                 \
  LOADER(load_fabs_##DT, T, float, F_##DT, fabsf)                                                  \
  LOADER(load_dabs_##DT, T, double, D_##DT, fabs)
RK_REAL_INPUTS(LOADERS)

/* Complex inputs load as their magnitude (for norms and nonzero counts). */
#define ABS_C64_F(z) hypotf((z).re, (z).im)
#define ABS_C64_D(z) ((double)hypotf((z).re, (z).im))
#define ABS_C128_F(z) ((float)hypot((z).re, (z).im))
#define ABS_C128_D(z) hypot((z).re, (z).im)
LOADER(load_fabs_COMPLEX64, tpu_c64, float, ABS_C64_F, KEEP)
LOADER(load_dabs_COMPLEX64, tpu_c64, double, ABS_C64_D, KEEP)
LOADER(load_fabs_COMPLEX128, tpu_c128, float, ABS_C128_F, KEEP)
LOADER(load_dabs_COMPLEX128, tpu_c128, double, ABS_C128_D, KEEP)

rk_load_fn rk_loader(tpu_dtype in, rk_class cls, bool abs) {
  switch (in) {
#define LOADER_CASE(DT, T)                                                                         \
  case TPU_##DT:                                                                                   \
    return cls == RK_F ? (abs ? load_fabs_##DT : load_f_##DT)                                      \
           : cls == RK_D ? (abs ? load_dabs_##DT : load_d_##DT)                                    \
           : abs         ? NULL                                                                    \
                         : load_i_##DT;
    RK_REAL_INPUTS(LOADER_CASE)
#undef LOADER_CASE
  case TPU_COMPLEX64:
    if (!abs || cls == RK_I)
      return NULL;
    return cls == RK_F ? load_fabs_COMPLEX64 : load_dabs_COMPLEX64;
  case TPU_COMPLEX128:
    if (!abs || cls == RK_I)
      return NULL;
    return cls == RK_F ? load_fabs_COMPLEX128 : load_dabs_COMPLEX128;
  default: return NULL;
  }
}

rk_load_fn rk_bool_loader(tpu_dtype in) {
  switch (in) {
#define BOOL_LOADER_CASE(DT, T)                                                                    \
  case TPU_##DT:                                                                                   \
    return load_b_##DT;
    RK_REAL_INPUTS(BOOL_LOADER_CASE)
#undef BOOL_LOADER_CASE
  default: return NULL;
  }
}

/* Storers: float (F) or double (D) values to an output dtype, rounding once. */
#define STORER(NAME, IN_T, T, CONV)                                                                \
  TPU_SIMD static void NAME(char *dst, const void *src, int64_t n, int64_t stride) {              \
    const IN_T *restrict s = src;                                                                  \
    if (stride == (int64_t)sizeof(T)) {                                                            \
      T *restrict d = (T *)(void *)dst;                                                            \
      for (int64_t i = 0; i < n; i++)                                                              \
        d[i] = CONV(s[i]);                                                                         \
    } else {                                                                                       \
      for (int64_t i = 0; i < n; i++)                                                              \
        *(T *)(void *)(dst + i * stride) = CONV(s[i]);                                             \
    }                                                                                              \
  }
#define TO_F32(x) ((float)(x))
#define TO_F64(x) ((double)(x))
#define TO_BF16(x) tpu_f32_to_bf16((float)(x))
#define TO_F16(x) tpu_f32_to_f16((float)(x))
STORER(store_f_f32, float, float, TO_F32)
STORER(store_f_f64, float, double, TO_F64)
STORER(store_f_bf16, float, uint16_t, TO_BF16)
STORER(store_f_f16, float, uint16_t, TO_F16)
STORER(store_d_f32, double, float, TO_F32)
STORER(store_d_f64, double, double, TO_F64)
STORER(store_d_bf16, double, uint16_t, TO_BF16)
STORER(store_d_f16, double, uint16_t, TO_F16)

rk_store_fn rk_storer(tpu_dtype out, rk_class cls) {
  bool f = cls == RK_F;
  switch (out) {
  case TPU_FLOAT32: return f ? store_f_f32 : cls == RK_D ? store_d_f32 : NULL;
  case TPU_FLOAT64: return f ? store_f_f64 : cls == RK_D ? store_d_f64 : NULL;
  case TPU_BFLOAT16: return f ? store_f_bf16 : cls == RK_D ? store_d_bf16 : NULL;
  case TPU_FLOAT16: return f ? store_f_f16 : cls == RK_D ? store_d_f16 : NULL;
  default: return NULL;
  }
}

rk_class rk_class_of(tpu_dtype compute) {
  switch (compute) {
  case TPU_FLOAT16: case TPU_BFLOAT16: case TPU_FLOAT32: return RK_F;
  case TPU_FLOAT64: return RK_D;
  default: return RK_I;
  }
}

void rk_narrow(void *v, int64_t n, tpu_dtype compute) {
  float *f = v;
  int64_t *i = v;
  for (int64_t k = 0; k < n; k++) {
    switch (compute) {
    case TPU_BFLOAT16: f[k] = tpu_bf16_to_f32(tpu_f32_to_bf16(f[k])); break;
    case TPU_FLOAT16: f[k] = tpu_f16_to_f32(tpu_f32_to_f16(f[k])); break;
    case TPU_BOOL: i[k] = i[k] != 0; break;
    case TPU_UINT8: i[k] = (uint8_t)i[k]; break;
    case TPU_INT8: i[k] = (int8_t)i[k]; break;
    case TPU_INT16: i[k] = (int16_t)i[k]; break;
    case TPU_INT32: i[k] = (int32_t)i[k]; break;
    default: return;
    }
  }
}

/* ---- States ---- */

rk_state rk_state_init(rk_kind kind, rk_class cls) {
  rk_state s = {.f = 0, .g = 0, .i = 0, .idx = -1};
  switch (kind) {
  case RK_PROD: s.f = 1, s.i = 1; break;
  case RK_MAX: s.f = -INFINITY, s.i = INT64_MIN; break;
  case RK_MIN: s.f = INFINITY, s.i = INT64_MAX; break;
  default: break;
  }
  (void)cls;
  return s;
}

/* NaN-propagating "b replaces a" tests of max and min. */
static inline bool above(double b, double a) { return b > a || (b != b && a == a); }
static inline bool below(double b, double a) { return b < a || (b != b && a == a); }

void rk_merge(rk_kind kind, rk_class cls, rk_state *a, const rk_state *b) {
  bool ints = cls == RK_I;
  switch (kind) {
  case RK_SUM:
    a->f += b->f;
    a->i = (int64_t)((uint64_t)a->i + (uint64_t)b->i);
    break;
  case RK_PROD:
    a->f = cls == RK_F ? (double)((float)a->f * (float)b->f) : a->f * b->f;
    a->i = (int64_t)((uint64_t)a->i * (uint64_t)b->i);
    break;
  case RK_MAX:
    if (ints ? b->i > a->i : above(b->f, a->f))
      a->f = b->f, a->i = b->i;
    break;
  case RK_MIN:
    if (ints ? b->i < a->i : below(b->f, a->f))
      a->f = b->f, a->i = b->i;
    break;
  case RK_ARGMAX:
  case RK_ARGMIN: {
    if (b->idx < 0)
      break;
    bool max = kind == RK_ARGMAX;
    bool take = a->idx < 0 || (ints ? (max ? b->i > a->i : b->i < a->i)
                                    : (max ? above(b->f, a->f) : below(b->f, a->f)));
    if (take)
      *a = *b;
    break;
  }
  case RK_COUNT: a->i += b->i; break;
  default: a->f += b->f, a->g += b->g; break; /* SUMSQ, SUMPOW, VAR, LSE */
  }
}

/* ---- Row loops ---- */

/* The value types of the classes and their lane counts (two or four vectors of AVX-512). */
typedef float F_T;
typedef double D_T;
typedef int64_t I_T;
#define LANES 32

/* Pairwise sum of the lanes. */
#define LANE_SUM_FN(NAME, T)                                                                       \
  static inline T NAME(T *acc) {                                                                   \
    for (int s = LANES / 2; s > 0; s /= 2)                                                         \
      for (int k = 0; k < s; k++)                                                                  \
        acc[k] += acc[k + s];                                                                      \
    return acc[0];                                                                                 \
  }
LANE_SUM_FN(lane_sum_f, float)
LANE_SUM_FN(lane_sum_d, double)
LANE_SUM_FN(lane_sum_u, uint64_t)
LANE_SUM_FN(lane_sum_i, int32_t)
#define LANE_SUM(acc)                                                                              \
  _Generic((acc)[0], float: lane_sum_f, double: lane_sum_d, uint64_t: lane_sum_u,                  \
           int32_t: lane_sum_i)(acc)

/* A row loop of one lane accumulator: acc[k] = STEP(acc[k], x) over the lanes, then the tail and
 * the lanes fold into the state with FLUSH(sum). */
#define ROW_SUMLIKE(NAME, T, ACC_T, TERM, FLUSH)                                                   \
  TPU_SIMD static void NAME(rk_state *st, const void *v, int64_t n, int64_t idx0, double aux,     \
                            double p) {                                                            \
    (void)idx0, (void)aux, (void)p;                                                                \
    const T *restrict x = v;                                                                       \
    ACC_T acc[LANES] = {0};                                                                        \
    const T a = (T)aux;                                                                            \
    (void)a;                                                                                       \
    int64_t i = 0;                                                                                 \
    for (; i + LANES <= n; i += LANES)                                                             \
      for (int k = 0; k < LANES; k++)                                                              \
        acc[k] += TERM(x[i + k]);                                                                  \
    for (int k = 0; i < n; i++, k++)                                                               \
      acc[k] += TERM(x[i]);                                                                        \
    ACC_T total = LANE_SUM(acc);                                                            \
    FLUSH;                                                                                         \
  }

#define ID(x) (x)
#define SQ(x) ((x) * (x))
#define NZ(x) ((int32_t)((x) != 0))
#define LSE_F(x) tpu_expf_simd((x) - a)
#define LSE_D(x) exp((x) - a)
ROW_SUMLIKE(row_sum_F, F_T, float, ID, st->f += total)
ROW_SUMLIKE(row_sum_D, D_T, double, ID, st->f += total)
ROW_SUMLIKE(row_sum_I, I_T, uint64_t, (uint64_t), st->i = (int64_t)((uint64_t)st->i + total))
ROW_SUMLIKE(row_sumsq_F, F_T, float, SQ, st->f += total)
ROW_SUMLIKE(row_sumsq_D, D_T, double, SQ, st->f += total)
ROW_SUMLIKE(row_count_F, F_T, int32_t, NZ, st->i += total)
ROW_SUMLIKE(row_count_D, D_T, int32_t, NZ, st->i += total)
ROW_SUMLIKE(row_count_I, I_T, int32_t, NZ, st->i += total)
ROW_SUMLIKE(row_lse_F, F_T, float, LSE_F, st->f += total)
ROW_SUMLIKE(row_lse_D, D_T, double, LSE_D, st->f += total)

/* Products: lanes multiply, then fold in the class's own arithmetic. */
#define ROW_PROD(NAME, T, ACC_T, FLUSH)                                                            \
  TPU_SIMD static void NAME(rk_state *st, const void *v, int64_t n, int64_t idx0, double aux,     \
                            double p) {                                                            \
    (void)idx0, (void)aux, (void)p;                                                                \
    const T *restrict x = v;                                                                       \
    ACC_T acc[LANES];                                                                              \
    for (int k = 0; k < LANES; k++)                                                                \
      acc[k] = 1;                                                                                  \
    int64_t i = 0;                                                                                 \
    for (; i + LANES <= n; i += LANES)                                                             \
      for (int k = 0; k < LANES; k++)                                                              \
        acc[k] *= (ACC_T)x[i + k];                                                                 \
    for (int k = 0; i < n; i++, k++)                                                               \
      acc[k] *= (ACC_T)x[i];                                                                       \
    ACC_T total = 1;                                                                               \
    for (int k = 0; k < LANES; k++)                                                                \
      total *= acc[k];                                                                             \
    FLUSH;                                                                                         \
  }
ROW_PROD(row_prod_F, F_T, float, st->f = (double)((float)st->f * total))
ROW_PROD(row_prod_D, D_T, double, st->f *= total)
ROW_PROD(row_prod_I, I_T, uint64_t, st->i = (int64_t)((uint64_t)st->i * total))

/* "b replaces a" tests (NaN wins), written with | so they vectorize. */
#define GT_NAN(x, a) (((x) > (a)) | (((x) != (x)) & ((a) == (a))))
#define LT_NAN(x, a) (((x) < (a)) | (((x) != (x)) & ((a) == (a))))
#define GT_INT(x, a) ((x) > (a))
#define LT_INT(x, a) ((x) < (a))

/* max and min of floats: the lanes take plain maxima (x > a ? x : a is exactly maxps) and note
 * NaNs apart, so no lane waits on a chain of compares and blends; a NaN seen wins at the end. */
#define ROW_EXTREME_FP(NAME, T, MASK_T, INIT, OP)                                                  \
  TPU_SIMD static void NAME(rk_state *st, const void *v, int64_t n, int64_t idx0, double aux,     \
                            double p) {                                                            \
    (void)idx0, (void)aux, (void)p;                                                                \
    const T *restrict x = v;                                                                       \
    T acc[LANES];                                                                                  \
    MASK_T nan[LANES] = {0};                                                                       \
    for (int k = 0; k < LANES; k++)                                                                \
      acc[k] = INIT;                                                                               \
    int64_t i = 0;                                                                                 \
    for (; i + LANES <= n; i += LANES)                                                             \
      for (int k = 0; k < LANES; k++) {                                                            \
        T y = x[i + k];                                                                            \
        acc[k] = y OP acc[k] ? y : acc[k];                                                         \
        nan[k] |= y != y;                                                                          \
      }                                                                                            \
    for (int k = 0; i < n; i++, k++) {                                                             \
      acc[k] = x[i] OP acc[k] ? x[i] : acc[k];                                                     \
      nan[k] |= x[i] != x[i];                                                                      \
    }                                                                                              \
    T best = acc[0];                                                                               \
    MASK_T any_nan = nan[0];                                                                       \
    for (int k = 1; k < LANES; k++) {                                                              \
      best = acc[k] OP best ? acc[k] : best;                                                       \
      any_nan |= nan[k];                                                                           \
    }                                                                                              \
    double b = any_nan ? (double)NAN : (double)best;                                               \
    if (st->f != st->f)                                                                            \
      return;                                                                                      \
    if (b != b || b OP st->f)                                                                      \
      st->f = b;                                                                                   \
  }
ROW_EXTREME_FP(row_max_F, F_T, int32_t, -INFINITY, >)
ROW_EXTREME_FP(row_max_D, D_T, int64_t, -INFINITY, >)
ROW_EXTREME_FP(row_min_F, F_T, int32_t, INFINITY, <)
ROW_EXTREME_FP(row_min_D, D_T, int64_t, INFINITY, <)

/* max and min of int64 lanes. */
#define ROW_EXTREME_INT(NAME, INIT, OP)                                                            \
  TPU_SIMD static void NAME(rk_state *st, const void *v, int64_t n, int64_t idx0, double aux,     \
                            double p) {                                                            \
    (void)idx0, (void)aux, (void)p;                                                                \
    const int64_t *restrict x = v;                                                                 \
    int64_t acc[LANES];                                                                            \
    for (int k = 0; k < LANES; k++)                                                                \
      acc[k] = INIT;                                                                               \
    int64_t i = 0;                                                                                 \
    for (; i + LANES <= n; i += LANES)                                                             \
      for (int k = 0; k < LANES; k++)                                                              \
        acc[k] = x[i + k] OP acc[k] ? x[i + k] : acc[k];                                           \
    for (int k = 0; i < n; i++, k++)                                                               \
      acc[k] = x[i] OP acc[k] ? x[i] : acc[k];                                                     \
    for (int k = 0; k < LANES; k++)                                                                \
      st->i = acc[k] OP st->i ? acc[k] : st->i;                                                    \
  }
ROW_EXTREME_INT(row_max_I, INT64_MIN, >)
ROW_EXTREME_INT(row_min_I, INT64_MAX, <)

/* argmax and argmin: each lane keeps its first best value and index (local to the call, so 32-bit
 * for float lanes); the lanes then merge by value, ties going to the smaller index. */
#define ROW_ARG(NAME, T, IDX_T, BETTER, FIELD)                                                     \
  TPU_SIMD static void NAME(rk_state *st, const void *v, int64_t n, int64_t idx0, double aux,     \
                            double p) {                                                            \
    (void)aux, (void)p;                                                                            \
    const T *restrict x = v;                                                                       \
    T best[LANES];                                                                                 \
    IDX_T at[LANES];                                                                               \
    for (int k = 0; k < LANES; k++)                                                                \
      best[k] = 0, at[k] = -1;                                                                     \
    int64_t i = 0;                                                                                 \
    for (; i + LANES <= n; i += LANES)                                                             \
      for (int k = 0; k < LANES; k++) {                                                            \
        T y = x[i + k];                                                                            \
        IDX_T take = BETTER(y, best[k]) | (at[k] < 0);                                             \
        best[k] = take ? y : best[k];                                                              \
        at[k] = take ? (IDX_T)(i + k) : at[k];                                                     \
      }                                                                                            \
    for (int k = 0; i < n; i++, k++)                                                               \
      if (at[k] < 0 || BETTER(x[i], best[k]))                                                      \
        best[k] = x[i], at[k] = (IDX_T)i;                                                          \
    int w = -1;                                                                                    \
    for (int k = 0; k < LANES; k++)                                                                \
      if (at[k] >= 0 && (w < 0 || BETTER(best[k], best[w]) ||                                      \
                         (!BETTER(best[w], best[k]) && at[k] < at[w])))                            \
        w = k;                                                                                     \
    if (w >= 0 && (st->idx < 0 || BETTER(best[w], (T)st->FIELD)))                                  \
      st->FIELD = best[w], st->idx = idx0 + at[w];                                                 \
  }
ROW_ARG(row_argmax_F, F_T, int32_t, GT_NAN, f)
ROW_ARG(row_argmax_D, D_T, int64_t, GT_NAN, f)
ROW_ARG(row_argmax_I, I_T, int64_t, GT_INT, i)
ROW_ARG(row_argmin_F, F_T, int32_t, LT_NAN, f)
ROW_ARG(row_argmin_D, D_T, int64_t, LT_NAN, f)
ROW_ARG(row_argmin_I, I_T, int64_t, LT_INT, i)

/* The variance's second pass: d = x - mean, summing d (the rounding correction) and d * d. */
#define ROW_VAR(NAME, T)                                                                           \
  TPU_SIMD static void NAME(rk_state *st, const void *v, int64_t n, int64_t idx0, double aux,     \
                            double p) {                                                            \
    (void)idx0, (void)p;                                                                           \
    const T *restrict x = v;                                                                       \
    const T m = (T)aux;                                                                            \
    T s1[LANES] = {0}, s2[LANES] = {0};                                                            \
    int64_t i = 0;                                                                                 \
    for (; i + LANES <= n; i += LANES)                                                             \
      for (int k = 0; k < LANES; k++) {                                                            \
        T d = x[i + k] - m;                                                                        \
        s1[k] += d;                                                                                \
        s2[k] += d * d;                                                                            \
      }                                                                                            \
    for (int k = 0; i < n; i++, k++) {                                                             \
      T d = x[i] - m;                                                                              \
      s1[k] += d;                                                                                  \
      s2[k] += d * d;                                                                              \
    }                                                                                              \
    st->f += LANE_SUM(s1);                                                                      \
    st->g += LANE_SUM(s2);                                                                      \
  }
ROW_VAR(row_var_F, F_T)
ROW_VAR(row_var_D, D_T)

/* x^p of loaded |x|: no vector pow, so one call per element (general p is rare). */
static void row_sumpow_F(rk_state *st, const void *v, int64_t n, int64_t idx0, double aux,
                         double p) {
  (void)idx0, (void)aux;
  const float *x = v;
  float acc = 0;
  for (int64_t i = 0; i < n; i++)
    acc += powf(x[i], (float)p);
  st->f += acc;
}

static void row_sumpow_D(rk_state *st, const void *v, int64_t n, int64_t idx0, double aux,
                         double p) {
  (void)idx0, (void)aux;
  const double *x = v;
  for (int64_t i = 0; i < n; i++)
    st->f += pow(x[i], p);
}

/* ---- Column loops ---- */

#define COL_LOOP(NAME, T, BODY)                                                                    \
  TPU_SIMD static void NAME(rk_cols *c, const void *v, int64_t n, int64_t idx, const double *aux, \
                            double p) {                                                            \
    (void)idx, (void)aux, (void)p;                                                                 \
    const T *restrict x = v;                                                                       \
    double *restrict f = c->f, *restrict g = c->g;                                                 \
    int64_t *restrict ci = c->i, *restrict at = c->idx;                                            \
    (void)f, (void)g, (void)ci, (void)at;                                                          \
    for (int64_t j = 0; j < n; j++) {                                                              \
      T y = x[j];                                                                                  \
      BODY;                                                                                        \
    }                                                                                              \
  }

COL_LOOP(col_sum_F, F_T, f[j] += y)
COL_LOOP(col_sum_D, D_T, f[j] += y)
COL_LOOP(col_sum_I, I_T, ci[j] = (int64_t)((uint64_t)ci[j] + (uint64_t)y))
COL_LOOP(col_prod_F, F_T, f[j] = (double)((float)f[j] * y))
COL_LOOP(col_prod_D, D_T, f[j] *= y)
COL_LOOP(col_prod_I, I_T, ci[j] = (int64_t)((uint64_t)ci[j] * (uint64_t)y))
COL_LOOP(col_max_F, F_T, f[j] = GT_NAN((double)y, f[j]) ? y : f[j])
COL_LOOP(col_max_D, D_T, f[j] = GT_NAN(y, f[j]) ? y : f[j])
COL_LOOP(col_max_I, I_T, ci[j] = y > ci[j] ? y : ci[j])
COL_LOOP(col_min_F, F_T, f[j] = LT_NAN((double)y, f[j]) ? y : f[j])
COL_LOOP(col_min_D, D_T, f[j] = LT_NAN(y, f[j]) ? y : f[j])
COL_LOOP(col_min_I, I_T, ci[j] = y < ci[j] ? y : ci[j])
#define COL_ARG(BETTER, FIELD)                                                                     \
  int64_t take = BETTER(y, FIELD[j]) | (at[j] < 0);                                                \
  FIELD[j] = take ? y : FIELD[j];                                                                  \
  at[j] = take ? idx : at[j]
COL_LOOP(col_argmax_F, F_T, COL_ARG(GT_NAN, f))
COL_LOOP(col_argmax_D, D_T, COL_ARG(GT_NAN, f))
COL_LOOP(col_argmax_I, I_T, COL_ARG(GT_INT, ci))
COL_LOOP(col_argmin_F, F_T, COL_ARG(LT_NAN, f))
COL_LOOP(col_argmin_D, D_T, COL_ARG(LT_NAN, f))
COL_LOOP(col_argmin_I, I_T, COL_ARG(LT_INT, ci))
COL_LOOP(col_count_F, F_T, ci[j] += y != 0)
COL_LOOP(col_count_D, D_T, ci[j] += y != 0)
COL_LOOP(col_count_I, I_T, ci[j] += y != 0)
COL_LOOP(col_sumsq_F, F_T, f[j] += y * y)
COL_LOOP(col_sumsq_D, D_T, f[j] += y * y)
COL_LOOP(col_sumpow_F, F_T, f[j] += powf(y, (float)p))
COL_LOOP(col_sumpow_D, D_T, f[j] += pow(y, p))
#define COL_VAR(T)                                                                                 \
  T d = y - (T)aux[j];                                                                             \
  f[j] += d;                                                                                       \
  g[j] += d * d
COL_LOOP(col_var_F, F_T, COL_VAR(F_T))
COL_LOOP(col_var_D, D_T, COL_VAR(D_T))
COL_LOOP(col_lse_F, F_T, f[j] += tpu_expf_simd(y - (float)aux[j]))
COL_LOOP(col_lse_D, D_T, f[j] += exp(y - aux[j]))

TPU_SIMD void rk_add_f(float *restrict acc, const float *restrict v, int64_t n) {
  for (int64_t j = 0; j < n; j++)
    acc[j] += v[j];
}

TPU_SIMD void rk_flush_f(double *restrict f, float *restrict acc, int64_t n) {
  for (int64_t j = 0; j < n; j++) {
    f[j] += acc[j];
    acc[j] = 0;
  }
}

/* ---- Tables ---- */

static const rk_row_fn rows[RK_KINDS][3] = {
    [RK_SUM] = {row_sum_F, row_sum_D, row_sum_I},
    [RK_PROD] = {row_prod_F, row_prod_D, row_prod_I},
    [RK_MAX] = {row_max_F, row_max_D, row_max_I},
    [RK_MIN] = {row_min_F, row_min_D, row_min_I},
    [RK_ARGMAX] = {row_argmax_F, row_argmax_D, row_argmax_I},
    [RK_ARGMIN] = {row_argmin_F, row_argmin_D, row_argmin_I},
    [RK_COUNT] = {row_count_F, row_count_D, row_count_I},
    [RK_SUMSQ] = {row_sumsq_F, row_sumsq_D, NULL},
    [RK_SUMPOW] = {row_sumpow_F, row_sumpow_D, NULL},
    [RK_VAR] = {row_var_F, row_var_D, NULL},
    [RK_LSE] = {row_lse_F, row_lse_D, NULL},
};

static const rk_col_fn cols[RK_KINDS][3] = {
    [RK_SUM] = {col_sum_F, col_sum_D, col_sum_I},
    [RK_PROD] = {col_prod_F, col_prod_D, col_prod_I},
    [RK_MAX] = {col_max_F, col_max_D, col_max_I},
    [RK_MIN] = {col_min_F, col_min_D, col_min_I},
    [RK_ARGMAX] = {col_argmax_F, col_argmax_D, col_argmax_I},
    [RK_ARGMIN] = {col_argmin_F, col_argmin_D, col_argmin_I},
    [RK_COUNT] = {col_count_F, col_count_D, col_count_I},
    [RK_SUMSQ] = {col_sumsq_F, col_sumsq_D, NULL},
    [RK_SUMPOW] = {col_sumpow_F, col_sumpow_D, NULL},
    [RK_VAR] = {col_var_F, col_var_D, NULL},
    [RK_LSE] = {col_lse_F, col_lse_D, NULL},
};

rk_row_fn rk_row(rk_kind kind, rk_class cls) {
  return kind >= 0 && kind < RK_KINDS ? rows[kind][cls] : NULL;
}

rk_col_fn rk_col(rk_kind kind, rk_class cls) {
  return kind >= 0 && kind < RK_KINDS ? cols[kind][cls] : NULL;
}
