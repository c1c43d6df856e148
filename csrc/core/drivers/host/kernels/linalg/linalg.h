/* LAPACK for the linalg kernels (ops/tpu_ops_linalg.h): the LAPACKE and CBLAS entry points of the
 * library the matmul kernels opened (kernels/matmul/matmul_blas.c; scipy-openblas32's, with 32-bit
 * integers and a scipy_ prefix), found at run time so that building needs no LAPACK headers. */
#ifndef TPU_HOST_KERNELS_LINALG_H
#define TPU_HOST_KERNELS_LINALG_H

#include "drivers/host/kernels/matmul/matmul.h"

/* LAPACKE's and CBLAS's constants for column-major matrices (matmul.h has the transposes). */
enum {
  TPU_LAPACK_COL_MAJOR = 102,
  TPU_CBLAS_UPPER = 121,
  TPU_CBLAS_LOWER = 122,
  TPU_CBLAS_NON_UNIT = 131,
  TPU_CBLAS_UNIT = 132,
  TPU_CBLAS_LEFT = 141,
  TPU_CBLAS_RIGHT = 142,
};

/* The routines the kernels call, in float32 (s) and float64 (d): LAPACKE's _work functions (no
 * NaN scan of the input, no allocation) and CBLAS's trsm. */
typedef struct tpu_lapack {
  int (*spotrf)(int layout, char uplo, int n, float *a, int lda);
  int (*dpotrf)(int layout, char uplo, int n, double *a, int lda);
  int (*sgetrf)(int layout, int m, int n, float *a, int lda, int *ipiv);
  int (*dgetrf)(int layout, int m, int n, double *a, int lda, int *ipiv);
  int (*sgetrs)(int layout, char trans, int n, int nrhs, const float *a, int lda, const int *ipiv,
                float *b, int ldb);
  int (*dgetrs)(int layout, char trans, int n, int nrhs, const double *a, int lda,
                const int *ipiv, double *b, int ldb);
  int (*ssyevd)(int layout, char jobz, char uplo, int n, float *a, int lda, float *w, float *work,
                int lwork, int *iwork, int liwork);
  int (*dsyevd)(int layout, char jobz, char uplo, int n, double *a, int lda, double *w,
                double *work, int lwork, int *iwork, int liwork);
  void (*strsm)(int order, int side, int uplo, int trans, int diag, int m, int n, float alpha,
                const float *a, int lda, float *b, int ldb);
  void (*dtrsm)(int order, int side, int uplo, int trans, int diag, int m, int n, double alpha,
                const double *a, int lda, double *b, int ldb);
} tpu_lapack;

/* The routines of the BLAS library in use, or NULL (with tpu_error's message) when there is none
 * or it lacks LAPACK. */
const tpu_lapack *tpu_lapack_get(void);

#endif
