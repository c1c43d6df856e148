/* The layer and RMS normalization kernels (contract in ops/tpu_ops_norm.h). Rows split over the
 * pool. The backward's weight gradients are summed per chunk of rows into double partial sums
 * that are added in chunk order, so they depend only on the thread count. */
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/kernels/kernels.h"
#include "drivers/host/kernels/norm/norm.h"
#include "drivers/host/engine/engine_iter.h"
#include "drivers/host/engine/engine_pool.h"

/* Where a row tensor's (or a per-row statistic's) elements are: resolved once per job, as the row
 * loops of short rows would otherwise spend as long finding each row as computing it. */
typedef struct row_view {
  char *base;
  int64_t row, col; /* bytes between rows and between elements */
} row_view;

typedef struct norm_job {
  const tpu_op_call *call;
  bool rms, backward;
  rk_class cls;
  int64_t m, n, chunks;
  const tpu_tensor *x, *dy, *w, *b, *y, *mean, *rstd, *dx, *dw, *db;
  row_view vx, vdy, vy, vdx, vmean, vrstd;
  double *partial; /* backward: [chunk][dW | dB][n] */
  atomic_bool out_of_memory;
} norm_job;

static int64_t col_step(const tpu_tensor *t) {
  return t->strides[t->ndim - 1] * (int64_t)tpu_dtype_size(t->dtype);
}

static row_view view_of(const tpu_tensor *t) {
  row_view v = {0};
  if (!t || tpu_tensor_numel(t) == 0)
    return v;
  v.base = tpu_tensor_data(t);
  v.row = t->strides[0] * (int64_t)tpu_dtype_size(t->dtype);
  v.col = col_step(t);
  return v;
}

static char *row_at(const row_view *v, int64_t r) { return v->base + r * v->row; }

static bool present(const tpu_tensor *t) { return tpu_tensor_numel(t) > 0; }

/* One statistic of row r as double. */
static double stat_at(const tpu_tensor *t, const row_view *view, int64_t r) {
  double v;
  rk_loader(t->dtype, RK_D, false)(&v, row_at(view, r), 1, 0);
  return v;
}

/* The weight or bias as a row of the job's class in buf, or NULL when absent. */
static const void *param(const norm_job *j, const tpu_tensor *t, void *buf) {
  return present(t) ? nk_load(j->cls, t->dtype, tpu_tensor_data(t), j->n, col_step(t), buf) : NULL;
}

/* The mean and (biased) variance of a row of n class values by Welford's update in double: the
 * slow path for rows whose fast sums or squares overflowed (values near the dtype's largest),
 * where the variance itself may exceed float's range; for float64 rows it keeps the mean of
 * values near DBL_MAX finite, as CUDA's Welford does. */
static void welford(rk_class c, const void *x, int64_t n, double *mean, double *var) {
  double m = 0, m2 = 0;
  for (int64_t i = 0; i < n; i++) {
    double v = c == RK_F ? (double)((const float *)x)[i] : ((const double *)x)[i];
    double delta = v - m;
    m += delta / (double)(i + 1);
    m2 += delta * (v - m);
  }
  *mean = m;
  *var = m2 / (double)n;
}

/* y = (x - mean) * rstd * w + b in double, each product formed before anything is added: the
 * slow path, where the fast form's x * rstd - mean * rstd overflows or cancels, or a product
 * with w overflows the class although y does not (and rstd may be below float's normal range). */
static void affine_exact(rk_class c, void *yv, const void *xv, int64_t n, double mean,
                         double rstd, const void *wv, const void *bv) {
  for (int64_t i = 0; i < n; i++) {
    double xi = c == RK_F ? (double)((const float *)xv)[i] : ((const double *)xv)[i];
    double wi = !wv ? 1.0 : c == RK_F ? (double)((const float *)wv)[i] : ((const double *)wv)[i];
    double bi = !bv ? 0.0 : c == RK_F ? (double)((const float *)bv)[i] : ((const double *)bv)[i];
    double v = (xi - mean) * rstd * wi + bi;
    if (c == RK_F)
      ((float *)yv)[i] = fabs(v) <= FLT_MAX ? (float)v : v > 0 ? INFINITY : v < 0 ? -INFINITY : NAN;
    else
      ((double *)yv)[i] = v;
  }
}

