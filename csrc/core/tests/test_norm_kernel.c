/* The norm family's kernels against double-precision references: softmax and log_softmax (last
 * and outer dimensions, float32, bfloat16 to float32, float64), their gradients, masked (-inf)
 * and NaN rows; layer_norm and rms_norm forward and backward, with and without affine
 * parameters, over enough rows that the pool splits them, with bit-identical weight gradients on
 * every run; batch_norm forward and backward, channels first and last. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/engine/engine_pool.h"
#include "tpu_test.h"
#include "tpu_test_host.h"

static tpu_status run(tpu_op_id op, const tpu_tensor *t, int n_in, int n_out, tpu_scalar s0) {
  return run_kernel(op, t, n_in, n_out, s0, NO_SCALAR, NO_SCALAR, NO_SCALAR);
}

static double value(int64_t i) {
  double x = sin((double)i * 12.9898) * 43758.5453;
  return (x - floor(x)) * 8 - 4;
}

static int close_to(double got, double want, double tol) {
  return fabs(got - want) <= tol * (1 + fabs(want)) || (isnan(got) && isnan(want));
}

/* softmax (or log_softmax) of a [a, b, c] float32 tensor along dim, and its gradient. */
static void check_softmax(int is_log, int dim) {
  enum { A = 3, B = 5, C = 70, N = A * B * C };
  const int64_t sizes[3] = {A, B, C}, st[3] = {B * C, C, 1};
  float *x = malloc(N * 4), *y = malloc(N * 4), *g = malloc(N * 4), *gi = malloc(N * 4);
  for (int i = 0; i < N; i++)
    x[i] = (float)value(i), g[i] = (float)value(i + N);
  tpu_tensor t[3] = {host_view(x, TPU_FLOAT32, 3, sizes, NULL),
                     host_view(y, TPU_FLOAT32, 3, sizes, NULL)};
  CHECK_OK(run(is_log ? TPU_OP_LOG_SOFTMAX : TPU_OP_SOFTMAX, t, 1, 1, SCALAR_I(dim)));
  tpu_tensor tb[3] = {host_view(g, TPU_FLOAT32, 3, sizes, NULL),
                      host_view(y, TPU_FLOAT32, 3, sizes, NULL),
                      host_view(gi, TPU_FLOAT32, 3, sizes, NULL)};
  CHECK_OK(run(is_log ? TPU_OP_LOG_SOFTMAX_BACKWARD : TPU_OP_SOFTMAX_BACKWARD, tb, 2, 1,
               SCALAR_I(dim)));
  int bad = 0;
  for (int i = 0; i < N; i++) {
    int64_t pos = i / st[dim] % sizes[dim], first = i - pos * st[dim];
    double m = -INFINITY, s = 0, gs = 0, gy = 0;
    for (int64_t k = 0; k < sizes[dim]; k++)
      m = fmax(m, x[first + k * st[dim]]);
    for (int64_t k = 0; k < sizes[dim]; k++)
      s += exp(x[first + k * st[dim]] - m);
    double want = is_log ? x[i] - m - log(s) : exp(x[i] - m) / s;
    bad += !close_to(y[i], want, 1e-6);
    for (int64_t k = 0; k < sizes[dim]; k++) {
      int64_t e = first + k * st[dim];
      gs += g[e];
      gy += g[e] * (double)y[e];
    }
    double gwant = is_log ? g[i] - exp((double)y[i]) * gs : (double)y[i] * (g[i] - gy);
    bad += !close_to(gi[i], gwant, 1e-5);
  }
  CHECK(bad == 0);
  free(x), free(y), free(g), free(gi);
}

static void test_softmax(void) {
  for (int is_log = 0; is_log < 2; is_log++)
    for (int dim = 0; dim < 3; dim++)
      check_softmax(is_log, dim);
}

/* bfloat16 rows computed in float and rounded once to a float32 output (half_to_float); float64
 * rows; masked entries give exact zeros, a row of -inf gives NaN as on PyTorch CPU. */
