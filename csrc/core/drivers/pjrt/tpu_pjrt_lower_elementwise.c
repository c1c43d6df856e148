#include "drivers/pjrt/tpu_pjrt_lower_elementwise.h"
#include "drivers/pjrt/tpu_pjrt_lower_ew_math.h"

#include <stdio.h>

/* What each op accepts as compute dtype: F floats, I integers, B bool. */
enum { F = 1, I = 2, B = 4 };

static int kinds_of(tpu_op_id op) {
  switch (op) {
  case TPU_OP_ADD: case TPU_OP_MUL: case TPU_OP_MAXIMUM: case TPU_OP_MINIMUM:
    return F | I | B;
  /* Integer powers wrap, and a negative exponent gives 0 but for the bases 1 and -1, in XLA's
   * power as in c10's powi. */
  case TPU_OP_POW: case TPU_OP_POW_SCALAR: case TPU_OP_ADDCMUL: case TPU_OP_NEG: case TPU_OP_ABS:
  case TPU_OP_CLAMP: case TPU_OP_CLAMP_MIN: case TPU_OP_CLAMP_MAX: case TPU_OP_CLAMP_TENSOR:
  case TPU_OP_FLOOR: case TPU_OP_CEIL: case TPU_OP_ROUND:
  case TPU_OP_TRUNC: case TPU_OP_THRESHOLD:
    return F | I;
  /* Integers lower in drivers/pjrt/tpu_pjrt_lower_divide.c, with their zero-divisor check. */
  case TPU_OP_DIV_TRUNC: case TPU_OP_DIV_FLOOR: case TPU_OP_REMAINDER: case TPU_OP_FMOD:
    return F | I;
  case TPU_OP_EQ: case TPU_OP_NE: case TPU_OP_LT: case TPU_OP_LE: case TPU_OP_GT:
  case TPU_OP_GE: case TPU_OP_LOGICAL_AND: case TPU_OP_LOGICAL_OR: case TPU_OP_LOGICAL_XOR:
  case TPU_OP_LOGICAL_NOT: case TPU_OP_ISNAN: case TPU_OP_ISINF: case TPU_OP_ISFINITE:
  case TPU_OP_ISPOSINF: case TPU_OP_ISNEGINF: case TPU_OP_WHERE: case TPU_OP_SIGN:
    return F | I | B;
  case TPU_OP_BITWISE_AND: case TPU_OP_BITWISE_OR: case TPU_OP_BITWISE_XOR:
  case TPU_OP_BITWISE_NOT:
    return I | B;
  case TPU_OP_DIV: case TPU_OP_SQRT: case TPU_OP_RSQRT: case TPU_OP_RECIPROCAL: case TPU_OP_EXP:
  case TPU_OP_EXPM1: case TPU_OP_LOG: case TPU_OP_LOG1P: case TPU_OP_SIN: case TPU_OP_COS:
  case TPU_OP_TANH: case TPU_OP_ERF: case TPU_OP_SIGMOID: case TPU_OP_GELU:
  case TPU_OP_GELU_BACKWARD:
  case TPU_OP_SILU: case TPU_OP_SILU_BACKWARD: case TPU_OP_SIGMOID_BACKWARD:
  case TPU_OP_TANH_BACKWARD: case TPU_OP_LEAKY_RELU: case TPU_OP_LEAKY_RELU_BACKWARD:
  case TPU_OP_HARDTANH_BACKWARD: case TPU_OP_LERP: case TPU_OP_LERP_SCALAR:
  case TPU_OP_ADDCDIV: case TPU_OP_NAN_TO_NUM: case TPU_OP_TAN:
  case TPU_OP_SINH: case TPU_OP_COSH: case TPU_OP_ASIN: case TPU_OP_ACOS: case TPU_OP_ATAN:
  case TPU_OP_ATAN2: case TPU_OP_ERFC: case TPU_OP_ERFINV: case TPU_OP_FRAC: case TPU_OP_COPYSIGN:
  case TPU_OP_EXP2: case TPU_OP_LOG2: case TPU_OP_LOG10: case TPU_OP_GELU_TANH:
  case TPU_OP_GELU_TANH_BACKWARD: case TPU_OP_MISH: case TPU_OP_MISH_BACKWARD:
  case TPU_OP_HARDSWISH: case TPU_OP_HARDSWISH_BACKWARD: case TPU_OP_HARDSIGMOID:
  case TPU_OP_HARDSIGMOID_BACKWARD: case TPU_OP_SOFTPLUS: case TPU_OP_SOFTPLUS_BACKWARD:
  case TPU_OP_ELU: case TPU_OP_ELU_BACKWARD: case TPU_OP_LOGIT: case TPU_OP_LOGIT_BACKWARD:
  case TPU_OP_ROUND_DECIMALS: case TPU_OP_SOFTSHRINK: case TPU_OP_HARDSHRINK:
  case TPU_OP_SHRINK_BACKWARD: case TPU_OP_LOG_SIGMOID: case TPU_OP_LOG_SIGMOID_BACKWARD:
    return F;
  default:
    return tpu_pjrt_ew_math_kinds(op); /* tpu_pjrt_lower_ew_math.c */
  }
}

