/* Cases of the index family (ops/tpu_ops_index.h has the call layouts), index_select along either
 * end first. Indices lie in range (negative ones where the op wraps them); duplicates are kept,
 * since every op resolves them in a fixed order. Several calls view one storage through several
 * tensors, as their binding does: index_add/copy/fill spread a 1-d index with stride 0, INDEX and
 * INDEX_PUT read self's storage through restrided and "along" views (broadcast and negative
 * indices, duplicates assigned and accumulated). The mask-driven ops' output sizes follow from
 * EVERY(k) patterns: k | n elements, n / k of them set. */
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
    /* x.permute(1, 0, 2)[i, j] of x [7, 5, 3] with i [4, 1] and j [1, 6] broadcast together
     * (stride 0), both wrapping negative indices: I [4, 6], A [3], self restrided */
    {CASE(INDEX, "bfloat16, broadcast index tensors over a permuted self", 5, 2),
     .scalars = {{.i = 0}},
     .tensors = {{BF16(4, 6, 3), VIEW(0, 0, 0, 1), STORAGE(105)}, {I64(4, 6), VIEW(0, 1, 0),
                 RANGE(-5, 5)}, {I32(4, 6), VIEW(0, 0, 1), RANGE(-7, 7)},
                 {BF16(5), VIEW(0, 3), ALIAS(0)}, {BF16(7), VIEW(0, 15), ALIAS(0)}, {I64(4, 6)},
                 {BF16(4, 6, 3)}}},
    /* x[:, ::2][:, i] of x [6, 10, 4] with i [3, 2]: B [6], I [3, 2], A [4] */
    {CASE(INDEX, "int32 along the middle of a step slice", 3, 2), .scalars = {{.i = 1}},
     .tensors = {{I32(6, 3, 2, 4), VIEW(0, 40, 0, 0, 1), STORAGE(240)},
                 {I64(3, 2), RANGE(-5, 5)}, {I32(5), VIEW(0, 8), ALIAS(0)}, {I64(3, 2)},
                 {I32(6, 3, 2, 4)}}},
    /* x[i] of x [5, 3] with a 0-d i: I [], A [3] */
    {CASE(INDEX, "float64 by a 0-d index", 3, 2), .scalars = {{.i = 0}},
     .tensors = {{F64(3), VIEW(0, 1), STORAGE(15)}, {ZERO_DIM(INT64), RANGE(-5, 5)},
                 {F64(5), VIEW(0, 3), ALIAS(0)}, {ZERO_DIM(INT64)}, {F64(3)}}},
    /* x.t()[:, i] += v of x [8, 5] with i [40] (many duplicates): B [5], I [40] */
    {CASE(INDEX_PUT, "float32 accumulating duplicates along a transposed self's columns", 3, 2),
     .scalars = {{.i = 1}, {.i = 1}},
     .tensors = {{F32(5, 40)}, {I64(40), RANGE(-8, 8)}, {F32(8), VIEW(0, 5), ALIAS(4)},
                 {I64(40)}, {F32(5, 40), VIEW(0, 1, 0), STORAGE(40)}}},
    /* x[i, j] = v of x [6, 7] with i, j [10]: duplicates, the last one wins */
    {CASE(INDEX_PUT, "bfloat16 assignments to duplicates by two index tensors", 5, 2),
     .scalars = {{.i = 0}, {.i = 0}},
     .tensors = {{BF16(10)}, {I64(10), RANGE(-6, 6)}, {I32(10), RANGE(0, 3)},
                 {BF16(6), VIEW(0, 7), ALIAS(6)}, {BF16(7), VIEW(0, 1), ALIAS(6)}, {I64(10)},
                 {BF16(10), VIEW(0, 0), STORAGE(42)}}},
    {CASE(INDEX_PUT, "bfloat16 accumulating duplicates", 3, 2), .scalars = {{.i = 0}, {.i = 1}},
     .tensors = {{BF16(30, 3)}, {I64(30), RANGE(0, 4)}, {BF16(4), VIEW(0, 3), ALIAS(4)},
                 {I64(30)}, {BF16(30, 3), VIEW(0, 0, 1), STORAGE(12)}}},
    {CASE(INDEX_PUT, "bool accumulating (a logical or)", 3, 2), .scalars = {{.i = 0}, {.i = 1}},
     .tensors = {{BOOL_(9, 6)}, {I64(9), RANGE(0, 4)}, {BOOL_(4), VIEW(0, 6), ALIAS(4)},
                 {I64(9)}, {BOOL_(9, 6), VIEW(0, 0, 1), STORAGE(24)}}},
    {CASE(NONZERO_COUNT, "float32", 1, 1),
     .tensors = {{F32(10, 12), EVERY(3)}, {ZERO_DIM(INT64)}}},
    {CASE(NONZERO, "int32 into transposed coordinates", 1, 1),
     .tensors = {{I32(6, 8), EVERY(3)}, {I64(16, 2), TRANSPOSED}}},
    {CASE(NONZERO, "bool, 3-d", 1, 1), .tensors = {{BOOL_(4, 5, 6), EVERY(5)}, {I64(24, 3)}}},
    {CASE(NONZERO, "float32, 1-d", 1, 1), .tensors = {{F32(40), EVERY(4)}, {I64(10, 1)}}},
    {CASE(MASKED_SELECT, "float32", 2, 1),
     .tensors = {{F32(6, 8)}, {BOOL_(6, 8), EVERY(4)}, {F32(12)}}},
    {CASE(MASKED_SELECT, "int64 transposed, through a uint8 mask", 2, 1),
     .tensors = {{I64(8, 6), TRANSPOSED}, {U8(8, 6), EVERY(3)}, {I64(16)}}},
    {CASE(MASKED_SELECT, "bool", 2, 1),
     .tensors = {{BOOL_(5, 4)}, {BOOL_(5, 4), EVERY(2)}, {BOOL_(10)}}},
    {CASE(MASKED_SCATTER, "bfloat16 from a longer source", 2, 1),
     .tensors = {{U8(5, 10), EVERY(2)}, {BF16(30)}, {BF16(5, 10)}}},
    {CASE(MASKED_SCATTER, "float32 from an exact source into a strided self", 2, 1),
     .tensors = {{BOOL_(4, 7), EVERY(2)}, {F32(14)}, {F32(4, 7), STRIDED}}},
    {CASE(MASKED_SCATTER, "int16 from a 2-d source into a transposed self", 2, 1),
     .tensors = {{BOOL_(3, 10), EVERY(5)}, {I16(2, 4)}, {I16(3, 10), TRANSPOSED}}},
    /* Test elements viewing the elements' own storage, so that some elements match. */
    {CASE(ISIN, "float32 against a few test elements", 2, 1), .scalars = {{.i = 0}},
     .tensors = {{F32(6, 7)}, {F32(5), VIEW(3, 2), ALIAS(0)}, {BOOL_(6, 7)}}},
    {CASE(ISIN, "float64 NaN, infinities and signed zeros against many, inverted", 2, 1),
     .scalars = {{.i = 1}},
     .tensors = {{F64(10, 10), SPECIAL}, {F64(30), VIEW(0, 3), ALIAS(0)}, {BOOL_(10, 10)}}},
    {CASE(ISIN, "bfloat16 transposed against many", 2, 1), .scalars = {{.i = 0}},
     .tensors = {{BF16(8, 9), TRANSPOSED}, {BF16(20), VIEW(1, 3), ALIAS(0)}, {BOOL_(8, 9)}}},
    {CASE(ISIN, "int64 against many, inverted", 2, 1), .scalars = {{.i = 1}},
     .tensors = {{I64(200), RANGE(0, 100)}, {I64(40), RANGE(0, 100)}, {BOOL_(200)}}},
    {CASE(ISIN, "uint8 0-d against itself, inverted", 2, 1), .scalars = {{.i = 1}},
     .tensors = {{ZERO_DIM(UINT8)}, {U8(3), VIEW(0, 0), ALIAS(0)}, {ZERO_DIM(BOOL)}}},
    {CASE(ISIN, "int16 strided against a strided set", 2, 1), .scalars = {{.i = 0}},
     .tensors = {{I16(5, 20), STRIDED, RANGE(0, 30)}, {I16(25), STRIDED, RANGE(0, 30)},
                 {BOOL_(5, 20)}}},
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
