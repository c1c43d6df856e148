/* The reduce family's ops: X(ID, "name", host kernel) per op; see ops/tpu_op.h. Each kernel's
 * tensors and scalars are described in drivers/host/kernels_reduce_ops.c. */
#ifndef TPU_OPS_REDUCE_H
#define TPU_OPS_REDUCE_H

#define TPU_OPS_REDUCE(X)  \
  X(SUM, "sum", tpu_kernel_sum)  \
  X(PROD, "prod", tpu_kernel_prod)  \
  X(AMAX, "amax", tpu_kernel_amax)  \
  X(AMIN, "amin", tpu_kernel_amin)  \
  X(MAX_DIM, "max_dim", tpu_kernel_max_dim)  \
  X(MIN_DIM, "min_dim", tpu_kernel_min_dim)  \
  X(ARGMAX, "argmax", tpu_kernel_argmax)  \
  X(ARGMIN, "argmin", tpu_kernel_argmin)  \
  X(VAR, "var", tpu_kernel_var)  \
  X(NORM, "norm", tpu_kernel_norm)  \
  X(LOGSUMEXP, "logsumexp", tpu_kernel_logsumexp)  \
  X(ANY, "any", tpu_kernel_any)  \
  X(ALL, "all", tpu_kernel_all)  \
  X(COUNT_NONZERO, "count_nonzero", tpu_kernel_count_nonzero)  \
  X(CUMSUM, "cumsum", tpu_kernel_cumsum)

#endif
