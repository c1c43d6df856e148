/* Cases of the elementwise family (ops/tpu_ops_elementwise.h has the operands and scalars). Each
 * op is one row: its arity, the domain of each input, its scalars and the compute dtypes it runs
 * in; ew_case makes the call for one of those dtypes, each dtype with its own layouts (broadcasts,
 * transposed, strided and scalar inputs, a strided output), so every op also meets the engine's
 * buffered paths. A few calls that rows cannot express (mixed dtypes, in place, a float scalar on
 * bfloat16) follow as plain cases. */
#ifndef EVERY_OP_CASES_ELEMENTWISE_H
#define EVERY_OP_CASES_ELEMENTWISE_H

#include <stdbool.h>

#include "every_op_case.h"

/* Where an input's values lie, so that every op sees arguments it is defined for. */
typedef enum ew_domain {
  DOMAIN_ANY,
  DOMAIN_POSITIVE,       /* log, sqrt, pow's base */
  DOMAIN_NONZERO,        /* divisors (integer division by zero is an error) */
  DOMAIN_UNIT,           /* (0, 1): logit, sigmoid and tanh outputs, lerp weights */
  DOMAIN_SYMMETRIC_UNIT, /* (-1, 1): asin, acos, erfinv */
  DOMAIN_SPECIAL,        /* NaN and infinities among finite values */
} ew_domain;

/* Compute dtypes, as bits of ew_op.dtypes. */
enum {
  ON_F32 = 1u << 0,
  ON_BF16 = 1u << 1,
  ON_F64 = 1u << 2,
  ON_I32 = 1u << 3,
  ON_BOOL = 1u << 4,
  ON_F16 = 1u << 5,
  FLOATS = ON_F32 | ON_BF16 | ON_F64,
  NUMBERS = FLOATS | ON_I32,
  EVERY_DTYPE = NUMBERS | ON_BOOL,
  INTEGRAL = ON_I32 | ON_BOOL,
};

typedef struct ew_op {
  tpu_op_id op;
  int arity;
  ew_domain domains[3];
  double scalars[4]; /* .f for floating compute dtypes, else .i (bool: nonzero or not) */
  unsigned dtypes;
  bool bool_out;       /* comparisons, logical ops and predicates write bool */
  bool bool_condition; /* where: input 0 is a bool condition */
} ew_op;

#define EW(id, arity_) .op = TPU_OP_##id, .arity = arity_

