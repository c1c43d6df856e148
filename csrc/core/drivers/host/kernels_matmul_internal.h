/* Private to the matmul kernels: one GEMM job, cut into tiles that threads run independently. */
#ifndef TPU_KERNELS_MATMUL_INTERNAL_H
#define TPU_KERNELS_MATMUL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/tpu_dtype.h"
#include "base/tpu_status.h"
#include "ops/tpu_op.h"

/* Multiply-adds below which a GEMM runs on one thread (about 20 us on one core): waking the pool
 * would cost more than it saves. */
#define TPU_GEMM_SERIAL_WORK (1 << 20)

/* A [batch, rows, cols] operand: element (b, i, j) at data + (b * bs + i * rs + j * cs) * elsize.
 * Strides of size-1 dimensions are normalized so that BLAS layout checks can ignore them. */
typedef struct gemm_view {
  char *data;
  int64_t bs, rs, cs;
} gemm_view;

typedef struct gemm_job {
  tpu_dtype dtype;
  int64_t elsize;
  int64_t batch, m, n, k;
  bool sum_batches; /* out has one batch: the sum over A and B's batches (addbmm) */
  bool has_c;       /* C is read: present and beta != 0 */
  bool conj_a, conj_b; /* complex operands read conjugated (PyTorch's lazy conj views) */
  gemm_view a, b, c, out;
  tpu_scalar alpha, beta, alpha_im, beta_im;
} gemm_job;

/* Writes out[bo][m0 + i][n0 + j] = alpha * acc[i * ld + j] + beta * C[...] for i < mt, j < nt.
 * acc holds float for float32/bfloat16/float16, double, float/double complex pairs, or uint32_t
 * (uint64_t for int64) with wrapping arithmetic for integer dtypes. */
void tpu_gemm_store(const gemm_job *job, int64_t bo, const void *acc, int64_t ld, int64_t m0,
                    int64_t mt, int64_t n0, int64_t nt);

/* The AVX512-BF16 path: runs the whole bf16 job over the pool. False when the CPU lacks
 * AVX512-BF16 or memory runs out (the caller then runs the portable path). */
bool tpu_gemm_bf16(const gemm_job *job);

#endif
