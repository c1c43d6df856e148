/* The activation, clamp, where, lerp, addcmul and addcdiv kernels (contract in
 * ops/tpu_ops_elementwise.h): one inner loop per loop dtype, generated from one expression per
 * dtype family (elementwise.h), each in PyTorch CPU's order of operations. */
#include "drivers/host/kernels/elementwise/elementwise.h"

#define FLOAT_OP(gen, op, kernel, expr)                                                            \
  EW_FLOATS(gen, op, expr)                                                                         \
  static const tpu_ew_op op##_op = {.loops = {EW_FLOATS(EW_ENTRY, op)}};                           \
  EW_KERNEL(kernel, op##_op)

#define NUMBER_OP(gen, op, kernel, fexpr, iexpr)                                                   \
  EW_FLOATS(gen, op, fexpr)                                                                        \
  EW_INTS(gen, op, iexpr)                                                                          \
  static const tpu_ew_op op##_op = {.loops = {EW_FLOATS(EW_ENTRY, op) EW_INTS(EW_ENTRY, op)}};     \
  EW_KERNEL(kernel, op##_op)

/* ---- clamps and threshold: std::min(std::max(a, lo), hi) ---- */
#define MAX_(x, y) ((x) < (y) ? (y) : (x))
#define MIN_(x, y) ((y) < (x) ? (y) : (x))
NUMBER_OP(EW_GEN1, clamp, tpu_kernel_clamp, a != a ? a : MIN_(MAX_(a, s0), s1),
          MIN_(MAX_(a, s0), s1))
NUMBER_OP(EW_GEN1, clamp_min, tpu_kernel_clamp_min, a != a ? a : MAX_(a, s0), MAX_(a, s0))
NUMBER_OP(EW_GEN1, clamp_max, tpu_kernel_clamp_max, a != a ? a : MIN_(a, s0), MIN_(a, s0))
NUMBER_OP(EW_GEN3, clamp_tensor, tpu_kernel_clamp_tensor,
          b != b ? b : c != c ? c : a != a ? a : MIN_(MAX_(a, b), c), MIN_(MAX_(a, b), c))
NUMBER_OP(EW_GEN2, threshold, tpu_kernel_threshold, a <= s0 ? s1 : b, a <= s0 ? s1 : b)

/* ---- gelu ---- */
#define GELU_BETA ((T)(M_2_SQRTPI * M_SQRT1_2 * 0.5))
#define GELU_TANH_BETA ((T)(M_SQRT2 * M_2_SQRTPI * 0.5))
#define GELU_KAPPA ((T)0.044715)
FLOAT_OP(EW_GEN1, gelu, tpu_kernel_gelu, a * EW_NORMAL_CDF(a))
FLOAT_OP(EW_GEN2, gelu_backward, tpu_kernel_gelu_backward,
         a * (EW_NORMAL_CDF(b) + b * (GELU_BETA * EW_EXP(b * b * (T)-0.5))))
FLOAT_OP(EW_GEN1, gelu_tanh, tpu_kernel_gelu_tanh,
         (T)0.5 * a * (1 + EW_TANH(GELU_TANH_BETA * (a + GELU_KAPPA * (a * a * a)))))

#define GELU_TANH_BACKWARD(D, T_, U, op, unused)                                                   \
  static inline T_ op##_##D##_value(T_ dy, T_ x) {                                                 \
    typedef T_ T;                                                                                  \
    T x_sq = x * x;                                                                                \
    T tanh_inner = EW_TANH(GELU_TANH_BETA * (x + GELU_KAPPA * (x_sq * x)));                        \
    T left = (T)0.5 * x, right = 1 + tanh_inner;                                                   \
    T left_derivative = (T)0.5 * right;                                                            \
    T tanh_derivative = 1 - tanh_inner * tanh_inner;                                               \
    T inner_derivative = GELU_TANH_BETA * (1 + 3 * GELU_KAPPA * x_sq);                             \
    return dy * (left_derivative + left * tanh_derivative * inner_derivative);                     \
  }                                                                                                \
  EW_GEN2(D, T_, U, op, op##_##D##_value(a, b))
FLOAT_OP(GELU_TANH_BACKWARD, gelu_tanh_backward, tpu_kernel_gelu_tanh_backward, unused)

/* ---- sigmoid family ---- */
FLOAT_OP(EW_GEN1, silu, tpu_kernel_silu, a / (1 + EW_EXP(-a)))
#define SILU_BACKWARD(D, T_, U, op, unused)                                                        \
  static inline T_ op##_##D##_value(T_ dy, T_ x) {                                                 \
    typedef T_ T;                                                                                  \
    T sigmoid = 1 / (1 + EW_EXP(-x));                                                              \
    return dy * sigmoid * (1 + x * (1 - sigmoid));                                                 \
  }                                                                                                \
  EW_GEN2(D, T_, U, op, op##_##D##_value(a, b))
FLOAT_OP(SILU_BACKWARD, silu_backward, tpu_kernel_silu_backward, unused)
FLOAT_OP(EW_GEN2, sigmoid_backward, tpu_kernel_sigmoid_backward, a * (1 - b) * b)
FLOAT_OP(EW_GEN2, tanh_backward, tpu_kernel_tanh_backward, a * fma(-b, b, (T)1)) /* as CPU: fused */

FLOAT_OP(EW_GEN1, mish, tpu_kernel_mish, a * EW_TANH(EW_LOG1P(EW_EXP(a))))
#define MISH_BACKWARD(D, T_, U, op, unused)                                                        \
  static inline T_ op##_##D##_value(T_ dy, T_ x) {                                                 \
    typedef T_ T;                                                                                  \
    T sigmoid = 1 / (1 + EW_EXP(-x));                                                              \
    T tanh_softplus = EW_TANH(EW_LOG1P(EW_EXP(x)));                                                \
    return dy * (tanh_softplus + x * sigmoid * (1 - tanh_softplus * tanh_softplus));               \
  }                                                                                                \
  EW_GEN2(D, T_, U, op, op##_##D##_value(a, b))
FLOAT_OP(MISH_BACKWARD, mish_backward, tpu_kernel_mish_backward, unused)

/* ---- softplus, elu, leaky_relu ---- */
FLOAT_OP(EW_GEN1, softplus, tpu_kernel_softplus,
         a * s0 > s1 ? a : EW_LOG1P(EW_EXP(a * s0)) / s0)
#define SOFTPLUS_BACKWARD(D, T_, U, op, unused)                                                    \
  static inline T_ op##_##D##_value(T_ dy, T_ x, T_ beta, T_ threshold) {                          \
    typedef T_ T;                                                                                  \
    T z = EW_EXP(x * beta);                                                                        \
    return x * beta > threshold ? dy : dy * z / (z + 1);                                           \
  }                                                                                                \
  EW_GEN2(D, T_, U, op, op##_##D##_value(a, b, s0, s1))
FLOAT_OP(SOFTPLUS_BACKWARD, softplus_backward, tpu_kernel_softplus_backward, unused)

FLOAT_OP(EW_GEN1, elu, tpu_kernel_elu, a <= 0 ? (EW_EXP(a * s2) - 1) * (s0 * s1) : a * s1)
FLOAT_OP(EW_GEN2, elu_backward, tpu_kernel_elu_backward,
         b > 0 ? a * s1
         : s3 != 0 ? a * s2 * (b + s0 * s1)
                   : a * s2 * (s0 * s1) * EW_EXP(b * s2))

FLOAT_OP(EW_GEN1, leaky_relu, tpu_kernel_leaky_relu, a > 0 ? a : a * s0)
FLOAT_OP(EW_GEN2, leaky_relu_backward, tpu_kernel_leaky_relu_backward, a > 0 ? b : b * s0)

/* logit_backward (grad, x; s0 = eps, negative for none): 0 outside [eps, 1 - eps], NaN outside
 * [0, 1] without eps. */
FLOAT_OP(EW_GEN2, logit_backward, tpu_kernel_logit_backward,
         s0 < 0 ? (b < 0 || b > 1 ? (T)NAN : a / (b * (1 - b)))
                : (b < s0 || b > 1 - s0 ? 0 : a / (b * (1 - b))))

/* ---- hard activations ---- */
FLOAT_OP(EW_GEN2, hardtanh_backward, tpu_kernel_hardtanh_backward, b <= s0 || b >= s1 ? 0 : a)
/* min(max(x + 3, 0), 6) with NaN propagating, as vec::maximum and vec::minimum do. */
#define RELU6_SHIFTED(x) ((x) + 3 != (x) + 3 ? (x) + 3 : MIN_(MAX_((x) + 3, (T)0), (T)6))
FLOAT_OP(EW_GEN1, hardswish, tpu_kernel_hardswish, a * RELU6_SHIFTED(a) / 6)
FLOAT_OP(EW_GEN2, hardswish_backward, tpu_kernel_hardswish_backward,
         b < -3 ? 0 : b <= 3 ? a * (b / 3 + (T)0.5) : a)
FLOAT_OP(EW_GEN1, hardsigmoid, tpu_kernel_hardsigmoid, RELU6_SHIFTED(a) / 6)
FLOAT_OP(EW_GEN2, hardsigmoid_backward, tpu_kernel_hardsigmoid_backward,
         b > -3 && b < 3 ? a * (T)(1.0f / 6) : 0) /* CPU's float constant, also for double */

/* ---- shrinks and log_sigmoid ---- */
FLOAT_OP(EW_GEN1, softshrink, tpu_kernel_softshrink,
         a > s0 ? a - s0 : a < -s0 ? a + s0 : (T)0 * a)
FLOAT_OP(EW_GEN1, hardshrink, tpu_kernel_hardshrink, a >= -s0 && a <= s0 ? 0 : a)
FLOAT_OP(EW_GEN2, shrink_backward, tpu_kernel_shrink_backward, b >= -s0 && b <= s0 ? 0 : a)
/* vec::minimum propagates NaN; so does the log1p term, so MIN_ order does not matter. */
FLOAT_OP(EW_GEN1, log_sigmoid, tpu_kernel_log_sigmoid,
         MIN_(a, (T)0) - EW_LOG1P(EW_EXP(-(T)fabs(a))))
#define LOG_SIGMOID_BACKWARD(D, T_, U, op, unused)                                                 \
  static inline T_ op##_##D##_value(T_ dy, T_ x) {                                                 \
    typedef T_ T;                                                                                  \
    T z = EW_EXP(-(T)fabs(x));                                                                     \
    T max_deriv = x < 0 ? (T)1 : (T)0, sign = x < 0 ? (T)1 : (T)-1;                                \
    return (max_deriv - sign * (z / (1 + z))) * dy;                                                \
  }                                                                                                \
  EW_GEN2(D, T_, U, op, op##_##D##_value(a, b))
FLOAT_OP(LOG_SIGMOID_BACKWARD, log_sigmoid_backward, tpu_kernel_log_sigmoid_backward, unused)

/* ---- where, lerp, addcmul, addcdiv ---- */
#define WHERE(D, T, U, op) EW_LOOP3(op##_##D, T, U, T, uint8_t, T, T, a ? b : c)
EW_FLOATS(WHERE, where)
EW_INTS(WHERE, where)
EW_BOOLS(WHERE, where)
static const tpu_ew_op where_op = {
    .loops = {EW_FLOATS(EW_ENTRY, where) EW_INTS(EW_ENTRY, where) EW_BOOLS(EW_ENTRY, where)},
    .bool_operands = TPU_EW_BOOL(1)};
EW_KERNEL(tpu_kernel_where, where_op)

/* The vectorized form of PyTorch's lerp: one fma from whichever end is nearer. */
#define LERP_VALUE(a, b, w)                                                                        \
  fma(fabs(w) < (T)0.5 ? (w) : (w) - 1, (b) - (a), fabs(w) < (T)0.5 ? (a) : (b))
FLOAT_OP(EW_GEN3, lerp, tpu_kernel_lerp, LERP_VALUE(a, b, c))
FLOAT_OP(EW_GEN2, lerp_scalar, tpu_kernel_lerp_scalar, LERP_VALUE(a, b, s0))

NUMBER_OP(EW_GEN3, addcmul, tpu_kernel_addcmul, a + s0 * b * c, (T)((U)a + (U)s0 * (U)b * (U)c))
FLOAT_OP(EW_GEN3, addcdiv, tpu_kernel_addcdiv, a + s0 * b / c)
