/* The conv family's ops: X(ID, "name", host kernel) per op; see ops/tpu_op.h. Convolutions (1, 2
 * or 3 spatial dimensions, grouped, strided, padded, dilated, transposed through the backward
 * ops), pooling, batch and group norm, and the fused LSTM/GRU cells. Floating dtypes only
 * (float16, bfloat16, float32, float64); each kernel computes in float (double for float64) and
 * rounds once per output element, as PyTorch CPU does.
 *
 * Convolutions (drivers/host/kernels_conv*.c) see every tensor as [N, C, spatial...] with 1 to 3
 * spatial dimensions and any strides; "x-like" tensors have the convolution's input geometry,
 * "y-like" ones its output geometry. scalars[0].u, [1].u, [2].u hold the stride, padding and
 * dilation, each packed by tpu_conv_pack; S spatial dimensions use the last S of its three slots.
 * The groups are
 * x.C / w.size(1). Every y-like spatial size must equal (in + 2 * pad - dil * (k - 1) - 1) / stride
 * + 1 for its x-like one.
 * CONV: tensors x, w [G * Kg, Cg, k...], optional bias [G * Kg]; output y = conv(x, w) + bias.
 * CONV_BACKWARD_INPUT: tensors dy, w, optional bias (over dx's channels); output dx, the gradient
 *   of conv(x, w) w.r.t. x, plus bias: this is also the transposed convolution's forward.
 * CONV_BACKWARD_WEIGHT: tensors dy, x; output dw (w's shape), the gradient w.r.t. w.
 * CONV_BACKWARD_BIAS: tensor dy [N, K, spatial...]; output db [K], the sum over all but dim 1. */
#ifndef TPU_OPS_CONV_H
#define TPU_OPS_CONV_H

#include <stdint.h>

#define TPU_OPS_CONV(X)                                                                            \
  X(CONV, "conv", tpu_kernel_conv)                                                                 \
  X(CONV_BACKWARD_INPUT, "conv_backward_input", tpu_kernel_conv_backward_input)                    \
  X(CONV_BACKWARD_WEIGHT, "conv_backward_weight", tpu_kernel_conv_backward_weight)                 \
  X(CONV_BACKWARD_BIAS, "conv_backward_bias", tpu_kernel_conv_backward_bias)

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
