/* Cases of the conv family (ops/tpu_ops_conv.h has the call layouts): convolutions over 1, 2 and
 * 3 spatial dimensions (grouped, strided, padded, dilated) and their three gradients, and every
 * pooling mode. One 2-d geometry is shared by the convolution and its gradients, and one by max
 * and average pooling and their backward: x [2, 4, 9, 9] with w
 * [6, 4, 3, 3], stride 2 and padding 1 gives y [2, 6, 5, 5]. Max pooling's backward reads indices
 * anywhere in the input plane, as the forward may give them. */
#ifndef EVERY_OP_CASES_CONV_H
#define EVERY_OP_CASES_CONV_H

#include "every_op_case.h"

/* stride 2, padding 1, dilation 1 over two spatial dimensions */
#define CONV_2D_SCALARS                                                                            \
  {{.u = CONV_PARAMS(1, 2, 2)}, {.u = CONV_PARAMS(0, 1, 1)}, {.u = CONV_PARAMS(1, 1, 1)}}

/* kernel, stride, padding and dilation, then the mode and no divisor override */
#define POOL_SCALARS(kernel, stride, padding, mode)                                                \
  {{.u = CONV_PARAMS(1, kernel, kernel)}, {.u = CONV_PARAMS(1, stride, stride)},                   \
   {.u = CONV_PARAMS(0, padding, padding)}, {.u = CONV_PARAMS(1, 1, 1)}, {.u = (mode)}, {.i = 0}}

/* packed kernel, stride, padding and dilation, the mode and the divisor override */
#define POOL_PARAMS(kernel, stride, padding, dilation, mode, divisor)                              \
  {{.u = kernel}, {.u = stride}, {.u = padding}, {.u = dilation}, {.u = (mode)}, {.i = (divisor)}}

/* the windows of the 2-d max and average cases below in ceil mode: x [2, 3, 8, 8] gives y
 * [2, 3, 5, 5], its last window one element and padding */
#define POOL_CEIL_2D(mode) POOL_SCALARS(3, 2, 1, mode)

/* 3-d windows: x [1, 2, 4, 7, 6] gives y [1, 2, 3, 3, 3] */
#define POOL_3D(mode)                                                                              \
  POOL_PARAMS(CONV_PARAMS(2, 3, 3), CONV_PARAMS(1, 2, 2), CONV_PARAMS(0, 1, 1),                    \
              CONV_PARAMS(1, 2, 1), mode, 0)

/* 1-d windows of 2 every 3: x [1, 2, 6] gives y [1, 2, 4], its last two windows past the input
 * and empty */
#define POOL_EMPTY_1D(mode)                                                                        \
  POOL_PARAMS(CONV_PARAMS(1, 1, 2), CONV_PARAMS(1, 1, 3), 0, CONV_PARAMS(1, 1, 1), mode, 0)

/* adaptive: no window parameters */
#define POOL_ADAPTIVE(mode) POOL_PARAMS(0, 0, 0, 0, mode, 0)

