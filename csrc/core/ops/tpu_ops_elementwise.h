/* The elementwise family's ops: X(ID, "name") per op; see ops/tpu_op.h. Every one
 * runs through the elementwise engine (drivers/host/engine/engine_elementwise.h); each kernel file's comment
 * gives its ops' operands and scalars: elementwise_binary.c (arithmetic, comparisons,
 * logical and bitwise ops), elementwise_unary.c (math, rounding, predicates) and
 * elementwise_nn.c (activations and their backward, clamps, where, lerp, addcmul/div). */
#ifndef TPU_OPS_ELEMENTWISE_H
#define TPU_OPS_ELEMENTWISE_H

#define TPU_OPS_ELEMENTWISE(X)                                                                     \
  X(ADD, "add")                                                                                    \
  X(MUL, "mul")                                                                                    \
  X(DIV, "div")                                                                                    \
  X(DIV_TRUNC, "div_trunc")                                                                        \
  X(DIV_FLOOR, "div_floor")                                                                        \
  X(REMAINDER, "remainder")                                                                        \
  X(FMOD, "fmod")                                                                                  \
  X(ATAN2, "atan2")                                                                                \
  X(COPYSIGN, "copysign")                                                                          \
  X(POW, "pow")                                                                                    \
  X(MAXIMUM, "maximum")                                                                            \
  X(MINIMUM, "minimum")                                                                            \
  X(EQ, "eq")                                                                                      \
  X(NE, "ne")                                                                                      \
  X(LT, "lt")                                                                                      \
  X(LE, "le")                                                                                      \
  X(GT, "gt")                                                                                      \
  X(GE, "ge")                                                                                      \
  X(LOGICAL_AND, "logical_and")                                                                    \
  X(LOGICAL_OR, "logical_or")                                                                      \
  X(LOGICAL_XOR, "logical_xor")                                                                    \
  X(BITWISE_AND, "bitwise_and")                                                                    \
  X(BITWISE_OR, "bitwise_or")                                                                      \
  X(BITWISE_XOR, "bitwise_xor")                                                                    \
  X(NEG, "neg")                                                                                    \
  X(ABS, "abs")                                                                                    \
  X(SIGN, "sign")                                                                                  \
  X(SQRT, "sqrt")                                                                                  \
  X(RSQRT, "rsqrt")                                                                                \
  X(RECIPROCAL, "reciprocal")                                                                      \
  X(EXP, "exp")                                                                                    \
  X(EXP2, "exp2")                                                                                  \
  X(EXPM1, "expm1")                                                                                \
  X(LOG, "log")                                                                                    \
  X(LOG2, "log2")                                                                                  \
  X(LOG10, "log10")                                                                                \
  X(LOG1P, "log1p")                                                                                \
  X(SIN, "sin")                                                                                    \
  X(COS, "cos")                                                                                    \
  X(TAN, "tan")                                                                                    \
  X(TANH, "tanh")                                                                                  \
  X(SINH, "sinh")                                                                                  \
  X(COSH, "cosh")                                                                                  \
  X(ASIN, "asin")                                                                                  \
  X(ACOS, "acos")                                                                                  \
  X(ATAN, "atan")                                                                                  \
  X(ERF, "erf")                                                                                    \
  X(ERFC, "erfc")                                                                                  \
  X(SIGMOID, "sigmoid")                                                                            \
  X(FLOOR, "floor")                                                                                \
  X(CEIL, "ceil")                                                                                  \
  X(ROUND, "round")                                                                                \
  X(ROUND_DECIMALS, "round_decimals")                                                              \
  X(TRUNC, "trunc")                                                                                \
  X(FRAC, "frac")                                                                                  \
  X(ERFINV, "erfinv")                                                                              \
  X(LOGIT, "logit")                                                                                \
  X(POW_SCALAR, "pow_scalar")                                                                      \
  X(BITWISE_NOT, "bitwise_not")                                                                    \
  X(LOGICAL_NOT, "logical_not")                                                                    \
  X(ISNAN, "isnan")                                                                                \
  X(ISINF, "isinf")                                                                                \
  X(ISPOSINF, "isposinf")                                                                          \
  X(ISNEGINF, "isneginf")                                                                          \
  X(ISFINITE, "isfinite")                                                                          \
  X(NAN_TO_NUM, "nan_to_num")                                                                      \
  X(CLAMP, "clamp")                                                                                \
  X(CLAMP_MIN, "clamp_min")                                                                        \
  X(CLAMP_MAX, "clamp_max")                                                                        \
  X(CLAMP_TENSOR, "clamp_tensor")                                                                  \
  X(THRESHOLD, "threshold")                                                                        \
  X(GELU, "gelu")                                                                                  \
  X(GELU_TANH, "gelu_tanh")                                                                        \
  X(GELU_BACKWARD, "gelu_backward")                                                                \
  X(GELU_TANH_BACKWARD, "gelu_tanh_backward")                                                      \
  X(SILU, "silu")                                                                                  \
  X(SILU_BACKWARD, "silu_backward")                                                                \
  X(SIGMOID_BACKWARD, "sigmoid_backward")                                                          \
  X(TANH_BACKWARD, "tanh_backward")                                                                \
  X(MISH, "mish")                                                                                  \
  X(MISH_BACKWARD, "mish_backward")                                                                \
  X(SOFTPLUS, "softplus")                                                                          \
  X(SOFTPLUS_BACKWARD, "softplus_backward")                                                        \
  X(ELU, "elu")                                                                                    \
  X(ELU_BACKWARD, "elu_backward")                                                                  \
  X(LEAKY_RELU, "leaky_relu")                                                                      \
  X(LEAKY_RELU_BACKWARD, "leaky_relu_backward")                                                    \
  X(HARDTANH_BACKWARD, "hardtanh_backward")                                                        \
  X(LOGIT_BACKWARD, "logit_backward")                                                              \
  X(HARDSWISH, "hardswish")                                                                        \
  X(HARDSWISH_BACKWARD, "hardswish_backward")                                                      \
  X(HARDSIGMOID, "hardsigmoid")                                                                    \
  X(HARDSIGMOID_BACKWARD, "hardsigmoid_backward")                                                  \
  X(WHERE, "where")                                                                                \
  X(LERP, "lerp")                                                                                  \
  X(LERP_SCALAR, "lerp_scalar")                                                                    \
  X(ADDCMUL, "addcmul")                                                                            \
  X(ADDCDIV, "addcdiv")

#endif
