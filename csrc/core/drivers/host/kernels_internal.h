/* The host kernels, one family per file, gathered into tpu_host_kernel's table. Each reads
 * call->tensors (inputs, then outputs) and call->scalars as its op's comment in the file says. */
#ifndef TPU_KERNELS_INTERNAL_H
#define TPU_KERNELS_INTERNAL_H

#include "ops/tpu_op.h"

#define TPU_DECLARE_KERNEL(id, name, kernel) tpu_status kernel(const tpu_op_call *call);
TPU_OP_LIST(TPU_DECLARE_KERNEL)
#undef TPU_DECLARE_KERNEL

#endif
