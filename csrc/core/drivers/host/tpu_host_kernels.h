/* Host-driver kernels: each runs one op call on host memory. They trust views that passed
 * tpu_tensor_check and return an error status (with tpu_error's message) for bad input found while
 * running, such as an index out of range. */
#ifndef TPU_HOST_KERNELS_H
#define TPU_HOST_KERNELS_H

#include "ops/tpu_op.h"

/* The kernel of `op`, or NULL when the host driver has none. */
tpu_kernel_fn tpu_host_kernel(tpu_op_id op);

/* nll_loss_backward then log_softmax_backward (dim 1) as one row kernel, for the fused planner's
 * cross-entropy pair (tpu_fuse.h): from nll's inputs and log_softmax's output y [N, C] it writes
 * log_softmax_backward's grad_input [N, C] (dense float32/float64; it may be y's memory) without
 * the mostly-zero gradient between them: row n is -exp(y) * g_n plus g_n at the target class, g_n
 * being what nll_loss_backward writes there. */
tpu_status tpu_kernel_nll_log_softmax_backward(const tpu_op_call *nll, const tpu_op_call *lsm);

#endif
