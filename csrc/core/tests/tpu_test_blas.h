/* A reference sgemm standing in for the BLAS (tpu_matmul_set_blas): it counts its calls and the
 * transposes it was asked for, so tests see how the kernels use the BLAS. The kernels call it from
 * several pool threads at once, so the counters are atomic. Included by one test program each. */
#ifndef TPU_TEST_BLAS_H
#define TPU_TEST_BLAS_H

#include <stdatomic.h>

#include "drivers/host/kernels/matmul/matmul.h"
#include "tpu_test.h"

static atomic_int blas_calls, blas_transposes;

static void fake_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha,
                       const float *a, int lda, const float *b, int ldb, float beta, float *c,
                       int ldc) {
  CHECK(order == TPU_CBLAS_ROW_MAJOR);
  blas_calls++;
  blas_transposes += (ta == TPU_CBLAS_TRANS) + (tb == TPU_CBLAS_TRANS);
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      float s = 0;
      for (int p = 0; p < k; p++)
        s += (ta == TPU_CBLAS_TRANS ? a[p * lda + i] : a[i * lda + p]) *
             (tb == TPU_CBLAS_TRANS ? b[j * ldb + p] : b[p * ldb + j]);
      c[i * ldc + j] = alpha * s + (beta == 0 ? 0 : beta * c[i * ldc + j]);
    }
}

#endif