/* Whether every one of n class values is finite. */
static bool all_finite(rk_class c, const void *y, int64_t n) {
  bool ok = true;
  for (int64_t i = 0; i < n; i++)
    ok &= c == RK_F ? isfinite(((const float *)y)[i]) != 0 : isfinite(((const double *)y)[i]) != 0;
  return ok;
}

static void forward_rows(const norm_job *j, int64_t r0, int64_t r1, char *ws) {
  const int64_t n = j->n, rb = n * 8;
  const rk_class c = j->cls;
  if (n == 0) {
    /* Rows of no element: nothing to read or write but the statistics of an empty row, as
     * PyTorch's kernels compute them: mean 0, variance (and mean square) 0 / 0, so rstd NaN. */
    for (int64_t r = r0; r < r1; r++) {
      if (!j->rms)
        rk_store(j->mean->dtype, row_at(&j->vmean, r), false, 0, 0);
      rk_store(j->rstd->dtype, row_at(&j->vrstd, r), false, 0, NAN);
    }
    return;
  }
  const void *w = param(j, j->w, ws), *b = j->rms ? NULL : param(j, j->b, ws + rb);
  const bool y_dense = nk_dense(c, j->y->dtype, j->vy.col);
  for (int64_t r = r0; r < r1; r++) {
    const void *x = nk_load(c, j->x->dtype, row_at(&j->vx, r), n, j->vx.col, ws + 2 * rb);
    char *out = row_at(&j->vy, r);
    void *y = y_dense ? (void *)out : ws + 3 * rb;
    double rstd, mean = 0;
    if (j->rms) {
      double ms = nk_dot(c, x, x, n) / (double)n;
      rstd = c == RK_F ? (double)(1.0f / sqrtf((float)ms + (float)j->call->scalars[0].f))
                       : 1.0 / sqrt(ms + j->call->scalars[0].f);
      nk_affine(c, y, x, n, rstd, 0, w, NULL);
    } else {
      mean = nk_sum(c, x, n) / (double)n;
      if (c == RK_F)
        mean = (float)mean;
      double var = nk_sq_dev(c, x, n, mean) / (double)n;
      bool slow = !isfinite(mean) || !isfinite(var);
      if (slow)
        welford(c, x, n, &mean, &var);
      var = var > 0 ? var : var == var ? 0 : var;
      rstd = c == RK_F && !slow
                 ? (double)(1.0f / sqrtf((float)var + (float)j->call->scalars[0].f))
                 : 1.0 / sqrt(var + j->call->scalars[0].f);
      const double exact_mean = mean, exact_rstd = rstd;
      if (c == RK_F)
        mean = (float)mean, rstd = (float)rstd;
      /* x * rstd - mean * rstd overflows when the mean is huge next to the spread. */
      slow = slow || !(fabs(mean) * rstd < (c == RK_F ? 0x1p120 : 0x1p1000));
      double bias = c == RK_F ? (double)(-(float)rstd * (float)mean) : -rstd * mean;
      if (!slow) {
        nk_affine(c, y, x, n, rstd, bias, w, b);
        /* A product with a huge weight may overflow where y does not: redo such rows. */
        slow = (w || b) && !all_finite(c, y, n);
      }
      if (slow)
        affine_exact(c, y, x, n, exact_mean, exact_rstd, w, b);
      rk_store(j->mean->dtype, row_at(&j->vmean, r), false, 0, mean);
    }
    rk_store(j->rstd->dtype, row_at(&j->vrstd, r), false, 0, rstd);
    nk_store(c, j->y->dtype, out, y, n, j->vy.col);
  }
}

