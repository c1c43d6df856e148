/* The nn family's ops: X(ID, "name") per op; see ops/tpu_op.h. Embedding backward,
 * Bernoulli draws and dropout, and the losses. */
#ifndef TPU_OPS_NN_H
#define TPU_OPS_NN_H

#define TPU_OPS_NN(X)                                                                              \
  X(EMBEDDING_BACKWARD, "embedding_backward")                                                      \
  X(BERNOULLI, "bernoulli")                                                                        \
  X(DROPOUT, "dropout")                                                                            \
  X(DROPOUT_BACKWARD, "dropout_backward")                                                          \
  X(NLL_LOSS, "nll_loss")                                                                          \
  X(NLL_LOSS_BACKWARD, "nll_loss_backward")                                                        \
  X(MSE_LOSS, "mse_loss")                                                                          \
  X(MSE_LOSS_BACKWARD, "mse_loss_backward")

#endif
