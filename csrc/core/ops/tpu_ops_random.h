/* The random family's ops: X(ID, "name", attribute scalars) per op; see ops/tpu_op.h. Random
 * fills, Bernoulli draws and dropout, all drawn from one counter-based stream (below), so a value
 * is a pure function of the call's seed, offset and the element's position. COPY is the op of
 * ops/tpu_ops_base.h.
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
 * normals r cos(t) and r sin(t), r = sqrt(-2 log(1 - u_2p)), t = 2 pi u_2p+1.
 *
 * Bernoulli draws and dropout use the random stream above: element i of the output view
 * (row-major) takes word i of the stream for (seed, offset), u = its low 24 bits * 2^-24, the
 * same u that UNIFORM gives element i. A value depends only on (seed, offset, i), never on
 * strides, threads or the eager mode.
 *   BERNOULLI: tensors[0] = p (optional, floating, broadcast to out's sizes), output out (bool,
 *     integer or floating). scalars[0].f = p when there is no p tensor, [2].u seed, [3].u
 *     offset. out = u < p ? 1 : 0. A p outside [0, 1] is an error (PyTorch CPU's check).
 *   DROPOUT (native_dropout in training): tensors[0] = input (floating or complex); outputs
 *     out (input's dtype) and mask (bool). scalars[0].f = the keep probability 1 - p, [1].f =
 *     scale (1 / (1 - p), 0 when p = 1), [2].u seed, [3].u offset. mask = u < 1 - p; out =
 *     (input * mask) * scale with the scale in the dtype's compute type (float for float16,
 *     bfloat16, float32), rounded once, as PyTorch CPU's input.mul(mask).mul_(scale).
 *   DROPOUT_BACKWARD: tensors[0] = grad, [1] = mask (bool or uint8), output grad_input (grad's
 *     dtype); scalars[0].f = scale: grad_input = (grad * mask) * scale, the same way. */
#ifndef TPU_OPS_RANDOM_H
#define TPU_OPS_RANDOM_H

#define TPU_OPS_RANDOM(X)                                                                          \
  X(UNIFORM, "uniform", 0)                                                                         \
  X(NORMAL, "normal", 0)                                                                           \
  X(RANDOM, "random", 0)                                                                           \
  X(BERNOULLI, "bernoulli", 0)                                                                     \
  X(DROPOUT, "dropout", 0)                                                                         \
  X(DROPOUT_BACKWARD, "dropout_backward", 0)

#endif
