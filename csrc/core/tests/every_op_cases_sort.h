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

/* SCAN's scalars: the dimension and the combine kind. */
#define PRODUCT(dim) .scalars = {{.i = dim}, {.i = 0}}
#define RUNNING_MAX(dim) .scalars = {{.i = dim}, {.i = 1}}
#define RUNNING_MIN(dim) .scalars = {{.i = dim}, {.i = 2}}
#define LOGSUMEXP(dim) .scalars = {{.i = dim}, {.i = 3}}

/* Scans (cumprod, cummax / cummin with positions, logcumsumexp) along inner and outer dimensions,
 * with NaN, infinities, signed zeros and ties; searches of ascending rows, shared or one per
 * value row, left and right, with values between, on and past the elements; histograms of
 * floating and integer inputs, with and without weights, with values outside the range. */
static const op_case scan_cases[] = {
    {CASE(SCAN, "float32 running product along rows", 1, 1), PRODUCT(1),
     .tensors = {{F32(6, 40), RANGE(-1.5, 1.5)}, {F32(6, 40)}}},
    {CASE(SCAN, "int32 running product wrapping, columns", 1, 1), PRODUCT(0),
     .tensors = {{I32(30, 5), TRANSPOSED, RANGE(-9, 9)}, {I32(30, 5)}}},
    {CASE(SCAN, "bfloat16 running product", 1, 1), PRODUCT(1),
     .tensors = {{BF16(4, 20), RANGE(0.5, 1.5)}, {BF16(4, 20)}}},
    {CASE(SCAN, "float32 running max with NaN, infinities and zeros", 1, 2), RUNNING_MAX(1),
     .tensors = {{F32(8, 60), SPECIAL}, {F32(8, 60)}, {I64(8, 60)}}},
    {CASE(SCAN, "int64 running min of ties along columns", 1, 2), RUNNING_MIN(0),
     .tensors = {{I64(40, 6), RANGE(-4, 4)}, {I64(40, 6)}, {I64(40, 6)}}},
    {CASE(SCAN, "bool running max", 1, 2), RUNNING_MAX(1),
     .tensors = {{BOOL_(5, 30)}, {BOOL_(5, 30)}, {I64(5, 30)}}},
    {CASE(SCAN, "bfloat16 strided running min with NaN", 1, 2), RUNNING_MIN(1),
     .tensors = {{BF16(4, 32), STRIDED, SPECIAL}, {BF16(4, 32)}, {I64(4, 32)}}},
    {CASE(SCAN, "float64 logcumsumexp with NaN and infinities", 1, 1), LOGSUMEXP(1),
     .tensors = {{F64(5, 50), SPECIAL}, {F64(5, 50)}}},
    {CASE(SCAN, "float32 logcumsumexp along an outer dimension", 1, 1), LOGSUMEXP(0),
     .tensors = {{F32(50, 3, 4), RANGE(-20, 20)}, {F32(50, 3, 4)}}},
    {CASE(SCAN, "float16 logcumsumexp", 1, 1), LOGSUMEXP(1),
     .tensors = {{F16(3, 24)}, {F16(3, 24)}}},
    {CASE(SEARCH, "float32 values in one shared row, left", 2, 1), .scalars = {{.i = 0}},
     .tensors = {{F32(40), ASCENDING_ROWS(0.5, 40)}, {F32(6, 9), RANGE(-12, 12)},
                 {I64(6, 9)}}},
    {CASE(SEARCH, "int64 values on the elements of shared rows, right", 2, 1),
     .scalars = {{.i = 1}},
     .tensors = {{I64(30), ASCENDING_ROWS(2, 30)}, {I64(50), RANGE(-40, 40)}, {I64(50)}}},
    {CASE(SEARCH, "float64 rows of their own into int32", 2, 1), .scalars = {{.i = 0}},
     .tensors = {{F64(3, 4, 16), ASCENDING_ROWS(1, 16)}, {F64(3, 4, 7), SPECIAL},
                 {.dtype = TPU_INT32, DIMS(3, 4, 7)}}},
    {CASE(SEARCH, "int32 scalar value, right", 2, 1), .scalars = {{.i = 1}},
     .tensors = {{I32(12), ASCENDING_ROWS(3, 12)}, {ZERO_DIM(INT32), RANGE(-20, 20)},
                 {ZERO_DIM(INT64)}}},
    {CASE(HISTC, "float32 counts with values outside and NaN", 1, 1),
     .scalars = {{.f = -2.0}, {.f = 2.5}},
     .tensors = {{F32(30, 20), SPECIAL}, {F32(17)}}},
    {CASE(HISTC, "float64 counts into int64 bins", 1, 1), .scalars = {{.f = -1.0}, {.f = 1.0}},
     .tensors = {{F64(7, 33), TRANSPOSED}, {I64(9)}}},
    {CASE(HISTC, "int64 weighted counts (bincount)", 2, 1), .scalars = {{.f = 0.0}, {.f = 12.0}},
     .tensors = {{I64(200), RANGE(0, 12)}, {F32(200)}, {F64(12)}}},
    {CASE(HISTC, "int32 counts", 1, 1), .scalars = {{.f = -30.0}, {.f = 25.0}},
     .tensors = {{I32(4, 50)}, {F32(10)}}},
    {CASE(HISTC, "bfloat16 strided counts", 1, 1), .scalars = {{.f = -1.0}, {.f = 1.0}},
     .tensors = {{BF16(9, 30), STRIDED}, {BF16(8)}}},
    {CASE(HISTC, "large float32 counts split over the pool", 1, 1),
     .scalars = {{.f = -3.0}, {.f = 3.0}}, .tensors = {{F32(300, 400)}, {F32(100)}}},
};

#undef PRODUCT
#undef RUNNING_MAX
#undef RUNNING_MIN
#undef LOGSUMEXP
#undef ASCENDING
#undef DESCENDING

#endif
