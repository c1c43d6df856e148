/* The host kernels, one family per file, gathered into tpu_host_kernel's table. Each reads
 * call->tensors (inputs, then outputs) and call->scalars as its op's comment in the file says. */
#ifndef TPU_KERNELS_INTERNAL_H
#define TPU_KERNELS_INTERNAL_H

#include "ops/tpu_op.h"

tpu_status tpu_kernel_copy(const tpu_op_call *call);          /* kernel_copy.c */
tpu_status tpu_kernel_fill(const tpu_op_call *call);          /* kernel_fill.c */
tpu_status tpu_kernel_index_select(const tpu_op_call *call);  /* kernel_index_select.c */
tpu_status tpu_kernel_uniform(const tpu_op_call *call);       /* kernel_random.c */
tpu_status tpu_kernel_normal(const tpu_op_call *call);        /* kernel_random.c */
tpu_status tpu_kernel_random(const tpu_op_call *call);        /* kernel_random.c */

#endif
