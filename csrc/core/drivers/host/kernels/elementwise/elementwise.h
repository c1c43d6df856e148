/* Private to the elementwise kernels: the macros that generate their inner loops, one per loop
 * dtype, and the vectorizable float math those loops call.
 *
 * A loop body is one expression of the inputs a, b, c, d (already in the loop's C types; a bool
 * operand is a uint8_t 0 or 1) and of the op's parameters s0..s3 (call->scalars 0..3 as the loop's
 * parameter type S). Each generated loop runs on dense operands (engine_elementwise.h) and is built
 * for AVX-512, AVX2+FMA and baseline x86-64, picked at load time (GCC's target_clones), so plain C
 * loops vectorize for the machine. Loops carry no restrict: an output may be the very memory of an
 * input, and GCC's alias checks keep the vector path for that exact overlap. */
#ifndef TPU_HOST_KERNELS_ELEMENTWISE_H
#define TPU_HOST_KERNELS_ELEMENTWISE_H

#include <stdint.h>
#include <string.h>
#include <tgmath.h> /* loops written once for float and double call each type's libm function */

#include "drivers/host/kernels/kernels.h"
#include "drivers/host/engine/engine_simd.h"
#include "drivers/host/engine/engine_elementwise.h"

/* Loops are written once for signed and unsigned types: `x < 0` or `b == -1` is sometimes always
 * false (GCC's -Wtype-limits, clang's -Wtautological-constant-out-of-range-compare). */
#pragma GCC diagnostic ignored "-Wtype-limits"
#ifdef __clang__
#pragma clang diagnostic ignored "-Wtautological-constant-out-of-range-compare"
#endif

#define EW_CLONES TPU_SIMD

/* The parameters as the loop's parameter type S. */
#define EW_PARAM(S, k)                                                                             \
  _Generic((S)0, float: P->f32[k], double: P->f64[k], default: (S)P->i64[k])
#define EW_PARAMS(S)                                                                               \
  __attribute__((unused)) const S s0 = EW_PARAM(S, 0), s1 = EW_PARAM(S, 1), s2 = EW_PARAM(S, 2),   \
                                  s3 = EW_PARAM(S, 3)

/* Inside a loop, T is the parameter type (and, for ops of one type, every operand's type) and U
 * the unsigned type integer arithmetic wraps in (signed overflow is undefined in C; PyTorch's
 * integer ops wrap), so loop expressions can name them. */
#define EW_TYPES(S_, U_)                                                                           \
  typedef S_ T __attribute__((unused));                                                            \
  typedef U_ U __attribute__((unused));                                                            \
  EW_PARAMS(T)

#define EW_LOOP1(name, S_, U_, TO, TA, expr)                                                       \
  EW_CLONES static void name(char **data, int64_t n, const tpu_ew_ctx *P) {                        \
    EW_TYPES(S_, U_);                                                                              \
    TO *o = (TO *)data[0];                                                                         \
    const TA *pa = (const TA *)data[1];                                                            \
    for (int64_t i = 0; i < n; i++) {                                                              \
      TA a = pa[i];                                                                                \
      (void)a; /* predicates of integers ignore it */                                              \
      o[i] = (TO)(expr);                                                                           \
    }                                                                                              \
  }

#define EW_LOOP2(name, S_, U_, TO, TA, TB, expr)                                                   \
  EW_CLONES static void name(char **data, int64_t n, const tpu_ew_ctx *P) {                        \
    EW_TYPES(S_, U_);                                                                              \
    TO *o = (TO *)data[0];                                                                         \
    const TA *pa = (const TA *)data[1];                                                            \
    const TB *pb = (const TB *)data[2];                                                            \
    for (int64_t i = 0; i < n; i++) {                                                              \
      TA a = pa[i];                                                                                \
      TB b = pb[i];                                                                                \
      o[i] = (TO)(expr);                                                                           \
    }                                                                                              \
  }