static void test_softmax_dtypes_and_masks(void) {
  uint16_t xb[8];
  float yf[8], ref[8];
  for (int i = 0; i < 8; i++)
    ref[i] = tpu_bf16_to_f32(xb[i] = tpu_f32_to_bf16((float)value(i)));
  const int64_t eight = 8;
  tpu_tensor t[2] = {host_view(xb, TPU_BFLOAT16, 1, &eight, NULL),
                     host_view(yf, TPU_FLOAT32, 1, &eight, NULL)};
  CHECK_OK(run(TPU_OP_SOFTMAX, t, 1, 1, SCALAR_I(0)));
  double m = -INFINITY, s = 0;
  for (int i = 0; i < 8; i++)
    m = fmax(m, ref[i]);
  for (int i = 0; i < 8; i++)
    s += exp(ref[i] - m);
  for (int i = 0; i < 8; i++)
    CHECK(close_to(yf[i], exp(ref[i] - m) / s, 1e-6));
  double xd[3] = {1, 2, 3}, yd[3];
  const int64_t three = 3;
  tpu_tensor td[2] = {host_view(xd, TPU_FLOAT64, 1, &three, NULL),
                      host_view(yd, TPU_FLOAT64, 1, &three, NULL)};
  CHECK_OK(run(TPU_OP_LOG_SOFTMAX, td, 1, 1, SCALAR_I(0)));
  double lse = log(exp(1.0) + exp(2.0) + exp(3.0));
  CHECK(fabs(yd[0] - (1 - lse)) < 1e-15 && fabs(yd[2] - (3 - lse)) < 1e-15);
  float masked[2][40], out[2][40];
  for (int i = 0; i < 40; i++) {
    masked[0][i] = i % 3 ? -INFINITY : (float)value(i);
    masked[1][i] = -INFINITY;
  }
  const int64_t rows[2] = {2, 40};
  tpu_tensor tm[2] = {host_view(masked, TPU_FLOAT32, 2, rows, NULL),
                      host_view(out, TPU_FLOAT32, 2, rows, NULL)};
  CHECK_OK(run(TPU_OP_SOFTMAX, tm, 1, 1, SCALAR_I(1)));
  int bad = 0;
  for (int i = 0; i < 40; i++)
    bad += (i % 3 ? out[0][i] != 0 : !(out[0][i] > 0)) + !isnan(out[1][i]);
  CHECK(bad == 0);
  int32_t ints[3] = {1, 2, 3};
  tpu_tensor ti[2] = {host_view(ints, TPU_INT32, 1, &three, NULL),
                      host_view(yd, TPU_FLOAT64, 1, &three, NULL)};
  CHECK(run(TPU_OP_SOFTMAX, ti, 1, 1, SCALAR_I(0)) == TPU_ERR_TYPE);
}

enum { M = 300, N = 130 }; /* rows enough for a 3-thread pool to split them */

/* Reference statistics of row r: mean (0 for rms) and rstd. */
static void ref_stats(const float *x, int r, int rms, double eps, double *mean, double *rstd) {
  double s = 0, q = 0;
  for (int k = 0; k < N; k++)
    s += x[r * N + k], q += (double)x[r * N + k] * x[r * N + k];
  *mean = rms ? 0 : s / N;
  double var = rms ? q / N : q / N - *mean * *mean;
  *rstd = 1 / sqrt(var + eps);
}