static const ew_op ew_ops[] = {
    /* binary (elementwise_binary.c) */
    {EW(ADD, 2), .scalars = {2}, .dtypes = EVERY_DTYPE | ON_F16},
    {EW(MUL, 2), .dtypes = EVERY_DTYPE | ON_F16},
    {EW(DIV, 2), .domains = {DOMAIN_ANY, DOMAIN_NONZERO}, .dtypes = FLOATS},
    {EW(DIV_TRUNC, 2), .domains = {DOMAIN_ANY, DOMAIN_NONZERO}, .dtypes = NUMBERS},
    {EW(DIV_FLOOR, 2), .domains = {DOMAIN_ANY, DOMAIN_NONZERO}, .dtypes = NUMBERS},
    {EW(REMAINDER, 2), .domains = {DOMAIN_ANY, DOMAIN_NONZERO}, .dtypes = NUMBERS},
    {EW(FMOD, 2), .domains = {DOMAIN_ANY, DOMAIN_NONZERO}, .dtypes = NUMBERS},
    {EW(ATAN2, 2), .dtypes = FLOATS},
    {EW(COPYSIGN, 2), .dtypes = FLOATS},
    {EW(POW, 2), .domains = {DOMAIN_POSITIVE}, .dtypes = NUMBERS},
    {EW(MAXIMUM, 2), .domains = {DOMAIN_SPECIAL}, .dtypes = EVERY_DTYPE},
    {EW(MINIMUM, 2), .domains = {DOMAIN_SPECIAL}, .dtypes = EVERY_DTYPE},
    {EW(EQ, 2), .dtypes = EVERY_DTYPE, .bool_out = true},
    {EW(NE, 2), .dtypes = EVERY_DTYPE, .bool_out = true},
    {EW(LT, 2), .dtypes = EVERY_DTYPE, .bool_out = true},
    {EW(LE, 2), .dtypes = EVERY_DTYPE, .bool_out = true},
    {EW(GT, 2), .dtypes = EVERY_DTYPE, .bool_out = true},
    {EW(GE, 2), .dtypes = EVERY_DTYPE, .bool_out = true},
    {EW(LOGICAL_AND, 2), .dtypes = EVERY_DTYPE, .bool_out = true},
    {EW(LOGICAL_OR, 2), .dtypes = EVERY_DTYPE, .bool_out = true},
    {EW(LOGICAL_XOR, 2), .dtypes = EVERY_DTYPE, .bool_out = true},
    {EW(BITWISE_AND, 2), .dtypes = INTEGRAL},
    {EW(BITWISE_OR, 2), .dtypes = INTEGRAL},
    {EW(BITWISE_XOR, 2), .dtypes = INTEGRAL},
    /* unary (elementwise_unary.c) */
    {EW(NEG, 1), .dtypes = NUMBERS},
    {EW(ABS, 1), .dtypes = NUMBERS},
    {EW(SIGN, 1), .dtypes = EVERY_DTYPE},
    {EW(SQRT, 1), .domains = {DOMAIN_POSITIVE}, .dtypes = FLOATS | ON_F16},
    {EW(RSQRT, 1), .domains = {DOMAIN_POSITIVE}, .dtypes = FLOATS},
    {EW(RECIPROCAL, 1), .domains = {DOMAIN_NONZERO}, .dtypes = FLOATS},
    {EW(EXP, 1), .dtypes = FLOATS | ON_F16},
    {EW(EXP2, 1), .dtypes = FLOATS},
    {EW(EXPM1, 1), .dtypes = FLOATS},
    {EW(LOG, 1), .domains = {DOMAIN_POSITIVE}, .dtypes = FLOATS},
    {EW(LOG2, 1), .domains = {DOMAIN_POSITIVE}, .dtypes = FLOATS},
    {EW(LOG10, 1), .domains = {DOMAIN_POSITIVE}, .dtypes = FLOATS},
    {EW(LOG1P, 1), .domains = {DOMAIN_POSITIVE}, .dtypes = FLOATS},
    {EW(SIN, 1), .dtypes = FLOATS},
    {EW(COS, 1), .dtypes = FLOATS},
    {EW(TAN, 1), .dtypes = FLOATS},
    {EW(TANH, 1), .dtypes = FLOATS},
    {EW(SINH, 1), .dtypes = FLOATS},
    {EW(COSH, 1), .dtypes = FLOATS},
    {EW(ASIN, 1), .domains = {DOMAIN_SYMMETRIC_UNIT}, .dtypes = FLOATS},
    {EW(ACOS, 1), .domains = {DOMAIN_SYMMETRIC_UNIT}, .dtypes = FLOATS},
    {EW(ATAN, 1), .dtypes = FLOATS},
    {EW(ERF, 1), .dtypes = FLOATS},
    {EW(ERFC, 1), .dtypes = FLOATS},
    {EW(SIGMOID, 1), .dtypes = FLOATS | ON_F16},
    {EW(FLOOR, 1), .dtypes = NUMBERS},
    {EW(CEIL, 1), .dtypes = NUMBERS},
    {EW(ROUND, 1), .dtypes = NUMBERS},
    {EW(ROUND_DECIMALS, 1), .scalars = {100, 0}, .dtypes = FLOATS}, /* round(x, 2) */
    {EW(TRUNC, 1), .dtypes = NUMBERS},
    {EW(FRAC, 1), .dtypes = FLOATS},
    {EW(ERFINV, 1), .domains = {DOMAIN_SYMMETRIC_UNIT}, .dtypes = FLOATS},
    /* math (elementwise_math.c) */
    {EW(ACOSH, 1), .domains = {DOMAIN_POSITIVE}, .dtypes = FLOATS},
    {EW(ASINH, 1), .domains = {DOMAIN_SPECIAL}, .dtypes = FLOATS},
    {EW(ATANH, 1), .domains = {DOMAIN_SYMMETRIC_UNIT}, .dtypes = FLOATS},
    {EW(SIGNBIT, 1), .domains = {DOMAIN_SPECIAL}, .dtypes = EVERY_DTYPE, .bool_out = true},
    {EW(SINC, 1), .domains = {DOMAIN_SPECIAL}, .dtypes = FLOATS},
    {EW(ANGLE, 1), .domains = {DOMAIN_SPECIAL}, .dtypes = FLOATS},
    {EW(ENTR, 1), .domains = {DOMAIN_SPECIAL}, .dtypes = FLOATS},
    {EW(LGAMMA, 1), .domains = {DOMAIN_SPECIAL}, .dtypes = FLOATS},
    {EW(DIGAMMA, 1), .domains = {DOMAIN_SPECIAL}, .dtypes = FLOATS},
    {EW(POLYGAMMA, 1), .domains = {DOMAIN_SPECIAL}, .scalars = {2}, .dtypes = FLOATS},
    {EW(I0, 1), .domains = {DOMAIN_SPECIAL}, .dtypes = FLOATS},
    {EW(I0E, 1), .domains = {DOMAIN_SPECIAL}, .dtypes = FLOATS},
    {EW(I1, 1), .domains = {DOMAIN_SPECIAL}, .dtypes = FLOATS},
    {EW(I1E, 1), .domains = {DOMAIN_SPECIAL}, .dtypes = FLOATS},
    {EW(NDTRI, 1), .domains = {DOMAIN_UNIT}, .dtypes = FLOATS},
    {EW(LOG_NDTR, 1), .domains = {DOMAIN_SPECIAL}, .dtypes = FLOATS},
    {EW(ERFCX, 1), .domains = {DOMAIN_SPECIAL}, .dtypes = FLOATS},
    {EW(LOGADDEXP, 2), .domains = {DOMAIN_SPECIAL}, .dtypes = FLOATS},
    {EW(LOGADDEXP2, 2), .domains = {DOMAIN_SPECIAL}, .dtypes = FLOATS},
    {EW(HYPOT, 2), .domains = {DOMAIN_SPECIAL}, .dtypes = FLOATS},
    {EW(XLOGY, 2), .domains = {DOMAIN_ANY, DOMAIN_POSITIVE}, .dtypes = FLOATS},
    {EW(XLOG1PY, 2), .domains = {DOMAIN_SPECIAL, DOMAIN_POSITIVE}, .dtypes = FLOATS},
    {EW(ZETA, 2), .domains = {DOMAIN_POSITIVE, DOMAIN_POSITIVE}, .dtypes = FLOATS},
    {EW(IGAMMA, 2), .domains = {DOMAIN_POSITIVE, DOMAIN_POSITIVE}, .dtypes = FLOATS},
    {EW(IGAMMAC, 2), .domains = {DOMAIN_POSITIVE, DOMAIN_POSITIVE}, .dtypes = FLOATS},
    {EW(FMAX, 2), .domains = {DOMAIN_SPECIAL}, .dtypes = EVERY_DTYPE},
    {EW(FMIN, 2), .domains = {DOMAIN_SPECIAL}, .dtypes = EVERY_DTYPE},
    {EW(HEAVISIDE, 2), .domains = {DOMAIN_SPECIAL}, .dtypes = EVERY_DTYPE},
    {EW(NEXTAFTER, 2), .domains = {DOMAIN_SPECIAL}, .dtypes = FLOATS | ON_F16},
    {EW(LOGIT, 1), .domains = {DOMAIN_UNIT}, .scalars = {0.1}, .dtypes = FLOATS},
    {EW(POW_SCALAR, 1), .scalars = {3}, .dtypes = NUMBERS},
    {EW(BITWISE_NOT, 1), .dtypes = INTEGRAL},
    {EW(LOGICAL_NOT, 1), .dtypes = EVERY_DTYPE, .bool_out = true},
    {EW(ISNAN, 1), .domains = {DOMAIN_SPECIAL}, .dtypes = EVERY_DTYPE, .bool_out = true},
    {EW(ISINF, 1), .domains = {DOMAIN_SPECIAL}, .dtypes = EVERY_DTYPE, .bool_out = true},
    {EW(ISPOSINF, 1), .domains = {DOMAIN_SPECIAL}, .dtypes = EVERY_DTYPE, .bool_out = true},
    {EW(ISNEGINF, 1), .domains = {DOMAIN_SPECIAL}, .dtypes = EVERY_DTYPE, .bool_out = true},
    {EW(ISFINITE, 1), .domains = {DOMAIN_SPECIAL}, .dtypes = EVERY_DTYPE, .bool_out = true},
    {EW(NAN_TO_NUM, 1), .domains = {DOMAIN_SPECIAL}, .scalars = {0, 100, -100}, .dtypes = FLOATS},
    /* activations, clamps, where, lerp, addcmul/div (elementwise_nn.c) */
    {EW(CLAMP, 1), .domains = {DOMAIN_SPECIAL}, .scalars = {-1, 1.5}, .dtypes = NUMBERS},
    {EW(CLAMP_MIN, 1), .scalars = {-0.5}, .dtypes = NUMBERS},
    {EW(CLAMP_MAX, 1), .scalars = {0.5}, .dtypes = NUMBERS},
    {EW(CLAMP_TENSOR, 3), .dtypes = NUMBERS},
    {EW(THRESHOLD, 2), .scalars = {0.5, -2}, .dtypes = NUMBERS},
    {EW(GELU, 1), .dtypes = FLOATS},
    {EW(GELU_TANH, 1), .dtypes = FLOATS},
    {EW(GELU_BACKWARD, 2), .dtypes = FLOATS},
    {EW(GELU_TANH_BACKWARD, 2), .dtypes = FLOATS},
    {EW(SILU, 1), .dtypes = FLOATS},
    {EW(SILU_BACKWARD, 2), .dtypes = FLOATS},
    {EW(SIGMOID_BACKWARD, 2), .domains = {DOMAIN_ANY, DOMAIN_UNIT}, .dtypes = FLOATS},
    {EW(TANH_BACKWARD, 2), .domains = {DOMAIN_ANY, DOMAIN_SYMMETRIC_UNIT}, .dtypes = FLOATS},
    {EW(MISH, 1), .dtypes = FLOATS},
    {EW(MISH_BACKWARD, 2), .dtypes = FLOATS},
    {EW(SOFTPLUS, 1), .scalars = {1.5, 2}, .dtypes = FLOATS},
    {EW(SOFTPLUS_BACKWARD, 2), .scalars = {1.5, 2}, .dtypes = FLOATS},
    {EW(ELU, 1), .scalars = {1, 1.05, 1}, .dtypes = FLOATS},
    {EW(ELU_BACKWARD, 2), .scalars = {1, 1.05, 1, 0}, .dtypes = FLOATS},
    {EW(LEAKY_RELU, 1), .scalars = {0.01}, .dtypes = FLOATS},
    {EW(LEAKY_RELU_BACKWARD, 2), .scalars = {0.01}, .dtypes = FLOATS},
    {EW(HARDTANH_BACKWARD, 2), .scalars = {-1, 1}, .dtypes = FLOATS},
    {EW(LOGIT_BACKWARD, 2), .domains = {DOMAIN_ANY, DOMAIN_UNIT}, .scalars = {0.1},
     .dtypes = FLOATS},
    {EW(HARDSWISH, 1), .dtypes = FLOATS},
    {EW(HARDSWISH_BACKWARD, 2), .dtypes = FLOATS},
    {EW(HARDSIGMOID, 1), .dtypes = FLOATS},
    {EW(HARDSIGMOID_BACKWARD, 2), .dtypes = FLOATS},
    {EW(SOFTSHRINK, 1), .scalars = {0.5}, .dtypes = FLOATS},
    {EW(HARDSHRINK, 1), .scalars = {0.5}, .dtypes = FLOATS},
    {EW(SHRINK_BACKWARD, 2), .scalars = {0.5}, .dtypes = FLOATS},
    {EW(LOG_SIGMOID, 1), .dtypes = FLOATS},
    {EW(LOG_SIGMOID_BACKWARD, 2), .dtypes = FLOATS},
    {EW(WHERE, 3), .dtypes = EVERY_DTYPE, .bool_condition = true},
    {EW(LERP, 3), .domains = {DOMAIN_ANY, DOMAIN_ANY, DOMAIN_UNIT}, .dtypes = FLOATS},
    {EW(LERP_SCALAR, 2), .scalars = {0.3}, .dtypes = FLOATS},
    {EW(ADDCMUL, 3), .scalars = {2}, .dtypes = NUMBERS},
    {EW(ADDCDIV, 3), .domains = {DOMAIN_ANY, DOMAIN_ANY, DOMAIN_NONZERO}, .scalars = {0.5},
     .dtypes = FLOATS},
};

