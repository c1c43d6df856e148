/* The norm family's ops: X(ID, "name", host kernel) per op; see ops/tpu_op.h. Tensors and scalars
 * are described in drivers/host/kernels_norm_softmax.c, kernels_norm_layer.c and
 * kernels_norm_batch.c. */
#ifndef TPU_OPS_NORM_H
#define TPU_OPS_NORM_H

#define TPU_OPS_NORM(X)  \
  X(SOFTMAX, "softmax", tpu_kernel_softmax)  \
  X(LOG_SOFTMAX, "log_softmax", tpu_kernel_log_softmax)  \
  X(SOFTMAX_BACKWARD, "softmax_backward", tpu_kernel_softmax_backward)  \
  X(LOG_SOFTMAX_BACKWARD, "log_softmax_backward", tpu_kernel_log_softmax_backward)  \
  X(LAYER_NORM, "layer_norm", tpu_kernel_layer_norm)  \
  X(LAYER_NORM_BACKWARD, "layer_norm_backward", tpu_kernel_layer_norm_backward)  \
  X(RMS_NORM, "rms_norm", tpu_kernel_rms_norm)  \
  X(RMS_NORM_BACKWARD, "rms_norm_backward", tpu_kernel_rms_norm_backward)  \
  X(BATCH_NORM, "batch_norm", tpu_kernel_batch_norm)  \
  X(BATCH_NORM_BACKWARD, "batch_norm_backward", tpu_kernel_batch_norm_backward)  \
  X(BATCH_NORM_APPLY, "batch_norm_apply", tpu_kernel_batch_norm_apply)

#endif