static void check_norm(int rms, int affine) {
  const double eps = 1e-5;
  float *x = malloc(M * N * 4), *y = malloc(M * N * 4), *dy = malloc(M * N * 4),
        *dx = malloc(M * N * 4), w[N], b[N], dw[N], db[N], dw2[N], mean[M], rstd[M];
  for (int i = 0; i < M * N; i++)
    x[i] = (float)value(i) + (float)(i / N % 7), dy[i] = (float)value(3 * i + 1);
  for (int k = 0; k < N; k++)
    w[k] = (float)value(k + 7), b[k] = (float)value(k + 11);
  const int64_t rows[2] = {M, N}, n = N, m = M, zero = 0;
  tpu_tensor none = host_view(w, TPU_FLOAT32, 1, &zero, NULL);
  tpu_tensor tx = host_view(x, TPU_FLOAT32, 2, rows, NULL), ty = host_view(y, TPU_FLOAT32, 2, rows,
                                                                            NULL);
  tpu_tensor tw = affine ? host_view(w, TPU_FLOAT32, 1, &n, NULL) : none;
  tpu_tensor tb = affine ? host_view(b, TPU_FLOAT32, 1, &n, NULL) : none;
  tpu_tensor tmean = host_view(mean, TPU_FLOAT32, 1, &m, NULL);
  tpu_tensor trstd = host_view(rstd, TPU_FLOAT32, 1, &m, NULL);
  tpu_tensor tdy = host_view(dy, TPU_FLOAT32, 2, rows, NULL), tdx = host_view(dx, TPU_FLOAT32, 2,
                                                                             rows, NULL);
  tpu_tensor tdw = affine ? host_view(dw, TPU_FLOAT32, 1, &n, NULL) : none;
  tpu_tensor tdb = affine ? host_view(db, TPU_FLOAT32, 1, &n, NULL) : none;
  if (rms) {
    tpu_tensor f[4] = {tx, tw, ty, trstd};
    CHECK_OK(run(TPU_OP_RMS_NORM, f, 2, 2, SCALAR_F(eps)));
    tpu_tensor bk[6] = {tdy, tx, trstd, tw, tdx, tdw};
    CHECK_OK(run(TPU_OP_RMS_NORM_BACKWARD, bk, 4, 2, NO_SCALAR));
  } else {
    tpu_tensor f[6] = {tx, tw, tb, ty, tmean, trstd};
    CHECK_OK(run(TPU_OP_LAYER_NORM, f, 3, 3, SCALAR_F(eps)));
    tpu_tensor bk[8] = {tdy, tx, tmean, trstd, tw, tdx, tdw, tdb};
    CHECK_OK(run(TPU_OP_LAYER_NORM_BACKWARD, bk, 5, 3, NO_SCALAR));
  }
  int bad = 0;
  double rdw[N] = {0}, rdb[N] = {0};
  for (int r = 0; r < M; r++) {
    double mu, rs, sg = 0, sgx = 0;
    ref_stats(x, r, rms, eps, &mu, &rs);
    bad += !close_to(rstd[r], rs, 1e-5) + (!rms && !close_to(mean[r], mu, 1e-5));
    for (int k = 0; k < N; k++) {
      double xh = (x[r * N + k] - mu) * rs, wk = affine ? w[k] : 1;
      double want = rms ? xh * wk : xh * wk + (affine ? b[k] : 0);
      bad += !close_to(y[r * N + k], want, 1e-5);
      double g = dy[r * N + k] * wk;
      sg += g, sgx += g * xh;
      rdw[k] += dy[r * N + k] * xh, rdb[k] += dy[r * N + k];
    }
    for (int k = 0; k < N; k++) {
      double xh = (x[r * N + k] - mu) * rs, g = dy[r * N + k] * (affine ? w[k] : 1);
      double want = rms ? (g - xh * sgx / N) * rs : rs * (g - sg / N - xh * sgx / N);
      bad += !close_to(dx[r * N + k], want, 1e-4);
    }
  }
  for (int k = 0; affine && k < N; k++)
    bad += !close_to(dw[k], rdw[k], 1e-5) + (!rms && !close_to(db[k], rdb[k], 1e-5));
  CHECK(bad == 0);
  if (affine) { /* the weight gradient's chunks add in a fixed order: same bits again */
    memcpy(dw2, dw, sizeof dw);
    tpu_tensor bk[8] = {tdy, tx, tmean, trstd, tw, tdx, tdw, tdb};
    tpu_tensor bkr[6] = {tdy, tx, trstd, tw, tdx, tdw};
    CHECK_OK(rms ? run(TPU_OP_RMS_NORM_BACKWARD, bkr, 4, 2, NO_SCALAR)
                 : run(TPU_OP_LAYER_NORM_BACKWARD, bk, 5, 3, NO_SCALAR));
    CHECK(memcmp(dw, dw2, sizeof dw) == 0);
  }
  free(x), free(y), free(dy), free(dx);
}

static void test_layer_and_rms_norm(void) {
  for (int rms = 0; rms < 2; rms++)
    for (int affine = 0; affine < 2; affine++)
      check_norm(rms, affine);
}

/* A bfloat16 input with float32 statistics (the dtype PyTorch's meta gives): the output rounds
 * once from float. */
static void test_layer_norm_bfloat16(void) {
  uint16_t x[4], y[4];
  float xf[4] = {1, 2, 4, 9}, mean, rstd;
  for (int i = 0; i < 4; i++)
    x[i] = tpu_f32_to_bf16(xf[i]);
  const int64_t rows[2] = {1, 4}, one = 1, zero = 0;
  tpu_tensor none = host_view(x, TPU_BFLOAT16, 1, &zero, NULL);
  tpu_tensor t[6] = {host_view(x, TPU_BFLOAT16, 2, rows, NULL), none, none,
                     host_view(y, TPU_BFLOAT16, 2, rows, NULL),
                     host_view(&mean, TPU_FLOAT32, 1, &one, NULL),
                     host_view(&rstd, TPU_FLOAT32, 1, &one, NULL)};
  CHECK_OK(run(TPU_OP_LAYER_NORM, t, 3, 3, SCALAR_F(0)));
  float r = 1.0f / sqrtf(9.5f); /* the biased variance of 1, 2, 4, 9 */
  CHECK(mean == 4 && rstd == r);
  /* PyTorch CPU's order: x * rstd + (-rstd * mean), then one rounding. */
  for (int i = 0; i < 4; i++)
    CHECK(y[i] == tpu_f32_to_bf16(xf[i] * r + -r * 4));
}

