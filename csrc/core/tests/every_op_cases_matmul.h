/* Cases of the matmul family (ops/tpu_ops_matmul.h has the call layout): every op is one batched
 * GEMM A [b, m, k] @ B [b, k, n] (+ beta C), so the cases vary what the ops share: dtypes (the
 * packed float32 and bfloat16 kernels, the float64 and complex paths, integers), transposed and
 * strided operands, a broadcast bias row, summed batches, conjugated operands and complex alpha
 * and beta; int_mm's int8 operands in their whole range. */
#ifndef EVERY_OP_CASES_MATMUL_H
#define EVERY_OP_CASES_MATMUL_H

#include "every_op_case.h"

static const op_case matmul_cases[] = {
    {CASE(MM, "float32, A transposed", 2, 1), .scalars = {{.f = 1}, {.f = 0}},
     .tensors = {{F32(1, 24, 16), TRANSPOSED}, {F32(1, 16, 20)}, {F32(1, 24, 20)}}},
    {CASE(MM, "int32", 2, 1), .scalars = {{.i = 1}, {.i = 0}},
     .tensors = {{I32(1, 9, 11)}, {I32(1, 11, 6)}, {I32(1, 9, 6)}}},
    {CASE(MM, "large float32", 2, 1), .scalars = {{.f = 1}, {.f = 0}},
     .tensors = {{F32(1, 128, 96)}, {F32(1, 96, 160)}, {F32(1, 128, 160)}}},
    {CASE(BMM, "large bfloat16", 2, 1), .scalars = {{.f = 1}, {.f = 0}},
     .tensors = {{BF16(4, 64, 64)}, {BF16(4, 64, 96)}, {BF16(4, 64, 96)}}},
    {CASE(BMM, "bfloat16, B strided", 2, 1), .scalars = {{.f = 1}, {.f = 0}},
     .tensors = {{BF16(3, 8, 12)}, {BF16(3, 12, 10), STRIDED}, {BF16(3, 8, 10)}}},
    {CASE(ADDMM, "float64 plus a broadcast bias row", 3, 1), .scalars = {{.f = 0.5}, {.f = 2}},
     .tensors = {{F64(1, 12, 7)}, {F64(1, 7, 10)}, {F64(1, 12, 10), VIEW(0, 0, 0, 1)},
                 {F64(1, 12, 10)}}},
    {CASE(BADDBMM, "int32", 3, 1), .scalars = {{.i = 2}, {.i = -1}},
     .tensors = {{I32(2, 6, 5)}, {I32(2, 5, 7)}, {I32(2, 6, 7)}, {I32(2, 6, 7)}}},
    {CASE(ADDBMM, "float32, batches summed", 3, 1), .scalars = {{.f = 1}, {.f = 0.5}},
     .tensors = {{F32(4, 6, 8)}, {F32(4, 8, 5)}, {F32(1, 6, 5)}, {F32(1, 6, 5)}}},
    {CASE(ADDMV, "float32, output transposed", 3, 1), .scalars = {{.f = 1}, {.f = 1}},
     .tensors = {{F32(1, 10, 16)}, {F32(1, 16, 1)}, {F32(1, 10, 1)}, {F32(1, 10, 1), TRANSPOSED}}},
    {CASE(DOT, "float64", 2, 1), .scalars = {{.f = 1}, {.f = 0}},
     .tensors = {{F64(1, 1, 64)}, {F64(1, 64, 1)}, {F64(1, 1, 1)}}},
    {CASE(DOT, "complex64 with A conjugated (vdot)", 2, 1),
     .scalars = {{.f = 1}, {.f = 0}, {.f = 0}, {.f = 0}, {.i = TPU_GEMM_CONJ_A}},
     .tensors = {{C64(1, 1, 40)}, {C64(1, 40, 1)}, {C64(1, 1, 1)}}},
    {CASE(DOT, "complex64 strided vectors", 2, 1), .scalars = {{.f = 1}, {.f = 0}},
     .tensors = {{C64(1, 1, 30), STRIDED}, {C64(1, 30, 1), VIEW(1, 0, 3, 0)}, {C64(1, 1, 1)}}},
    {CASE(DOT, "complex128 with B conjugated", 2, 1),
     .scalars = {{.f = 1}, {.f = 0}, {.f = 0}, {.f = 0}, {.i = TPU_GEMM_CONJ_B}},
     .tensors = {{C128(1, 1, 50)}, {C128(1, 50, 1), STRIDED}, {C128(1, 1, 1)}}},
    {CASE(MM, "complex64, A transposed, complex alpha", 2, 1),
     .scalars = {{.f = 0.5}, {.f = 0}, {.f = 2}, {.f = 0}},
     .tensors = {{C64(1, 9, 12), TRANSPOSED}, {C64(1, 12, 7)}, {C64(1, 9, 7)}}},
    {CASE(ADDMM, "complex128, complex alpha and beta, a broadcast bias row", 3, 1),
     .scalars = {{.f = 1.5}, {.f = -0.5}, {.f = 0.25}, {.f = 2}},
     .tensors = {{C128(1, 5, 7)}, {C128(1, 7, 4), TRANSPOSED}, {C128(1, 5, 4), VIEW(0, 0, 0, 1)},
                 {C128(1, 5, 4)}}},
    {CASE(ADDBMM, "complex64, batches summed, beta 0 leaves C's NaNs unread", 3, 1),
     .scalars = {{.f = 1}, {.f = 0}},
     .tensors = {{C64(3, 4, 6)}, {C64(3, 6, 5)}, {C64(1, 4, 5), SPECIAL}, {C64(1, 4, 5)}}},
    {CASE(INT_MM, "int8 to int32, full int8 range, K not a multiple of 4", 2, 1),
     .tensors = {{I8(1, 30, 37), RANGE(-128, 128)}, {I8(1, 37, 40), RANGE(-128, 128)},
                 {I32(1, 30, 40)}}},
    {CASE(INT_MM, "int8 to int32, B transposed (x @ W^T), A strided", 2, 1),
     .tensors = {{I8(1, 13, 64), STRIDED}, {I8(1, 64, 35), TRANSPOSED}, {I32(1, 13, 35)}}},
    {CASE(INT_MM, "uint8 A (as CPU takes it), A transposed", 2, 1),
     .tensors = {{U8(1, 17, 21), TRANSPOSED, RANGE(0, 256)}, {I8(1, 21, 33), RANGE(-128, 128)},
                 {I32(1, 17, 33)}}},
};

#endif
