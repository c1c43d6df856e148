/* The optim family: fused optimizer steps and the gradient scaler's kernels, so torch.optim with
 * fused=True and torch.amp.GradScaler run natively. X(ID, "name", attribute scalars) per op; see
 * ops/tpu_op.h. Math follows PyTorch's fused CPU/CUDA kernels: each element computes in float
 * (double for float64 parameters), the coefficients from the step count in double. */
#ifndef TPU_OPS_OPTIM_H
#define TPU_OPS_OPTIM_H

/* FUSED_ADAM: one parameter's Adam/AdamW step, in place.
 *   inputs: step (a 1-element float tensor, already incremented), then, by flag, lr (1 element),
 *           grad_scale (1 element), found_inf (1 element: a non-zero value skips the step).
 *   outputs: param, grad (unscaled in place when grad_scale is given), exp_avg, exp_avg_sq, and
 *            max_exp_avg_sq with amsgrad; all of one shape and floating dtype.
 *   scalars: [0] lr, [1] beta1, [2] beta2, [3] weight_decay, [4] eps, [5].u flags (TPU_ADAM_*).
 * FUSED_SGD: one parameter's SGD step, in place.
 *   inputs: by flag, lr, grad_scale, found_inf (1 element each).
 *   outputs: param, grad, and momentum_buffer when momentum != 0.
 *   scalars: [0] lr, [1] weight_decay, [2] momentum, [3] dampening, [4].u flags (TPU_SGD_*).
 * AMP_UNSCALE: grad *= inv_scale; found_inf = 1 if grad has a non-finite value.
 *   inputs: inv_scale (1 element float32); outputs: grad (floating), found_inf (1 element float32).
 * AMP_UPDATE_SCALE: GradScaler's update: backs off on found_inf, grows every growth_interval steps
 *   while the grown scale stays finite.
 *   inputs: found_inf; outputs: scale (float32), growth_tracker (int32), 1 element each.
 *   scalars: [0] growth_factor, [1] backoff_factor, [2].i growth_interval. */
#define TPU_OPS_OPTIM(X)                                                                           \
  X(FUSED_ADAM, "fused_adam", TPU_ATTR(5))                                                         \
  X(FUSED_SGD, "fused_sgd", TPU_ATTR(4))                                                           \
  X(AMP_UNSCALE, "amp_unscale", 0)                                                                 \
  X(AMP_UPDATE_SCALE, "amp_update_scale", 0)

/* Flags of FUSED_ADAM (scalars[5].u). */
enum {
  TPU_ADAM_AMSGRAD = 1u << 0,
  TPU_ADAM_MAXIMIZE = 1u << 1,
  TPU_ADAM_DECOUPLED = 1u << 2, /* AdamW: decay the parameter, not the gradient */
  TPU_ADAM_LR_TENSOR = 1u << 3,
  TPU_ADAM_GRAD_SCALE = 1u << 4,
  TPU_ADAM_FOUND_INF = 1u << 5,
};

/* Flags of FUSED_SGD (scalars[4].u). */
enum {
  TPU_SGD_NESTEROV = 1u << 0,
  TPU_SGD_MAXIMIZE = 1u << 1,
  TPU_SGD_FIRST_STEP = 1u << 2, /* the momentum buffer starts as the gradient */
  TPU_SGD_LR_TENSOR = 1u << 3,
  TPU_SGD_GRAD_SCALE = 1u << 4,
  TPU_SGD_FOUND_INF = 1u << 5,
};

#endif