#define EW_LOOP3(name, S_, U_, TO, TA, TB, TC, expr)                                               \
  EW_CLONES static void name(char **data, int64_t n, const tpu_ew_ctx *P) {                        \
    EW_TYPES(S_, U_);                                                                              \
    TO *o = (TO *)data[0];                                                                         \
    const TA *pa = (const TA *)data[1];                                                            \
    const TB *pb = (const TB *)data[2];                                                            \
    const TC *pc = (const TC *)data[3];                                                            \
    for (int64_t i = 0; i < n; i++) {                                                              \
      TA a = pa[i];                                                                                \
      TB b = pb[i];                                                                                \
      TC c = pc[i];                                                                                \
      o[i] = (TO)(expr);                                                                           \
    }                                                                                              \
  }

/* Applies X(DTYPE, T, U, ...) to every dtype of a family: its C type T and wrapping type U. */
#define EW_FLOATS(X, ...)                                                                          \
  X(FLOAT32, float, float, __VA_ARGS__) X(FLOAT64, double, double, __VA_ARGS__)
#define EW_INTS(X, ...)                                                                            \
  X(UINT8, uint8_t, uint32_t, __VA_ARGS__) X(INT8, int8_t, uint32_t, __VA_ARGS__)                  \
  X(INT16, int16_t, uint32_t, __VA_ARGS__) X(INT32, int32_t, uint32_t, __VA_ARGS__)                \
  X(INT64, int64_t, uint64_t, __VA_ARGS__)
#define EW_BOOLS(X, ...) X(BOOL, uint8_t, uint32_t, __VA_ARGS__)

/* Generators for EW_FLOATS/EW_INTS/EW_BOOLS: unary, binary and ternary ops whose operands all have
 * the loop type, and predicates whose output is bool. */
#define EW_GEN1(D, T, U, op, expr) EW_LOOP1(op##_##D, T, U, T, T, expr)
#define EW_GEN2(D, T, U, op, expr) EW_LOOP2(op##_##D, T, U, T, T, T, expr)
#define EW_GEN3(D, T, U, op, expr) EW_LOOP3(op##_##D, T, U, T, T, T, T, expr)
#define EW_PRED1(D, T, U, op, expr) EW_LOOP1(op##_##D, T, U, uint8_t, T, expr)
#define EW_PRED2(D, T, U, op, expr) EW_LOOP2(op##_##D, T, U, uint8_t, T, T, expr)

/* Table entries: [TPU_D] = op_D for each dtype of a family. */
#define EW_ENTRY(D, T, U, op) [TPU_##D] = op##_##D,

/* The kernel of a core op: runs `op`'s table through the engine. The table is also published as
 * fn##_table for tpu_ew_op_of. */
#define EW_KERNEL(fn, table)                                                                       \
  const tpu_ew_op *const fn##_table = &table;                                                      \
  tpu_status fn(const tpu_op_call *call) { return tpu_ew_run(call, &table); }

#define EW_DECLARE_TABLE(id, kernel) extern const tpu_ew_op *const kernel##_table;
TPU_HOST_KERNELS_ELEMENTWISE(EW_DECLARE_TABLE)
#undef EW_DECLARE_TABLE

/* Integer division by zero: loops store 0 and flag it; the engine's caller raises the error. */
static inline void ew_flag_zero_division(const tpu_ew_ctx *P) {
  __atomic_store_n(P->failed, 1, __ATOMIC_RELAXED);
}

/* ---- float math, written so loops over it vectorize (no calls, no branches). Polynomials use
 * fmaf: one instruction per term where the clone has FMA (an exact libm call elsewhere). ---- */

/* erf within about 2 ulp: its Taylor series below 0.5, above it 1 - erfc with Numerical Recipes'
 * Chebyshev fit of erfc (relative error below 1.2e-7), whose error vanishes against 1. */