static bool bool_result(tpu_op_id op) {
  switch (op) {
  case TPU_OP_EQ: case TPU_OP_NE: case TPU_OP_LT: case TPU_OP_LE: case TPU_OP_GT:
  case TPU_OP_GE: case TPU_OP_LOGICAL_AND: case TPU_OP_LOGICAL_OR: case TPU_OP_LOGICAL_XOR:
  case TPU_OP_LOGICAL_NOT: case TPU_OP_ISNAN: case TPU_OP_ISINF: case TPU_OP_ISFINITE:
  case TPU_OP_ISPOSINF: case TPU_OP_ISNEGINF: case TPU_OP_SIGNBIT:
    return true;
  default:
    return false;
  }
}

bool tpu_pjrt_ew_supports(tpu_op_id op, tpu_dtype compute) {
  int kind = compute == TPU_BOOL                  ? B
             : tpu_dtype_is_floating(compute)     ? F
             : tpu_dtype_is_computable(compute) && !tpu_dtype_is_complex(compute) ? I
                                                  : 0;
  return (kinds_of(op) & kind) != 0;
}

/* The emitting state of one op. */
typedef struct ew {
  tpu_hlo *h;
  const tpu_op_call *call;
  tpu_dtype compute, work; /* work: float32 for float16 and bfloat16, else compute */
  tpu_hlo_value like;      /* a value of the output's shape */
  tpu_pjrt_scalar_fn scalar;
  void *ctx;
} ew;

static tpu_hlo_value to_work(ew *e, tpu_hlo_value x) {
  return tpu_hlo_convert(e->h, tpu_hlo_cast(e->h, x, e->compute), e->work);
}

static tpu_hlo_value num(ew *e, const char *literal) {
  return tpu_hlo_splat(e->h, tpu_hlo_constant(e->h, e->work, literal), &e->like);
}

/* Scalar slot k in the work dtype, broadcast. */
static tpu_hlo_value scal(ew *e, int k) {
  bool is_float = tpu_dtype_is_floating(e->compute);
  tpu_hlo_value s = e->scalar(e->ctx, k, is_float);
  s = tpu_hlo_convert(e->h, s, is_float ? e->work : e->compute);
  return tpu_hlo_splat(e->h, tpu_hlo_convert(e->h, s, e->work), &e->like);
}

static tpu_hlo_value bin(ew *e, const char *op, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_binary(e->h, op, a, b);
}
static tpu_hlo_value un(ew *e, const char *op, tpu_hlo_value a) {
  return tpu_hlo_unary(e->h, op, a);
}
static tpu_hlo_value cmp(ew *e, const char *dir, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_compare(e->h, dir, a, b);
}
static tpu_hlo_value sel(ew *e, tpu_hlo_value p, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_select(e->h, p, a, b);
}
static tpu_hlo_value sigmoid(ew *e, tpu_hlo_value x) { return un(e, "logistic", x); }
static tpu_hlo_value isnan_(ew *e, tpu_hlo_value x) { return cmp(e, "NE", x, x); }

/* maximum or minimum that returns a NaN operand as it is: XLA's CPU compiler may drop NaNs from
 * min and max (its fast min/max option). */
static tpu_hlo_value minmax(ew *e, const char *op, tpu_hlo_value a, tpu_hlo_value b) {
  tpu_hlo_value r = bin(e, op, a, b);
  if (!tpu_dtype_is_floating(e->compute))
    return r;
  r = sel(e, isnan_(e, b), b, r);
  return sel(e, isnan_(e, a), a, r);
}

/* r (of any floating dtype), with a NaN made from numbers (no input NaN) positive, as CUDA's
 * default NaN is (x86 makes a negative one). Its sign bit is cleared (abs) rather than the NaN
 * replaced by a constant: XLA may fold select(isnan(r), NaN, r) into r. */
static tpu_hlo_value positive_nan(ew *e, tpu_hlo_value r, const tpu_hlo_value *x, int n) {
  tpu_hlo_value made = cmp(e, "NE", r, r);
  for (int i = 0; i < n; i++)
    made = tpu_hlo_binary(e->h, "and", made, cmp(e, "EQ", x[i], x[i]));
  return sel(e, made, un(e, "abs", r), r);
}

/* a ^ s with PyTorch CPU's exact forms for the exponents 2, 3, 0.5, -0.5, -1 and -2. */
static tpu_hlo_value pow_scalar(ew *e, tpu_hlo_value a, tpu_hlo_value s) {
  tpu_hlo_value one = num(e, "1.0"), sq = bin(e, "multiply", a, a);
  struct {
    const char *exponent;
    tpu_hlo_value value;
  } forms[] = {
      {"2.0", sq},
      {"3.0", bin(e, "multiply", sq, a)},
      {"0.5", un(e, "sqrt", a)},
      {"-0.5", un(e, "rsqrt", a)},
      {"-1.0", bin(e, "divide", one, a)},
      {"-2.0", bin(e, "divide", one, sq)},
  };
  tpu_hlo_value r = bin(e, "power", a, s);
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
    r = sel(e, cmp(e, "EQ", s, num(e, forms[i].exponent)), forms[i].value, r);
  return r;
}

