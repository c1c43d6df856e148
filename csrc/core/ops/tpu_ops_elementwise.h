/* The elementwise family's ops: X(ID, "name", attribute scalars) per op; see ops/tpu_op.h. Each op
 * computes every element of its output from the elements of its inputs at the same (broadcast)
 * position, with the semantics and order of operations of PyTorch CPU's kernels
 * (BinaryOpsKernel.cpp, UnaryOpsKernel.cpp, Activation.cpp, TensorCompare.cpp, Lerp.h,
 * PointwiseOps.h).
 *
 * Operands. call->tensors holds the inputs, then the output. An input broadcasts to the output's
 * shape (dimensions aligned from the right; a missing or size-1 dimension repeats), so the caller
 * never expands; any strides. A scalar operand is an input made with tpu_op_set_scalar_input: a
 * 0-d host view of a value the call itself holds. The output may be the very memory of an input
 * (in-place ops); partial overlaps are the caller's to refuse, as TensorIterator does. Shapes that
 * do not broadcast are TPU_ERR_VALUE.
 *
 * Types. call->compute is the dtype the op computes in (PyTorch's common dtype): bool, uint8,
 * int8, int16, int32, int64, float16, bfloat16, float32 or float64. Each op below lists the kinds
 * of compute dtype it has: "floats" (the four floating dtypes), "ints" (uint8 to int64), "bool";
 * other compute dtypes, and complex or storage-only operands, are TPU_ERR_NOT_IMPLEMENTED
 * (supports_op may refuse such a compute dtype before launch). An input of another dtype is first
 * converted to the compute dtype, as COPY converts (so a float64 or float32 scalar added to
 * bfloat16 is rounded to bfloat16, as TensorIterator's promotion does). float16 and bfloat16
 * compute in float32 and round once per op to the compute dtype, as PyTorch CPU does. An output
 * of another dtype takes that result converted as COPY does (exp of bfloat16 into a float32
 * output is bfloat16's exp widened: PyTorch computes in the inputs' common dtype, then casts to
 * the out= tensor). Operands marked bool below are bool whatever the compute dtype. One
 * exception to the input conversion: MUL, DIV, DIV_TRUNC and DIV_FLOOR read a scalar second input
 * (one element) at float precision when the compute dtype is float16 or bfloat16: straight into
 * float, not rounded to the compute dtype first, as PyTorch CPU reads such a scalar.
 *
 * Scalars. s0..s3 below are call->scalars[0..3]: .f when the compute dtype is floating, .i when
 * it is an integer or bool.
 *
 * NaN. A NaN that a math function with a domain makes from numbers (SQRT, RSQRT, LOG, LOG2,
 * LOG10, LOG1P, SIN, COS, TAN, ASIN, ACOS, LOGIT, POW, POW_SCALAR of an input outside it, such as
 * log2(-1)) is the positive quiet NaN, CUDA's default NaN; a NaN input passes through as it is.
 *
 * Errors. An integer division or remainder by zero (DIV_TRUNC, DIV_FLOOR, REMAINDER, FMOD) fails
 * with TPU_ERR_RUNTIME "ZeroDivisionError" (PyTorch CPU's message), the outputs holding 0 there;
 * floats give IEEE results.
 *
 * Binary (inputs a, b):
 *   ADD            a + s0 * b (s0: alpha; sub and rsub pass -alpha); floats use one fused
 *                  multiply-add, as PyTorch's vectorized kernel does; bool is a || (s0 && b).
 *                  floats, ints, bool.
 *   MUL            a * b (bool: a && b). floats, ints, bool.
 *   DIV            a / b. floats (true division: the caller promotes integers).
 *   DIV_TRUNC      a / b rounded toward zero. floats, ints.
 *   DIV_FLOOR      a / b rounded down (c10::div_floor_floating for floats). floats, ints.
 *   REMAINDER      Python's remainder, with the sign of b. floats, ints.
 *   FMOD           C's remainder, with the sign of a. floats, ints.
 *   ATAN2, COPYSIGN  floats.
 *   POW            a ^ b; integers by squaring, a negative exponent giving 0 except for the bases
 *                  1 and -1 (c10's powi). floats, ints.
 *   MAXIMUM, MINIMUM  NaN propagates. floats, ints, bool.
 *   EQ, NE, LT, LE, GT, GE, LOGICAL_AND, LOGICAL_OR, LOGICAL_XOR  bool output. floats, ints, bool.
 *   BITWISE_AND, BITWISE_OR, BITWISE_XOR  ints, bool.
 *
 * Unary (input a):
 *   NEG, ABS       floats, ints.
 *   SIGN           -1, 0 or 1; NaN gives 0 (PyTorch's vectorized kernel). floats, ints, bool.
 *   SQRT, RSQRT, RECIPROCAL, EXP, EXP2, EXPM1, LOG, LOG2, LOG10, LOG1P, SIN, COS, TAN, TANH,
 *   SINH, COSH, ASIN, ACOS, ATAN, ERF, ERFC, SIGMOID, FRAC (a - trunc(a)), ERFINV  floats (the
 *                  caller promotes integer inputs).
 *   FLOOR, CEIL, ROUND (half to even), TRUNC  floats, and ints, which pass through.
 *   LOGIT          log(z / (1 - z)) with z = a clamped to [s0, 1 - s0]; s0 = eps, negative for
 *                  none. floats.
 *   ROUND_DECIMALS a rounded (half to even) to |decimals| digits: s0 = 10^|decimals|, s1 != 0
 *                  when decimals < 0. floats.
 *   POW_SCALAR     a ^ s0, with PyTorch CPU's exact forms (no pow()) for the exponents 2, 3, 0.5,
 *                  -0.5, -1, -2. floats, and ints with an exponent s0 >= 0 (the caller refuses
 *                  negative ones), wrapping.
 *   BITWISE_NOT    ints, bool.
 *   LOGICAL_NOT, ISNAN, ISINF, ISPOSINF, ISNEGINF, ISFINITE  bool output. floats, ints, bool.
 *   NAN_TO_NUM     NaN, +inf and -inf replaced by s0, s1, s2. floats.
 *
 * Math (elementwise_math.c), floats unless noted, with PyTorch CPU's special values:
 *   ACOSH, ASINH, ATANH. SINC: sin(pi a) / (pi a), 1 at 0. ANGLE: pi below 0, else 0, NaN kept.
 *   ENTR: -a log(a), 0 at 0, -inf below. LGAMMA: log|Gamma|. DIGAMMA: -inf at +0, inf at -0,
 *   NaN at negative integers. POLYGAMMA (s0 = n, an integer >= 0). I0, I0E, I1, I1E: modified
 *   Bessel functions I0, I1 and their scaled forms e^-|a| I. NDTRI: the standard normal
 *   quantile. LOG_NDTR: log of its CDF. ERFCX: e^(a^2) erfc(a). These compute float32 and
 *   narrower dtypes in double, rounded once (CPU computes them in float: a few ulp apart).
 *   SIGNBIT: bool output, the sign bit (integers: a < 0). floats, ints, bool.
 *   LOGADDEXP, LOGADDEXP2 (a, b): log(e^a + e^b) (base 2), equal infinities giving themselves.
 *   HYPOT. XLOGY, XLOG1PY: a log(b), a log1p(b); NaN when b is, else 0 when a is 0.
 *   ZETA (x, q): Hurwitz zeta. IGAMMA, IGAMMAC (a, x): regularized incomplete gamma P, Q.
 *   NEXTAFTER: the next value of the compute dtype (float16 and bfloat16 in their own precision)
 *   from a toward b.
 *   FMAX, FMIN: a NaN operand gives the other. floats, ints, bool.
 *   HEAVISIDE (x, values): values where x is 0, else x > 0. floats, ints, bool.
 *
 * Activations, clamps and the rest; backward ops take the incoming gradient first (but
 * LEAKY_RELU_BACKWARD, ATen's iterator order). floats unless noted.
 *   CLAMP (x; s0 min, s1 max), CLAMP_MIN (x; s0), CLAMP_MAX (x; s0): min(max(x, lo), hi), a NaN x
 *     passes through. floats, ints.
 *   CLAMP_TENSOR (x, min, max): as CLAMP, and a NaN bound gives NaN. floats, ints.
 *   THRESHOLD (x, other; s0 threshold, s1 value): x <= threshold ? value : other. floats, ints.
 *   GELU, GELU_TANH, SILU, MISH, HARDSWISH, HARDSIGMOID (x).
 *   GELU_BACKWARD, GELU_TANH_BACKWARD, SILU_BACKWARD, MISH_BACKWARD, HARDSWISH_BACKWARD,
 *     HARDSIGMOID_BACKWARD (grad, x).
 *   SIGMOID_BACKWARD, TANH_BACKWARD (grad, output).
 *   SOFTPLUS (x; s0 beta, s1 threshold), SOFTPLUS_BACKWARD (grad, x; the same).
 *   ELU (x; s0 alpha, s1 scale, s2 input_scale), ELU_BACKWARD (grad, x or the result; the same,
 *     and s3 nonzero when given the result).
 *   LEAKY_RELU (x; s0 slope), LEAKY_RELU_BACKWARD (x, grad; s0).
 *   HARDTANH_BACKWARD (grad, x; s0 min, s1 max).
 *   SOFTSHRINK (x; s0 lambd): x > l ? x - l : x < -l ? x + l : 0 * x. HARDSHRINK (x; s0 lambd):
 *     -l <= x <= l ? 0 : x. SHRINK_BACKWARD (grad, x; s0 lambd): -l <= x <= l ? 0 : grad.
 *   LOG_SIGMOID (x): min(x, 0) - log1p(exp(-|x|)). LOG_SIGMOID_BACKWARD (grad, x): with
 *     z = exp(-|x|), grad * (x < 0 ? 1 - z / (1 + z) : z / (1 + z)), PyTorch CPU's order.
 *   LOGIT_BACKWARD (grad, x; s0 eps, negative for none): 0 outside [eps, 1 - eps], NaN outside
 *     [0, 1] without eps.
 *   WHERE (cond, a, b): cond ? a : b, cond bool. floats, ints, bool.
 *   LERP (start, end, weight), LERP_SCALAR (start, end; s0 weight): one fused multiply-add from
 *     whichever end is nearer, as PyTorch's vectorized lerp.
 *   ADDCMUL (self, t1, t2; s0 value): self + value * t1 * t2. floats, ints.
 *   ADDCDIV (self, t1, t2; s0 value): self + value * t1 / t2. */