static inline float ew_erff(float x) {
  float z = fabsf(x), z2 = x * x;
  float p = -1.0f / 75600;
  p = fmaf(p, z2, 1.0f / 9360);
  p = fmaf(p, z2, -1.0f / 1320);
  p = fmaf(p, z2, 1.0f / 216);
  p = fmaf(p, z2, -1.0f / 42);
  p = fmaf(p, z2, 1.0f / 10);
  p = fmaf(p, z2, -1.0f / 3);
  p = fmaf(p, z2, 1.0f);
  float small = x * 1.12837916709551257f * p;
  float t = 1.0f / fmaf(0.5f, z, 1.0f);
  float q = 0.17087277f;
  q = fmaf(q, t, -0.82215223f);
  q = fmaf(q, t, 1.48851587f);
  q = fmaf(q, t, -1.13520398f);
  q = fmaf(q, t, 0.27886807f);
  q = fmaf(q, t, -0.18628806f);
  q = fmaf(q, t, 0.09678418f);
  q = fmaf(q, t, 0.37409196f);
  q = fmaf(q, t, 1.00002368f);
  q = fmaf(q, t, -1.26551223f);
  float erfc = t * tpu_expf_simd(q - z2);
  float large = copysignf(1.0f - erfc, x);
  return z < 0.5f ? small : large;
}

/* The standard normal CDF for gelu, 0.5 * (1 + erf(x / sqrt 2)), without exp: Abramowitz and
 * Stegun 7.1.28, erf(z) = 1 - (1 + a1 z + ... + a6 z^6)^-16 for z >= 0 (absolute error 3e-7,
 * about 1e-6 once rounded in float, below PyTorch CPU's own gelu error of 1.2e-6). The tail is
 * computed as 0.5 * that power, so it keeps its relative accuracy where 1 + erf would cancel. */
static inline float ew_normal_cdff(float x) {
  float z = fabsf(x) * 0.707106781186547524f;
  float p = 0.0000430638f;
  p = fmaf(p, z, 0.0002765672f);
  p = fmaf(p, z, 0.0001520143f);
  p = fmaf(p, z, 0.0092705272f);
  p = fmaf(p, z, 0.0422820123f);
  p = fmaf(p, z, 0.0705230784f);
  float b = fmaf(p, z, 1.0f);
  b = b * b, b = b * b, b = b * b, b = b * b;
  float half_tail = 0.5f / b;
  return x < 0 ? half_tail : 1.0f - half_tail;
}

/* Type-generic math for expressions shared by the float and double loops: float takes the
 * vectorizable versions above, double takes libm. */
static inline double ew_exp_f64(double x) { return exp(x); }
static inline double ew_tanh_f64(double x) { return tanh(x); }
static inline double ew_erf_f64(double x) { return erf(x); }
static inline double ew_log_f64(double x) { return log(x); }
static inline double ew_log1p_f64(double x) { return log1p(x); }
#define EW_EXP(x) _Generic((x), float: tpu_expf_simd, double: ew_exp_f64)(x)
#define EW_LOG(x) _Generic((x), float: tpu_logf_simd, double: ew_log_f64)(x)
#define EW_LOG1P(x) _Generic((x), float: tpu_log1pf_simd, double: ew_log1p_f64)(x)
#define EW_TANH(x) _Generic((x), float: tpu_tanhf_simd, double: ew_tanh_f64)(x)
#define EW_ERF(x) _Generic((x), float: ew_erff, double: ew_erf_f64)(x)
static inline double ew_normal_cdf_f64(double x) { return 0.5 * (1 + erf(x * M_SQRT1_2)); }
#define EW_NORMAL_CDF(x) _Generic((x), float: ew_normal_cdff, double: ew_normal_cdf_f64)(x)

/* The result r of a math function of x, with a NaN it makes from a number (x outside its domain:
 * log2(-1), sqrt(-1), asin(2), sin(inf)) made the positive quiet NaN, CUDA's default NaN: x86's
 * default NaN is negative, and libm returns either sign. A NaN x passes through as it is. */
static inline float ew_domain_nanf(float x, float r) { return r != r && x == x ? NAN : r; }
static inline double ew_domain_nan_f64(double x, double r) {
  return r != r && x == x ? (double)NAN : r;
}
#define EW_DOMAIN(x, r) _Generic((r), float: ew_domain_nanf, double: ew_domain_nan_f64)(x, r)

#endif
