/* The linalg kernels (contract in ops/tpu_ops_linalg.h): each matrix of the batch is gathered into
 * a column-major scratch copy (whatever the views' strides), LAPACK factors or solves it there
 * (kernels/linalg/linalg.h), and the results are scattered to the outputs' views. */
#include <stdlib.h>
#include <string.h>

#include "drivers/host/kernels/kernels.h"
#include "drivers/host/kernels/linalg/linalg.h"

/* The address of batch element b's first element in t, whose first nb dimensions are the batch. */
static char *batch_base(const tpu_tensor *t, int nb, int64_t b) {
  int64_t offset = 0;
  for (int d = nb - 1; d >= 0; d--) {
    offset += b % t->sizes[d] * t->strides[d];
    b /= t->sizes[d];
  }
  return (char *)tpu_tensor_data(t) + offset * (int64_t)tpu_dtype_size(t->dtype);
}

/* The number of matrices: the product of the first nb sizes of t. */
static int64_t batch_count(const tpu_tensor *t, int nb) {
  int64_t n = 1;
  for (int d = 0; d < nb; d++)
    n *= t->sizes[d];
  return n;
}

/* Copies matrix b of t (its last two dimensions, rows x cols) into buf, column-major with leading
 * dimension ld; store copies it back. */
static void load(const tpu_tensor *t, int64_t b, void *buf, int64_t ld) {
  const int nb = t->ndim - 2;
  const int64_t rows = t->sizes[nb], cols = t->sizes[nb + 1], rs = t->strides[nb],
                cs = t->strides[nb + 1], es = (int64_t)tpu_dtype_size(t->dtype);
  const char *base = batch_base(t, nb, b);
  for (int64_t j = 0; j < cols; j++)
    for (int64_t i = 0; i < rows; i++)
      memcpy((char *)buf + (i + j * ld) * es, base + (i * rs + j * cs) * es, (size_t)es);
}

static void store(const tpu_tensor *t, int64_t b, const void *buf, int64_t ld) {
  const int nb = t->ndim - 2;
  const int64_t rows = t->sizes[nb], cols = t->sizes[nb + 1], rs = t->strides[nb],
                cs = t->strides[nb + 1], es = (int64_t)tpu_dtype_size(t->dtype);
  char *base = batch_base(t, nb, b);
  for (int64_t j = 0; j < cols; j++)
    for (int64_t i = 0; i < rows; i++)
      memcpy(base + (i * rs + j * cs) * es, (const char *)buf + (i + j * ld) * es, (size_t)es);
}

/* Writes the int32 v at batch element b of t (t's dimensions are the batch's, plus `extra`
 * trailing ones, whose element k receives it). */
static void store_i32(const tpu_tensor *t, int extra, int64_t b, int64_t k, int32_t v) {
  char *base = batch_base(t, t->ndim - extra, b);
  if (extra)
    base += k * t->strides[t->ndim - 1] * (int64_t)sizeof v;
  memcpy(base, &v, sizeof v);
}

static int32_t load_i32(const tpu_tensor *t, int extra, int64_t b, int64_t k) {
  const char *base = batch_base(t, t->ndim - extra, b);
  if (extra)
    base += k * t->strides[t->ndim - 1] * (int64_t)sizeof(int32_t);
  int32_t v;
  memcpy(&v, base, sizeof v);
  return v;
}

/* Whether t has the batch of `like` (like's first nb sizes) followed by the sizes in tail. */
static bool has_shape(const tpu_tensor *t, const tpu_tensor *like, int nb, int n_tail,
                      const int64_t *tail) {
  if (t->ndim != nb + n_tail)
    return false;
  for (int d = 0; d < nb; d++)
    if (t->sizes[d] != like->sizes[d])
      return false;
  for (int d = 0; d < n_tail; d++)
    if (t->sizes[nb + d] != tail[d])
      return false;
  return true;
}

