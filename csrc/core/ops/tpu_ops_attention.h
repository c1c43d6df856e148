/* The attention family's ops: X(ID, "name", host kernel) per op; see ops/tpu_op.h. Scaled dot
 * product attention, forward and backward, each one fused kernel (drivers/host/kernels_attention.h
 * has the call layout). */
#ifndef TPU_OPS_ATTENTION_H
#define TPU_OPS_ATTENTION_H

#define TPU_OPS_ATTENTION(X)                                                                       \
  X(SDPA, "scaled_dot_product_attention", tpu_kernel_sdpa)                                         \
  X(SDPA_BACKWARD, "scaled_dot_product_attention_backward", tpu_kernel_sdpa_backward)

#endif