/* The operand layouts of one compute dtype: the output's, then each input's (dtype and values
 * come from the op). */
typedef struct ew_layouts {
  tpu_dtype dtype;
  unsigned bit;
  const char *what;
  case_tensor out, in[3];
} ew_layouts;

static const ew_layouts ew_layouts_by_dtype[] = {
    {TPU_FLOAT32, ON_F32, "float32, broadcast row and column",
     .out = {DIMS(24, 40)}, .in = {{DIMS(24, 40)}, {DIMS(40)}, {DIMS(24, 1)}}},
    {TPU_BFLOAT16, ON_BF16, "bfloat16, transposed and strided inputs",
     .out = {DIMS(16, 48)},
     .in = {{DIMS(16, 48), TRANSPOSED}, {DIMS(16, 48), STRIDED}, {DIMS(16, 48)}}},
    {TPU_FLOAT64, ON_F64, "float64, strided output",
     .out = {DIMS(6, 10, 12), STRIDED},
     .in = {{DIMS(6, 10, 12)}, {DIMS(10, 1)}, {DIMS(6, 10, 12), TRANSPOSED}}},
    {TPU_INT32, ON_I32, "int32, scalar second input",
     .out = {DIMS(999)}, .in = {{DIMS(999)}, {.layout = LAYOUT_SCALAR}, {DIMS(999)}}},
    {TPU_BOOL, ON_BOOL, "bool, broadcast and transposed inputs",
     .out = {DIMS(7, 9, 11)},
     .in = {{DIMS(7, 9, 11)}, {DIMS(1, 9, 11)}, {DIMS(7, 9, 11), TRANSPOSED}}},
    {TPU_FLOAT16, ON_F16, "float16",
     .out = {DIMS(300)}, .in = {{DIMS(300)}, {DIMS(300)}, {DIMS(300)}}},
};

