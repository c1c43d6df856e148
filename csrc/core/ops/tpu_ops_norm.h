/* The norm family's ops: X(ID, "name") per op; see ops/tpu_op.h. Tensors and scalars
 * are described in drivers/host/kernels/norm/norm_softmax.c, norm_layer.c and
 * norm_batch.c. */
#ifndef TPU_OPS_NORM_H
#define TPU_OPS_NORM_H

#define TPU_OPS_NORM(X)                                                                            \
  X(SOFTMAX, "softmax")                                                                            \
  X(LOG_SOFTMAX, "log_softmax")                                                                    \
  X(SOFTMAX_BACKWARD, "softmax_backward")                                                          \
  X(LOG_SOFTMAX_BACKWARD, "log_softmax_backward")                                                  \
  X(LAYER_NORM, "layer_norm")                                                                      \
  X(LAYER_NORM_BACKWARD, "layer_norm_backward")                                                    \
  X(RMS_NORM, "rms_norm")                                                                          \
  X(RMS_NORM_BACKWARD, "rms_norm_backward")                                                        \
  X(BATCH_NORM, "batch_norm")                                                                      \
  X(BATCH_NORM_BACKWARD, "batch_norm_backward")                                                    \
  X(BATCH_NORM_APPLY, "batch_norm_apply")

#endif
