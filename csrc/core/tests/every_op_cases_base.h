/* Cases of the base family (ops/tpu_ops_base.h has the call layouts): copies with conversions,
 * broadcast and transposed sources, fills, index_select along either end, and the random fills (a
 * pure function of seed and offset, so the reference and the driver agree bit for bit). */
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
    {CASE(INDEX_SELECT, "float32 rows by int64", 2, 1), .scalars = {{.i = 0}},
     .tensors = {{F32(10, 16)}, {I64(7), RANGE(0, 10)}, {F32(7, 16)}}},
    {CASE(INDEX_SELECT, "bfloat16 transposed, last dimension by int32", 2, 1),
     .scalars = {{.i = -1}},
     .tensors = {{BF16(9, 13), TRANSPOSED}, {I32(20), RANGE(0, 13)}, {BF16(9, 20)}}},
    {CASE(UNIFORM, "float32 in [-2, 5)", 0, 1),
     .scalars = {{.f = -2}, {.f = 5}, {.u = 1234}, {.u = 7}}, .tensors = {{F32(30, 40)}}},
    {CASE(UNIFORM, "bfloat16 strided", 0, 1),
     .scalars = {{.f = 0}, {.f = 1}, {.u = 99}, {.u = 3}}, .tensors = {{BF16(17, 19), STRIDED}}},
    {CASE(UNIFORM, "large float32", 0, 1),
     .scalars = {{.f = -1}, {.f = 1}, {.u = 31}, {.u = 5}}, .tensors = {{F32(100000)}}},
    {CASE(NORMAL, "float64, an odd count", 0, 1),
     .scalars = {{.f = 1}, {.f = 2}, {.u = 42}, {.u = 0}}, .tensors = {{F64(501)}}},
    {CASE(NORMAL, "float32 transposed", 0, 1),
     .scalars = {{.f = 0}, {.f = 0.5}, {.u = 7}, {.u = 11}},
     .tensors = {{F32(20, 25), TRANSPOSED}}},
    {CASE(RANDOM, "int32 in [-5, 95)", 0, 1),
     .scalars = {{.i = -5}, {.u = 100}, {.u = 5}, {.u = 1}}, .tensors = {{I32(400)}}},
    {CASE(RANDOM, "float32 in [0, 2^24]", 0, 1),
     .scalars = {{.i = 0}, {.u = (1u << 24) + 1}, {.u = 6}, {.u = 2}}, .tensors = {{F32(300)}}},
    {CASE(RANDOM, "int64 over all 2^64 values", 0, 1),
     .scalars = {{.i = 0}, {.u = 0}, {.u = 8}, {.u = 9}}, .tensors = {{I64(255)}}},
};

#endif
