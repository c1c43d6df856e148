/* Cases of the index family (ops/tpu_ops_index.h has the call layouts), index_select along either
 * end first. Indices lie in range (negative ones where the op wraps them); duplicates are kept,
 * since every op resolves them in a fixed order. Several calls view one storage through several
 * tensors, as their binding does: index_add/copy/fill spread a 1-d index with stride 0, INDEX and
 * INDEX_PUT read self's storage through restrided and "along" views. The mask-driven ops' output
 * sizes follow from EVERY(k) patterns: k | n elements, n / k of them set. */
#ifndef EVERY_OP_CASES_INDEX_H
#define EVERY_OP_CASES_INDEX_H

#include "every_op_case.h"

/* dim, then the accumulation and its alpha (floating .f, integer .i) */
#define SCATTER_SCALARS(dim, accum, alpha)                                                         \
  {{.i = dim}, {.i = accum}, {.f = alpha}, {.f = 0}, {.i = (int64_t)(alpha)}}

static const op_case index_cases[] = {
    {CASE(INDEX_SELECT, "float32 rows by int64", 2, 1), .scalars = {{.i = 0}},
     .tensors = {{F32(10, 16)}, {I64(7), RANGE(0, 10)}, {F32(7, 16)}}},
    {CASE(INDEX_SELECT, "bfloat16 transposed, last dimension by int32", 2, 1),
     .scalars = {{.i = -1}},
     .tensors = {{BF16(9, 13), TRANSPOSED}, {I32(20), RANGE(0, 13)}, {BF16(9, 20)}}},
    {CASE(GATHER, "float32 along the last dimension", 2, 1), .scalars = {{.i = 1}},
     .tensors = {{F32(8, 10)}, {I64(8, 6), RANGE(0, 10)}, {F32(8, 6)}}},
    {CASE(GATHER, "bfloat16 transposed along the first dimension, int32 index", 2, 1),
     .scalars = {{.i = 0}},
     .tensors = {{BF16(9, 7), TRANSPOSED}, {I32(12, 5), RANGE(0, 9)}, {BF16(12, 5)}}},
    {CASE(SCATTER, "float32 assignments, the last duplicate wins", 2, 1),
     .scalars = SCATTER_SCALARS(0, TPU_ACCUM_ASSIGN, 1),
     .tensors = {{I64(6, 10), RANGE(0, 8)}, {F32(6, 10)}, {F32(8, 10)}}},
    {CASE(SCATTER, "bool assignments along columns", 2, 1),
     .scalars = SCATTER_SCALARS(1, TPU_ACCUM_ASSIGN, 1),
     .tensors = {{I64(4, 6), RANGE(0, 9)}, {BOOL_(4, 6), EVERY(2)}, {BOOL_(4, 9)}}},
    {CASE(SCATTER, "int32 additions into a strided self", 2, 1),
     .scalars = SCATTER_SCALARS(1, TPU_ACCUM_ADD, 3),
     .tensors = {{I64(5, 20), RANGE(0, 7)}, {I32(5, 20)}, {I32(5, 7), STRIDED}}},
    {CASE(SCATTER, "large float32 additions with many duplicates", 2, 1),
     .scalars = SCATTER_SCALARS(0, TPU_ACCUM_ADD, 1),
     .tensors = {{I64(5000, 8), RANGE(0, 16)}, {F32(5000, 8)}, {F32(16, 8)}}},
    {CASE(SCATTER, "bfloat16 products", 2, 1), .scalars = SCATTER_SCALARS(0, TPU_ACCUM_MUL, 1),
     .tensors = {{I32(12, 4), RANGE(0, 3)}, {BF16(12, 4), RANGE(0.5, 1.5)}, {BF16(3, 4)}}},
    {CASE(INDEX_ADD, "float32 columns, alpha 2", 2, 1),
     .scalars = SCATTER_SCALARS(1, TPU_ACCUM_ADD, 2),
     .tensors = {{I32(4, 5), VIEW(0, 0, 1), RANGE(0, 7)}, {F32(4, 5)}, {F32(4, 7)}}},
    {CASE(INDEX_COPY, "float64 rows", 2, 1), .scalars = SCATTER_SCALARS(0, TPU_ACCUM_ASSIGN, 1),
     .tensors = {{I64(3, 6), VIEW(0, 1, 0), RANGE(0, 5)}, {F64(3, 6)}, {F64(5, 6)}}},
    {CASE(INDEX_FILL, "int16 columns with one value", 2, 1),
     .scalars = SCATTER_SCALARS(1, TPU_ACCUM_ASSIGN, 1),
     .tensors = {{I64(6, 3), VIEW(0, 0, 1), RANGE(0, 8)}, {I16(6, 3), VIEW(0, 0, 0)}, {I16(6, 8)}}},
    /* x [4, 6, 8][:, i, j] with i, j [5], wrapping negative indices: B [4], I [5], no A */
    {CASE(INDEX, "float32, two index tensors after one dimension", 5, 2), .scalars = {{.i = 1}},
     .tensors = {{F32(4, 5), VIEW(0, 48, 0), STORAGE(192)}, {I64(5), RANGE(-6, 6)},
                 {I32(5), RANGE(-8, 8)}, {F32(6), VIEW(0, 8), ALIAS(0)},
                 {F32(8), VIEW(0, 1), ALIAS(0)}, {I64(5)}, {F32(4, 5), TRANSPOSED}}},
    /* x [6, 8][i] += v with i [5]: I [5], A [8] */
    {CASE(INDEX_PUT, "float32 accumulating rows", 3, 2), .scalars = {{.i = 0}, {.i = 1}},
     .tensors = {{F32(5, 8)}, {I32(5), RANGE(-6, 6)}, {F32(6), VIEW(0, 8), ALIAS(4)}, {I64(5)},
                 {F32(5, 8), VIEW(0, 0, 1), STORAGE(48)}}},
    {CASE(INDEX_PUT, "int64 assignments of a broadcast value", 3, 2),
     .scalars = {{.i = 0}, {.i = 0}},
     .tensors = {{I64(5, 8), VIEW(0, 0, 0)}, {I64(5), RANGE(0, 6)}, {I64(6), VIEW(0, 8), ALIAS(4)},
                 {I64(5)}, {I64(5, 8), VIEW(0, 0, 1), STORAGE(48)}}},
    {CASE(NONZERO_COUNT, "float32", 1, 1),
     .tensors = {{F32(10, 12), EVERY(3)}, {ZERO_DIM(INT64)}}},
    {CASE(NONZERO, "int32 into transposed coordinates", 1, 1),
     .tensors = {{I32(6, 8), EVERY(3)}, {I64(16, 2), TRANSPOSED}}},
    {CASE(MASKED_SELECT, "float32", 2, 1),
     .tensors = {{F32(6, 8)}, {BOOL_(6, 8), EVERY(4)}, {F32(12)}}},
    {CASE(MASKED_SCATTER, "bfloat16 from a longer source", 2, 1),
     .tensors = {{U8(5, 10), EVERY(2)}, {BF16(30)}, {BF16(5, 10)}}},
    {CASE(TRILU, "float32 triu above the diagonal", 1, 1), .scalars = {{.i = 1}, {.i = 1}},
     .tensors = {{F32(3, 7, 9)}, {F32(3, 7, 9)}}},
    {CASE(TRILU, "int64 tril in place", 1, 1), .scalars = {{.i = -2}, {.i = 0}},
     .tensors = {{I64(8, 6)}, {I64(8, 6), ALIAS(0)}}},
    {CASE(ARANGE, "float32", 0, 1), .scalars = {{.f = -2.5}, {.f = 0.25}},
     .tensors = {{F32(100)}}},
    {CASE(ARANGE, "int32 counting down", 0, 1),
     .scalars = {{.f = 0}, {.f = 0}, {.i = 5}, {.i = -3}}, .tensors = {{I32(70)}}},
    {CASE(ARANGE, "bfloat16 strided", 0, 1), .scalars = {{.f = 1}, {.f = 0.5}},
     .tensors = {{BF16(64), STRIDED}}},
};

#endif