/* Rows of no element ([3, 0]): only the statistics are written, mean 0 and rstd NaN. */
static void test_norm_empty_rows(void) {
  float nothing = 0, mean[3] = {7, 7, 7}, rstd[3] = {7, 7, 7};
  const int64_t rows[2] = {3, 0}, m = 3, zero = 0;
  tpu_tensor none = host_view(&nothing, TPU_FLOAT32, 1, &zero, NULL);
  tpu_tensor x = host_view(&nothing, TPU_FLOAT32, 2, rows, NULL);
  tpu_tensor t[6] = {x, none, none, x, host_view(mean, TPU_FLOAT32, 1, &m, NULL),
                     host_view(rstd, TPU_FLOAT32, 1, &m, NULL)};
  CHECK_OK(run(TPU_OP_LAYER_NORM, t, 3, 3, SCALAR_F(1e-5)));
  for (int r = 0; r < 3; r++)
    CHECK(mean[r] == 0 && isnan(rstd[r]));
  tpu_tensor f[4] = {x, none, x, host_view(rstd, TPU_FLOAT32, 1, &m, NULL)};
  rstd[0] = 7;
  CHECK_OK(run(TPU_OP_RMS_NORM, f, 2, 2, SCALAR_F(1e-5)));
  CHECK(isnan(rstd[0]) && nothing == 0);
}

/* BATCH_NORM and its backward on a [N, C, S] tensor stored channels-first or channels-last,
 * against double references: output, saved and running statistics, dX, dW, dB in training and
 * evaluation. */
