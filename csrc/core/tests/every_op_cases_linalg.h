/* Cases of the linalg family (ops/tpu_ops_linalg.h has the call layout): single and batched
 * matrices, dense, transposed and strided, in float32 and float64, drawn diagonally dominant
 * (DOMINANT) so that factorizations succeed and solves are well-conditioned (a factor that
 * fails is unspecified, so drivers need not agree on it: tests/test_ops_linalg.py checks info). */
#ifndef EVERY_OP_CASES_LINALG_H
#define EVERY_OP_CASES_LINALG_H

#include "every_op_case.h"

static const op_case linalg_cases[] = {
    {CASE(CHOLESKY, "float32 lower factors of a batch", 1, 2), .scalars = {{.i = 0}},
     .tensors = {{F32(3, 6, 6), DOMINANT(6)}, {F32(3, 6, 6)}, {I32(3)}}},
    {CASE(CHOLESKY, "float64 upper factor of a transposed matrix", 1, 2), .scalars = {{.i = 1}},
     .tensors = {{F64(9, 9), TRANSPOSED, DOMINANT(9)}, {F64(9, 9)}, {.dtype = TPU_INT32}}},
    {CASE(TRIANGULAR_SOLVE, "float32 lower, left, batch of 2", 2, 1),
     .scalars = {{.i = 0}, {.i = 1}, {.i = 0}},
     .tensors = {{F32(2, 7, 7), DOMINANT(7)}, {F32(2, 7, 3)}, {F32(2, 7, 3)}}},
    {CASE(TRIANGULAR_SOLVE, "float64 upper, right, unit diagonal, strided", 2, 1),
     .scalars = {{.i = 1}, {.i = 0}, {.i = 1}},
     .tensors = {{F64(5, 5), DOMINANT(5)}, {F64(4, 5), STRIDED}, {F64(4, 5)}}},
    {CASE(TRIANGULAR_SOLVE, "float32 upper, left, transposed", 2, 1),
     .scalars = {{.i = 1}, {.i = 1}, {.i = 0}},
     .tensors = {{F32(6, 6), TRANSPOSED, DOMINANT(6)}, {F32(6, 2)}, {F32(6, 2)}}},
    {CASE(LU_FACTOR, "float32 square batch", 1, 3),
     .tensors = {{F32(2, 6, 6)}, {F32(2, 6, 6)}, {I32(2, 6)}, {I32(2)}}},
    {CASE(LU_FACTOR, "float64 wide, transposed", 1, 3),
     .tensors = {{F64(4, 7), TRANSPOSED}, {F64(4, 7)}, {I32(4)}, {.dtype = TPU_INT32}}},
    {CASE(LU_SOLVE, "float64 with pivots", 3, 1), .scalars = {{.i = 0}},
     .tensors = {{F64(2, 5, 5), DOMINANT(5)}, {I32(2, 5), RANGE(1, 6)}, {F64(2, 5, 3)},
                 {F64(2, 5, 3)}}},
    {CASE(LU_SOLVE, "float32 transposed system", 3, 1), .scalars = {{.i = 1}},
     .tensors = {{F32(4, 4), DOMINANT(4)}, {I32(4), RANGE(1, 5)}, {F32(4, 2), TRANSPOSED},
                 {F32(4, 2)}}},
    {CASE(EIGH, "float32 lower triangle of a batch", 1, 3), .scalars = {{.i = 0}},
     .tensors = {{F32(2, 5, 5)}, {F32(2, 5)}, {F32(2, 5, 5)}, {I32(2)}}},
    {CASE(EIGH, "float64 upper triangle", 1, 3), .scalars = {{.i = 1}},
     .tensors = {{F64(6, 6), TRANSPOSED}, {F64(6)}, {F64(6, 6)}, {.dtype = TPU_INT32}}},
};

#endif