/* The backward of rows [r0, r1): dX rows, and this chunk's dW and dB sums in part[0..2n). */
static void backward_rows(const norm_job *j, int64_t r0, int64_t r1, char *ws, double *part) {
  const int64_t n = j->n, rb = n * 8;
  const rk_class c = j->cls;
  const void *w = param(j, j->w, ws);
  void *g = ws + rb, *xhat = ws + 2 * rb, *gx = ws + 3 * rb;
  char *dybuf = ws + 4 * rb, *xbuf = ws + 5 * rb;
  const bool want_dx = present(j->dx), dx_dense = want_dx && nk_dense(c, j->dx->dtype, j->vdx.col);
  const bool want_grads = present(j->dw) || (!j->rms && present(j->db));
  for (int64_t r = r0; r < r1; r++) {
    const void *dy = nk_load(c, j->dy->dtype, row_at(&j->vdy, r), n, j->vdy.col, dybuf);
    const void *x = nk_load(c, j->x->dtype, row_at(&j->vx, r), n, j->vx.col, xbuf);
    double rstd = stat_at(j->rstd, &j->vrstd, r),
           mean = j->rms ? 0 : stat_at(j->mean, &j->vmean, r);
    /* xhat = (x - mean) * rstd, g = dY * W: the affine loop with a = 1 or rstd. */
    nk_affine(c, xhat, x, n, rstd, -mean * rstd, NULL, NULL);
    nk_affine(c, g, dy, n, 1, 0, w, NULL);
    if (want_dx) {
      double s_gx = nk_dot(c, g, xhat, n);
      char *out = row_at(&j->vdx, r);
      void *dx = dx_dense ? (void *)out : gx;
      if (j->rms) {
        /* dX = (g - xhat * s / N) * rstd = (xhat * (-s / N) + 0) * rstd + g * rstd. */
        nk_affine(c, dx, xhat, n, -s_gx / (double)n, 0, NULL, g);
        nk_scale(c, dx, n, rstd);
      } else {
        double s_g = nk_sum(c, g, n);
        /* dX = rstd * (g - s_g / N - xhat * s_gx / N). */
        nk_affine(c, dx, xhat, n, -s_gx / (double)n, -s_g / (double)n, NULL, g);
        nk_scale(c, dx, n, rstd);
      }
      nk_store(c, j->dx->dtype, out, dx, n, j->vdx.col);
    }
    if (want_grads)
      nk_accum_grads(c, part, part + n, dy, xhat, n);
  }
}

static void chunk(int64_t begin, int64_t end, int index, void *arg) {
  (void)index;
  norm_job *j = arg;
  char *ws = malloc((size_t)j->n * 8 * 6 + 64);
  if (!ws) {
    atomic_store(&j->out_of_memory, true);
    return;
  }
  for (int64_t c = begin; c < end; c++) {
    int64_t r0 = j->m * c / j->chunks, r1 = j->m * (c + 1) / j->chunks;
    if (j->backward)
      backward_rows(j, r0, r1, ws, j->partial + c * 2 * j->n);
    else
      forward_rows(j, r0, r1, ws);
  }
  free(ws);
}

static bool floating(const tpu_tensor *t) {
  return !present(t) || tpu_dtype_is_floating(t->dtype);
}