/* Checks the dtype of a call's matrices and fetches LAPACK into *lapack. */
static tpu_status check_dtype(const char *op, const tpu_tensor *a, const tpu_lapack **lapack) {
  if (a->dtype != TPU_FLOAT32 && a->dtype != TPU_FLOAT64)
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "%s is not implemented for %s", op,
                     tpu_dtype_name(a->dtype));
  if (a->ndim < 2)
    return tpu_error(TPU_ERR_VALUE, "%s takes matrices (rank >= 2)", op);
  *lapack = tpu_lapack_get();
  return *lapack ? TPU_OK : TPU_ERR_NOT_IMPLEMENTED;
}

/* Scratch for `count` elements of dtype's size (at least one). */
static void *scratch(tpu_dtype dtype, int64_t count) {
  return malloc((size_t)(count > 0 ? count : 1) * tpu_dtype_size(dtype));
}

/* A leading dimension for `rows` rows: LAPACK wants at least 1. */
static int lead(int64_t rows) { return rows > 0 ? (int)rows : 1; }

static tpu_status lapack_failed(const char *op, int info) {
  return tpu_error(TPU_ERR_RUNTIME, "%s: LAPACK rejected argument %d", op, -info);
}

tpu_status tpu_kernel_cholesky(const tpu_op_call *call) {
  const tpu_lapack *lapack = NULL;
  if (call->n_inputs != 1 || call->n_outputs != 2)
    return tpu_error(TPU_ERR_VALUE, "cholesky takes one input and two outputs");
  const tpu_tensor *a = &call->tensors[0], *l = &call->tensors[1], *info = &call->tensors[2];
  tpu_status st = check_dtype("cholesky", a, &lapack);
  if (st != TPU_OK)
    return st;
  const int nb = a->ndim - 2;
  const int64_t n = a->sizes[nb], square[2] = {n, n};
  if (a->sizes[nb + 1] != n || !has_shape(l, a, nb, 2, square) || l->dtype != a->dtype ||
      !has_shape(info, a, nb, 0, NULL) || info->dtype != TPU_INT32)
    return tpu_error(TPU_ERR_VALUE, "cholesky: bad shapes or dtypes");
  const bool upper = call->scalars[0].i != 0, is64 = a->dtype == TPU_FLOAT64;
  const int64_t es = (int64_t)tpu_dtype_size(a->dtype), batches = batch_count(a, nb);
  char *buf = scratch(a->dtype, n * n);
  if (!buf)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cholesky: out of host memory");
  for (int64_t b = 0; b < batches && st == TPU_OK; b++) {
    load(a, b, buf, n);
    const char uplo = upper ? 'U' : 'L';
    int r = n == 0 ? 0
            : is64 ? lapack->dpotrf(TPU_LAPACK_COL_MAJOR, uplo, (int)n, (double *)buf, (int)n)
                   : lapack->spotrf(TPU_LAPACK_COL_MAJOR, uplo, (int)n, (float *)buf, (int)n);
    if (r < 0) {
      st = lapack_failed("cholesky", r);
      break;
    }
    /* The other triangle still holds A's: the factor has zeros there. */
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n; i++)
        if (upper ? i > j : i < j)
          memset(buf + (i + j * n) * es, 0, (size_t)es);
    store(l, b, buf, n);
    store_i32(info, 0, b, 0, r);
  }
  free(buf);
  return st;
}