/* PyTorch's lerp: one multiply-add from whichever end is nearer the weight. */
static tpu_hlo_value lerp(ew *e, tpu_hlo_value start, tpu_hlo_value end, tpu_hlo_value w) {
  tpu_hlo_value diff = bin(e, "subtract", end, start);
  tpu_hlo_value low = bin(e, "add", start, bin(e, "multiply", w, diff));
  tpu_hlo_value high =
      bin(e, "subtract", end, bin(e, "multiply", diff, bin(e, "subtract", num(e, "1.0"), w)));
  tpu_hlo_value small = cmp(e, "LT", un(e, "abs", w), num(e, "0.5"));
  return sel(e, small, low, high);
}

static tpu_hlo_value gelu_cdf(ew *e, tpu_hlo_value x) {
  tpu_hlo_value scaled = bin(e, "multiply", x, num(e, "0.70710678118654752440"));
  tpu_hlo_value erf = tpu_hlo_chlo_unary(e->h, "erf", scaled);
  return bin(e, "multiply", num(e, "0.5"), bin(e, "add", num(e, "1.0"), erf));
}

static bool has_domain(tpu_op_id op) {
  switch (op) {
  case TPU_OP_POW: case TPU_OP_SQRT: case TPU_OP_RSQRT: case TPU_OP_LOG: case TPU_OP_LOG1P:
  case TPU_OP_SIN: case TPU_OP_COS: case TPU_OP_POW_SCALAR: case TPU_OP_TAN: case TPU_OP_ASIN:
  case TPU_OP_ACOS: case TPU_OP_ERFINV: case TPU_OP_LOG2: case TPU_OP_LOG10:
    return true;
  default:
    return false;
  }
}

/* The functions with a domain (ops/tpu_ops_elementwise.h, "NaN"). */
static tpu_hlo_value emit_domain(ew *e, const tpu_hlo_value *x) {
  tpu_hlo_value a = x[0], b = e->call->n_inputs > 1 ? x[1] : x[0];
  switch (e->call->op) {
  case TPU_OP_POW: return positive_nan(e, bin(e, "power", a, b), x, 2);
  case TPU_OP_SQRT: return positive_nan(e, un(e, "sqrt", a), x, 1);
  case TPU_OP_RSQRT: return positive_nan(e, un(e, "rsqrt", a), x, 1);
  case TPU_OP_LOG: return positive_nan(e, un(e, "log", a), x, 1);
  case TPU_OP_LOG1P: return positive_nan(e, un(e, "log_plus_one", a), x, 1);
  case TPU_OP_SIN: return positive_nan(e, un(e, "sine", a), x, 1);
  case TPU_OP_COS: return positive_nan(e, un(e, "cosine", a), x, 1);
  case TPU_OP_TAN: return positive_nan(e, tpu_hlo_chlo_unary(e->h, "tan", a), x, 1);
  case TPU_OP_ASIN: return positive_nan(e, tpu_hlo_chlo_unary(e->h, "asin", a), x, 1);
  case TPU_OP_ACOS: return positive_nan(e, tpu_hlo_chlo_unary(e->h, "acos", a), x, 1);
  case TPU_OP_ERFINV: return positive_nan(e, tpu_hlo_chlo_unary(e->h, "erf_inv", a), x, 1);
  case TPU_OP_LOG2:
    return positive_nan(e, bin(e, "multiply", un(e, "log", a), num(e, "1.4426950408889634074")),
                        x, 1);
  case TPU_OP_LOG10:
    return positive_nan(e, bin(e, "multiply", un(e, "log", a), num(e, "0.43429448190325182765")),
                        x, 1);
  case TPU_OP_POW_SCALAR: {
    tpu_hlo_value s = scal(e, 0), both[2] = {a, s};
    return positive_nan(e, pow_scalar(e, a, s), both, 2);
  }
  default: return a;
  }
}

/* a / b. XLA may divide by a broadcast value through its reciprocal; float32 quotients are taken
 * in float64 instead, which rounds to the correctly rounded float32 quotient. */
static tpu_hlo_value quotient(ew *e, tpu_hlo_value a, tpu_hlo_value b) {
  if (e->work != TPU_FLOAT32)
    return bin(e, "divide", a, b);
  return tpu_hlo_convert(e->h,
                         bin(e, "divide", tpu_hlo_convert(e->h, a, TPU_FLOAT64),
                             tpu_hlo_convert(e->h, b, TPU_FLOAT64)),
                         TPU_FLOAT32);
}

/* |a| with b's sign bit, read through b's bits. */
static tpu_hlo_value copysign_(ew *e, tpu_hlo_value a, tpu_hlo_value b) {
  tpu_dtype bits = e->work == TPU_FLOAT64 ? TPU_INT64 : TPU_INT32;
  tpu_hlo_value negative = cmp(e, "LT", tpu_hlo_bitcast(e->h, b, bits, b.rank, b.dims),
                               tpu_hlo_full(e->h, bits, "0", &b));
  tpu_hlo_value mag = un(e, "abs", a);
  return sel(e, negative, un(e, "negate", mag), mag);
}

