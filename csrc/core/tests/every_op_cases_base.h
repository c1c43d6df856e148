/* Cases of the base family (ops/tpu_ops_base.h has the call layouts): copies with conversions,
 * broadcast and transposed sources, and fills. */
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
    {CASE(COPY, "uint8 into a transposed bool", 1, 1),
     .tensors = {{U8(9, 14)}, {BOOL_(9, 14), TRANSPOSED}}},
    {CASE(COPY, "large float32 transposed to bfloat16", 1, 1),
     .tensors = {{F32(300, 300), TRANSPOSED}, {BF16(300, 300)}}},
    {CASE(FILL, "float32 strided", 0, 1), .scalars = {{.f = 1.25}},
     .tensors = {{F32(20, 30), STRIDED}}},
    {CASE(FILL, "int16", 0, 1), .scalars = {{.i = -7}}, .tensors = {{I16(500)}}},
    {CASE(FILL, "bfloat16", 0, 1), .scalars = {{.f = 3.3}}, .tensors = {{BF16(7, 70)}}},
};

#endif
