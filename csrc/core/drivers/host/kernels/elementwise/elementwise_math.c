/* The elementwise math kernels (contract in ops/tpu_ops_elementwise.h, "Math"): inverse
 * hyperbolic functions, logaddexp, fmax and fmin, hypot, nextafter, heaviside, xlogy, and the
 * special functions of elementwise_math.h. Functions PyTorch CPU computes in the dtype itself
 * (float in float) use tgmath's forms; the special functions compute in double. */
#include "drivers/host/kernels/elementwise/elementwise.h"
#include "drivers/host/kernels/elementwise/elementwise_math.h"

#define FLOAT_OP1(op, kernel, expr)                                                                \
  EW_FLOATS(EW_GEN1, op, expr)                                                                     \
  static const tpu_ew_op op##_op = {.loops = {EW_FLOATS(EW_ENTRY, op)}};                           \
  EW_KERNEL(kernel, op##_op)
#define FLOAT_OP2(op, kernel, expr)                                                                \
  EW_FLOATS(EW_GEN2, op, expr)                                                                     \
  static const tpu_ew_op op##_op = {.loops = {EW_FLOATS(EW_ENTRY, op)}};                           \
  EW_KERNEL(kernel, op##_op)

/* ---- unary ---- */
FLOAT_OP1(acosh, tpu_kernel_acosh, EW_DOMAIN(a, acosh(a)))
FLOAT_OP1(asinh, tpu_kernel_asinh, asinh(a))
FLOAT_OP1(atanh, tpu_kernel_atanh, EW_DOMAIN(a, atanh(a)))
FLOAT_OP1(sinc, tpu_kernel_sinc,
          a == 0 ? (T)1 : EW_DOMAIN(a, sin((T)M_PI * a) / ((T)M_PI * a)))
FLOAT_OP1(angle, tpu_kernel_angle, a != a ? a : a < 0 ? (T)M_PI : (T)0)
FLOAT_OP1(entr, tpu_kernel_entr,
          a != a ? a : a > 0 ? -a * log(a) : a == 0 ? (T)0 : -(T)INFINITY)
FLOAT_OP1(lgamma, tpu_kernel_lgamma, (T)tpu_ew_lgamma(a))
FLOAT_OP1(digamma, tpu_kernel_digamma, (T)tpu_ew_digamma(a))
FLOAT_OP1(polygamma, tpu_kernel_polygamma, (T)tpu_ew_polygamma(s0, a))
FLOAT_OP1(i0, tpu_kernel_i0, (T)tpu_ew_i0(a))
FLOAT_OP1(i0e, tpu_kernel_i0e, (T)tpu_ew_i0e(a))
FLOAT_OP1(i1, tpu_kernel_i1, (T)tpu_ew_i1(a))
FLOAT_OP1(i1e, tpu_kernel_i1e, (T)tpu_ew_i1e(a))
FLOAT_OP1(ndtri, tpu_kernel_ndtri, (T)tpu_ew_ndtri(a))
FLOAT_OP1(log_ndtr, tpu_kernel_log_ndtr, (T)tpu_ew_log_ndtr(a))
FLOAT_OP1(erfcx, tpu_kernel_erfcx, (T)tpu_ew_erfcx(a))

/* signbit: bool out; integers are negative or not, bool never. */
EW_FLOATS(EW_PRED1, signbit, signbit(a) != 0)
EW_INTS(EW_PRED1, signbit, a < 0)
EW_BOOLS(EW_PRED1, signbit, 0)
static const tpu_ew_op signbit_op = {
    .loops = {EW_FLOATS(EW_ENTRY, signbit) EW_INTS(EW_ENTRY, signbit) EW_BOOLS(EW_ENTRY, signbit)},
    .bool_operands = TPU_EW_BOOL(0)};
EW_KERNEL(tpu_kernel_signbit, signbit_op)

/* ---- binary ---- */
/* logaddexp: the larger plus log1p of the smaller's share; equal infinities give themselves. */
FLOAT_OP2(logaddexp, tpu_kernel_logaddexp,
          a == b && fabs(a) == (T)INFINITY ? a
                                           : EW_DOMAIN(a + b, (a > b ? a : b) +
                                                                  log1p(exp(-fabs(a - b)))))
FLOAT_OP2(logaddexp2, tpu_kernel_logaddexp2,
          a == b && fabs(a) == (T)INFINITY
              ? a
              : EW_DOMAIN(a + b, (a > b ? a : b) +
                                     log1p(exp2(-fabs(a - b))) * (T)1.44269504088896340736))
FLOAT_OP2(hypot, tpu_kernel_hypot, hypot(a, b))
FLOAT_OP2(xlogy, tpu_kernel_xlogy, b != b ? (T)NAN : a == 0 ? (T)0 : EW_DOMAIN(a + b, a * log(b)))
FLOAT_OP2(xlog1py, tpu_kernel_xlog1py,
          b != b ? (T)NAN : a == 0 ? (T)0 : EW_DOMAIN(a + b, a * log1p(b)))
FLOAT_OP2(zeta, tpu_kernel_zeta, (T)tpu_ew_zeta(a, b))
FLOAT_OP2(igamma, tpu_kernel_igamma, (T)tpu_ew_igamma(a, b))
FLOAT_OP2(igammac, tpu_kernel_igammac, (T)tpu_ew_igammac(a, b))

/* fmax, fmin: a NaN operand gives the other; integers as maximum and minimum, bool as or, and. */
EW_FLOATS(EW_GEN2, fmax, fmax(a, b))
EW_INTS(EW_GEN2, fmax, a > b ? a : b)
EW_BOOLS(EW_GEN2, fmax, a | b)
static const tpu_ew_op fmax_op = {
    .loops = {EW_FLOATS(EW_ENTRY, fmax) EW_INTS(EW_ENTRY, fmax) EW_BOOLS(EW_ENTRY, fmax)}};
EW_KERNEL(tpu_kernel_fmax, fmax_op)

EW_FLOATS(EW_GEN2, fmin, fmin(a, b))
EW_INTS(EW_GEN2, fmin, a < b ? a : b)
EW_BOOLS(EW_GEN2, fmin, a & b)
static const tpu_ew_op fmin_op = {
    .loops = {EW_FLOATS(EW_ENTRY, fmin) EW_INTS(EW_ENTRY, fmin) EW_BOOLS(EW_ENTRY, fmin)}};
EW_KERNEL(tpu_kernel_fmin, fmin_op)

/* heaviside: the step, `b` where a is 0. */
#define HEAVISIDE(D, T, U, op) EW_GEN2(D, T, U, op, a == 0 ? b : (T)(a > 0))
EW_FLOATS(HEAVISIDE, heaviside)
EW_INTS(HEAVISIDE, heaviside)
EW_BOOLS(HEAVISIDE, heaviside)
static const tpu_ew_op heaviside_op = {.loops = {EW_FLOATS(EW_ENTRY, heaviside)
                                                     EW_INTS(EW_ENTRY, heaviside)
                                                         EW_BOOLS(EW_ENTRY, heaviside)}};
EW_KERNEL(tpu_kernel_heaviside, heaviside_op)

/* nextafter of float16 and bfloat16 (whose values reach the loop as float): the neighbour in that
 * dtype's own precision, `digits` significant bits and `tiny` its smallest subnormal. */
static inline float next_narrow(float a, float b, int digits, float tiny, float largest) {
  if (a != a || b != b)
    return a + b;
  if (a == b)
    return b;
  if (a == 0)
    return copysignf(tiny, b);
  if (isinf(a))
    return copysignf(largest, a);
  int e;
  float m = frexpf(fabsf(a), &e); /* |a| = m 2^e, m in [1/2, 1) */
  bool away = (b > a) == (a > 0);
  float step = ldexpf(1.0f, e - digits - (!away && m == 0.5f)); /* below a power of 2: finer */
  step = step < tiny ? tiny : step;
  return b > a ? a + step : a - step;
}
static inline float next_f32(float a, float b, tpu_dtype compute) {
  if (compute == TPU_BFLOAT16)
    return next_narrow(a, b, 8, 0x1p-133f, 0x1.FEp127f);
  if (compute == TPU_FLOAT16)
    return next_narrow(a, b, 11, 0x1p-24f, 65504.0f);
  return nextafterf(a, b);
}
EW_LOOP2(nextafter_FLOAT32, float, float, float, float, float, next_f32(a, b, P->call->compute))
EW_LOOP2(nextafter_FLOAT64, double, double, double, double, double, nextafter(a, b))
static const tpu_ew_op nextafter_op = {.loops = {EW_FLOATS(EW_ENTRY, nextafter)}};
EW_KERNEL(tpu_kernel_nextafter, nextafter_op)
