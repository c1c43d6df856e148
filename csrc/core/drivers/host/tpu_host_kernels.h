/* Host-driver kernels: each runs one op call on host memory. They trust views that passed
 * tpu_tensor_check and return an error status (with tpu_error's message) for bad input found while
 * running, such as an index out of range. */
#ifndef TPU_HOST_KERNELS_H
#define TPU_HOST_KERNELS_H

#include "ops/tpu_op.h"

/* The kernel of `op`, or NULL when the host driver has none. */
tpu_kernel_fn tpu_host_kernel(tpu_op_id op);

#endif
