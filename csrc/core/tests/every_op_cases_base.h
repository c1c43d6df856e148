/* Cases of the base family (ops/tpu_ops_base.h has the call layouts): copies with conversions,
 * broadcast and transposed sources, and fills; complex ones between restrided views, between the
 * complex dtypes and to and from real ones, as drivers that compute on their parts see them. */
#ifndef EVERY_OP_CASES_BASE_H
#define EVERY_OP_CASES_BASE_H

#include "every_op_case.h"

static const op_case base_cases[] = {
    {CASE(COPY, "float32 strided to bfloat16", 1, 1),
     .tensors = {{F32(12, 20), STRIDED}, {BF16(12, 20)}}},
    {CASE(COPY, "an int32 row broadcast to float64", 1, 1),
     .tensors = {{I32(8, 16), VIEW(0, 0, 1)}, {F64(8, 16)}}},
    {CASE(COPY, "float32 with NaN and infinities to int64", 1, 1),
     .tensors = {{F32(300), SPECIAL}, {I64(300)}}},
    {CASE(COPY, "complex64 transposed", 1, 1), .tensors = {{C64(6, 10), TRANSPOSED}, {C64(6, 10)}}},
    {CASE(COPY, "complex64 step-sliced into a transposed complex128", 1, 1),
     .tensors = {{C64(6, 10), STRIDED}, {C128(6, 10), TRANSPOSED}}},
    {CASE(COPY, "a complex128 row broadcast to complex64", 1, 1),
     .tensors = {{C128(8, 5), VIEW(0, 0, 1)}, {C64(8, 5)}}},
    {CASE(COPY, "complex64 with NaN and infinities to bool", 1, 1),
     .tensors = {{C64(40), SPECIAL}, {BOOL_(40)}}},
    {CASE(COPY, "complex64 with NaN and infinities to int64", 1, 1),
     .tensors = {{C64(40), SPECIAL}, {I64(40)}}},
    {CASE(COPY, "complex128 transposed into strided float32 (the real part)", 1, 1),
     .tensors = {{C128(7, 9), TRANSPOSED}, {F32(7, 9), STRIDED}}},
    {CASE(COPY, "float16 transposed to complex128", 1, 1),
     .tensors = {{F16(12, 9), TRANSPOSED}, {C128(12, 9)}}},
    {CASE(COPY, "int64 into a strided complex64", 1, 1),
     .tensors = {{I64(10, 6)}, {C64(10, 6), STRIDED}}},
    {CASE(COPY, "bool to complex128", 1, 1), .tensors = {{BOOL_(33)}, {C128(33)}}},
    {CASE(COPY, "uint8 into a transposed bool", 1, 1),
     .tensors = {{U8(9, 14)}, {BOOL_(9, 14), TRANSPOSED}}},
    {CASE(COPY, "large float32 transposed to bfloat16", 1, 1),
     .tensors = {{F32(300, 300), TRANSPOSED}, {BF16(300, 300)}}},
    {CASE(FILL, "float32 strided", 0, 1), .scalars = {{.f = 1.25}},
     .tensors = {{F32(20, 30), STRIDED}}},
    {CASE(FILL, "int16", 0, 1), .scalars = {{.i = -7}}, .tensors = {{I16(500)}}},
    {CASE(FILL, "bfloat16", 0, 1), .scalars = {{.f = 3.3}}, .tensors = {{BF16(7, 70)}}},
    {CASE(FILL, "complex64 strided", 0, 1), .scalars = {{.f = 1.1}, {.f = -0.0}},
     .tensors = {{C64(9, 8), STRIDED}}},
};

#endif