static tpu_hlo_value truncated(ew *e, tpu_hlo_value x) {
  return sel(e, cmp(e, "LT", x, num(e, "0.0")), un(e, "ceil", x), un(e, "floor", x));
}

/* mod != 0 with a sign other than b's. */
static tpu_hlo_value other_sign(ew *e, tpu_hlo_value mod, tpu_hlo_value b) {
  tpu_hlo_value zero = num(e, "0.0");
  return tpu_hlo_binary(e->h, "and", cmp(e, "NE", mod, zero),
                        cmp(e, "NE", cmp(e, "LT", b, zero), cmp(e, "LT", mod, zero)));
}

/* c10::div_floor_floating: the quotient rounded down, from fmod so that it is exact. */
static tpu_hlo_value floor_divide(ew *e, tpu_hlo_value a, tpu_hlo_value b) {
  tpu_hlo_value mod = bin(e, "remainder", a, b), q = quotient(e, a, b);
  tpu_hlo_value div = quotient(e, bin(e, "subtract", a, mod), b);
  div = sel(e, other_sign(e, mod, b), bin(e, "subtract", div, num(e, "1.0")), div);
  tpu_hlo_value floored = un(e, "floor", div);
  floored = sel(e, cmp(e, "GT", bin(e, "subtract", div, floored), num(e, "0.5")),
                bin(e, "add", floored, num(e, "1.0")), floored);
  tpu_hlo_value r = sel(e, cmp(e, "EQ", div, num(e, "0.0")), copysign_(e, num(e, "0.0"), q),
                        floored);
  return sel(e, cmp(e, "EQ", b, num(e, "0.0")), q, r);
}

