/* Cases of the sort family (ops/tpu_ops_sort.h has the call layout): whole sorts and the first k
 * (topk), ascending and descending, along inner and outer dimensions of dense, transposed and
 * strided inputs, with NaN, infinities, signed zeros and ties, in every dtype the op takes, rows
 * short enough for insertion sort and long enough for the radix sort, and short prefixes of long
 * rows (the host narrows those down first). */
#ifndef EVERY_OP_CASES_SORT_H
#define EVERY_OP_CASES_SORT_H

#include "every_op_case.h"

#define ASCENDING(dim) .scalars = {{.i = dim}, {.i = 0}}
#define DESCENDING(dim) .scalars = {{.i = dim}, {.i = 1}}

static const op_case sort_cases[] = {
    {CASE(SORT, "float32 rows with NaN, infinities and zeros", 1, 2), ASCENDING(1),
     .tensors = {{F32(8, 60), SPECIAL}, {F32(8, 60)}, {I64(8, 60)}}},
    {CASE(SORT, "float32 short rows descending", 1, 2), DESCENDING(1),
     .tensors = {{F32(6, 20), SPECIAL}, {F32(6, 20)}, {I64(6, 20)}}},
    {CASE(SORT, "int32 columns of ties, transposed", 1, 2), ASCENDING(0),
     .tensors = {{I32(70, 9), TRANSPOSED, RANGE(0, 5)}, {I32(70, 9)}, {I64(70, 9)}}},
    {CASE(SORT, "int64 descending ties", 1, 2), DESCENDING(1),
     .tensors = {{I64(5, 100), RANGE(-4, 4)}, {I64(5, 100)}, {I64(5, 100)}}},
    {CASE(SORT, "bfloat16 top 5 of 40", 1, 2), DESCENDING(1),
     .tensors = {{BF16(12, 40), SPECIAL}, {BF16(12, 5)}, {I64(12, 5)}}},
    {CASE(SORT, "float16 strided, smallest 30 of 64", 1, 2), ASCENDING(1),
     .tensors = {{F16(4, 64), STRIDED, SPECIAL}, {F16(4, 30)}, {I64(4, 30)}}},
    {CASE(SORT, "float64 middle dimension, top 3", 1, 2), DESCENDING(1),
     .tensors = {{F64(3, 50, 4), SPECIAL}, {F64(3, 3, 4)}, {I64(3, 3, 4)}}},
    {CASE(SORT, "int8 and its extremes", 1, 2), ASCENDING(1),
     .tensors = {{.dtype = TPU_INT8, DIMS(4, 80), RANGE(-128, 128)}, {.dtype = TPU_INT8,
                  DIMS(4, 80)}, {I64(4, 80)}}},
    {CASE(SORT, "int16 descending", 1, 2), DESCENDING(0),
     .tensors = {{I16(90, 3)}, {I16(90, 3)}, {I64(90, 3)}}},
    {CASE(SORT, "uint8 rows", 1, 2), ASCENDING(1), .tensors = {{U8(6, 70)}, {U8(6, 70)},
                                                               {I64(6, 70)}}},
    {CASE(SORT, "bool rows descending", 1, 2), DESCENDING(1),
     .tensors = {{BOOL_(5, 66)}, {BOOL_(5, 66)}, {I64(5, 66)}}},
    {CASE(SORT, "float32 top 3 of 300, the long row narrowed first", 1, 2), DESCENDING(1),
     .tensors = {{F32(7, 300), SPECIAL}, {F32(7, 3)}, {I64(7, 3)}}},
    {CASE(SORT, "int32 smallest 4 of 200 with ties", 1, 2), ASCENDING(0),
     .tensors = {{I32(200, 5), RANGE(-3, 40)}, {I32(4, 5)}, {I64(4, 5)}}},
    {CASE(SORT, "large float32 rows split over the pool", 1, 2), ASCENDING(1),
     .tensors = {{F32(80, 1000)}, {F32(80, 1000)}, {I64(80, 1000)}}},
};

#undef ASCENDING
#undef DESCENDING

#endif