static void check_batch_norm(int channels_last) {
  enum { BN = 3, BC = 4, BS = 50, BT = BN * BC * BS };
  const int64_t sizes[3] = {BN, BC, BS}, c4 = BC;
  const int64_t strides[3] = {BC * BS, channels_last ? 1 : BS, channels_last ? BC : 1};
  float x[BT], y[BT], dy[BT], dx[BT], w[BC], b[BC], rm[BC], rv[BC], sm[BC], si[BC], dw[BC], db[BC];
  for (int i = 0; i < BT; i++)
    x[i] = (float)value(i) * 2 + 1, dy[i] = (float)value(i + BT);
  for (int k = 0; k < BC; k++)
    w[k] = (float)value(k + 3), b[k] = (float)value(k + 5), rm[k] = 0.5f, rv[k] = 2;
  const double eps = 1e-5, momentum = 0.25;
  /* x[n, c, s] at n * strides[0] + c * strides[1] + s * strides[2]. */
  double mean[BC] = {0}, var[BC] = {0}, sum[BC] = {0}, dot[BC] = {0};
  for (int n = 0; n < BN; n++)
    for (int c = 0; c < BC; c++)
      for (int s = 0; s < BS; s++)
        mean[c] += x[n * strides[0] + c * strides[1] + s * strides[2]] / (double)(BN * BS);
  for (int n = 0; n < BN; n++)
    for (int c = 0; c < BC; c++)
      for (int s = 0; s < BS; s++) {
        int64_t i = n * strides[0] + c * strides[1] + s * strides[2];
        var[c] += (x[i] - mean[c]) * (x[i] - mean[c]) / (double)(BN * BS);
        sum[c] += dy[i], dot[c] += dy[i] * (x[i] - mean[c]);
      }
  for (int training = 1; training >= 0; training--) {
    tpu_tensor t[8] = {host_view(x, TPU_FLOAT32, 3, sizes, strides),
                       host_view(w, TPU_FLOAT32, 1, &c4, NULL),
                       host_view(b, TPU_FLOAT32, 1, &c4, NULL),
                       host_view(y, TPU_FLOAT32, 3, sizes, strides),
                       host_view(sm, TPU_FLOAT32, 1, &c4, NULL),
                       host_view(si, TPU_FLOAT32, 1, &c4, NULL),
                       host_view(rm, TPU_FLOAT32, 1, &c4, NULL),
                       host_view(rv, TPU_FLOAT32, 1, &c4, NULL)};
    float rm0[BC], rv0[BC];
    memcpy(rm0, rm, sizeof rm), memcpy(rv0, rv, sizeof rv);
    CHECK_OK(run_kernel(TPU_OP_BATCH_NORM, t, 3, 5, SCALAR_F(eps), SCALAR_F(momentum),
                        SCALAR_I(training), NO_SCALAR));
    int bad = 0;
    double used_mean[BC], used_invstd[BC];
    for (int c = 0; c < BC; c++) {
      used_mean[c] = training ? mean[c] : rm0[c];
      used_invstd[c] = 1 / sqrt((training ? var[c] : rv0[c]) + eps);
      bad += !close_to(sm[c], used_mean[c], 1e-6) + !close_to(si[c], used_invstd[c], 1e-5);
      if (training) {
        double unbiased = var[c] * BN * BS / (BN * BS - 1);
        bad += !close_to(rm[c], momentum * mean[c] + (1 - momentum) * rm0[c], 1e-6);
        bad += !close_to(rv[c], momentum * unbiased + (1 - momentum) * rv0[c], 1e-6);
      }
    }
    for (int n = 0; n < BN; n++)
      for (int c = 0; c < BC; c++)
        for (int s = 0; s < BS; s++) {
          int64_t i = n * strides[0] + c * strides[1] + s * strides[2];
          bad += !close_to(y[i], (x[i] - used_mean[c]) * used_invstd[c] * w[c] + b[c], 1e-5);
        }
    /* BATCH_NORM_APPLY recomputes Y bit for bit from what the forward saved (fused mode's
     * rematerialization relies on it). */
    float y2[BT];
    tpu_tensor ap[6] = {t[0], t[1], t[2], t[4], t[5], host_view(y2, TPU_FLOAT32, 3, sizes, strides)};
    CHECK_OK(run_kernel(TPU_OP_BATCH_NORM_APPLY, ap, 5, 1, NO_SCALAR, NO_SCALAR, NO_SCALAR,
                        NO_SCALAR));
    for (int n = 0; n < BN; n++)
      for (int c = 0; c < BC; c++)
        for (int s = 0; s < BS; s++) {
          int64_t i = n * strides[0] + c * strides[1] + s * strides[2];
          bad += memcmp(&y2[i], &y[i], sizeof y[i]) != 0;
        }
    /* The backward takes the saved statistics in training, the running ones otherwise. */
    tpu_tensor bk[8] = {host_view(dy, TPU_FLOAT32, 3, sizes, strides), t[0], t[1],
                        training ? t[4] : host_view(rm0, TPU_FLOAT32, 1, &c4, NULL),
                        training ? t[5] : host_view(rv0, TPU_FLOAT32, 1, &c4, NULL),
                        host_view(dx, TPU_FLOAT32, 3, sizes, strides),
                        host_view(dw, TPU_FLOAT32, 1, &c4, NULL),
                        host_view(db, TPU_FLOAT32, 1, &c4, NULL)};
    CHECK_OK(run_kernel(TPU_OP_BATCH_NORM_BACKWARD, bk, 5, 3, SCALAR_F(eps), NO_SCALAR,
                        SCALAR_I(training), NO_SCALAR));
    const double cnt = BN * BS;
    for (int c = 0; c < BC; c++) {
      double d = 0; /* dot with the statistics used */
      for (int n = 0; n < BN; n++)
        for (int s = 0; s < BS; s++) {
          int64_t i = n * strides[0] + c * strides[1] + s * strides[2];
          d += dy[i] * (x[i] - used_mean[c]);
        }
      bad += !close_to(db[c], sum[c], 1e-5) + !close_to(dw[c], d * used_invstd[c], 1e-5);
      for (int n = 0; n < BN; n++)
        for (int s = 0; s < BS; s++) {
          int64_t i = n * strides[0] + c * strides[1] + s * strides[2];
          double k = training ? d * used_invstd[c] * used_invstd[c] / cnt : 0;
          double gm = training ? sum[c] / cnt : 0;
          double want = (dy[i] - gm - (x[i] - used_mean[c]) * k) * used_invstd[c] * w[c];
          bad += !close_to(dx[i], want, 1e-4);
        }
    }
    CHECK(bad == 0);
  }
}

static void test_batch_norm(void) {
  check_batch_norm(0);
  check_batch_norm(1);
}

int main(void) {
  TEST_MAIN_BEGIN();
  tpu_pool_set_threads(3);
  RUN_TEST(test_softmax);
  RUN_TEST(test_softmax_dtypes_and_masks);
  RUN_TEST(test_layer_and_rms_norm);
  RUN_TEST(test_layer_norm_bfloat16);
  RUN_TEST(test_norm_empty_rows);
  RUN_TEST(test_batch_norm);
  TEST_MAIN_END();
}
