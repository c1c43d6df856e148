/* Cases of the norm family (ops/tpu_ops_norm.h has the call layouts): softmax over inner and outer
 * dimensions, layer and RMS norm with low-precision rows and float32 statistics, batch norm in
 * training and evaluation. Saved statistics that backward ops read (rstd, invstd, variances) are
 * drawn positive, as the forward makes them. */
#ifndef EVERY_OP_CASES_NORM_H
#define EVERY_OP_CASES_NORM_H

#include "every_op_case.h"

static const op_case norm_cases[] = {
    {CASE(SOFTMAX, "float32 rows", 1, 1), .scalars = {{.i = 1}},
     .tensors = {{F32(12, 40)}, {F32(12, 40)}}},
    {CASE(SOFTMAX, "bfloat16 into float32 over the outer dimension", 1, 1), .scalars = {{.i = 0}},
     .tensors = {{BF16(30, 7), TRANSPOSED}, {F32(30, 7)}}},
    {CASE(SOFTMAX, "large float32 rows", 1, 1), .scalars = {{.i = 1}},
     .tensors = {{F32(128, 600)}, {F32(128, 600)}}},
    {CASE(LOG_SOFTMAX, "float64 over the middle dimension", 1, 1), .scalars = {{.i = 1}},
     .tensors = {{F64(5, 6, 7)}, {F64(5, 6, 7)}}},
    {CASE(SOFTMAX_BACKWARD, "float32 rows", 2, 1), .scalars = {{.i = 1}},
     .tensors = {{F32(12, 40)}, {F32(12, 40), RANGE(0, 0.1)}, {F32(12, 40)}}},
    {CASE(LOG_SOFTMAX_BACKWARD, "bfloat16 into a strided gradient", 2, 1), .scalars = {{.i = 1}},
     .tensors = {{BF16(10, 24)}, {BF16(10, 24), RANGE(-5, -1)}, {BF16(10, 24), STRIDED}}},
    {CASE(LAYER_NORM, "float32", 3, 3), .scalars = {{.f = 1e-5}},
     .tensors = {{F32(16, 48)}, {F32(48)}, {F32(48)}, {F32(16, 48)}, {F32(16)}, {F32(16)}}},
    {CASE(LAYER_NORM, "bfloat16 transposed rows, float32 statistics", 3, 3),
     .scalars = {{.f = 1e-5}},
     .tensors = {{BF16(12, 40), TRANSPOSED}, {BF16(40)}, {BF16(40)}, {BF16(12, 40)}, {F32(12)},
                 {F32(12)}}},
    {CASE(LAYER_NORM_BACKWARD, "float32", 5, 3),
     .tensors = {{F32(16, 48)}, {F32(16, 48)}, {F32(16)}, {F32(16), RANGE(0.5, 2)}, {F32(48)},
                 {F32(16, 48)}, {F32(48)}, {F32(48)}}},
    {CASE(LAYER_NORM_BACKWARD, "large float32", 5, 3),
     .tensors = {{F32(256, 256)}, {F32(256, 256)}, {F32(256)}, {F32(256), RANGE(0.5, 2)},
                 {F32(256)}, {F32(256, 256)}, {F32(256)}, {F32(256)}}},
    {CASE(RMS_NORM, "float32 strided rows", 2, 2), .scalars = {{.f = 1e-6}},
     .tensors = {{F32(16, 48), STRIDED}, {F32(48)}, {F32(16, 48)}, {F32(16)}}},
    {CASE(RMS_NORM_BACKWARD, "float64", 4, 2),
     .tensors = {{F64(10, 32)}, {F64(10, 32)}, {F64(10), RANGE(0.5, 2)}, {F64(32)}, {F64(10, 32)},
                 {F64(32)}}},
    {CASE(BATCH_NORM, "float32 training", 3, 5), .scalars = {{.f = 1e-5}, {.f = 0.1}, {.i = 1}},
     .tensors = {{F32(4, 6, 10)}, {F32(6)}, {F32(6)}, {F32(4, 6, 10)}, {F32(6)}, {F32(6)}, {F32(6)},
                 {F32(6), RANGE(0.5, 2)}}},
    {CASE(BATCH_NORM, "float64 evaluation, transposed input", 3, 5),
     .scalars = {{.f = 1e-5}, {.f = 0.1}, {.i = 0}},
     .tensors = {{F64(3, 8, 12), TRANSPOSED}, {F64(8)}, {F64(8)}, {F64(3, 8, 12)}, {F64(8)},
                 {F64(8)}, {F64(8)}, {F64(8), RANGE(0.5, 2)}}},
    {CASE(BATCH_NORM_BACKWARD, "float32 training", 5, 3),
     .scalars = {{.f = 1e-5}, {.f = 0}, {.i = 1}},
     .tensors = {{F32(4, 6, 10)}, {F32(4, 6, 10)}, {F32(6)}, {F32(6)}, {F32(6), RANGE(0.5, 2)},
                 {F32(4, 6, 10)}, {F32(6)}, {F32(6)}}},
    {CASE(BATCH_NORM_BACKWARD, "bfloat16 evaluation", 5, 3),
     .scalars = {{.f = 1e-5}, {.f = 0}, {.i = 0}},
     .tensors = {{BF16(2, 5, 9)}, {BF16(2, 5, 9)}, {BF16(5)}, {BF16(5)}, {BF16(5), RANGE(0.5, 2)},
                 {BF16(2, 5, 9)}, {BF16(5)}, {BF16(5)}}},
    {CASE(BATCH_NORM_APPLY, "float32", 5, 1),
     .tensors = {{F32(4, 6, 10)}, {F32(6)}, {F32(6)}, {F32(6)}, {F32(6), RANGE(0.5, 2)},
                 {F32(4, 6, 10)}}},
};

#endif