tpu_status tpu_kernel_triangular_solve(const tpu_op_call *call) {
  const tpu_lapack *lapack = NULL;
  if (call->n_inputs != 2 || call->n_outputs != 1)
    return tpu_error(TPU_ERR_VALUE, "triangular_solve takes two inputs and one output");
  const tpu_tensor *a = &call->tensors[0], *rhs = &call->tensors[1], *x = &call->tensors[2];
  tpu_status st = check_dtype("triangular_solve", a, &lapack);
  if (st != TPU_OK)
    return st;
  const int nb = a->ndim - 2;
  const bool upper = call->scalars[0].i != 0, left = call->scalars[1].i != 0,
             unit = call->scalars[2].i != 0, is64 = a->dtype == TPU_FLOAT64;
  const int64_t n = a->sizes[nb], square[2] = {n, n};
  if (rhs->ndim != a->ndim || a->sizes[nb + 1] != n || rhs->sizes[left ? nb : nb + 1] != n)
    return tpu_error(TPU_ERR_VALUE, "triangular_solve: bad shapes");
  const int64_t rows = rhs->sizes[nb], cols = rhs->sizes[nb + 1], rhs_shape[2] = {rows, cols};
  if (!has_shape(a, rhs, nb, 2, square) || !has_shape(x, a, nb, 2, rhs_shape) ||
      rhs->dtype != a->dtype || x->dtype != a->dtype)
    return tpu_error(TPU_ERR_VALUE, "triangular_solve: bad shapes or dtypes");
  const int64_t batches = batch_count(a, nb);
  if (rows == 0 || cols == 0 || batches == 0)
    return TPU_OK;
  char *abuf = scratch(a->dtype, n * n), *xbuf = scratch(a->dtype, rows * cols);
  if (!abuf || !xbuf) {
    free(abuf);
    free(xbuf);
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "triangular_solve: out of host memory");
  }
  const int side = left ? TPU_CBLAS_LEFT : TPU_CBLAS_RIGHT,
            uplo = upper ? TPU_CBLAS_UPPER : TPU_CBLAS_LOWER,
            diag = unit ? TPU_CBLAS_UNIT : TPU_CBLAS_NON_UNIT;
  for (int64_t b = 0; b < batches; b++) {
    load(a, b, abuf, n);
    load(rhs, b, xbuf, rows);
    if (is64)
      lapack->dtrsm(TPU_LAPACK_COL_MAJOR, side, uplo, TPU_CBLAS_NO_TRANS, diag, (int)rows,
                    (int)cols, 1.0, (const double *)abuf, (int)n, (double *)xbuf, (int)rows);
    else
      lapack->strsm(TPU_LAPACK_COL_MAJOR, side, uplo, TPU_CBLAS_NO_TRANS, diag, (int)rows,
                    (int)cols, 1.0f, (const float *)abuf, (int)n, (float *)xbuf, (int)rows);
    store(x, b, xbuf, rows);
  }
  free(abuf);
  free(xbuf);
  return TPU_OK;
}

tpu_status tpu_kernel_lu_factor(const tpu_op_call *call) {
  const tpu_lapack *lapack = NULL;
  if (call->n_inputs != 1 || call->n_outputs != 3)
    return tpu_error(TPU_ERR_VALUE, "lu_factor takes one input and three outputs");
  const tpu_tensor *a = &call->tensors[0], *lu = &call->tensors[1], *piv = &call->tensors[2],
                   *info = &call->tensors[3];
  tpu_status st = check_dtype("lu_factor", a, &lapack);
  if (st != TPU_OK)
    return st;
  const int nb = a->ndim - 2;
  const int64_t m = a->sizes[nb], n = a->sizes[nb + 1], k = m < n ? m : n, shape[2] = {m, n};
  if (!has_shape(lu, a, nb, 2, shape) || lu->dtype != a->dtype || !has_shape(piv, a, nb, 1, &k) ||
      piv->dtype != TPU_INT32 || !has_shape(info, a, nb, 0, NULL) || info->dtype != TPU_INT32)
    return tpu_error(TPU_ERR_VALUE, "lu_factor: bad shapes or dtypes");
  const bool is64 = a->dtype == TPU_FLOAT64;
  const int64_t batches = batch_count(a, nb);
  char *buf = scratch(a->dtype, m * n);
  int *ipiv = malloc((size_t)(k > 0 ? k : 1) * sizeof *ipiv);
  if (!buf || !ipiv) {
    free(buf);
    free(ipiv);
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "lu_factor: out of host memory");
  }
  for (int64_t b = 0; b < batches; b++) {
    load(a, b, buf, lead(m));
    int r = k == 0 ? 0
            : is64 ? lapack->dgetrf(TPU_LAPACK_COL_MAJOR, (int)m, (int)n, (double *)buf, lead(m),
                                    ipiv)
                   : lapack->sgetrf(TPU_LAPACK_COL_MAJOR, (int)m, (int)n, (float *)buf, lead(m),
                                    ipiv);
    if (r < 0) {
      st = lapack_failed("lu_factor", r);
      break;
    }
    store(lu, b, buf, lead(m));
    for (int64_t i = 0; i < k; i++)
      store_i32(piv, 1, b, i, ipiv[i]);
    store_i32(info, 0, b, 0, r);
  }
  free(buf);
  free(ipiv);
  return st;
}

