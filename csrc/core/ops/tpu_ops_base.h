/* The base family: copies, fills, gathers and random fills, the ops of the device foundation.
 * X(ID, "name", host kernel) per op; see ops/tpu_op.h. */
#ifndef TPU_OPS_BASE_H
#define TPU_OPS_BASE_H

#define TPU_OPS_BASE(X)  \
  X(COPY, "copy", tpu_kernel_copy)  \
  X(FILL, "fill", tpu_kernel_fill)  \
  X(INDEX_SELECT, "index_select", tpu_kernel_index_select)  \
  X(UNIFORM, "uniform", tpu_kernel_uniform)  \
  X(NORMAL, "normal", tpu_kernel_normal)  \
  X(RANDOM, "random", tpu_kernel_random)

#endif
