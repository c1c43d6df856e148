/* The base family: copies, fills, gathers and random fills, the ops of the device foundation.
 * X(ID, "name") per op; see ops/tpu_op.h. */
#ifndef TPU_OPS_BASE_H
#define TPU_OPS_BASE_H

#define TPU_OPS_BASE(X)                                                                            \
  X(COPY, "copy")                                                                                  \
  X(FILL, "fill")                                                                                  \
  X(INDEX_SELECT, "index_select")                                                                  \
  X(UNIFORM, "uniform")                                                                            \
  X(NORMAL, "normal")                                                                              \
  X(RANDOM, "random")

#endif