tpu_status tpu_kernel_lu_solve(const tpu_op_call *call) {
  const tpu_lapack *lapack = NULL;
  if (call->n_inputs != 3 || call->n_outputs != 1)
    return tpu_error(TPU_ERR_VALUE, "lu_solve takes three inputs and one output");
  const tpu_tensor *lu = &call->tensors[0], *piv = &call->tensors[1], *rhs = &call->tensors[2],
                   *x = &call->tensors[3];
  tpu_status st = check_dtype("lu_solve", lu, &lapack);
  if (st != TPU_OK)
    return st;
  const int nb = lu->ndim - 2;
  const int64_t n = lu->sizes[nb], square[2] = {n, n};
  if (rhs->ndim != lu->ndim || !has_shape(lu, rhs, nb, 2, square) || rhs->sizes[nb] != n ||
      !has_shape(piv, lu, nb, 1, &n) || piv->dtype != TPU_INT32 || rhs->dtype != lu->dtype ||
      !has_shape(x, rhs, nb, 2, &rhs->sizes[nb]) || x->dtype != lu->dtype)
    return tpu_error(TPU_ERR_VALUE, "lu_solve: bad shapes or dtypes");
  const int64_t k = rhs->sizes[nb + 1], batches = batch_count(lu, nb);
  if (n == 0 || k == 0 || batches == 0)
    return TPU_OK;
  const bool is64 = lu->dtype == TPU_FLOAT64;
  const char trans = call->scalars[0].i ? 'T' : 'N';
  char *abuf = scratch(lu->dtype, n * n), *xbuf = scratch(lu->dtype, n * k);
  int *ipiv = malloc((size_t)n * sizeof *ipiv);
  if (!abuf || !xbuf || !ipiv)
    st = tpu_error(TPU_ERR_OUT_OF_MEMORY, "lu_solve: out of host memory");
  for (int64_t b = 0; b < batches && st == TPU_OK; b++) {
    for (int64_t i = 0; i < n && st == TPU_OK; i++) {
      ipiv[i] = load_i32(piv, 1, b, i);
      /* getrs would read and write out of bounds. */
      if (ipiv[i] < 1 || ipiv[i] > n)
        st = tpu_error(TPU_ERR_INDEX, "lu_solve: a pivot is out of range [1, n]");
    }
    if (st != TPU_OK)
      break;
    load(lu, b, abuf, n);
    load(rhs, b, xbuf, n);
    int r = is64 ? lapack->dgetrs(TPU_LAPACK_COL_MAJOR, trans, (int)n, (int)k,
                                  (const double *)abuf, (int)n, ipiv, (double *)xbuf, (int)n)
                 : lapack->sgetrs(TPU_LAPACK_COL_MAJOR, trans, (int)n, (int)k,
                                  (const float *)abuf, (int)n, ipiv, (float *)xbuf, (int)n);
    if (r < 0)
      st = lapack_failed("lu_solve", r);
    else
      store(x, b, xbuf, n);
  }
  free(abuf);
  free(xbuf);
  free(ipiv);
  return st;
}

