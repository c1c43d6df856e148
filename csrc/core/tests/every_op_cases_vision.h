/* Cases of the vision family (ops/tpu_ops_vision.h has the call layout): nearest and
 * nearest-exact resizes of every dtype (integers and bool copy as they are), linear, bilinear,
 * trilinear and bicubic ones (and antialiased) with and without align_corners and given scale
 * factors, up and
 * down, the reflection and replication pads (negative ones crop), unbatched and strided
 * geometry, NaN and infinities, and each backward. */
#ifndef EVERY_OP_CASES_VISION_H
#define EVERY_OP_CASES_VISION_H

#include "every_op_case.h"

/* scalars: mode, spatial rank, three scale factors, three paddings before. */
#define RESAMPLE_ARGS(mode, s, f0, f1, f2, p0, p1, p2)                                             \
  .scalars = {{.i = (mode)}, {.i = (s)}, {.f = (f0)}, {.f = (f1)}, {.f = (f2)}, {.i = (p0)},       \
              {.i = (p1)}, {.i = (p2)}}
#define ALIGN TPU_RESAMPLE_ALIGN_CORNERS

static const op_case vision_cases[] = {
    {CASE(RESAMPLE, "nearest 2-d, double the size", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_NEAREST, 2, 0, 0, 0, 0, 0, 0),
     .tensors = {{F32(2, 3, 5, 4), SPECIAL}, {F32(2, 3, 10, 8)}}},
    {CASE(RESAMPLE, "nearest 1-d int64 by a given scale 1.7", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_NEAREST, 1, 1.7, 0, 0, 0, 0, 0),
     .tensors = {{I64(2, 3, 7)}, {I64(2, 3, 11)}}},
    {CASE(RESAMPLE, "nearest-exact 3-d uint8 down", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_NEAREST_EXACT, 3, 0, 0, 0, 0, 0, 0),
     .tensors = {{U8(1, 2, 5, 6, 7)}, {U8(1, 2, 3, 4, 3)}}},
    {CASE(RESAMPLE, "nearest bool, transposed input", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_NEAREST, 2, 0, 0, 0, 0, 0, 0),
     .tensors = {{BOOL_(3, 4, 6), TRANSPOSED}, {BOOL_(3, 9, 5)}}},
    {CASE(RESAMPLE, "bilinear up, NaN and infinities", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_LINEAR, 2, 0, 0, 0, 0, 0, 0),
     .tensors = {{F32(2, 2, 6, 5), SPECIAL}, {F32(2, 2, 13, 11)}}},
    {CASE(RESAMPLE, "bilinear align_corners down, strided output", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_LINEAR | ALIGN, 2, 0, 0, 0, 0, 0, 0),
     .tensors = {{F32(2, 3, 9, 10)}, {F32(2, 3, 4, 3), STRIDED}}},
    {CASE(RESAMPLE, "linear 1-d bfloat16 with scale 2.5", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_LINEAR, 1, 2.5, 0, 0, 0, 0, 0),
     .tensors = {{BF16(3, 4, 6)}, {BF16(3, 4, 15)}}},
    {CASE(RESAMPLE, "trilinear float64", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_LINEAR, 3, 0, 0, 0, 0, 0, 0),
     .tensors = {{F64(1, 2, 3, 4, 5)}, {F64(1, 2, 5, 3, 8)}}},
    {CASE(RESAMPLE, "bicubic float16 up", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_CUBIC, 2, 0, 0, 0, 0, 0, 0),
     .tensors = {{F16(1, 3, 5, 4)}, {F16(1, 3, 8, 9)}}},
    {CASE(RESAMPLE, "bicubic align_corners float32", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_CUBIC | ALIGN, 2, 0, 0, 0, 0, 0, 0),
     .tensors = {{F32(2, 2, 7, 6)}, {F32(2, 2, 5, 10)}}},
    {CASE(RESAMPLE, "large bilinear over the pool", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_LINEAR, 2, 0, 0, 0, 0, 0, 0),
     .tensors = {{F32(4, 8, 32, 32)}, {F32(4, 8, 64, 64)}}},
    {CASE(RESAMPLE, "antialiased bilinear down by 3", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_LINEAR_AA, 2, 0, 0, 0, 0, 0, 0),
     .tensors = {{F32(2, 3, 12, 10)}, {F32(2, 3, 4, 5)}}},
    {CASE(RESAMPLE, "antialiased bicubic up, bfloat16", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_CUBIC_AA, 2, 0, 0, 0, 0, 0, 0),
     .tensors = {{BF16(1, 2, 5, 6)}, {BF16(1, 2, 8, 7)}}},
    {CASE(RESAMPLE, "reflection pad 2-d", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_REFLECT, 2, 0, 0, 0, 2, 3, 0),
     .tensors = {{F32(2, 3, 4, 5), SPECIAL}, {F32(2, 3, 7, 9)}}},
    {CASE(RESAMPLE, "reflection pad 1-d int32 unbatched, cropping after", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_REFLECT, 1, 0, 0, 0, 3, 0, 0),
     .tensors = {{I32(3, 6)}, {I32(3, 7)}}},
    {CASE(RESAMPLE, "replication pad 3-d", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_REPLICATE, 3, 0, 0, 0, 1, 2, 3),
     .tensors = {{F64(1, 2, 3, 3, 2)}, {F64(1, 2, 6, 5, 8)}}},
    {CASE(RESAMPLE, "replication pad, negative crops", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_REPLICATE, 2, 0, 0, 0, -1, 2, 0),
     .tensors = {{BF16(2, 5, 4)}, {BF16(2, 3, 7)}}},
    {CASE(RESAMPLE_BACKWARD, "nearest 2-d backward", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_NEAREST, 2, 0, 0, 0, 0, 0, 0),
     .tensors = {{F32(2, 3, 7, 9)}, {F32(2, 3, 4, 5)}}},
    {CASE(RESAMPLE_BACKWARD, "bilinear backward, strided gradient", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_LINEAR, 2, 0, 0, 0, 0, 0, 0),
     .tensors = {{F32(2, 2, 9, 8), STRIDED}, {F32(2, 2, 5, 4)}}},
    {CASE(RESAMPLE_BACKWARD, "bicubic align_corners backward bfloat16", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_CUBIC | ALIGN, 2, 0, 0, 0, 0, 0, 0),
     .tensors = {{BF16(1, 2, 6, 7)}, {BF16(1, 2, 4, 4)}}},
    {CASE(RESAMPLE_BACKWARD, "trilinear backward float64, scales given", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_LINEAR, 3, 1.5, 2.0, 1.25, 0, 0, 0),
     .tensors = {{F64(1, 2, 4, 6, 5)}, {F64(1, 2, 3, 3, 4)}}},
    {CASE(RESAMPLE_BACKWARD, "antialiased bicubic backward, float64, down", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_CUBIC_AA | ALIGN, 2, 0, 0, 0, 0, 0, 0),
     .tensors = {{F64(1, 2, 3, 4)}, {F64(1, 2, 9, 7)}}},
    {CASE(RESAMPLE_BACKWARD, "reflection pad backward", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_REFLECT, 2, 0, 0, 0, 1, 2, 0),
     .tensors = {{F32(2, 6, 9)}, {F32(2, 4, 5)}}},
    {CASE(RESAMPLE_BACKWARD, "replication pad 1-d backward float16", 1, 1),
     RESAMPLE_ARGS(TPU_RESAMPLE_REPLICATE, 1, 0, 0, 0, 3, 0, 0),
     .tensors = {{F16(2, 3, 10)}, {F16(2, 3, 4)}}},
};

#undef RESAMPLE_ARGS
#undef ALIGN

#endif