/* The activations of ops/tpu_ops_elementwise.h in PyTorch CPU's forms, and logit. */
static tpu_hlo_value emit_activation(ew *e, const tpu_hlo_value *x) {
  tpu_hlo_value a = x[0], b = e->call->n_inputs > 1 ? x[1] : x[0];
  tpu_hlo_value zero = num(e, "0.0"), one = num(e, "1.0");
  switch (e->call->op) {
  case TPU_OP_GELU_TANH: { /* 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) */
    tpu_hlo_value cube = bin(e, "multiply", bin(e, "multiply", a, a), a);
    tpu_hlo_value inner = bin(e, "multiply", num(e, "0.79788456080286535588"),
                              bin(e, "add", a, bin(e, "multiply", num(e, "0.044715"), cube)));
    return bin(e, "multiply", bin(e, "multiply", num(e, "0.5"), a),
               bin(e, "add", one, un(e, "tanh", inner)));
  }
  case TPU_OP_GELU_TANH_BACKWARD: { /* (grad, x) */
    tpu_hlo_value sq = bin(e, "multiply", b, b), kappa = num(e, "0.044715");
    tpu_hlo_value beta = num(e, "0.79788456080286535588");
    tpu_hlo_value inner = bin(e, "multiply", beta,
                              bin(e, "add", b, bin(e, "multiply", kappa,
                                                   bin(e, "multiply", sq, b))));
    tpu_hlo_value t = un(e, "tanh", inner);
    tpu_hlo_value left = bin(e, "multiply", num(e, "0.5"), b);
    tpu_hlo_value left_d = bin(e, "multiply", num(e, "0.5"), bin(e, "add", one, t));
    tpu_hlo_value slope = bin(e, "multiply", beta,
                              bin(e, "add", one, bin(e, "multiply", num(e, "0.134145"), sq)));
    tpu_hlo_value right_d = bin(e, "multiply", bin(e, "multiply", left,
                                                   bin(e, "subtract", one,
                                                       bin(e, "multiply", t, t))),
                                slope);
    return bin(e, "multiply", a, bin(e, "add", left_d, right_d));
  }
  case TPU_OP_MISH: /* x tanh(log1p(exp(x))) */
    return bin(e, "multiply", a, un(e, "tanh", un(e, "log_plus_one", un(e, "exponential", a))));
  case TPU_OP_MISH_BACKWARD: { /* grad (t + x sigmoid(x) (1 - t^2)), t = tanh(softplus(x)) */
    tpu_hlo_value t = un(e, "tanh", un(e, "log_plus_one", un(e, "exponential", b)));
    tpu_hlo_value d = bin(e, "multiply", bin(e, "multiply", b, sigmoid(e, b)),
                          bin(e, "subtract", one, bin(e, "multiply", t, t)));
    return bin(e, "multiply", a, bin(e, "add", t, d));
  }
  case TPU_OP_HARDSWISH: case TPU_OP_HARDSIGMOID: { /* [x *] min(max(x + 3, 0), 6) / 6 */
    tpu_hlo_value six = num(e, "6.0");
    tpu_hlo_value r = minmax(e, "minimum", minmax(e, "maximum", bin(e, "add", a, num(e, "3.0")),
                                                  zero), six);
    return quotient(e, e->call->op == TPU_OP_HARDSWISH ? bin(e, "multiply", a, r) : r, six);
  }
  case TPU_OP_HARDSWISH_BACKWARD: /* (grad, x) */
    return sel(e, cmp(e, "LT", b, num(e, "-3.0")), zero,
               sel(e, cmp(e, "LE", b, num(e, "3.0")),
                   bin(e, "multiply", a, bin(e, "add", quotient(e, b, num(e, "3.0")),
                                             num(e, "0.5"))),
                   a));
  case TPU_OP_HARDSIGMOID_BACKWARD: /* (grad, x) */
    return sel(e, tpu_hlo_binary(e->h, "and", cmp(e, "GT", b, num(e, "-3.0")),
                                 cmp(e, "LT", b, num(e, "3.0"))),
               bin(e, "multiply", a, num(e, "0.16666667163372039795")), /* CPU's float 1/6 */
               zero);
  case TPU_OP_SOFTSHRINK: { /* x > l ? x - l : x < -l ? x + l : 0 x */
    tpu_hlo_value l = scal(e, 0), nl = un(e, "negate", l);
    return sel(e, cmp(e, "GT", a, l), bin(e, "subtract", a, l),
               sel(e, cmp(e, "LT", a, nl), bin(e, "add", a, l), bin(e, "multiply", zero, a)));
  }
  case TPU_OP_HARDSHRINK: case TPU_OP_SHRINK_BACKWARD: { /* -l <= x <= l ? 0 : x (or grad) */
    tpu_hlo_value x_ = e->call->op == TPU_OP_HARDSHRINK ? a : b, l = scal(e, 0);
    tpu_hlo_value in = tpu_hlo_binary(e->h, "and", cmp(e, "GE", x_, un(e, "negate", l)),
                                      cmp(e, "LE", x_, l));
    return sel(e, in, zero, a);
  }
  case TPU_OP_LOG_SIGMOID: /* min(x, 0) - log1p(exp(-|x|)) */
    return bin(e, "subtract", minmax(e, "minimum", a, zero),
               un(e, "log_plus_one", un(e, "exponential", un(e, "negate", un(e, "abs", a)))));
  case TPU_OP_LOG_SIGMOID_BACKWARD: { /* (grad, x): (neg ? 1 : 0) - (neg ? 1 : -1) z / (1 + z) */
    tpu_hlo_value z = un(e, "exponential", un(e, "negate", un(e, "abs", b)));
    tpu_hlo_value neg = cmp(e, "LT", b, zero), q = quotient(e, z, bin(e, "add", one, z));
    tpu_hlo_value d = sel(e, neg, bin(e, "subtract", one, q), q);
    return bin(e, "multiply", d, a);
  }
  case TPU_OP_SOFTPLUS: { /* x beta > threshold ? x : log1p(exp(x beta)) / beta */
    tpu_hlo_value xb = bin(e, "multiply", a, scal(e, 0));
    return sel(e, cmp(e, "GT", xb, scal(e, 1)), a,
               quotient(e, un(e, "log_plus_one", un(e, "exponential", xb)), scal(e, 0)));
  }
  case TPU_OP_SOFTPLUS_BACKWARD: { /* (grad, x): z = exp(x beta); grad z / (z + 1) */
    tpu_hlo_value xb = bin(e, "multiply", b, scal(e, 0)), z = un(e, "exponential", xb);
    return sel(e, cmp(e, "GT", xb, scal(e, 1)), a,
               quotient(e, bin(e, "multiply", a, z), bin(e, "add", z, one)));
  }
  case TPU_OP_ELU: { /* x <= 0 ? (exp(x input_scale) - 1) alpha scale : x scale */
    tpu_hlo_value neg = bin(e, "multiply",
                            bin(e, "subtract", un(e, "exponential",
                                                  bin(e, "multiply", a, scal(e, 2))), one),
                            bin(e, "multiply", scal(e, 0), scal(e, 1)));
    return sel(e, cmp(e, "LE", a, zero), neg, bin(e, "multiply", a, scal(e, 1)));
  }
  case TPU_OP_ELU_BACKWARD: { /* (grad, x or the result when s3) */
    tpu_hlo_value negcoef = bin(e, "multiply", scal(e, 0), scal(e, 1)), negin = scal(e, 2);
    tpu_hlo_value of_result = bin(e, "multiply", bin(e, "multiply", a, negin),
                                  bin(e, "add", b, negcoef));
    tpu_hlo_value of_input = bin(e, "multiply",
                                 bin(e, "multiply", bin(e, "multiply", a, negin), negcoef),
                                 un(e, "exponential", bin(e, "multiply", b, negin)));
    tpu_hlo_value given_result = cmp(e, "NE", scal(e, 3), zero);
    return sel(e, cmp(e, "LE", b, zero), sel(e, given_result, of_result, of_input),
               bin(e, "multiply", a, scal(e, 1)));
  }
  case TPU_OP_LOGIT: { /* log(z / (1 - z)), z = x clamped to [eps, 1 - eps] when eps >= 0 */
    tpu_hlo_value eps = scal(e, 0), clamped = minmax(e, "minimum", minmax(e, "maximum", a, eps),
                                                     bin(e, "subtract", one, eps));
    tpu_hlo_value z = sel(e, cmp(e, "LT", eps, zero), a, clamped);
    return positive_nan(e, un(e, "log", quotient(e, z, bin(e, "subtract", one, z))), x, 1);
  }
  case TPU_OP_LOGIT_BACKWARD: { /* (grad, x): grad / (x (1 - x)) inside the range */
    tpu_hlo_value eps = scal(e, 0);
    tpu_hlo_value d = quotient(e, a, bin(e, "multiply", b, bin(e, "subtract", one, b)));
    tpu_hlo_value outside_unit = tpu_hlo_binary(e->h, "or", cmp(e, "LT", b, zero),
                                                cmp(e, "GT", b, one));
    tpu_hlo_value outside_eps = tpu_hlo_binary(e->h, "or", cmp(e, "LT", b, eps),
                                               cmp(e, "GT", b, bin(e, "subtract", one, eps)));
    tpu_hlo_value nan = num(e, e->work == TPU_FLOAT64 ? "0x7FF8000000000000" : "0x7FC00000");
    tpu_hlo_value no_eps = sel(e, outside_unit, nan, d);
    return sel(e, cmp(e, "LT", eps, zero), no_eps, sel(e, outside_eps, zero, d));
  }
  default: return a;
  }
}

