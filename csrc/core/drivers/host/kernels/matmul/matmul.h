/* The matmul family on the host (ops/tpu_ops_matmul.h has the call layout): every op is one
 * batched GEMM run by tpu_kernel_gemm.
 *
 * fp32 uses an unpacked AVX2 kernel for x @ W^T with few rows where the CPU has AVX2 (AVX-512
 * CPUs too: packing W costs more than the multiply at so few rows), a packed AVX-512 kernel for
 * the rest where the CPU has AVX-512 (all but tiny GEMMs and very large B); fp32
 * otherwise, fp64 and complex go through a BLAS loaded at run time (OpenBLAS, single-threaded: the work is split over the driver's own pool); bf16 uses an AVX512-BF16 packed
 * kernel where the CPU has one; fp16, and bf16 elsewhere, are widened to fp32. Without a BLAS a
 * built-in blocked kernel computes the same results. float32 never takes a bf16 pass: it would
 * trade accuracy for at most the doubled multiply-adds per instruction of vdpbf16ps over fp32
 * FMA. */
#ifndef TPU_HOST_KERNELS_MATMUL_H
#define TPU_HOST_KERNELS_MATMUL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/tpu_status.h"
#include "ops/tpu_op.h"

/* The BLAS entry points the kernels use: CBLAS signatures with 32-bit integers (LP64). */
typedef void (*tpu_cblas_sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha,
                                   const float *a, int lda, const float *b, int ldb, float beta,
                                   float *c, int ldc);
typedef void (*tpu_cblas_dgemm_fn)(int order, int ta, int tb, int m, int n, int k, double alpha,
                                   const double *a, int lda, const double *b, int ldb, double beta,
                                   double *c, int ldc);
/* cgemm and zgemm: alpha and beta by pointer, as CBLAS passes complex scalars. */
typedef void (*tpu_cblas_xgemm_fn)(int order, int ta, int tb, int m, int n, int k,
                                   const void *alpha, const void *a, int lda, const void *b,
                                   int ldb, const void *beta, void *c, int ldc);

typedef struct tpu_blas {
  tpu_cblas_sgemm_fn sgemm;
  tpu_cblas_dgemm_fn dgemm;
  tpu_cblas_xgemm_fn cgemm; /* NULL: complex64 runs on the built-in kernel */
  tpu_cblas_xgemm_fn zgemm; /* NULL: complex128 runs on the built-in kernel */
  const char *name;         /* e.g. OpenBLAS's configuration string */
} tpu_blas;

/* CBLAS constants. */
enum { TPU_CBLAS_ROW_MAJOR = 101, TPU_CBLAS_NO_TRANS = 111, TPU_CBLAS_TRANS = 112 };

/* Remembers the path of a CBLAS shared library (OpenBLAS's scipy_openblas32 build, or any library
 * exporting cblas_sgemm); it is opened on the first GEMM, not now (nothing heavy at import).
 * NULL forgets it. */
void tpu_matmul_set_blas_path(const char *path);

/* Uses `blas` (copied; NULL for the built-in kernels) from now on instead of the library: for
 * tests, and the one place that decides what the kernels call. */
void tpu_matmul_set_blas(const tpu_blas *blas);

/* The BLAS in use, opening the library on first call; NULL when there is none. */
const tpu_blas *tpu_matmul_blas(void);

/* Work run on each block of a GEMM's output right after the block is written, on the thread that
 * wrote it and while it is still in cache: rows [m0, m1) and columns [n0, n1) of output batch bo.
 * `chunk` (below tpu_pool_threads()) names the pool chunk running it, for per-thread scratch. */
typedef struct tpu_gemm_epilogue {
  void (*fn)(void *ctx, int64_t bo, int64_t m0, int64_t m1, int64_t n0, int64_t n1, int chunk);
  void *ctx;
} tpu_gemm_epilogue;

/* tpu_kernel_gemm, with `epilogue` (NULL: none) run once on every block of the output after the
 * block is final. Blocks never overlap and together cover the output. */
tpu_status tpu_kernel_gemm_then(const tpu_op_call *call, const tpu_gemm_epilogue *epilogue);

/* True when the bf16 kernel uses the CPU's AVX512-BF16 instructions. */
bool tpu_matmul_has_bf16_kernel(void);

/* True when float32 GEMMs (all but small ones and those with a very large B) run the packed
 * AVX-512 kernel (matmul_f32.c) rather than the BLAS. */
bool tpu_matmul_has_f32_kernel(void);

/* True when float32 x @ W^T with at most 16 rows (and K up to 4096) runs the unpacked AVX2 kernel
 * (matmul_small_f32.c) rather than the BLAS or the AVX-512 kernel. */
bool tpu_matmul_has_small_f32_kernel(void);

/* Sends float32 GEMMs to the BLAS even where AVX-512 exists: for tests and comparisons. */
void tpu_matmul_disable_f32_kernel(bool disable);

/* Sends those few-row float32 GEMMs to the BLAS (or the AVX-512 kernel) even where AVX2 exists:
 * for tests and comparisons. */
void tpu_matmul_disable_small_f32_kernel(bool disable);

/* True when int_mm runs the AVX512-VNNI kernel (matmul_int8.c) rather than the portable loop. */
bool tpu_matmul_has_int8_kernel(void);

/* Forces int_mm's portable loop even where AVX512-VNNI exists: for tests and comparisons. */
void tpu_matmul_disable_int8_kernel(bool disable);

/* Forces the portable bf16 path (widening to fp32) even where AVX512-BF16 exists: for tests. */
void tpu_matmul_disable_bf16_kernel(bool disable);

#endif
