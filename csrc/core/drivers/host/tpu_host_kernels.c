#include "drivers/host/tpu_host_kernels.h"

#include "drivers/host/kernels_internal.h"

static const tpu_kernel_fn kernels[TPU_OP_COUNT] = {
#define TPU_KERNEL_ENTRY(id, name, kernel) [TPU_OP_##id] = kernel,
    TPU_OP_LIST(TPU_KERNEL_ENTRY)
#undef TPU_KERNEL_ENTRY
};

tpu_kernel_fn tpu_host_kernel(tpu_op_id op) {
  return (unsigned)op < TPU_OP_COUNT ? kernels[op] : NULL;
}
