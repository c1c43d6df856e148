/* Cases of the reduce family (ops/tpu_ops_reduce.h has the call layouts). Outputs keep the input's
 * rank with size 1 where it is reduced; the cases reduce inner, outer and several dimensions, of
 * dense, transposed and strided inputs, so both the row and the column modes run. */
#ifndef EVERY_OP_CASES_REDUCE_H
#define EVERY_OP_CASES_REDUCE_H

#include <math.h>

#include "every_op_case.h"

static const op_case reduce_cases[] = {
    {CASE(SUM, "float32 over the middle dimension", 1, 1), .compute = TPU_FLOAT32,
     .tensors = {{F32(16, 24, 10)}, {F32(16, 1, 10)}}},
    {CASE(SUM, "int32 into int64", 1, 1), .compute = TPU_INT64,
     .tensors = {{I32(30, 40), STRIDED}, {I64(30, 1)}}},
    {CASE(SUM, "mean of bfloat16 columns", 1, 1), .compute = TPU_BFLOAT16,
     .scalars = {{.i = 1}}, .tensors = {{BF16(20, 30), TRANSPOSED}, {BF16(1, 30)}}},
    {CASE(SUM, "large float32 columns", 1, 1), .compute = TPU_FLOAT32,
     .tensors = {{F32(300, 256)}, {F32(1, 256)}}},
    {CASE(SUM, "large float64, two long rows split over the pool", 1, 1),
     .compute = TPU_FLOAT64, .tensors = {{F64(2, 40000)}, {F64(2, 1)}}},
    {CASE(SUM, "bool rows counted in int64", 1, 1), .compute = TPU_INT64,
     .tensors = {{BOOL_(12, 30), EVERY(3)}, {I64(12, 1)}}},
    {CASE(PROD, "float64 rows", 1, 1), .compute = TPU_FLOAT64,
     .tensors = {{F64(8, 40), RANGE(0.5, 1.5)}, {F64(8, 1)}}},
    {CASE(PROD, "int32 wrapping in int64", 1, 1), .compute = TPU_INT64,
     .tensors = {{I32(6, 50)}, {I64(1, 50)}}},
    {CASE(AMAX, "float32 with NaN", 1, 1), .tensors = {{F32(12, 50), SPECIAL}, {F32(12, 1)}}},
    {CASE(AMAX, "int16 over everything", 1, 1), .tensors = {{I16(10, 20)}, {I16(1, 1)}}},
    {CASE(AMIN, "bfloat16 columns", 1, 1), .tensors = {{BF16(40, 12)}, {BF16(1, 12)}}},
    {CASE(AMAX, "bool rows", 1, 1), .tensors = {{BOOL_(12, 30), EVERY(7)}, {BOOL_(12, 1)}}},
    {CASE(AMIN, "bool columns", 1, 1), .tensors = {{BOOL_(12, 30), EVERY(7)}, {BOOL_(1, 30)}}},
    {CASE(MAX_DIM, "float32 rows with NaN", 1, 2),
     .tensors = {{F32(10, 33), SPECIAL}, {F32(10, 1)}, {I64(10, 1)}}},
    {CASE(MIN_DIM, "int32 columns with ties", 1, 2),
     .tensors = {{I32(25, 8), RANGE(0, 5)}, {I32(1, 8)}, {I64(1, 8)}}},
    {CASE(ARGMAX, "float32 over two dimensions", 1, 1),
     .tensors = {{F32(6, 7, 8), TRANSPOSED}, {I64(6, 1, 1)}}},
    {CASE(ARGMIN, "bfloat16 rows", 1, 1), .tensors = {{BF16(9, 40)}, {I64(9, 1)}}},
    {CASE(VAR, "float32 standard deviation and mean", 1, 2), .compute = TPU_FLOAT32,
     .scalars = {{.f = 1}, {.i = 1}}, .tensors = {{F32(12, 40)}, {F32(12, 1)}, {F32(12, 1)}}},
    {CASE(VAR, "float64 columns, correction 0", 1, 1), .compute = TPU_FLOAT64,
     .scalars = {{.f = 0}, {.i = 0}}, .tensors = {{F64(30, 9)}, {F64(1, 9)}}},
    {CASE(NORM, "float32 2-norm", 1, 1), .compute = TPU_FLOAT32, .scalars = {{.f = 2}},
     .tensors = {{F32(10, 60)}, {F32(10, 1)}}},
    {CASE(NORM, "bfloat16 3-norm", 1, 1), .compute = TPU_BFLOAT16, .scalars = {{.f = 3}},
     .tensors = {{BF16(20, 15), STRIDED}, {BF16(1, 15)}}},
    {CASE(NORM, "float64 inf-norm", 1, 1), .compute = TPU_FLOAT64, .scalars = {{.f = INFINITY}},
     .tensors = {{F64(5, 40)}, {F64(5, 1)}}},
    {CASE(LOGSUMEXP, "float32 rows", 1, 1), .compute = TPU_FLOAT32,
     .tensors = {{F32(10, 64)}, {F32(10, 1)}}},
    {CASE(VAR, "large float32 variance of one long row", 1, 1), .compute = TPU_FLOAT32,
     .scalars = {{.f = 1}, {.i = 0}}, .tensors = {{F32(1, 70000)}, {F32(1, 1)}}},
    {CASE(ANY, "bool columns", 1, 1), .tensors = {{BOOL_(30, 20), EVERY(7)}, {BOOL_(1, 20)}}},
    {CASE(ANY, "uint8 into uint8", 1, 1), .tensors = {{U8(12, 30), EVERY(40)}, {U8(12, 1)}}},
    {CASE(ALL, "float32 rows", 1, 1), .tensors = {{F32(16, 20), SPECIAL}, {BOOL_(16, 1)}}},
    {CASE(COUNT_NONZERO, "int32", 1, 1), .tensors = {{I32(20, 30), EVERY(3)}, {I64(20, 1)}}},
    {CASE(CUMSUM, "float32 along rows", 1, 1), .scalars = {{.i = 1}},
     .tensors = {{F32(12, 30)}, {F32(12, 30)}}},
    {CASE(CUMSUM, "int32 into int64 along columns", 1, 1), .scalars = {{.i = 0}},
     .tensors = {{I32(40, 9), TRANSPOSED}, {I64(40, 9)}}},
};

#endif