static tpu_hlo_value emit_float(ew *e, const tpu_hlo_value *x) {
  tpu_hlo_value a = x[0], b = e->call->n_inputs > 1 ? x[1] : x[0];
  switch (e->call->op) {
  case TPU_OP_DIV: return quotient(e, a, b);
  case TPU_OP_RECIPROCAL: return bin(e, "divide", num(e, "1.0"), a);
  case TPU_OP_EXP: return un(e, "exponential", a);
  case TPU_OP_EXPM1: return un(e, "exponential_minus_one", a);
  case TPU_OP_TANH: return un(e, "tanh", a);
  case TPU_OP_ERF: return tpu_hlo_chlo_unary(e->h, "erf", a);
  case TPU_OP_POW: case TPU_OP_SQRT: case TPU_OP_RSQRT: case TPU_OP_LOG: case TPU_OP_LOG1P:
  case TPU_OP_SIN: case TPU_OP_COS: case TPU_OP_POW_SCALAR: case TPU_OP_TAN: case TPU_OP_ASIN:
  case TPU_OP_ACOS: case TPU_OP_ERFINV: case TPU_OP_LOG2: case TPU_OP_LOG10:
    return emit_domain(e, x);
  case TPU_OP_EXP2: return bin(e, "power", num(e, "2.0"), a);
  case TPU_OP_SINH: return tpu_hlo_chlo_unary(e->h, "sinh", a);
  case TPU_OP_COSH: return tpu_hlo_chlo_unary(e->h, "cosh", a);
  case TPU_OP_ATAN: /* XLA's CPU compiler folds atan2(x, 1) into a vectorized atan that is
                      * wrong from 64 elements on; the barrier keeps the 1 an operand */
    return bin(e, "atan2", a, un(e, "optimization_barrier", num(e, "1.0")));
  case TPU_OP_ERFC: return tpu_hlo_chlo_unary(e->h, "erfc", a);
  case TPU_OP_ATAN2: return bin(e, "atan2", a, b);
  case TPU_OP_FRAC: return bin(e, "subtract", a, truncated(e, a));
  case TPU_OP_COPYSIGN: return copysign_(e, a, b);
  case TPU_OP_FMOD: return bin(e, "remainder", a, b); /* C's fmod: the sign of a, exact */
  case TPU_OP_REMAINDER: { /* fmod moved to the sign of b */
    tpu_hlo_value mod = bin(e, "remainder", a, b);
    return sel(e, other_sign(e, mod, b), bin(e, "add", mod, b), mod);
  }
  case TPU_OP_DIV_TRUNC: return truncated(e, quotient(e, a, b));
  case TPU_OP_DIV_FLOOR: return floor_divide(e, a, b);
  case TPU_OP_ROUND_DECIMALS: { /* s1 != 0: decimals < 0, s0 = 10^|decimals| */
    tpu_hlo_value up = quotient(e, un(e, "round_nearest_even", bin(e, "multiply", a, scal(e, 0))),
                                scal(e, 0));
    tpu_hlo_value down = bin(e, "multiply", un(e, "round_nearest_even", quotient(e, a, scal(e, 0))),
                             scal(e, 0));
    return sel(e, cmp(e, "NE", scal(e, 1), num(e, "0.0")), down, up);
  }
  case TPU_OP_SIGMOID: return sigmoid(e, a);
  case TPU_OP_GELU: return bin(e, "multiply", a, gelu_cdf(e, a));
  case TPU_OP_GELU_BACKWARD: { /* grad * (cdf(x) + x * pdf(x)) */
    tpu_hlo_value sq = bin(e, "multiply", b, b);
    tpu_hlo_value pdf = bin(e, "multiply", num(e, "0.39894228040143267794"),
                            un(e, "exponential", bin(e, "multiply", num(e, "-0.5"), sq)));
    return bin(e, "multiply", a, bin(e, "add", gelu_cdf(e, b), bin(e, "multiply", b, pdf)));
  }
  case TPU_OP_SILU: return bin(e, "divide", a, bin(e, "add", num(e, "1.0"),
                                                   un(e, "exponential", un(e, "negate", a))));
  case TPU_OP_SILU_BACKWARD: { /* grad * s * (1 + x * (1 - s)) */
    tpu_hlo_value s = sigmoid(e, b), one = num(e, "1.0");
    tpu_hlo_value inner = bin(e, "add", one, bin(e, "multiply", b, bin(e, "subtract", one, s)));
    return bin(e, "multiply", bin(e, "multiply", a, s), inner);
  }
  case TPU_OP_SIGMOID_BACKWARD:
    return bin(e, "multiply", a, bin(e, "multiply", bin(e, "subtract", num(e, "1.0"), b), b));
  case TPU_OP_TANH_BACKWARD:
    return bin(e, "multiply", a, bin(e, "subtract", num(e, "1.0"), bin(e, "multiply", b, b)));
  case TPU_OP_LEAKY_RELU:
    return sel(e, cmp(e, "GT", a, num(e, "0.0")), a, bin(e, "multiply", a, scal(e, 0)));
  case TPU_OP_LEAKY_RELU_BACKWARD: /* (x, grad) */
    return sel(e, cmp(e, "GT", a, num(e, "0.0")), b, bin(e, "multiply", b, scal(e, 0)));
  case TPU_OP_HARDTANH_BACKWARD: { /* (grad, x; min, max) */
    tpu_hlo_value out = tpu_hlo_binary(e->h, "or", cmp(e, "LE", b, scal(e, 0)),
                                       cmp(e, "GE", b, scal(e, 1)));
    return sel(e, out, num(e, "0.0"), a);
  }
  case TPU_OP_LERP: return lerp(e, a, b, x[2]);
  case TPU_OP_LERP_SCALAR: return lerp(e, a, b, scal(e, 0));
  case TPU_OP_ADDCMUL:
    return bin(e, "add", a, bin(e, "multiply", scal(e, 0), bin(e, "multiply", b, x[2])));
  case TPU_OP_ADDCDIV:
    return bin(e, "add", a, bin(e, "multiply", scal(e, 0), bin(e, "divide", b, x[2])));
  case TPU_OP_NAN_TO_NUM: {
    tpu_hlo_value inf = num(e, e->work == TPU_FLOAT32 ? "0x7F800000" : "0x7FF0000000000000"), r = a;
    r = sel(e, isnan_(e, a), scal(e, 0), r);
    r = sel(e, cmp(e, "EQ", a, inf), scal(e, 1), r);
    return sel(e, cmp(e, "EQ", a, un(e, "negate", inf)), scal(e, 2), r);
  }
  default: return emit_activation(e, x);
  }
}

