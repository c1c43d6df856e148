/* Cases of the special family (ops/tpu_ops_special.h): each polynomial in float32 with NaN,
 * infinities and signed zeros among x and degrees from -2 to 13 broadcast across rows (negative
 * degrees, the first terms, the recurrence and the trigonometric forms), in float64 from
 * transposed x and int64 degrees, and with a scalar degree; each Bessel-family function in
 * float32 over [-12, 12) with the special values (every range of its expansions), in float64
 * strided, and from int32 inputs. Shifted kinds take x around [0, 1]; a few cases put x on the
 * points with closed values. */
#ifndef EVERY_OP_CASES_SPECIAL_H
#define EVERY_OP_CASES_SPECIAL_H

#include "every_op_case.h"

#define SPECIAL_IN(lo, hi) .values = {VALUES_SPECIAL, lo, hi}

/* The cases of polynomial `op` whose x is drawn from [lo, hi). */
#define POLY_CASES(op, lo, hi)                                                                     \
  {CASE(op, "float32 degrees -2 to 13 broadcast over rows", 2, 1), .compute = TPU_FLOAT32,        \
   .tensors = {{F32(4, 33), SPECIAL_IN(lo, hi)}, {F32(33), RANGE(-2, 14)}, {F32(4, 33)}}},         \
      {CASE(op, "float64 transposed x, int64 degrees", 2, 1), .compute = TPU_FLOAT64,             \
       .tensors = {{F64(6, 5), TRANSPOSED, RANGE(lo, hi)}, {I64(6, 5), RANGE(0, 20)},             \
                   {F64(6, 5)}}},                                                                  \
      {CASE(op, "float32 scalar degree 9", 2, 1), .compute = TPU_FLOAT32,                         \
       .tensors = {{F32(40), RANGE(lo, hi)}, {SCALAR_INPUT_F(9.0)}, {F32(40)}}}

/* The cases of Bessel-family function `op`. */
#define BESSEL_CASES(op)                                                                           \
  {CASE(op, "float32 over [-12, 12) with NaN and infinities", 1, 1), .compute = TPU_FLOAT32,      \
   .tensors = {{F32(6, 40), SPECIAL_IN(-12, 12)}, {F32(6, 40)}}},                                  \
      {CASE(op, "float64 strided over [-9, 9)", 1, 1), .compute = TPU_FLOAT64,                    \
       .tensors = {{F64(5, 12), STRIDED, RANGE(-9, 9)}, {F64(5, 12)}}},                            \
      {CASE(op, "int32 input into float32", 1, 1), .compute = TPU_FLOAT32,                       \
       .tensors = {{I32(30), RANGE(-6, 10)}, {F32(30)}}}

static const op_case special_cases[] = {
    POLY_CASES(CHEBYSHEV_T, -1.5, 1.5),
    POLY_CASES(CHEBYSHEV_U, -1.5, 1.5),
    POLY_CASES(CHEBYSHEV_V, -1.5, 1.5),
    POLY_CASES(CHEBYSHEV_W, -1.5, 1.5),
    POLY_CASES(SHIFTED_CHEBYSHEV_T, -0.25, 1.25),
    POLY_CASES(SHIFTED_CHEBYSHEV_U, -0.25, 1.25),
    POLY_CASES(SHIFTED_CHEBYSHEV_V, -0.25, 1.25),
    POLY_CASES(SHIFTED_CHEBYSHEV_W, -0.25, 1.25),
    POLY_CASES(HERMITE_H, -4, 4),
    POLY_CASES(HERMITE_HE, -4, 4),
    POLY_CASES(LAGUERRE_L, -4, 4),
    POLY_CASES(LEGENDRE_P, -1.5, 1.5),
    BESSEL_CASES(AIRY_AI),
    BESSEL_CASES(BESSEL_J0),
    BESSEL_CASES(BESSEL_J1),
    BESSEL_CASES(BESSEL_Y0),
    BESSEL_CASES(BESSEL_Y1),
    BESSEL_CASES(MODIFIED_BESSEL_I0),
    BESSEL_CASES(MODIFIED_BESSEL_I1),
    BESSEL_CASES(MODIFIED_BESSEL_K0),
    BESSEL_CASES(MODIFIED_BESSEL_K1),
    BESSEL_CASES(SCALED_MODIFIED_BESSEL_K0),
    BESSEL_CASES(SCALED_MODIFIED_BESSEL_K1),
    BESSEL_CASES(SPHERICAL_BESSEL_J0),
    {CASE(HERMITE_H, "float32 degrees past 128 give NaN", 2, 1), .compute = TPU_FLOAT32,
     .tensors = {{F32(8), RANGE(-1, 1)}, {F32(8), RANGE(120, 140)}, {F32(8)}}},
    {CASE(CHEBYSHEV_U, "float64 x from -1.125 by 0.25, degree 17", 2, 1), .compute = TPU_FLOAT64,
     .tensors = {{F64(9), ASCENDING_ROWS(0.25, 9)}, {SCALAR_INPUT_I(17)}, {F64(9)}}},
    {CASE(CHEBYSHEV_W, "float64 x = 1", 2, 1), .compute = TPU_FLOAT64,
     .tensors = {{F64(10), CONST(1.0)}, {F64(10), RANGE(-1, 20)}, {F64(10)}}},
    {CASE(SHIFTED_CHEBYSHEV_V, "float32 x from -1.125 by 0.25, degree 12", 2, 1),
     .compute = TPU_FLOAT32,
     .tensors = {{F32(9), ASCENDING_ROWS(0.25, 9)}, {SCALAR_INPUT_F(12.0)}, {F32(9)}}},
    {CASE(LEGENDRE_P, "large float32 over the pool", 2, 1), .compute = TPU_FLOAT32,
     .tensors = {{F32(64, 1024), RANGE(-1, 1)}, {F32(1024), RANGE(0, 30)}, {F32(64, 1024)}}},
    {CASE(MODIFIED_BESSEL_I0, "large float32 over the pool", 1, 1), .compute = TPU_FLOAT32,
     .tensors = {{F32(64, 1024), RANGE(-20, 20)}, {F32(64, 1024)}}},
};

#undef SPECIAL_IN
#undef POLY_CASES
#undef BESSEL_CASES

#endif
