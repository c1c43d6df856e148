/* The elementwise family's ops: X(ID, "name", host kernel) per op; see ops/tpu_op.h. Every one
 * runs through the elementwise engine (drivers/host/tpu_elementwise.h); each kernel file's comment
 * gives its ops' operands and scalars: kernels_elementwise_binary.c (arithmetic, comparisons,
 * logical and bitwise ops), kernels_elementwise_unary.c (math, rounding, predicates) and
 * kernels_elementwise_nn.c (activations and their backward, clamps, where, lerp, addcmul/div). */
#ifndef TPU_OPS_ELEMENTWISE_H
#define TPU_OPS_ELEMENTWISE_H

#define TPU_OPS_ELEMENTWISE(X) \
  X(ADD, "add", tpu_kernel_add) \
  X(MUL, "mul", tpu_kernel_mul) \
  X(DIV, "div", tpu_kernel_div) \
  X(DIV_TRUNC, "div_trunc", tpu_kernel_div_trunc) \
  X(DIV_FLOOR, "div_floor", tpu_kernel_div_floor) \
  X(REMAINDER, "remainder", tpu_kernel_remainder) \
  X(FMOD, "fmod", tpu_kernel_fmod) \
  X(ATAN2, "atan2", tpu_kernel_atan2) \
  X(COPYSIGN, "copysign", tpu_kernel_copysign) \
  X(POW, "pow", tpu_kernel_pow) \
  X(MAXIMUM, "maximum", tpu_kernel_maximum) \
  X(MINIMUM, "minimum", tpu_kernel_minimum) \
  X(EQ, "eq", tpu_kernel_eq) \
  X(NE, "ne", tpu_kernel_ne) \
  X(LT, "lt", tpu_kernel_lt) \
  X(LE, "le", tpu_kernel_le) \
  X(GT, "gt", tpu_kernel_gt) \
  X(GE, "ge", tpu_kernel_ge) \
  X(LOGICAL_AND, "logical_and", tpu_kernel_logical_and) \
  X(LOGICAL_OR, "logical_or", tpu_kernel_logical_or) \
  X(LOGICAL_XOR, "logical_xor", tpu_kernel_logical_xor) \
  X(BITWISE_AND, "bitwise_and", tpu_kernel_bitwise_and) \
  X(BITWISE_OR, "bitwise_or", tpu_kernel_bitwise_or) \
  X(BITWISE_XOR, "bitwise_xor", tpu_kernel_bitwise_xor) \
  X(NEG, "neg", tpu_kernel_neg) \
  X(ABS, "abs", tpu_kernel_abs) \
  X(SIGN, "sign", tpu_kernel_sign) \
  X(SQRT, "sqrt", tpu_kernel_sqrt) \
  X(RSQRT, "rsqrt", tpu_kernel_rsqrt) \
  X(RECIPROCAL, "reciprocal", tpu_kernel_reciprocal) \
  X(EXP, "exp", tpu_kernel_exp) \
  X(EXP2, "exp2", tpu_kernel_exp2) \
  X(EXPM1, "expm1", tpu_kernel_expm1) \
  X(LOG, "log", tpu_kernel_log) \
  X(LOG2, "log2", tpu_kernel_log2) \
  X(LOG10, "log10", tpu_kernel_log10) \
  X(LOG1P, "log1p", tpu_kernel_log1p) \
  X(SIN, "sin", tpu_kernel_sin) \
  X(COS, "cos", tpu_kernel_cos) \
  X(TAN, "tan", tpu_kernel_tan) \
  X(TANH, "tanh", tpu_kernel_tanh) \
  X(SINH, "sinh", tpu_kernel_sinh) \
  X(COSH, "cosh", tpu_kernel_cosh) \
  X(ASIN, "asin", tpu_kernel_asin) \
  X(ACOS, "acos", tpu_kernel_acos) \
  X(ATAN, "atan", tpu_kernel_atan) \
  X(ERF, "erf", tpu_kernel_erf) \
  X(ERFC, "erfc", tpu_kernel_erfc) \
  X(SIGMOID, "sigmoid", tpu_kernel_sigmoid) \
  X(FLOOR, "floor", tpu_kernel_floor) \
  X(CEIL, "ceil", tpu_kernel_ceil) \
  X(ROUND, "round", tpu_kernel_round) \
  X(ROUND_DECIMALS, "round_decimals", tpu_kernel_round_decimals) \
  X(TRUNC, "trunc", tpu_kernel_trunc) \
  X(FRAC, "frac", tpu_kernel_frac) \
  X(ERFINV, "erfinv", tpu_kernel_erfinv) \
  X(LOGIT, "logit", tpu_kernel_logit) \
  X(POW_SCALAR, "pow_scalar", tpu_kernel_pow_scalar) \
  X(BITWISE_NOT, "bitwise_not", tpu_kernel_bitwise_not) \
  X(LOGICAL_NOT, "logical_not", tpu_kernel_logical_not) \
  X(ISNAN, "isnan", tpu_kernel_isnan) \
  X(ISINF, "isinf", tpu_kernel_isinf) \
  X(ISPOSINF, "isposinf", tpu_kernel_isposinf) \
  X(ISNEGINF, "isneginf", tpu_kernel_isneginf) \
  X(ISFINITE, "isfinite", tpu_kernel_isfinite) \
  X(NAN_TO_NUM, "nan_to_num", tpu_kernel_nan_to_num) \
  X(CLAMP, "clamp", tpu_kernel_clamp) \
  X(CLAMP_MIN, "clamp_min", tpu_kernel_clamp_min) \
  X(CLAMP_MAX, "clamp_max", tpu_kernel_clamp_max) \
  X(CLAMP_TENSOR, "clamp_tensor", tpu_kernel_clamp_tensor) \
  X(THRESHOLD, "threshold", tpu_kernel_threshold) \
  X(GELU, "gelu", tpu_kernel_gelu) \
  X(GELU_TANH, "gelu_tanh", tpu_kernel_gelu_tanh) \
  X(GELU_BACKWARD, "gelu_backward", tpu_kernel_gelu_backward) \
  X(GELU_TANH_BACKWARD, "gelu_tanh_backward", tpu_kernel_gelu_tanh_backward) \
  X(SILU, "silu", tpu_kernel_silu) \
  X(SILU_BACKWARD, "silu_backward", tpu_kernel_silu_backward) \
  X(SIGMOID_BACKWARD, "sigmoid_backward", tpu_kernel_sigmoid_backward) \
  X(TANH_BACKWARD, "tanh_backward", tpu_kernel_tanh_backward) \
  X(MISH, "mish", tpu_kernel_mish) \
  X(MISH_BACKWARD, "mish_backward", tpu_kernel_mish_backward) \
  X(SOFTPLUS, "softplus", tpu_kernel_softplus) \
  X(SOFTPLUS_BACKWARD, "softplus_backward", tpu_kernel_softplus_backward) \
  X(ELU, "elu", tpu_kernel_elu) \
  X(ELU_BACKWARD, "elu_backward", tpu_kernel_elu_backward) \
  X(LEAKY_RELU, "leaky_relu", tpu_kernel_leaky_relu) \
  X(LEAKY_RELU_BACKWARD, "leaky_relu_backward", tpu_kernel_leaky_relu_backward) \
  X(HARDTANH_BACKWARD, "hardtanh_backward", tpu_kernel_hardtanh_backward) \
  X(LOGIT_BACKWARD, "logit_backward", tpu_kernel_logit_backward) \
  X(HARDSWISH, "hardswish", tpu_kernel_hardswish) \
  X(HARDSWISH_BACKWARD, "hardswish_backward", tpu_kernel_hardswish_backward) \
  X(HARDSIGMOID, "hardsigmoid", tpu_kernel_hardsigmoid) \
  X(HARDSIGMOID_BACKWARD, "hardsigmoid_backward", tpu_kernel_hardsigmoid_backward) \
  X(WHERE, "where", tpu_kernel_where) \
  X(LERP, "lerp", tpu_kernel_lerp) \
  X(LERP_SCALAR, "lerp_scalar", tpu_kernel_lerp_scalar) \
  X(ADDCMUL, "addcmul", tpu_kernel_addcmul) \
  X(ADDCDIV, "addcdiv", tpu_kernel_addcdiv)

#endif