/* Ops with integer, float (and some bool) lowerings. */
static tpu_hlo_value emit_any(ew *e, const tpu_hlo_value *x) {
  bool floating = tpu_dtype_is_floating(e->compute);
  tpu_hlo_value a = x[0], b = e->call->n_inputs > 1 ? x[1] : x[0];
  switch (e->call->op) {
  case TPU_OP_ADD: /* on bool: a || (alpha && b) */
    if (e->compute == TPU_BOOL)
      return bin(e, "or", a, bin(e, "and", scal(e, 0), b));
    return bin(e, "add", a, bin(e, "multiply", scal(e, 0), b));
  /* On bool: a product is an and, the larger an or, the smaller an and. */
  case TPU_OP_MUL: return bin(e, e->compute == TPU_BOOL ? "and" : "multiply", a, b);
  case TPU_OP_MAXIMUM:
    return e->compute == TPU_BOOL ? bin(e, "or", a, b) : minmax(e, "maximum", a, b);
  case TPU_OP_MINIMUM:
    return e->compute == TPU_BOOL ? bin(e, "and", a, b) : minmax(e, "minimum", a, b);
  case TPU_OP_NEG: return un(e, "negate", a);
  case TPU_OP_ABS: return e->compute == TPU_UINT8 ? a : un(e, "abs", a);
  case TPU_OP_CLAMP:
    return minmax(e, "minimum", minmax(e, "maximum", a, scal(e, 0)), scal(e, 1));
  case TPU_OP_POW: return floating ? emit_float(e, x) : bin(e, "power", a, b);
  case TPU_OP_POW_SCALAR: return floating ? emit_float(e, x) : bin(e, "power", a, scal(e, 0));
  case TPU_OP_CLAMP_TENSOR: { /* a NaN bound gives that NaN, then a NaN x passes through */
    tpu_hlo_value r = minmax(e, "minimum", minmax(e, "maximum", a, b), x[2]);
    if (!floating)
      return r;
    return sel(e, isnan_(e, b), b, sel(e, isnan_(e, x[2]), x[2], r));
  }
  case TPU_OP_CLAMP_MIN: return minmax(e, "maximum", a, scal(e, 0));
  case TPU_OP_CLAMP_MAX: return minmax(e, "minimum", a, scal(e, 0));
  case TPU_OP_THRESHOLD: return sel(e, cmp(e, "LE", a, scal(e, 0)), scal(e, 1), b);
  case TPU_OP_FLOOR: return floating ? un(e, "floor", a) : a;
  case TPU_OP_CEIL: return floating ? un(e, "ceil", a) : a;
  case TPU_OP_ROUND: return floating ? un(e, "round_nearest_even", a) : a;
  case TPU_OP_TRUNC: return floating ? truncated(e, a) : a;
  case TPU_OP_SIGN:
    if (e->compute == TPU_BOOL)
      return a;
    if (e->compute == TPU_UINT8)
      return tpu_hlo_convert(e->h, cmp(e, "NE", a, num(e, "0")), TPU_UINT8);
    return floating ? sel(e, isnan_(e, a), num(e, "0.0"), un(e, "sign", a)) : un(e, "sign", a);
  case TPU_OP_EQ: return cmp(e, "EQ", a, b);
  case TPU_OP_NE: return cmp(e, "NE", a, b);
  case TPU_OP_LT: return cmp(e, "LT", a, b);
  case TPU_OP_LE: return cmp(e, "LE", a, b);
  case TPU_OP_GT: return cmp(e, "GT", a, b);
  case TPU_OP_GE: return cmp(e, "GE", a, b);
  case TPU_OP_BITWISE_AND: return bin(e, "and", a, b);
  case TPU_OP_BITWISE_OR: return bin(e, "or", a, b);
  case TPU_OP_BITWISE_XOR: return bin(e, "xor", a, b);
  case TPU_OP_BITWISE_NOT: return un(e, "not", a);
  case TPU_OP_ISNAN:
    return floating ? isnan_(e, a) : cmp(e, "NE", num(e, "0"), num(e, "0"));
  case TPU_OP_ISFINITE:
    return floating ? un(e, "is_finite", a) : cmp(e, "EQ", a, a);
  case TPU_OP_ISINF:
    return floating ? tpu_hlo_binary(e->h, "and", tpu_hlo_unary(e->h, "not", un(e, "is_finite", a)),
                                     cmp(e, "EQ", a, a))
                    : cmp(e, "NE", a, a);
  case TPU_OP_ISPOSINF: case TPU_OP_ISNEGINF: {
    if (!floating)
      return cmp(e, "NE", a, a);
    tpu_hlo_value inf = num(e, e->work == TPU_FLOAT32 ? "0x7F800000" : "0x7FF0000000000000");
    return cmp(e, "EQ", a, e->call->op == TPU_OP_ISPOSINF ? inf : un(e, "negate", inf));
  }
  default:
    if (tpu_pjrt_ew_math_kinds(e->call->op))
      return tpu_pjrt_ew_math_emit(e->h, e->call, e->work, x, e->scalar, e->ctx);
    return emit_float(e, x);
  }
}