static const op_case conv_cases[] = {
    {CASE(CONV, "float32 2-d with bias", 3, 1), .scalars = CONV_2D_SCALARS,
     .tensors = {{F32(2, 4, 9, 9)}, {F32(6, 4, 3, 3)}, {F32(6)}, {F32(2, 6, 5, 5)}}},
    {CASE(CONV, "large float32 2-d", 2, 1), .scalars = CONV_2D_SCALARS,
     .tensors = {{F32(4, 8, 64, 64)}, {F32(16, 8, 3, 3)}, {F32(4, 16, 32, 32)}}},
    {CASE(CONV, "float64 1-d, 3 groups, padding 2, dilation 2", 2, 1),
     .scalars = {{.u = CONV_PARAMS(1, 1, 1)}, {.u = CONV_PARAMS(0, 0, 2)},
                 {.u = CONV_PARAMS(1, 1, 2)}},
     .tensors = {{F64(2, 6, 20)}, {F64(9, 2, 5)}, {F64(2, 9, 16)}}},
    {CASE(CONV, "bfloat16 3-d, transposed input", 2, 1),
     .scalars = {{.u = CONV_PARAMS(1, 1, 1)}, {.u = CONV_PARAMS(0, 0, 0)},
                 {.u = CONV_PARAMS(1, 1, 1)}},
     .tensors = {{BF16(1, 2, 5, 6, 6), TRANSPOSED}, {BF16(3, 2, 2, 3, 3)}, {BF16(1, 3, 4, 4, 4)}}},
    {CASE(CONV_BACKWARD_INPUT, "float32 2-d with bias", 3, 1), .scalars = CONV_2D_SCALARS,
     .tensors = {{F32(2, 6, 5, 5)}, {F32(6, 4, 3, 3)}, {F32(4)}, {F32(2, 4, 9, 9)}}},
    {CASE(CONV_BACKWARD_WEIGHT, "float32 2-d", 2, 1), .scalars = CONV_2D_SCALARS,
     .tensors = {{F32(2, 6, 5, 5)}, {F32(2, 4, 9, 9), STRIDED}, {F32(6, 4, 3, 3)}}},
    {CASE(CONV_BACKWARD_BIAS, "float32 2-d", 1, 1),
     .tensors = {{F32(2, 6, 5, 5), TRANSPOSED}, {F32(6)}}},
    {CASE(POOL, "float32 2-d max with indices", 1, 2),
     .scalars = POOL_SCALARS(2, 2, 0, TPU_POOL_MAX),
     .tensors = {{F32(2, 3, 8, 8), SPECIAL}, {F32(2, 3, 4, 4)}, {I64(2, 3, 4, 4)}}},
    {CASE(POOL, "float32 2-d average counting the padding", 1, 1),
     .scalars = POOL_SCALARS(3, 2, 1, TPU_POOL_AVG | TPU_POOL_COUNT_PAD),
     .tensors = {{F32(2, 3, 7, 7)}, {F32(2, 3, 4, 4)}}},
    {CASE(POOL, "int32 3-d max", 1, 2),
     .scalars = {{.u = CONV_PARAMS(2, 2, 2)}, {.u = CONV_PARAMS(2, 2, 2)},
                 {.u = CONV_PARAMS(0, 0, 0)}, {.u = CONV_PARAMS(1, 1, 1)}, {.u = TPU_POOL_MAX}},
     .tensors = {{I32(1, 2, 4, 6, 6)}, {I32(1, 2, 2, 3, 3)}, {I64(1, 2, 2, 3, 3)}}},
    {CASE(POOL, "bfloat16 1-d adaptive average", 1, 1),
     .scalars = {{.u = 0}, {.u = 0}, {.u = 0}, {.u = 0}, {.u = TPU_POOL_ADAPTIVE_AVG}},
     .tensors = {{BF16(2, 4, 17)}, {BF16(2, 4, 5)}}},
    {CASE(POOL, "float64 2-d adaptive max", 1, 2),
     .scalars = {{.u = 0}, {.u = 0}, {.u = 0}, {.u = 0}, {.u = TPU_POOL_ADAPTIVE_MAX}},
     .tensors = {{F64(1, 3, 10, 9)}, {F64(1, 3, 4, 4)}, {I64(1, 3, 4, 4)}}},
    {CASE(POOL_BACKWARD, "float32 2-d max", 2, 1), .scalars = POOL_SCALARS(2, 2, 0, TPU_POOL_MAX),
     .tensors = {{F32(2, 3, 4, 4)}, {I64(2, 3, 4, 4), RANGE(0, 64)}, {F32(2, 3, 8, 8)}}},
    {CASE(POOL_BACKWARD, "float32 2-d average counting the padding", 1, 1),
     .scalars = POOL_SCALARS(3, 2, 1, TPU_POOL_AVG | TPU_POOL_COUNT_PAD),
     .tensors = {{F32(2, 3, 4, 4)}, {F32(2, 3, 7, 7)}}},
    /* Pooling's variants: ceil mode, dilation, empty windows, ties and several NaNs in a window
     * (the first largest, the last NaN), adaptive windows of varying size, divisor overrides. */
    {CASE(POOL, "float32 2-d max, ceil mode", 1, 2), .scalars = POOL_CEIL_2D(TPU_POOL_MAX),
     .tensors = {{F32(2, 3, 8, 8), SPECIAL}, {F32(2, 3, 5, 5)}, {I64(2, 3, 5, 5)}}},
    {CASE(POOL, "float32 1-d max, dilation 5: NaNs and infinities in a window", 1, 2),
     .scalars = POOL_PARAMS(CONV_PARAMS(1, 1, 5), CONV_PARAMS(1, 1, 1), 0, CONV_PARAMS(1, 1, 5),
                            TPU_POOL_MAX, 0),
     .tensors = {{F32(2, 3, 50), SPECIAL}, {F32(2, 3, 30)}, {I64(2, 3, 30)}}},
    {CASE(POOL, "uint8 2-d max with ties, padding 1, dilation 2", 1, 2),
     .scalars = POOL_PARAMS(CONV_PARAMS(1, 3, 3), CONV_PARAMS(1, 1, 1), CONV_PARAMS(0, 1, 1),
                            CONV_PARAMS(1, 2, 2), TPU_POOL_MAX, 0),
     .tensors = {{U8(2, 2, 7, 7), RANGE(0, 3)}, {U8(2, 2, 5, 5)}, {I64(2, 2, 5, 5)}}},
    {CASE(POOL, "float64 3-d max, padding and dilation, transposed input", 1, 2),
     .scalars = POOL_3D(TPU_POOL_MAX),
     .tensors = {{F64(1, 2, 4, 7, 6), TRANSPOSED, SPECIAL}, {F64(1, 2, 3, 3, 3)},
                 {I64(1, 2, 3, 3, 3)}}},
    {CASE(POOL, "float32 1-d max, empty windows", 1, 2), .scalars = POOL_EMPTY_1D(TPU_POOL_MAX),
     .tensors = {{F32(1, 2, 6)}, {F32(1, 2, 4)}, {I64(1, 2, 4)}}},
    {CASE(POOL, "uint8 2-d adaptive max with ties", 1, 2),
     .scalars = POOL_ADAPTIVE(TPU_POOL_ADAPTIVE_MAX),
     .tensors = {{U8(1, 2, 7, 10), RANGE(0, 3)}, {U8(1, 2, 3, 4)}, {I64(1, 2, 3, 4)}}},
    {CASE(POOL, "float32 2-d global adaptive max", 1, 2),
     .scalars = POOL_ADAPTIVE(TPU_POOL_ADAPTIVE_MAX),
     .tensors = {{F32(2, 4, 5, 5)}, {F32(2, 4, 1, 1)}, {I64(2, 4, 1, 1)}}},
    {CASE(POOL, "float32 2-d average, ceil mode", 1, 1), .scalars = POOL_CEIL_2D(TPU_POOL_AVG),
     .tensors = {{F32(2, 3, 8, 8)}, {F32(2, 3, 5, 5)}}},
    {CASE(POOL, "float64 1-d average, divisor override 4", 1, 1),
     .scalars = POOL_PARAMS(CONV_PARAMS(1, 1, 3), CONV_PARAMS(1, 1, 2), CONV_PARAMS(0, 0, 1),
                            CONV_PARAMS(1, 1, 1), TPU_POOL_AVG | TPU_POOL_COUNT_PAD, 4),
     .tensors = {{F64(2, 3, 11)}, {F64(2, 3, 6)}}},
    {CASE(POOL, "float16 3-d average counting the padding", 1, 1),
     .scalars = POOL_3D(TPU_POOL_AVG | TPU_POOL_COUNT_PAD),
     .tensors = {{F16(1, 2, 4, 7, 6)}, {F16(1, 2, 3, 3, 3)}}},
    {CASE(POOL, "int64 2-d average, divisor override -3", 1, 1),
     .scalars = POOL_PARAMS(CONV_PARAMS(1, 2, 2), CONV_PARAMS(1, 2, 2), 0, CONV_PARAMS(1, 1, 1),
                            TPU_POOL_AVG, -3),
     .tensors = {{I64(2, 2, 6, 6)}, {I64(2, 2, 3, 3)}}},
    {CASE(POOL, "float32 1-d average, empty windows", 1, 1),
     .scalars = POOL_EMPTY_1D(TPU_POOL_AVG), .tensors = {{F32(1, 2, 6)}, {F32(1, 2, 4)}}},
    {CASE(POOL, "float32 3-d adaptive average, windows of varying size", 1, 1),
     .scalars = POOL_ADAPTIVE(TPU_POOL_ADAPTIVE_AVG),
     .tensors = {{F32(1, 2, 6, 5, 7), STRIDED}, {F32(1, 2, 3, 2, 3)}}},
    {CASE(POOL, "float32 2-d adaptive average, regular windows", 1, 1),
     .scalars = POOL_ADAPTIVE(TPU_POOL_ADAPTIVE_AVG),
     .tensors = {{F32(2, 3, 8, 6)}, {F32(2, 3, 4, 3)}}},
    {CASE(POOL_BACKWARD, "float64 3-d max", 2, 1), .scalars = POOL_3D(TPU_POOL_MAX),
     .tensors = {{F64(1, 2, 3, 3, 3)}, {I64(1, 2, 3, 3, 3), RANGE(0, 168)},
                 {F64(1, 2, 4, 7, 6)}}},
    {CASE(POOL_BACKWARD, "bfloat16 1-d adaptive max", 2, 1),
     .scalars = POOL_ADAPTIVE(TPU_POOL_ADAPTIVE_MAX),
     .tensors = {{BF16(2, 4, 5)}, {I64(2, 4, 5), RANGE(0, 17)}, {BF16(2, 4, 17)}}},
    {CASE(POOL_BACKWARD, "float32 2-d average, ceil mode", 1, 1),
     .scalars = POOL_CEIL_2D(TPU_POOL_AVG), .tensors = {{F32(2, 3, 5, 5)}, {F32(2, 3, 8, 8)}}},
    {CASE(POOL_BACKWARD, "float64 1-d average, divisor override 4", 1, 1),
     .scalars = POOL_PARAMS(CONV_PARAMS(1, 1, 3), CONV_PARAMS(1, 1, 2), CONV_PARAMS(0, 0, 1),
                            CONV_PARAMS(1, 1, 1), TPU_POOL_AVG | TPU_POOL_COUNT_PAD, 4),
     .tensors = {{F64(2, 3, 6)}, {F64(2, 3, 11)}}},
    {CASE(POOL_BACKWARD, "float16 3-d average counting the padding", 1, 1),
     .scalars = POOL_3D(TPU_POOL_AVG | TPU_POOL_COUNT_PAD),
     .tensors = {{F16(1, 2, 3, 3, 3)}, {F16(1, 2, 4, 7, 6)}}},
    {CASE(POOL_BACKWARD, "float32 1-d average, empty windows", 1, 1),
     .scalars = POOL_EMPTY_1D(TPU_POOL_AVG), .tensors = {{F32(1, 2, 4)}, {F32(1, 2, 6)}}},
    {CASE(POOL_BACKWARD, "bfloat16 1-d adaptive average", 1, 1),
     .scalars = POOL_ADAPTIVE(TPU_POOL_ADAPTIVE_AVG),
     .tensors = {{BF16(2, 4, 5)}, {BF16(2, 4, 17)}}},
    {CASE(POOL_BACKWARD, "float32 3-d adaptive average, windows of varying size", 1, 1),
     .scalars = POOL_ADAPTIVE(TPU_POOL_ADAPTIVE_AVG),
     .tensors = {{F32(1, 2, 3, 2, 3), TRANSPOSED}, {F32(1, 2, 6, 5, 7)}}},
    {CASE(POOL_BACKWARD, "float32 2-d adaptive average, regular windows", 1, 1),
     .scalars = POOL_ADAPTIVE(TPU_POOL_ADAPTIVE_AVG),
     .tensors = {{F32(2, 3, 4, 3), STRIDED}, {F32(2, 3, 8, 6)}}},
};

#endif