#ifndef TPU_OPS_ELEMENTWISE_H
#define TPU_OPS_ELEMENTWISE_H

#define TPU_OPS_ELEMENTWISE(X)                                                                     \
  X(ADD, "add", 0)                                                                                 \
  X(MUL, "mul", 0)                                                                                 \
  X(DIV, "div", 0)                                                                                 \
  X(DIV_TRUNC, "div_trunc", 0)                                                                     \
  X(DIV_FLOOR, "div_floor", 0)                                                                     \
  X(REMAINDER, "remainder", 0)                                                                     \
  X(FMOD, "fmod", 0)                                                                               \
  X(ATAN2, "atan2", 0)                                                                             \
  X(COPYSIGN, "copysign", 0)                                                                       \
  X(POW, "pow", 0)                                                                                 \
  X(MAXIMUM, "maximum", 0)                                                                         \
  X(MINIMUM, "minimum", 0)                                                                         \
  X(EQ, "eq", 0)                                                                                   \
  X(NE, "ne", 0)                                                                                   \
  X(LT, "lt", 0)                                                                                   \
  X(LE, "le", 0)                                                                                   \
  X(GT, "gt", 0)                                                                                   \
  X(GE, "ge", 0)                                                                                   \
  X(LOGICAL_AND, "logical_and", 0)                                                                 \
  X(LOGICAL_OR, "logical_or", 0)                                                                   \
  X(LOGICAL_XOR, "logical_xor", 0)                                                                 \
  X(BITWISE_AND, "bitwise_and", 0)                                                                 \
  X(BITWISE_OR, "bitwise_or", 0)                                                                   \
  X(BITWISE_XOR, "bitwise_xor", 0)                                                                 \
  X(NEG, "neg", 0)                                                                                 \
  X(ABS, "abs", 0)                                                                                 \
  X(SIGN, "sign", 0)                                                                               \
  X(SQRT, "sqrt", 0)                                                                               \
  X(RSQRT, "rsqrt", 0)                                                                             \
  X(RECIPROCAL, "reciprocal", 0)                                                                   \
  X(EXP, "exp", 0)                                                                                 \
  X(EXP2, "exp2", 0)                                                                               \
  X(EXPM1, "expm1", 0)                                                                             \
  X(LOG, "log", 0)                                                                                 \
  X(LOG2, "log2", 0)                                                                               \
  X(LOG10, "log10", 0)                                                                             \
  X(LOG1P, "log1p", 0)                                                                             \
  X(SIN, "sin", 0)                                                                                 \
  X(COS, "cos", 0)                                                                                 \
  X(TAN, "tan", 0)                                                                                 \
  X(TANH, "tanh", 0)                                                                               \
  X(SINH, "sinh", 0)                                                                               \
  X(COSH, "cosh", 0)                                                                               \
  X(ASIN, "asin", 0)                                                                               \
  X(ACOS, "acos", 0)                                                                               \
  X(ATAN, "atan", 0)                                                                               \
  X(ERF, "erf", 0)                                                                                 \
  X(ERFC, "erfc", 0)                                                                               \
  X(SIGMOID, "sigmoid", 0)                                                                         \
  X(FLOOR, "floor", 0)                                                                             \
  X(CEIL, "ceil", 0)                                                                               \
  X(ROUND, "round", 0)                                                                             \
  X(ROUND_DECIMALS, "round_decimals", TPU_ATTR(1))                                                 \
  X(TRUNC, "trunc", 0)                                                                             \
  X(FRAC, "frac", 0)                                                                               \
  X(ERFINV, "erfinv", 0)                                                                           \
  X(ACOSH, "acosh", 0)                                                                             \
  X(ASINH, "asinh", 0)                                                                             \
  X(ATANH, "atanh", 0)                                                                             \
  X(SIGNBIT, "signbit", 0)                                                                         \
  X(SINC, "sinc", 0)                                                                               \
  X(ANGLE, "angle", 0)                                                                             \
  X(ENTR, "entr", 0)                                                                               \
  X(LGAMMA, "lgamma", 0)                                                                           \
  X(DIGAMMA, "digamma", 0)                                                                         \
  X(POLYGAMMA, "polygamma", 0)                                                                     \
  X(I0, "i0", 0)                                                                                   \
  X(I0E, "i0e", 0)                                                                                 \
  X(I1, "i1", 0)                                                                                   \
  X(I1E, "i1e", 0)                                                                                 \
  X(NDTRI, "ndtri", 0)                                                                             \
  X(LOG_NDTR, "log_ndtr", 0)                                                                       \
  X(ERFCX, "erfcx", 0)                                                                             \
  X(LOGADDEXP, "logaddexp", 0)                                                                     \
  X(LOGADDEXP2, "logaddexp2", 0)                                                                   \
  X(HYPOT, "hypot", 0)                                                                             \
  X(XLOGY, "xlogy", 0)                                                                             \
  X(XLOG1PY, "xlog1py", 0)                                                                         \
  X(ZETA, "zeta", 0)                                                                               \
  X(IGAMMA, "igamma", 0)                                                                           \
  X(IGAMMAC, "igammac", 0)                                                                         \
  X(FMAX, "fmax", 0)                                                                               \
  X(FMIN, "fmin", 0)                                                                               \
  X(HEAVISIDE, "heaviside", 0)                                                                     \
  X(NEXTAFTER, "nextafter", 0)                                                                     \
  X(LOGIT, "logit", 0)                                                                             \
  X(POW_SCALAR, "pow_scalar", 0)                                                                   \
  X(BITWISE_NOT, "bitwise_not", 0)                                                                 \
  X(LOGICAL_NOT, "logical_not", 0)                                                                 \
  X(ISNAN, "isnan", 0)                                                                             \
  X(ISINF, "isinf", 0)                                                                             \
  X(ISPOSINF, "isposinf", 0)                                                                       \
  X(ISNEGINF, "isneginf", 0)                                                                       \
  X(ISFINITE, "isfinite", 0)                                                                       \
  X(NAN_TO_NUM, "nan_to_num", 0)                                                                   \
  X(CLAMP, "clamp", 0)                                                                             \
  X(CLAMP_MIN, "clamp_min", 0)                                                                     \
  X(CLAMP_MAX, "clamp_max", 0)                                                                     \
  X(CLAMP_TENSOR, "clamp_tensor", 0)                                                               \
  X(THRESHOLD, "threshold", 0)                                                                     \
  X(GELU, "gelu", 0)                                                                               \
  X(GELU_TANH, "gelu_tanh", 0)                                                                     \
  X(GELU_BACKWARD, "gelu_backward", 0)                                                             \
  X(GELU_TANH_BACKWARD, "gelu_tanh_backward", 0)                                                   \
  X(SILU, "silu", 0)                                                                               \
  X(SILU_BACKWARD, "silu_backward", 0)                                                             \
  X(SIGMOID_BACKWARD, "sigmoid_backward", 0)                                                       \
  X(TANH_BACKWARD, "tanh_backward", 0)                                                             \
  X(MISH, "mish", 0)                                                                               \
  X(MISH_BACKWARD, "mish_backward", 0)                                                             \
  X(SOFTPLUS, "softplus", 0)                                                                       \
  X(SOFTPLUS_BACKWARD, "softplus_backward", 0)                                                     \
  X(ELU, "elu", TPU_ATTR(3))                                                                       \
  X(ELU_BACKWARD, "elu_backward", TPU_ATTR(3))                                                     \
  X(LEAKY_RELU, "leaky_relu", 0)                                                                   \
  X(LEAKY_RELU_BACKWARD, "leaky_relu_backward", 0)                                                 \
  X(HARDTANH_BACKWARD, "hardtanh_backward", 0)                                                     \
  X(LOGIT_BACKWARD, "logit_backward", 0)                                                           \
  X(HARDSWISH, "hardswish", 0)                                                                     \
  X(HARDSWISH_BACKWARD, "hardswish_backward", 0)                                                   \
  X(HARDSIGMOID, "hardsigmoid", 0)                                                                 \
  X(HARDSIGMOID_BACKWARD, "hardsigmoid_backward", 0)                                               \
  X(SOFTSHRINK, "softshrink", 0)                                                                   \
  X(HARDSHRINK, "hardshrink", 0)                                                                   \
  X(SHRINK_BACKWARD, "shrink_backward", 0)                                                         \
  X(LOG_SIGMOID, "log_sigmoid", 0)                                                                 \
  X(LOG_SIGMOID_BACKWARD, "log_sigmoid_backward", 0)                                               \
  X(WHERE, "where", 0)                                                                             \
  X(LERP, "lerp", 0)                                                                               \
  X(LERP_SCALAR, "lerp_scalar", 0)                                                                 \
  X(ADDCMUL, "addcmul", 0)                                                                         \
  X(ADDCDIV, "addcdiv", 0)

#endif