tpu_hlo_value tpu_pjrt_ew_emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                               tpu_pjrt_scalar_fn scalar, void *ctx) {
  ew e = {.h = h, .call = call, .compute = call->compute, .scalar = scalar, .ctx = ctx};
  e.work = call->compute == TPU_FLOAT16 || call->compute == TPU_BFLOAT16 ? TPU_FLOAT32
                                                                         : call->compute;
  e.like = in[0];
  e.like.elem = e.work;
  tpu_hlo_value x[4];
  for (int i = 0; i < call->n_inputs && i < 4; i++) {
    bool logical = call->op == TPU_OP_LOGICAL_AND || call->op == TPU_OP_LOGICAL_OR ||
                   call->op == TPU_OP_LOGICAL_XOR || call->op == TPU_OP_LOGICAL_NOT;
    bool divides = call->op == TPU_OP_DIV || call->op == TPU_OP_DIV_TRUNC ||
                   call->op == TPU_OP_DIV_FLOOR;
    bool scalar_at_float = (call->op == TPU_OP_MUL || divides) && i == 1 &&
                           !call->tensors[1].buf && e.work != call->compute;
    if (logical || (call->op == TPU_OP_WHERE && i == 0))
      x[i] = tpu_hlo_cast(h, in[i], TPU_BOOL);
    else if (scalar_at_float)
      x[i] = tpu_hlo_convert(h, in[i], TPU_FLOAT32);
    else
      x[i] = to_work(&e, in[i]);
  }
  tpu_hlo_value r;
  switch (call->op) {
  case TPU_OP_LOGICAL_AND: r = tpu_hlo_binary(h, "and", x[0], x[1]); break;
  case TPU_OP_LOGICAL_OR: r = tpu_hlo_binary(h, "or", x[0], x[1]); break;
  case TPU_OP_LOGICAL_XOR: r = tpu_hlo_binary(h, "xor", x[0], x[1]); break;
  case TPU_OP_LOGICAL_NOT: r = tpu_hlo_unary(h, "not", x[0]); break;
  case TPU_OP_WHERE: r = tpu_hlo_select(h, x[0], x[1], x[2]); break;
  default: r = emit_any(&e, x); break;
  }
  if (bool_result(call->op))
    return r;
  tpu_hlo_value narrow = tpu_hlo_convert(h, r, call->compute);
  /* Narrowing may change a NaN's sign (XLA's conversion to bfloat16). */
  if (e.work != call->compute && has_domain(call->op))
    narrow = positive_nan(&e, narrow, x, call->n_inputs < 2 ? call->n_inputs : 2);
  return narrow;
}