static tpu_status run_norm(const tpu_op_call *call, bool rms, bool backward) {
  norm_job j = {.call = call, .rms = rms, .backward = backward};
  const tpu_tensor *ts = call->tensors;
  if (!backward) {
    j.x = &ts[0], j.w = &ts[1];
    j.b = rms ? NULL : &ts[2];
    j.y = &ts[rms ? 2 : 3];
    j.mean = rms ? NULL : &ts[4];
    j.rstd = &ts[rms ? 3 : 5];
  } else {
    j.dy = &ts[0], j.x = &ts[1];
    j.mean = rms ? NULL : &ts[2];
    j.rstd = &ts[rms ? 2 : 3];
    j.w = &ts[rms ? 3 : 4];
    j.dx = &ts[rms ? 4 : 5];
    j.dw = &ts[rms ? 5 : 6];
    j.db = rms ? NULL : &ts[7];
  }
  if (j.x->ndim != 2)
    return tpu_error(TPU_ERR_VALUE, "norm: the input must be a [M, N] view");
  j.m = j.x->sizes[0];
  j.n = j.x->sizes[1];
  const tpu_tensor *all[] = {j.x, j.dy, j.w, j.b, j.y, j.mean, j.rstd, j.dx, j.dw, j.db};
  for (size_t k = 0; k < sizeof all / sizeof *all; k++)
    if (all[k] && (!floating(all[k]) || all[k]->ndim < 1))
      return tpu_error(TPU_ERR_TYPE, "norm: expected floating tensors");
  j.cls = nk_class(j.x->dtype);
  /* The per-row walk trusts these shapes. */
  const tpu_tensor *rows2[] = {j.dy, j.y, j.dx}, *stats[] = {j.mean, j.rstd},
                   *params[] = {j.w, j.b, j.dw, j.db};
  for (int k = 0; k < 3; k++)
    if (rows2[k] && present(rows2[k]) &&
        (rows2[k]->ndim != 2 || rows2[k]->sizes[0] != j.m || rows2[k]->sizes[1] != j.n))
      return tpu_error(TPU_ERR_VALUE, "norm: row tensors must be [M, N]");
  for (int k = 0; k < 2; k++)
    if (stats[k] && (stats[k]->ndim != 1 || stats[k]->sizes[0] != j.m))
      return tpu_error(TPU_ERR_VALUE, "norm: statistics must be [M]");
  for (int k = 0; k < 4; k++)
    if (params[k] && present(params[k]) && (params[k]->ndim != 1 || params[k]->sizes[0] != j.n))
      return tpu_error(TPU_ERR_VALUE, "norm: weight and bias must be [N]");
  j.vx = view_of(j.x);
  j.vdy = view_of(j.dy);
  j.vy = view_of(j.y);
  j.vdx = view_of(j.dx);
  j.vmean = view_of(j.mean);
  j.vrstd = view_of(j.rstd);
  j.chunks = tpu_parallel_chunks(j.m * (j.n > 0 ? j.n : 1), TPU_ITER_GRAIN);
  if (j.chunks > j.m)
    j.chunks = j.m > 0 ? j.m : 1;
  if (backward) {
    j.partial = calloc((size_t)j.chunks * 2 * (size_t)(j.n > 0 ? j.n : 1), sizeof(double));
    if (!j.partial)
      return tpu_error(TPU_ERR_OUT_OF_MEMORY, "norm backward: cannot allocate partial sums");
  }
  atomic_init(&j.out_of_memory, false);
  if (j.m > 0)
    tpu_parallel_for(j.chunks, 1, chunk, &j);
  if (backward && !atomic_load(&j.out_of_memory)) {
    for (int64_t c = 1; c < j.chunks; c++)
      for (int64_t k = 0; k < 2 * j.n; k++)
        j.partial[k] += j.partial[c * 2 * j.n + k];
    if (present(j.dw))
      rk_storer(j.dw->dtype, RK_D)(tpu_tensor_data(j.dw), j.partial, j.n, col_step(j.dw));
    if (j.db && present(j.db))
      rk_storer(j.db->dtype, RK_D)(tpu_tensor_data(j.db), j.partial + j.n, j.n, col_step(j.db));
  }
  free(j.partial);
  if (atomic_load(&j.out_of_memory))
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "norm: cannot allocate row buffers");
  return TPU_OK;
}

tpu_status tpu_kernel_layer_norm(const tpu_op_call *call) { return run_norm(call, false, false); }

tpu_status tpu_kernel_layer_norm_backward(const tpu_op_call *call) {
  return run_norm(call, false, true);
}

tpu_status tpu_kernel_rms_norm(const tpu_op_call *call) { return run_norm(call, true, false); }

tpu_status tpu_kernel_rms_norm_backward(const tpu_op_call *call) {
  return run_norm(call, true, true);
}
