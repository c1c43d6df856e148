/* The base family: copies, fills, gathers and random fills, the ops of the device foundation.
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
 *   float64 does (float16 and bfloat16 through float, as c10 does). float8 dtypes are not filled.
 *
 * INDEX_SELECT: tensors[0] = self, [1] = index (int32 or int64, 0-d or 1-d), [2] = output, sized
 *   by the caller: self's sizes with dimension scalars[0].i (negative counts from the end)
 *   replaced by the index's length. Any dtype: elements move as bytes. A 0-d self (and its 0-d
 *   output) acts as one dimension of size 1, as in PyTorch. Every index is checked before
 *   anything is written; one outside [0, size) is an IndexError (negative indices do not wrap, as
 *   on PyTorch CPU).
 *
 * Random fills, tensors[0] = output:
 *   UNIFORM: scalars [0].f from, [1].f to, [2].u seed, [3].u offset; float16/bfloat16/float32/64.
 *   NORMAL:  scalars [0].f mean, [1].f std, [2].u seed, [3].u offset; the same dtypes.
 *   RANDOM:  scalars [0].i from, [1].u range (0 means all 2^64 values), [2].u seed, [3].u offset;
 *            value from + bits % range in wrapping 64-bit math, stored as a signed integer
 *            (floating dtypes convert it as a COPY from int64 does, integers wrap, bool is != 0;
 *            the caller picks from and range as random_ does, e.g. [0, 2^24] for float32); bool,
 *            integer (uint16/32/64 too) and floating dtypes.
 * Every element's value is a pure function of (seed, offset, its row-major logical index in the
 * output view), never of strides, chunking or threads. The stream is a sequence of 32-bit words:
 * word w is output w % 4 of Philox4x32-10 (Salmon et al., SC'11; Random123) with counter (w / 4
 * low, high, offset low, high) and key (seed low, high). Element i takes word i (float16,
 * bfloat16, float32; RANDOM with 0 < range <= 2^32: bits = the word), or words 2i and 2i+1 as
 * lo | hi << 32 (float64; larger ranges). The offset fills the counter's high half, so calls
 * whose offsets differ never share a counter: advancing the offset by one per call is enough.
 * A float uniform u in [0, 1) is the word's low 24 bits * 2^-24, a double one the 64-bit value's
 * low 53 bits * 2^-53. UNIFORM values lie in [from, to), computed as PyTorch 2.13's CPU kernel
 * does: u * (to - from) + from in float (float64 for float64; float16 and bfloat16 from 24-bit
 * uniforms too), rounded once to the dtype, and a value that rounds up to `to` (rounded to the
 * dtype) becomes `from` (rounded to the dtype). NORMAL is z * std + mean in float (double for
 * float64), where Box-Muller turns the uniforms of elements 2p and 2p+1 into their standard
 * normals r cos(t) and r sin(t), r = sqrt(-2 log(1 - u_2p)), t = 2 pi u_2p+1. */
#ifndef TPU_OPS_BASE_H
#define TPU_OPS_BASE_H

#define TPU_OPS_BASE(X)                                                                            \
  X(COPY, "copy", 0)                                                                               \
  X(FILL, "fill", 0)                                                                               \
  X(INDEX_SELECT, "index_select", TPU_ATTR(0))                                                     \
  X(UNIFORM, "uniform", 0)                                                                         \
  X(NORMAL, "normal", 0)                                                                           \
  X(RANDOM, "random", 0)

#endif