#define EW_LAYOUT_COUNT (sizeof ew_layouts_by_dtype / sizeof ew_layouts_by_dtype[0])

static case_values ew_values(ew_domain domain, tpu_dtype dtype) {
  bool integral = !tpu_dtype_is_floating(dtype);
  switch (domain) {
  case DOMAIN_POSITIVE: return integral ? (case_values){VALUES_UNIFORM, 1, 50}
                                        : (case_values){VALUES_UNIFORM, 0.125, 3};
  case DOMAIN_NONZERO: return (case_values){VALUES_SIGNED, 0, 0};
  case DOMAIN_UNIT: return (case_values){VALUES_UNIFORM, 0.05, 0.95};
  case DOMAIN_SYMMETRIC_UNIT: return (case_values){VALUES_UNIFORM, -0.95, 0.95};
  case DOMAIN_SPECIAL: return (case_values){VALUES_SPECIAL, 0, 0};
  case DOMAIN_ANY: break;
  }
  return (case_values){VALUES_UNIFORM, 0, 0};
}

/* The call of `e` computing in the dtype of `layouts`. */
static op_case ew_case(const ew_op *e, const ew_layouts *layouts) {
  tpu_dtype dtype = layouts->dtype;
  op_case c = {.op = e->op, .what = layouts->what, .n_inputs = e->arity, .n_outputs = 1,
               .compute = dtype};
  for (int k = 0; k < 4; k++) {
    if (tpu_dtype_is_floating(dtype))
      c.scalars[k].f = e->scalars[k];
    else
      c.scalars[k].i = dtype == TPU_BOOL ? e->scalars[k] != 0 : (int64_t)e->scalars[k];
  }
  for (int k = 0; k < e->arity; k++) {
    case_tensor *t = &c.tensors[k];
    *t = layouts->in[k];
    t->dtype = k == 0 && e->bool_condition ? TPU_BOOL : dtype;
    t->values = ew_values(e->domains[k], t->dtype);
    if (t->layout == LAYOUT_SCALAR) { /* an integer scalar in the domain */
      t->dtype = TPU_INT64;
      t->values = (case_values){VALUES_CONST, e->domains[k] == DOMAIN_NONZERO ? -7 : 3, 0};
    }
  }
  c.tensors[e->arity] = layouts->out;
  c.tensors[e->arity].dtype = e->bool_out ? TPU_BOOL : dtype;
  return c;
}

