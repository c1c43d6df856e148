/* The matmul family's ops: X(ID, "name", host kernel) per op; see ops/tpu_op.h. Every op is one
 * batched GEMM with the call layout of drivers/host/kernels_matmul.h; the names keep the op
 * counters telling which ATen op ran. */
#ifndef TPU_OPS_MATMUL_H
#define TPU_OPS_MATMUL_H

#define TPU_OPS_MATMUL(X)                                                                          \
  X(MM, "mm", tpu_kernel_gemm)                                                                     \
  X(BMM, "bmm", tpu_kernel_gemm)                                                                   \
  X(ADDMM, "addmm", tpu_kernel_gemm)                                                               \
  X(BADDBMM, "baddbmm", tpu_kernel_gemm)                                                           \
  X(ADDBMM, "addbmm", tpu_kernel_gemm)                                                             \
  X(ADDMV, "addmv", tpu_kernel_gemm)                                                               \
  X(DOT, "dot", tpu_kernel_gemm)

#endif
