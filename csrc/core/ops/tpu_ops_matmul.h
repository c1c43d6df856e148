/* The matmul family's ops: X(ID, "name", attribute scalars) per op; see ops/tpu_op.h. Every op
 * (mm, bmm, addmm, baddbmm, addbmm, addmv, dot) is one batched GEMM, out[b] = alpha * A[b] @ B[b]
 * + beta * C[b]; the names keep the op counters telling which ATen op ran.
 *
 * Call layout, shared by all the family's ops: tensors[0] = A [batch, M, K], tensors[1] = B
 * [batch, K, N], optionally tensors[2] = C [batch, M, N] (any strides, 0 for broadcast), then the
 * output [batch, M, N], or [1, M, N] to sum the batches (addbmm). All share one dtype. scalars[0] =
 * alpha, scalars[1] = beta (.i for integer dtypes, .f otherwise), scalars[2] and [3] = their
 * imaginary parts for complex dtypes; scalars[4].i holds TPU_GEMM_CONJ_A / _B to read A / B
 * conjugated (PyTorch's lazy conj views). With beta == 0 (or no C) C is never read, so its NaNs
 * do not propagate, as in BLAS. Every product accumulates in fp32 or wider and is rounded once.
 *
 * int_mm (torch._int_mm) is the one mixed-dtype op: A int8 or uint8 [1, M, K], B int8 [1, K, N], output int32
 * [1, M, N], exact sums wrapping modulo 2^32; no C and no scalars.
 *
 * float32 is always true fp32, whatever torch.get_float32_matmul_precision() says: "highest"
 * forbids reduced precision, and "high"/"medium" only permit it. */
#ifndef TPU_OPS_MATMUL_H
#define TPU_OPS_MATMUL_H

#define TPU_OPS_MATMUL(X)                                                                          \
  X(MM, "mm", TPU_ATTR(4))                                                                         \
  X(BMM, "bmm", TPU_ATTR(4))                                                                       \
  X(ADDMM, "addmm", TPU_ATTR(4))                                                                   \
  X(BADDBMM, "baddbmm", TPU_ATTR(4))                                                               \
  X(ADDBMM, "addbmm", TPU_ATTR(4))                                                                 \
  X(ADDMV, "addmv", TPU_ATTR(4))                                                                   \
  X(DOT, "dot", TPU_ATTR(4))                                                                       \
  X(INT_MM, "int_mm", 0)

/* Bits of scalars[4].i. */
enum { TPU_GEMM_CONJ_A = 1, TPU_GEMM_CONJ_B = 2 };

#endif