/* syevd's workspace sizes for order n, from its query. */
static int eigh_workspace(const tpu_lapack *lapack, bool is64, char uplo, int n, int *lwork,
                          int *liwork) {
  double dwork = 0;
  float swork = 0;
  int r = is64 ? lapack->dsyevd(TPU_LAPACK_COL_MAJOR, 'V', uplo, n, NULL, n, NULL, &dwork, -1,
                                liwork, -1)
               : lapack->ssyevd(TPU_LAPACK_COL_MAJOR, 'V', uplo, n, NULL, n, NULL, &swork, -1,
                                liwork, -1);
  *lwork = (int)(is64 ? dwork : (double)swork) + 1;
  return r;
}

tpu_status tpu_kernel_eigh(const tpu_op_call *call) {
  const tpu_lapack *lapack = NULL;
  if (call->n_inputs != 1 || call->n_outputs != 3)
    return tpu_error(TPU_ERR_VALUE, "eigh takes one input and three outputs");
  const tpu_tensor *a = &call->tensors[0], *w = &call->tensors[1], *v = &call->tensors[2],
                   *info = &call->tensors[3];
  tpu_status st = check_dtype("eigh", a, &lapack);
  if (st != TPU_OK)
    return st;
  const int nb = a->ndim - 2;
  const int64_t n = a->sizes[nb], square[2] = {n, n};
  if (a->sizes[nb + 1] != n || !has_shape(w, a, nb, 1, &n) || w->dtype != a->dtype ||
      !has_shape(v, a, nb, 2, square) || v->dtype != a->dtype ||
      !has_shape(info, a, nb, 0, NULL) || info->dtype != TPU_INT32)
    return tpu_error(TPU_ERR_VALUE, "eigh: bad shapes or dtypes");
  const int64_t batches = batch_count(a, nb), es = (int64_t)tpu_dtype_size(a->dtype);
  if (n == 0 || batches == 0) {
    for (int64_t b = 0; b < batches; b++)
      store_i32(info, 0, b, 0, 0);
    return TPU_OK;
  }
  const bool is64 = a->dtype == TPU_FLOAT64;
  const char uplo = call->scalars[0].i ? 'U' : 'L';
  int lwork = 0, liwork = 0;
  int r = eigh_workspace(lapack, is64, uplo, (int)n, &lwork, &liwork);
  if (r < 0)
    return lapack_failed("eigh", r);
  char *buf = scratch(a->dtype, n * n), *values = scratch(a->dtype, n),
       *work = scratch(a->dtype, lwork);
  int *iwork = malloc((size_t)(liwork > 0 ? liwork : 1) * sizeof *iwork);
  if (!buf || !values || !work || !iwork)
    st = tpu_error(TPU_ERR_OUT_OF_MEMORY, "eigh: out of host memory");
  for (int64_t b = 0; b < batches && st == TPU_OK; b++) {
    load(a, b, buf, n);
    r = is64 ? lapack->dsyevd(TPU_LAPACK_COL_MAJOR, 'V', uplo, (int)n, (double *)buf, (int)n,
                              (double *)values, (double *)work, lwork, iwork, liwork)
             : lapack->ssyevd(TPU_LAPACK_COL_MAJOR, 'V', uplo, (int)n, (float *)buf, (int)n,
                              (float *)values, (float *)work, lwork, iwork, liwork);
    if (r < 0) {
      st = lapack_failed("eigh", r);
      break;
    }
    store(v, b, buf, n);
    char *wb = batch_base(w, nb, b);
    for (int64_t i = 0; i < n; i++)
      memcpy(wb + i * w->strides[nb] * es, values + i * es, (size_t)es);
    store_i32(info, 0, b, 0, r);
  }
  free(buf);
  free(values);
  free(work);
  free(iwork);
  return st;
}
