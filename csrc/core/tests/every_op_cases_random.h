/* Cases of the random family (ops/tpu_ops_random.h has the call layouts): the random fills,
 * Bernoulli draws, dropout and multinomial draws, each a pure function of seed and offset (and
 * the weights), so the reference and the driver agree bit for bit. p lies in [0, 1), weights are
 * positive. */
#ifndef EVERY_OP_CASES_RANDOM_H
#define EVERY_OP_CASES_RANDOM_H

#include "every_op_case.h"

static const op_case random_cases[] = {
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
    {CASE(BERNOULLI, "bool from a scalar p", 0, 1),
     .scalars = {{.f = 0.3}, {.f = 0}, {.u = 17}, {.u = 4}}, .tensors = {{BOOL_(500)}}},
    {CASE(BERNOULLI, "float32 from a float64 p tensor", 1, 1),
     .scalars = {{.f = 0}, {.f = 0}, {.u = 5}, {.u = 0}},
     .tensors = {{F64(20, 30), RANGE(0, 1)}, {F32(20, 30)}}},
    {CASE(DROPOUT, "float32", 1, 2), .scalars = {{.f = 0.8}, {.f = 1.25}, {.u = 3}, {.u = 1}},
     .tensors = {{F32(600)}, {F32(600)}, {BOOL_(600)}}},
    {CASE(DROPOUT, "bfloat16 transposed", 1, 2),
     .scalars = {{.f = 0.5}, {.f = 2}, {.u = 8}, {.u = 2}},
     .tensors = {{BF16(20, 30), TRANSPOSED}, {BF16(20, 30)}, {BOOL_(20, 30)}}},
    {CASE(DROPOUT_BACKWARD, "float32 with a uint8 mask", 2, 1), .scalars = {{.f = 1.25}},
     .tensors = {{F32(600)}, {U8(600), RANGE(0, 2)}, {F32(600)}}},
    {CASE(MULTINOMIAL, "float32 with replacement", 1, 1),
     .scalars = {{.i = 1}, {.i = 0}, {.u = 21}, {.u = 3}},
     .tensors = {{F32(3, 10), RANGE(0, 1)}, {I64(3, 50)}}},
    {CASE(MULTINOMIAL, "float64 transposed with replacement into a strided output", 1, 1),
     .scalars = {{.i = 1}, {.i = 0}, {.u = 8}, {.u = 1}},
     .tensors = {{F64(6, 7), TRANSPOSED, RANGE(0, 5)}, {I64(6, 9), STRIDED}}},
    {CASE(MULTINOMIAL, "bfloat16 without replacement", 1, 1),
     .scalars = {{.i = 0}, {.i = 0}, {.u = 4}, {.u = 2}},
     .tensors = {{BF16(4, 12), RANGE(0, 2)}, {I64(4, 5)}}},
    {CASE(MULTINOMIAL, "float16 without replacement, every category", 1, 1),
     .scalars = {{.i = 0}, {.i = 0}, {.u = 5}, {.u = 9}},
     .tensors = {{F16(2, 8), RANGE(0.5, 1)}, {I64(2, 8)}}},
    {CASE(MULTINOMIAL, "float32, one draw from many categories", 1, 1),
     .scalars = {{.i = 0}, {.i = 0}, {.u = 6}, {.u = 4}},
     .tensors = {{F32(2, 5000), RANGE(0, 1e-3)}, {I64(2, 1)}}},
};

#endif
