/* The attention family's ops: X(ID, "name", attribute scalars) per op; see ops/tpu_op.h. Scaled
 * dot product attention, forward and backward.
 *
 * Shapes: q [B, Hq, L, D], k [B, Hkv, S, D], v [B, Hkv, S, Dv], with Hq a multiple of Hkv
 * (grouped-query attention: query head h reads key/value head h / (Hq / Hkv)). Any strides.
 * q, k, v, out and the gradients share one dtype: float32, bfloat16 or float16, computed in
 * float32 and rounded once into the outputs. The optional mask is a [B, Hq, L, S] view (strides 0
 * where it broadcasts): additive (float32, or the dtype of q) or boolean (false masks out).
 *
 * SDPA: tensors[0..2] = q, k, v, [3] = mask (when there are 4 inputs); outputs out [B, Hq, L, Dv]
 *   and logsumexp [B, Hq, L] (float32). out = softmax(q kᵀ * scale + mask) v, with key j hidden
 *   from query i when j > i under the causal flag (top-left alignment, as PyTorch). A row whose
 *   keys are all masked gets out = 0 and logsumexp = 0, as PyTorch CPU's flash attention.
 * SDPA_BACKWARD: tensors[0..5] = grad_out [B, Hq, L, Dv], q, k, v, out, logsumexp, [6] = mask
 *   (when there are 7 inputs); outputs grad_q, grad_k, grad_v, and [3] = grad_mask [B, Hq, L, S]
 *   (when there are 4 outputs: the gradient of the additive mask, in its dtype, before any sum
 *   over broadcast dimensions).
 * Both: scalars[0].f = scale, scalars[1].i = TPU_SDPA_CAUSAL or 0. */
#ifndef TPU_OPS_ATTENTION_H
#define TPU_OPS_ATTENTION_H

#define TPU_OPS_ATTENTION(X)                                                                       \
  X(SDPA, "scaled_dot_product_attention", TPU_ATTR(1))                                             \
  X(SDPA_BACKWARD, "scaled_dot_product_attention_backward", TPU_ATTR(1))

/* Bits of scalars[1].i. */
enum { TPU_SDPA_CAUSAL = 1 };

#endif
