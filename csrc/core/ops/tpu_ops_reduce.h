/* The reduce family's ops: X(ID, "name") per op; see ops/tpu_op.h. Each kernel's
 * tensors and scalars are described in drivers/host/kernels/reduce/reduce_ops.c. */
#ifndef TPU_OPS_REDUCE_H
#define TPU_OPS_REDUCE_H

#define TPU_OPS_REDUCE(X)                                                                          \
  X(SUM, "sum")                                                                                    \
  X(PROD, "prod")                                                                                  \
  X(AMAX, "amax")                                                                                  \
  X(AMIN, "amin")                                                                                  \
  X(MAX_DIM, "max_dim")                                                                            \
  X(MIN_DIM, "min_dim")                                                                            \
  X(ARGMAX, "argmax")                                                                              \
  X(ARGMIN, "argmin")                                                                              \
  X(VAR, "var")                                                                                    \
  X(NORM, "norm")                                                                                  \
  X(LOGSUMEXP, "logsumexp")                                                                        \
  X(ANY, "any")                                                                                    \
  X(ALL, "all")                                                                                    \
  X(COUNT_NONZERO, "count_nonzero")                                                                \
  X(CUMSUM, "cumsum")

#endif
