/* The unary elementwise kernels (contract in ops/tpu_ops_elementwise.h): one inner loop per loop
 * dtype, generated from one expression per dtype family (elementwise.h); exp, log, tanh and erf
 * of float take elementwise.h's branch-free forms so that the loops vectorize. */
#include "drivers/host/kernels/elementwise/elementwise.h"

#define FLOAT_UNARY(op, kernel, expr)                                                              \
  EW_FLOATS(EW_GEN1, op, expr)                                                                     \
  static const tpu_ew_op op##_op = {.loops = {EW_FLOATS(EW_ENTRY, op)}};                           \
  EW_KERNEL(kernel, op##_op)

/* A math function with a domain: the NaN it makes from a number is the positive one (EW_DOMAIN). */
#define DOMAIN_UNARY(op, kernel, expr) FLOAT_UNARY(op, kernel, EW_DOMAIN(a, expr))

/* Ops that are the identity on integers (rounding) or defined for them by their own expression. */
#define ALL_UNARY(op, kernel, fexpr, iexpr)                                                        \
  EW_FLOATS(EW_GEN1, op, fexpr)                                                                    \
  EW_INTS(EW_GEN1, op, iexpr)                                                                      \
  static const tpu_ew_op op##_op = {.loops = {EW_FLOATS(EW_ENTRY, op) EW_INTS(EW_ENTRY, op)}};     \
  EW_KERNEL(kernel, op##_op)

ALL_UNARY(neg, tpu_kernel_neg, -a, (T)(0 - (U)a))
ALL_UNARY(abs, tpu_kernel_abs, fabs(a), a < 0 ? (T)(0 - (U)a) : a)
ALL_UNARY(floor, tpu_kernel_floor, floor(a), a)
ALL_UNARY(ceil, tpu_kernel_ceil, ceil(a), a)
ALL_UNARY(round, tpu_kernel_round, nearbyint(a), a)
ALL_UNARY(trunc, tpu_kernel_trunc, trunc(a), a)
FLOAT_UNARY(nan_to_num, tpu_kernel_nan_to_num,
            a != a ? s0 : a == (T)INFINITY ? s1 : a == -(T)INFINITY ? s2 : a)

/* sign: NaN gives 0, as PyTorch's vectorized kernel does. */
EW_FLOATS(EW_GEN1, sign, (T)((0 < a) - (a < 0)))
EW_INTS(EW_GEN1, sign, (T)((0 < a) - (a < 0)))
EW_BOOLS(EW_GEN1, sign, a)
static const tpu_ew_op sign_op = {
    .loops = {EW_FLOATS(EW_ENTRY, sign) EW_INTS(EW_ENTRY, sign) EW_BOOLS(EW_ENTRY, sign)}};
EW_KERNEL(tpu_kernel_sign, sign_op)

DOMAIN_UNARY(sqrt, tpu_kernel_sqrt, sqrt(a))
DOMAIN_UNARY(rsqrt, tpu_kernel_rsqrt, 1 / sqrt(a))
FLOAT_UNARY(reciprocal, tpu_kernel_reciprocal, 1 / a)
FLOAT_UNARY(exp, tpu_kernel_exp, EW_EXP(a))
FLOAT_UNARY(exp2, tpu_kernel_exp2, exp2(a))
FLOAT_UNARY(expm1, tpu_kernel_expm1, expm1(a))
DOMAIN_UNARY(log, tpu_kernel_log, EW_LOG(a))
DOMAIN_UNARY(log2, tpu_kernel_log2, log2(a))
DOMAIN_UNARY(log10, tpu_kernel_log10, log10(a))
DOMAIN_UNARY(log1p, tpu_kernel_log1p, EW_LOG1P(a))
DOMAIN_UNARY(sin, tpu_kernel_sin, sin(a))
DOMAIN_UNARY(cos, tpu_kernel_cos, cos(a))
DOMAIN_UNARY(tan, tpu_kernel_tan, tan(a))
FLOAT_UNARY(tanh, tpu_kernel_tanh, EW_TANH(a))
FLOAT_UNARY(sinh, tpu_kernel_sinh, sinh(a))
FLOAT_UNARY(cosh, tpu_kernel_cosh, cosh(a))
DOMAIN_UNARY(asin, tpu_kernel_asin, asin(a))
DOMAIN_UNARY(acos, tpu_kernel_acos, acos(a))
FLOAT_UNARY(atan, tpu_kernel_atan, atan(a))
FLOAT_UNARY(erf, tpu_kernel_erf, EW_ERF(a))
FLOAT_UNARY(erfc, tpu_kernel_erfc, erfc(a))
FLOAT_UNARY(sigmoid, tpu_kernel_sigmoid, 1 / (1 + EW_EXP(-a)))
FLOAT_UNARY(frac, tpu_kernel_frac, a - trunc(a))

/* erfinv in double whatever the dtype: Giles' single-precision approximation ("Approximating the
 * erfinv function", 2010) refined by two Newton steps on libm's erf, which square its error twice;
 * float results are then rounded once. */
static double erfinv_f64(double y) {
  if (!(fabs(y) < 1))
    return y == 1 ? INFINITY : y == -1 ? -INFINITY : NAN;
  double w = -log((1 - y) * (1 + y)), p;
  if (w < 5) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = sqrt(w) - 3;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double x = p * y;
  for (int i = 0; i < 2; i++)
    x -= (erf(x) - y) / (M_2_SQRTPI * exp(-x * x));
  return x;
}
FLOAT_UNARY(erfinv, tpu_kernel_erfinv, (T)erfinv_f64(a))

/* logit with s0 = eps (negative: none): the input clamped to [eps, 1 - eps] first. */
DOMAIN_UNARY(logit, tpu_kernel_logit,
             log((s0 < 0 ? a : a < s0 ? s0 : a > 1 - s0 ? 1 - s0 : a) /
                 (1 - (s0 < 0 ? a : a < s0 ? s0 : a > 1 - s0 ? 1 - s0 : a))))
FLOAT_UNARY(round_decimals, tpu_kernel_round_decimals,
            s1 != 0 ? nearbyint(a / s0) * s0 : nearbyint(a * s0) / s0)

/* pow with a scalar exponent s0: PyTorch CPU computes these exponents without pow(). Each form is
 * its own loop so that every one vectorizes. */
#define POW_FORMS(D, T, U, unused)                                                                 \
  EW_LOOP1(pow_sq_##D, T, U, T, T, a * a)                                                          \
  EW_LOOP1(pow_cube_##D, T, U, T, T, a * a * a)                                                    \
  EW_LOOP1(pow_sqrt_##D, T, U, T, T, EW_DOMAIN(a, sqrt(a)))                                        \
  EW_LOOP1(pow_rsqrt_##D, T, U, T, T, EW_DOMAIN(a, 1 / sqrt(a)))                                   \
  EW_LOOP1(pow_recip_##D, T, U, T, T, 1 / a)                                                       \
  EW_LOOP1(pow_rsq_##D, T, U, T, T, 1 / (a * a))                                                   \
  EW_LOOP1(pow_any_##D, T, U, T, T, EW_DOMAIN(a + s0, pow(a, s0)))                                 \
  static void pow_scalar_##D(char **data, int64_t n, const tpu_ew_ctx *P) {                        \
    T e = EW_PARAM(T, 0);                                                                          \
    tpu_ew_loop loop = e == 2 ? pow_sq_##D : e == 3 ? pow_cube_##D : e == 0.5 ? pow_sqrt_##D       \
                     : e == -0.5 ? pow_rsqrt_##D : e == -1 ? pow_recip_##D : e == -2 ? pow_rsq_##D \
                     : pow_any_##D;                                                                \
    loop(data, n, P);                                                                              \
  }
EW_FLOATS(POW_FORMS, unused)

/* Integer bases with an integer exponent s0 >= 0 (the caller refuses negative ones): powers by
 * squaring, wrapping like PyTorch's. */
#define POW_INT(D, T, U, unused)                                                                   \
  static inline T powu_##D(T a, int64_t exponent) {                                                \
    U result = 1, base = (U)a;                                                                     \
    for (uint64_t e = (uint64_t)exponent; e; e >>= 1) {                                            \
      if (e & 1)                                                                                   \
        result *= base;                                                                            \
      base *= base;                                                                                \
    }                                                                                              \
    return (T)result;                                                                              \
  }                                                                                                \
  EW_LOOP1(pow_scalar_##D, int64_t, U, T, T, powu_##D(a, s0))
EW_INTS(POW_INT, unused)
static const tpu_ew_op pow_scalar_op = {
    .loops = {EW_FLOATS(EW_ENTRY, pow_scalar) EW_INTS(EW_ENTRY, pow_scalar)}};
EW_KERNEL(tpu_kernel_pow_scalar, pow_scalar_op)

EW_INTS(EW_GEN1, bitwise_not, (T)~a)
EW_BOOLS(EW_GEN1, bitwise_not, !a)
static const tpu_ew_op bitwise_not_op = {
    .loops = {EW_INTS(EW_ENTRY, bitwise_not) EW_BOOLS(EW_ENTRY, bitwise_not)}};
EW_KERNEL(tpu_kernel_bitwise_not, bitwise_not_op)

/* Predicates: bool out; integers and bool are never NaN or infinite. */
#define PREDICATE_OP(op, kernel, fexpr, iexpr)                                                     \
  EW_FLOATS(EW_PRED1, op, fexpr)                                                                   \
  EW_INTS(EW_PRED1, op, iexpr)                                                                     \
  EW_BOOLS(EW_PRED1, op, iexpr)                                                                    \
  static const tpu_ew_op op##_op = {                                                               \
      .loops = {EW_FLOATS(EW_ENTRY, op) EW_INTS(EW_ENTRY, op) EW_BOOLS(EW_ENTRY, op)},             \
      .bool_operands = TPU_EW_BOOL(0)};                                                            \
  EW_KERNEL(kernel, op##_op)

PREDICATE_OP(logical_not, tpu_kernel_logical_not, a == 0, a == 0)
PREDICATE_OP(isnan, tpu_kernel_isnan, a != a, 0)
PREDICATE_OP(isinf, tpu_kernel_isinf, fabs(a) == (T)INFINITY, 0)
PREDICATE_OP(isposinf, tpu_kernel_isposinf, a == (T)INFINITY, 0)
PREDICATE_OP(isneginf, tpu_kernel_isneginf, a == -(T)INFINITY, 0)
PREDICATE_OP(isfinite, tpu_kernel_isfinite, a - a == 0, 1)
