/* Finds LAPACK in the library that holds the matmul kernels' BLAS: OpenBLAS ships both, so the
 * path the Python package handed over for the GEMMs also serves the factorizations, and the
 * library is opened once (dlopen's reference count) whoever asks first. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "base/tpu_status.h"
#include "drivers/host/kernels/linalg/linalg.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static tpu_lapack lapack;
static bool lapack_ok;

/* A symbol under scipy-openblas's prefix, or plain. */
static void *find(void *lib, const char *name) {
  char prefixed[64];
  snprintf(prefixed, sizeof prefixed, "scipy_%s", name);
  void *sym = dlsym(lib, prefixed);
  return sym ? sym : dlsym(lib, name);
}

/* Looks the routines up in the library that defines the BLAS's sgemm (found by its address, so a
 * BLAS a test installed from its own code has no LAPACK, and none is used). */
static void open_lapack(void) {
  const tpu_blas *blas = tpu_matmul_blas();
  Dl_info where;
  if (!blas || !dladdr((void *)blas->sgemm, &where) || !where.dli_fname)
    return;
  void *lib = dlopen(where.dli_fname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!lib)
    return;
  tpu_lapack found = {
      .spotrf = (int (*)(int, char, int, float *, int))find(lib, "LAPACKE_spotrf_work"),
      .dpotrf = (int (*)(int, char, int, double *, int))find(lib, "LAPACKE_dpotrf_work"),
      .sgetrf = (int (*)(int, int, int, float *, int, int *))find(lib, "LAPACKE_sgetrf_work"),
      .dgetrf = (int (*)(int, int, int, double *, int, int *))find(lib, "LAPACKE_dgetrf_work"),
      .sgetrs = (int (*)(int, char, int, int, const float *, int, const int *, float *,
                         int))find(lib, "LAPACKE_sgetrs_work"),
      .dgetrs = (int (*)(int, char, int, int, const double *, int, const int *, double *,
                         int))find(lib, "LAPACKE_dgetrs_work"),
      .ssyevd = (int (*)(int, char, char, int, float *, int, float *, float *, int, int *,
                         int))find(lib, "LAPACKE_ssyevd_work"),
      .dsyevd = (int (*)(int, char, char, int, double *, int, double *, double *, int, int *,
                         int))find(lib, "LAPACKE_dsyevd_work"),
      .strsm = (void (*)(int, int, int, int, int, int, int, float, const float *, int, float *,
                         int))find(lib, "cblas_strsm"),
      .dtrsm = (void (*)(int, int, int, int, int, int, int, double, const double *, int,
                         double *, int))find(lib, "cblas_dtrsm"),
  };
  /* The handle stays open: the routines are used for the life of the process. */
  if (!found.spotrf || !found.dpotrf || !found.sgetrf || !found.dgetrf || !found.sgetrs ||
      !found.dgetrs || !found.ssyevd || !found.dsyevd || !found.strsm || !found.dtrsm)
    return;
  lapack = found;
  lapack_ok = true;
}

const tpu_lapack *tpu_lapack_get(void) {
  pthread_once(&once, open_lapack);
  if (!lapack_ok) {
    tpu_error(TPU_ERR_NOT_IMPLEMENTED, "the linalg ops need LAPACK: the host driver found none "
                                       "(scipy-openblas32's library is handed over at import)");
    return NULL;
  }
  return &lapack;
}