/* Calls the rows cannot express. */
static const op_case ew_cases[] = {
    {CASE(ADD, "bfloat16 plus float32 in float32", 2, 1), .compute = TPU_FLOAT32,
     .scalars = {{.f = 1}}, .tensors = {{BF16(20, 30)}, {F32(20, 30), TRANSPOSED}, {F32(20, 30)}}},
    {CASE(ADD, "in place on its first input", 2, 1), .compute = TPU_FLOAT32, .scalars = {{.f = -1}},
     .tensors = {{F32(30, 40)}, {F32(40)}, {F32(30, 40), ALIAS(0)}}},
    {CASE(MUL, "bfloat16 times a float64 scalar kept at float precision", 2, 1),
     .compute = TPU_BFLOAT16, .tensors = {{BF16(256)}, {SCALAR_INPUT_F(1.1)}, {BF16(256)}}},
    {CASE(GT, "int32 against a float scalar, in float32", 2, 1), .compute = TPU_FLOAT32,
     .tensors = {{I32(100)}, {SCALAR_INPUT_F(2.5)}, {BOOL_(100)}}},
    {CASE(POW_SCALAR, "a non-integer exponent", 1, 1), .compute = TPU_FLOAT32,
     .scalars = {{.f = 2.5}}, .tensors = {{F32(500), RANGE(0.125, 3)}, {F32(500)}}},
    {CASE(POW_SCALAR, "exponent -0.5", 1, 1), .compute = TPU_FLOAT64, .scalars = {{.f = -0.5}},
     .tensors = {{F64(500), RANGE(0.125, 3)}, {F64(500)}}},
    {CASE(ELU_BACKWARD, "given the result", 2, 1), .compute = TPU_FLOAT32,
     .scalars = {{.f = 1}, {.f = 1.05}, {.f = 1}, {.f = 1}},
     .tensors = {{F32(400)}, {F32(400)}, {F32(400)}}},
    {CASE(LOGIT, "without eps", 1, 1), .compute = TPU_FLOAT32, .scalars = {{.f = -1}},
     .tensors = {{F32(400), RANGE(0.05, 0.95)}, {F32(400)}}},
    {CASE(I0, "the asymptotic range", 1, 1), .compute = TPU_FLOAT64,
     .tensors = {{F64(400), RANGE(-80, 80)}, {F64(400)}}},
    {CASE(I1E, "the asymptotic range", 1, 1), .compute = TPU_FLOAT32,
     .tensors = {{F32(400), RANGE(-80, 80)}, {F32(400)}}},
    {CASE(ERFCX, "both tails", 1, 1), .compute = TPU_FLOAT64,
     .tensors = {{F64(400), RANGE(-27, 60)}, {F64(400)}}},
    {CASE(LOG_NDTR, "the far lower tail", 1, 1), .compute = TPU_FLOAT64,
     .tensors = {{F64(400), RANGE(-60, 8)}, {F64(400)}}},
    {CASE(NDTRI, "tails", 1, 1), .compute = TPU_FLOAT64,
     .tensors = {{F64(400), RANGE(1e-12, 1e-4)}, {F64(400)}}},
    {CASE(ZETA, "x above 1", 2, 1), .compute = TPU_FLOAT64,
     .tensors = {{F64(30, 20), RANGE(1.5, 8)}, {F64(20), RANGE(0.5, 12)}, {F64(30, 20)}}},
    {CASE(POLYGAMMA, "trigamma", 1, 1), .compute = TPU_FLOAT64, .scalars = {{.f = 1}},
     .tensors = {{F64(400), RANGE(0.05, 20)}, {F64(400)}}},
    {CASE(POLYGAMMA, "digamma", 1, 1), .compute = TPU_FLOAT32, .scalars = {{.f = 0}},
     .tensors = {{F32(400), RANGE(0.05, 20)}, {F32(400)}}},
    {CASE(IGAMMA, "larger arguments", 2, 1), .compute = TPU_FLOAT64,
     .tensors = {{F64(30, 20), RANGE(0.5, 40)}, {F64(20), RANGE(0.5, 40)}, {F64(30, 20)}}},
    {CASE(NEXTAFTER, "bfloat16", 2, 1), .compute = TPU_BFLOAT16,
     .tensors = {{BF16(300)}, {BF16(300), SPECIAL}, {BF16(300)}}},
    {CASE(WHERE, "float32 branches into a float64 output", 3, 1), .compute = TPU_FLOAT64,
     .tensors = {{BOOL_(12, 1)}, {F32(12, 30)}, {F64(30)}, {F64(12, 30)}}},
    {CASE(ADD, "large float32 plus a broadcast row", 2, 1), .compute = TPU_FLOAT32,
     .scalars = {{.f = 0.5}}, .tensors = {{F32(256, 300)}, {F32(300)}, {F32(256, 300)}}},
    {CASE(SIGMOID, "large bfloat16 transposed", 1, 1), .compute = TPU_BFLOAT16,
     .tensors = {{BF16(300, 256), TRANSPOSED}, {BF16(300, 256)}}},
};

#endif
