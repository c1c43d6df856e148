#include "drivers/host/tpu_host_kernels.h"

#include "drivers/host/kernels_internal.h"

static const tpu_kernel_fn kernels[TPU_OP_COUNT] = {
    [TPU_OP_COPY] = tpu_kernel_copy,       [TPU_OP_FILL] = tpu_kernel_fill,
    [TPU_OP_INDEX_SELECT] = tpu_kernel_index_select,
    [TPU_OP_UNIFORM] = tpu_kernel_uniform, [TPU_OP_NORMAL] = tpu_kernel_normal,
    [TPU_OP_RANDOM] = tpu_kernel_random,
};

tpu_kernel_fn tpu_host_kernel(tpu_op_id op) {
  return (unsigned)op < TPU_OP_COUNT ? kernels[op] : NULL;
}
