/* The BLAS behind the matmul kernels, opened at run time: the Python package hands over the path
 * of scipy-openblas32's library at import, so building needs no BLAS headers, and a missing or
 * broken library only means the built-in kernels run. OpenBLAS is set to one thread: the core's
 * pool splits GEMMs itself, and OpenBLAS's own threads would spin against the pool's. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/kernels/matmul/matmul.h"

static pthread_mutex_t blas_mu = PTHREAD_MUTEX_INITIALIZER;
static char *blas_path;     /* set by tpu_matmul_set_blas_path, opened on first use */
static bool blas_tried;     /* the library at blas_path was opened (or failed to) */
static bool blas_overridden; /* tpu_matmul_set_blas decides */
static bool blas_ok;
static tpu_blas blas;
static char blas_name[256];

/* A symbol under scipy-openblas's prefix, or plain. */
static void *find(void *lib, const char *name) {
  char prefixed[64];
  snprintf(prefixed, sizeof prefixed, "scipy_%s", name);
  void *sym = dlsym(lib, prefixed);
  return sym ? sym : dlsym(lib, name);
}

static void open_library(void) {
  blas_tried = true;
  /* RTLD_LOCAL: the library's symbols must not interpose on another BLAS in the process. */
  void *lib = dlopen(blas_path, RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return;
  tpu_blas found = {
      .sgemm = (tpu_cblas_sgemm_fn)find(lib, "cblas_sgemm"),
      .dgemm = (tpu_cblas_dgemm_fn)find(lib, "cblas_dgemm"),
      .cgemm = (tpu_cblas_xgemm_fn)find(lib, "cblas_cgemm"),
      .zgemm = (tpu_cblas_xgemm_fn)find(lib, "cblas_zgemm"),
  };
  if (!found.sgemm || !found.dgemm) {
    dlclose(lib);
    return;
  }
  void (*set_threads)(int) = (void (*)(int))find(lib, "openblas_set_num_threads");
  if (set_threads)
    set_threads(1);
  char *(*config)(void) = (char *(*)(void))find(lib, "openblas_get_config");
  snprintf(blas_name, sizeof blas_name, "%s", config ? config() : blas_path);
  found.name = blas_name;
  blas = found;
  blas_ok = true;
}

void tpu_matmul_set_blas_path(const char *path) {
  pthread_mutex_lock(&blas_mu);
  free(blas_path);
  blas_path = path ? strdup(path) : NULL;
  pthread_mutex_unlock(&blas_mu);
}

void tpu_matmul_set_blas(const tpu_blas *override) {
  pthread_mutex_lock(&blas_mu);
  blas_overridden = true;
  blas_ok = override != NULL;
  if (override)
    blas = *override;
  pthread_mutex_unlock(&blas_mu);
}

const tpu_blas *tpu_matmul_blas(void) {
  pthread_mutex_lock(&blas_mu);
  if (!blas_overridden && !blas_tried && blas_path)
    open_library();
  const tpu_blas *result = blas_ok ? &blas : NULL;
  pthread_mutex_unlock(&blas_mu);
  return result;
}
