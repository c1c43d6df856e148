/* The base family: copies and fills, the ops of the device foundation.
 * X(ID, "name", attribute scalars) per op; see ops/tpu_op.h.
 *
 * COPY: tensors[0] = src (input), tensors[1] = dst (output), equal sizes; a broadcast source has
 *   stride 0. Either side may be host memory (tensor/tpu_tensor.h). A same-dtype copy moves
 *   bytes, for every dtype. A conversion among the computable dtypes has PyTorch's CPU semantics
 *   on x86 (checked against torch 2.13):
 *   - anything to bool is x != 0 (NaN is true; complex: either part); bool to a number is 0 or 1;
 *   - complex to real takes the real part; real to complex has a zero imaginary part;
 *   - float to int64 and int32 truncates toward zero, and NaN or out-of-range values give the
 *     minimum integer (x86's "integer indefinite", what cvttss2si returns); float to int8 and
 *     int16 goes through int32 (the code x86 compilers emit), to uint8 through int64 (c10's
 *     explicit rule for unsigned targets), then wraps;
 *   - integers wrap when narrowed;
 *   - float16 and bfloat16 are rounded to nearest even from float: float64 and int64 sources are
 *     first converted to float, as c10::Half and c10::BFloat16 do (so rounding can happen twice).
 *   The other dtypes (uint16/32/64, float8) are only copied to their own dtype.
 *
 * FILL: tensors[0] = output. The value is scalars[0].f for floating and complex dtypes
 *   (scalars[1].f is the imaginary part) and scalars[0].i for bool and integer dtypes,
 *   uint16/32/64 included. Range checks ("value cannot be converted to type int8_t without
 *   overflow") are the caller's; integers wrap, bool is i != 0, and floats round as a COPY from
 *   float64 does (float16 and bfloat16 through float, as c10 does). float8 dtypes are not
 *   filled. */
#ifndef TPU_OPS_BASE_H
#define TPU_OPS_BASE_H

#define TPU_OPS_BASE(X)                                                                            \
  X(COPY, "copy", 0)                                                                               \
  X(FILL, "fill", 0)

#endif
