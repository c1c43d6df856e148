/* The conv family's ops: X(ID, "name", attribute scalars) per op; see ops/tpu_op.h. Convolutions
 * (1, 2 or 3 spatial dimensions, grouped, strided, padded, dilated, transposed through the
 * backward ops) and pooling. Floating dtypes (float16, bfloat16, float32, float64; forward
 * pooling also takes integers, below); each op computes in float or wider (double for float64)
 * and rounds once per output element, as PyTorch CPU does.
 *
 * Convolutions see every tensor as [N, C, spatial...] with 1 to 3 spatial dimensions and any
 * strides; "x-like" tensors have the convolution's input geometry,
 * "y-like" ones its output geometry. scalars[0].u, [1].u, [2].u hold the stride, padding and
 * dilation, each packed by tpu_conv_pack; S spatial dimensions use the last S of its three
 * slots. The groups are x.C / w.size(1). No y-like spatial size may exceed (in + 2 * pad - dil *
 * (k - 1) - 1) / stride + 1 for its x-like one (a transposed convolution's output_padding makes
 * it smaller).
 * CONV: tensors x, w [G * Kg, Cg, k...], optional bias [G * Kg]; output y = conv(x, w) + bias.
 * CONV_BACKWARD_INPUT: tensors dy, w, optional bias (over dx's channels); output dx, the gradient
 *   of conv(x, w) w.r.t. x, plus bias: this is also the transposed convolution's forward.
 * CONV_BACKWARD_WEIGHT: tensors dy, x; output dw (w's shape), the gradient w.r.t. w.
 * CONV_BACKWARD_BIAS: tensor dy [N, K, spatial...]; output db [K], the sum over all but dim 1.
 *
 * Pooling sees [N, C, spatial...] (1 to 3 spatial dimensions) as convolutions do. scalars[0].u
 * to [3].u hold the packed kernel size, stride, padding and dilation (ignored by the adaptive
 * modes), [4].u the mode (TPU_POOL_*) | TPU_POOL_COUNT_PAD, [5].i a divisor override (0: none;
 * a negative one divides as in PyTorch).
 * POOL: tensor x; outputs y and, for the max modes, int64 indices (flat within the input plane).
 * POOL_BACKWARD: tensors dy and, for the max modes, indices; output dx.
 * PyTorch CPU's windows, divisors and NaN rule (a NaN always wins a max); forward max pooling also
 * takes the integer dtypes (an empty window gives the dtype's smallest value), forward average
 * pooling int64 (summed and divided as integers, truncating). */
#ifndef TPU_OPS_CONV_H
#define TPU_OPS_CONV_H

#include <stdint.h>

#define TPU_OPS_CONV(X)                                                                            \
  X(CONV, "conv", TPU_ATTRS_BELOW(3))                                                              \
  X(CONV_BACKWARD_INPUT, "conv_backward_input", TPU_ATTRS_BELOW(3))                                \
  X(CONV_BACKWARD_WEIGHT, "conv_backward_weight", TPU_ATTRS_BELOW(3))                              \
  X(CONV_BACKWARD_BIAS, "conv_backward_bias", 0)                                                   \
  X(POOL, "pool", TPU_ATTRS_BELOW(6))                                                              \
  X(POOL_BACKWARD, "pool_backward", TPU_ATTRS_BELOW(6))

/* Pooling modes (the low bits of POOL's scalars[4].u) and its flag. */
enum {
  TPU_POOL_MAX = 0,
  TPU_POOL_AVG = 1,
  TPU_POOL_ADAPTIVE_AVG = 2,
  TPU_POOL_ADAPTIVE_MAX = 3,
  TPU_POOL_COUNT_PAD = 4, /* average pooling divides by the window including the padding */
};

/* Largest stride, padding or dilation a packed scalar holds. */
#define TPU_CONV_PARAM_MAX ((1 << 21) - 1)

/* Packs three convolution parameters (each in [0, TPU_CONV_PARAM_MAX]) into one scalar. */
static inline uint64_t tpu_conv_pack(int64_t d, int64_t h, int64_t w) {
  return ((uint64_t)d << 42) | ((uint64_t)h << 21) | (uint64_t)w;
}

/* The i-th (0 = outermost) of three packed parameters. */
static inline int64_t tpu_conv_unpack(uint64_t packed, int i) {
  return (int64_t)((packed >> (21 * (2 - i))) & TPU_CONV_PARAM_MAX);
}

#endif
