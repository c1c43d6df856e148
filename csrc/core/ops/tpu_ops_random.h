/* The random family's ops: X(ID, "name", attribute scalars) per op; see ops/tpu_op.h. Random
 * fills, Bernoulli draws, dropout and multinomial draws, all drawn from one counter-based stream
 * (below), so a value is a pure function of the call's seed, offset and the element's position
 * (and, for a multinomial draw, its row's weights). COPY is the op of ops/tpu_ops_base.h.
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
 *     dtype); scalars[0].f = scale: grad_input = (grad * mask) * scale, the same way.
 *
 * MULTINOMIAL (torch.multinomial): tensors[0] = weights w [rows, K] (float16, bfloat16, float32
 *   or float64, any strides, 1 <= K <= 2^24), output out [rows, n] (int64, any strides, n >= 1).
 *   scalars[0].i = 1 draws with replacement, 0 without (n <= K); [2].u seed, [3].u offset. Draw
 *   s of row b takes element e = b * n + s of the stream: u = the low 53 bits of words 2e and
 *   2e + 1 (lo | hi << 32) * 2^-53, UNIFORM's float64 value. The weights become integers first,
 *   so that every driver, summing in any order, draws the same categories: q_j = ceil(w_j * 2^s)
 *   in double, with s = k - E, k = 53 - bit_width(K - 1), 2^(E-1) <= max_j w_j < 2^E, computed as
 *   (w_j * 2^s1) * 2^s2 (s1 = s, s2 = 0 when s < 0; else s1 = floor(s / 2), s2 = s - s1: both
 *   factors normal doubles, the product rounded once). So 2^(k-1) <= max q <= 2^k, T = sum q <=
 *   2^53, and a positive weight gets at least 1: a probability is off by less than 2^(1-k) of the
 *   row's largest. A draw takes r = min(floor(u * T), T - 1) (the product rounded once, in
 *   double) and the first category j whose running sum q_0 + ... + q_j exceeds r. With
 *   replacement every draw uses the same q; without, draws go in order of s, a drawn category's
 *   q becoming 0 for the later ones, and once the categories left all have q = 0 a draw takes the
 *   first one not drawn yet (PyTorch then returns zero-weight categories too).
 *   Errors, RuntimeError with PyTorch CPU's message (TPU_MULTINOMIAL_* below), found before
 *   anything is written: with n = 1 or without replacement, a weight anywhere that is NaN,
 *   infinite or negative is INVALID, else a row of zeros ZERO_SUM. With replacement and n > 1 the
 *   rows are checked in order, each one element by element, then its sum: NaN or negative is
 *   NEGATIVE, infinite INFINITE, all zero ZERO_SUM. */
#ifndef TPU_OPS_RANDOM_H
#define TPU_OPS_RANDOM_H

#define TPU_OPS_RANDOM(X)                                                                          \
  X(UNIFORM, "uniform", 0)                                                                         \
  X(NORMAL, "normal", 0)                                                                           \
  X(RANDOM, "random", 0)                                                                           \
  X(BERNOULLI, "bernoulli", 0)                                                                     \
  X(DROPOUT, "dropout", 0)                                                                         \
  X(DROPOUT_BACKWARD, "dropout_backward", 0)                                                       \
  X(MULTINOMIAL, "multinomial", TPU_ATTR(0))

/* MULTINOMIAL's errors, PyTorch CPU's messages, which every driver raises. */
#define TPU_MULTINOMIAL_INVALID "probability tensor contains either `inf`, `nan` or element < 0"
#define TPU_MULTINOMIAL_ZERO_SUM "invalid multinomial distribution (sum of probabilities <= 0)"
#define TPU_MULTINOMIAL_NEGATIVE                                                                   \
  "invalid multinomial distribution (encountering probability entry < 0)"
#define TPU_MULTINOMIAL_INFINITE                                                                   \
  "invalid multinomial distribution (encountering probability entry = infinity or NaN)"

#endif
