/* Cases of the nn family (ops/tpu_ops_nn.h has the call layouts): embedding backward with a
 * padding row and with frequency scaling, embedding bags in each mode, and the losses with every
 * reduction. Indices and targets lie in range. */
#ifndef EVERY_OP_CASES_NN_H
#define EVERY_OP_CASES_NN_H

#include "every_op_case.h"

static const op_case nn_cases[] = {
    {CASE(EMBEDDING_BACKWARD, "float32, padding row 3", 2, 1), .scalars = {{.i = 3}, {.i = 0}},
     .tensors = {{F32(40, 12)}, {I64(40), RANGE(0, 10)}, {F32(10, 12)}}},
    {CASE(EMBEDDING_BACKWARD, "bfloat16 scaled by frequency, int32 indices", 2, 2),
     .scalars = {{.i = -1}, {.i = 1}},
     .tensors = {{BF16(30, 8), TRANSPOSED}, {I32(30), RANGE(0, 6)}, {BF16(6, 8)}, {I64(6)}}},
    {CASE(EMBEDDING_BACKWARD, "large float32 with many duplicates", 2, 1),
     .scalars = {{.i = -1}, {.i = 0}},
     .tensors = {{F32(20000, 8)}, {I64(20000), RANGE(0, 50)}, {F32(50, 8)}}},
    /* Offsets all 0: every bag but the last is empty, the last holds every position. */
    {CASE(EMBEDDING_BAG, "float32 sum with per-sample weights", 4, 4),
     .scalars = {{.i = 0}, {.i = -1}},
     .tensors = {{F32(50, 16)}, {I64(40), RANGE(0, 50)}, {I64(8), CONST(0)}, {F32(40)},
                 {F32(8, 16)}, {I64(0)}, {I64(8)}, {I64(8)}}},
    {CASE(EMBEDDING_BAG, "bfloat16 mean, int32 indices, padding row 3", 3, 4),
     .scalars = {{.i = 1}, {.i = 3}},
     .tensors = {{BF16(20, 8)}, {I32(30), RANGE(0, 20)}, {I32(5), CONST(0)}, {BF16(5, 8)},
                 {I64(30)}, {I64(5)}, {I64(5)}}},
    {CASE(EMBEDDING_BAG, "float32 max", 3, 4), .scalars = {{.i = 2}, {.i = -1}},
     .tensors = {{F32(30, 6)}, {I64(25), RANGE(0, 30)}, {I64(4), CONST(0)}, {F32(4, 6)},
                 {I64(25)}, {I64(4)}, {I64(4, 6)}}},
    {CASE(NLL_LOSS, "mean with class weights, class 2 ignored", 3, 2),
     .scalars = {{.i = 1}, {.i = 2}},
     .tensors = {{F32(8, 5, 3), RANGE(-4, 0)}, {I64(8, 3), RANGE(0, 5)}, {F32(5), RANGE(0.5, 2)},
                 {ZERO_DIM(FLOAT32)}, {ZERO_DIM(FLOAT32)}}},
    {CASE(NLL_LOSS, "float64 unreduced, uint8 targets", 2, 2), .scalars = {{.i = 0}, {.i = -100}},
     .tensors = {{F64(6, 4, 5), RANGE(-4, 0)}, {U8(6, 5), RANGE(0, 4)}, {F64(6, 5)},
                 {ZERO_DIM(FLOAT64)}}},
    {CASE(NLL_LOSS_BACKWARD, "mean with class weights, class 2 ignored", 4, 1),
     .scalars = {{.i = 1}, {.i = 2}},
     .tensors = {{ZERO_DIM(FLOAT32)}, {I64(8, 3), RANGE(0, 5)}, {ZERO_DIM(FLOAT32), CONST(7.5)},
                 {F32(5), RANGE(0.5, 2)}, {F32(8, 5, 3)}}},
    {CASE(NLL_LOSS_BACKWARD, "float64 unreduced", 3, 1), .scalars = {{.i = 0}, {.i = -100}},
     .tensors = {{F64(6, 5)}, {I64(6, 5), RANGE(0, 4)}, {ZERO_DIM(FLOAT64), CONST(0)},
                 {F64(6, 4, 5)}}},
    {CASE(MSE_LOSS, "float32 mean", 2, 1), .scalars = {{.i = 1}},
     .tensors = {{F32(20, 30)}, {F32(20, 30), TRANSPOSED}, {ZERO_DIM(FLOAT32)}}},
    {CASE(MSE_LOSS, "bfloat16 unreduced", 2, 1), .scalars = {{.i = 0}},
     .tensors = {{BF16(300)}, {BF16(300)}, {BF16(300)}}},
    {CASE(MSE_LOSS_BACKWARD, "float32 mean", 3, 1), .scalars = {{.f = 2.0 / 600}},
     .tensors = {{F32(20, 30)}, {F32(20, 30), STRIDED}, {F32(20, 30)}, {F32(20, 30)}}},
};

#endif
