/* The norm family's row loops (norm.h): each written once for float and once for double,
 * with lanes so GCC vectorizes them (the plain sums in GCC's vector types, which keep short rows
 * cheap), and compiled per ISA. */
#include <math.h>
#include <string.h>

#include "drivers/host/kernels/norm/norm.h"
#include "drivers/host/engine/engine_simd.h"

#define LANES 32

#define EXP_F(x) tpu_expf_simd(x)
#define EXP_D(x) exp(x)

/* The terms the lane loops sum, given an element index. */
#define T_SUM(j) (x[j])
#define T_DOT(j) (x[j] * y[j])
#define T_SQDEV(j) ((x[j] - m) * (x[j] - m))
#define T_EXP_F(j) tpu_expf_simd(x[j] - m)
#define T_EXP_D(j) exp(x[j] - m)

/* Sums of LANES lanes, folded in halves (vector adds: a lane-by-lane sum in double cost more than
 * the loop itself on rows of a few hundred elements), then the tail, as double. */
#define LANE_LOOP(T, TERM)                                                                         \
  T acc[LANES] = {0};                                                                              \
  int64_t i = 0;                                                                                   \
  for (; i + LANES <= n; i += LANES)                                                               \
    for (int k = 0; k < LANES; k++)                                                                \
      acc[k] += TERM(i + k);                                                                       \
  for (int half = LANES / 2; half > 0; half /= 2)                                                  \
    for (int k = 0; k < half; k++)                                                                 \
      acc[k] += acc[k + half];                                                                     \
  double total = (double)acc[0];                                                                   \
  for (; i < n; i++)                                                                               \
  total += TERM(i)

/* 32-byte vectors (GCC's vector extension; loads through memcpy, so any alignment). */
typedef float vec_f __attribute__((vector_size(32)));
typedef double vec_d __attribute__((vector_size(32)));

/* acc += the term of elements [j, j + W), for the vector type V. */
#define V_SUM(V, acc, j)                                                                           \
  do {                                                                                             \
    V xv_;                                                                                         \
    memcpy(&xv_, x + (j), sizeof xv_);                                                             \
    acc += xv_;                                                                                    \
  } while (0)
#define V_DOT(V, acc, j)                                                                           \
  do {                                                                                             \
    V xv_, yv_;                                                                                    \
    memcpy(&xv_, x + (j), sizeof xv_);                                                             \
    memcpy(&yv_, y + (j), sizeof yv_);                                                             \
    acc += xv_ * yv_;                                                                              \
  } while (0)
#define V_SQDEV(V, acc, j)                                                                         \
  do {                                                                                             \
    V xv_;                                                                                         \
    memcpy(&xv_, x + (j), sizeof xv_);                                                             \
    xv_ -= m;                                                                                      \
    acc += xv_ * xv_;                                                                              \
  } while (0)

/* sum += x[j..j+W), dot += x * (y + m) there: a batch norm backward's per-channel sums. */
#define V_SUM_DEV(V, sum, dot, j)                                                                  \
  do {                                                                                             \
    V xv_, yv_;                                                                                    \
    memcpy(&xv_, x + (j), sizeof xv_);                                                             \
    memcpy(&yv_, y + (j), sizeof yv_);                                                             \
    sum += xv_;                                                                                    \
    dot += xv_ * (yv_ + m);                                                                        \
  } while (0)

/* out = the sum of four vector accumulators of type V, as double: added pairwise, then lane by
 * lane in T. A macro: a function taking a 32-byte vector by value would change the ABI of the
 * baseline x86-64 build. */
#define VEC_FOLD(T, V, out, a0, a1, a2, a3)                                                        \
  do {                                                                                             \
    V f_ = (a0 + a1) + (a2 + a3);                                                                  \
    T t_ = 0;                                                                                      \
    for (int k_ = 0; k_ < (int)(sizeof f_ / sizeof t_); k_++)                                      \
      t_ += f_[k_];                                                                                \
    out = (double)t_;                                                                              \
  } while (0)

/* The sums of LANE_LOOP in four vector accumulators held in registers: element i goes to lane
 * i % (4 * W); the accumulators are folded pairwise, then the lanes, then the tail added in double.
 * Its fixed cost is a few instructions, which matters on rows of a hundred elements. */
#define VEC_LOOP(T, V, VTERM, TERM)                                                                \
  enum { W = (int)(sizeof(V) / sizeof(T)) };                                                       \
  V a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};                                                        \
  int64_t i = 0;                                                                                   \
  for (; i + 4 * W <= n; i += 4 * W) {                                                             \
    VTERM(V, a0, i);                                                                               \
    VTERM(V, a1, i + W);                                                                           \
    VTERM(V, a2, i + 2 * W);                                                                       \
    VTERM(V, a3, i + 3 * W);                                                                       \
  }                                                                                                \
  double total;                                                                                    \
  VEC_FOLD(T, V, total, a0, a1, a2, a3);                                                           \
  for (; i < n; i++)                                                                               \
  total += TERM(i)

#define ROW_FUNCS(S, T, V, MASK_T, EXP, T_EXP)                                                     \
  TPU_SIMD static double max_##S(const T *restrict x, int64_t n) {                                 \
    T acc[LANES];                                                                                  \
    MASK_T nan[LANES] = {0};                                                                       \
    for (int k = 0; k < LANES; k++)                                                                \
      acc[k] = -INFINITY;                                                                          \
    int64_t i = 0;                                                                                 \
    for (; i + LANES <= n; i += LANES)                                                             \
      for (int k = 0; k < LANES; k++) {                                                            \
        T y = x[i + k];                                                                            \
        acc[k] = y > acc[k] ? y : acc[k];                                                          \
        nan[k] |= y != y;                                                                          \
      }                                                                                            \
    T best = -INFINITY;                                                                            \
    MASK_T any = 0;                                                                                \
    for (; i < n; i++) {                                                                           \
      best = x[i] > best ? x[i] : best;                                                            \
      any |= x[i] != x[i];                                                                         \
    }                                                                                              \
    for (int k = 0; k < LANES; k++) {                                                              \
      best = acc[k] > best ? acc[k] : best;                                                        \
      any |= nan[k];                                                                               \
    }                                                                                              \
    return any ? NAN : (double)best;                                                               \
  }                                                                                                \
  TPU_SIMD static double sum_##S(const T *restrict x, int64_t n) {                                 \
    VEC_LOOP(T, V, V_SUM, T_SUM);                                                                  \
    return total;                                                                                  \
  }                                                                                                \
  TPU_SIMD static double dot_##S(const T *restrict x, const T *restrict y, int64_t n) {            \
    VEC_LOOP(T, V, V_DOT, T_DOT);                                                                  \
    return total;                                                                                  \
  }                                                                                                \
  TPU_SIMD static double exp_sum_##S(const T *restrict x, int64_t n, T m) {                        \
    LANE_LOOP(T, T_EXP);                                                                 \
    return total;                                                                                  \
  }                                                                                                \
  TPU_SIMD static double sq_dev_##S(const T *restrict x, int64_t n, T m) {                         \
    VEC_LOOP(T, V, V_SQDEV, T_SQDEV);                                                              \
    return total;                                                                                  \
  }                                                                                                \
  TPU_SIMD static double exp_store_##S(T *restrict y, const T *restrict x, int64_t n, T m) {       \
    T acc[LANES] = {0};                                                                            \
    int64_t i = 0;                                                                                 \
    for (; i + LANES <= n; i += LANES)                                                             \
      for (int k = 0; k < LANES; k++) {                                                            \
        T e = EXP(x[i + k] - m);                                                                   \
        y[i + k] = e;                                                                              \
        acc[k] += e;                                                                               \
      }                                                                                            \
    double total = 0;                                                                              \
    for (; i < n; i++) {                                                                           \
      y[i] = EXP(x[i] - m);                                                                        \
      total += y[i];                                                                               \
    }                                                                                              \
    for (int k = 0; k < LANES; k++)                                                                \
      total += acc[k];                                                                             \
    return total;                                                                                  \
  }                                                                                                \
  TPU_SIMD static void scale_##S(T *restrict y, int64_t n, T s) {                                  \
    for (int64_t i = 0; i < n; i++)                                                                \
      y[i] *= s;                                                                                   \
  }                                                                                                \
  TPU_SIMD static void sub2_##S(T *y, const T *x, int64_t n, T a, T b) {                           \
    for (int64_t i = 0; i < n; i++)                                                                \
      y[i] = (x[i] - a) - b;                                                                       \
  }                                                                                                \
  TPU_SIMD static void affine_##S(T *y, const T *x, int64_t n, T a, T b, const T *restrict w,      \
                                  const T *restrict c) {                                           \
    if (w && c)                                                                                    \
      for (int64_t i = 0; i < n; i++)                                                              \
        y[i] = (x[i] * a + b) * w[i] + c[i];                                                       \
    else if (w)                                                                                    \
      for (int64_t i = 0; i < n; i++)                                                              \
        y[i] = (x[i] * a + b) * w[i];                                                              \
    else if (c)                                                                                    \
      for (int64_t i = 0; i < n; i++)                                                              \
        y[i] = (x[i] * a + b) + c[i];                                                              \
    else                                                                                           \
      for (int64_t i = 0; i < n; i++)                                                              \
        y[i] = x[i] * a + b;                                                                       \
  }                                                                                                \
  TPU_SIMD static void sum_dot_dev_##S(const T *restrict x, const T *restrict y, int64_t n,        \
                                       T m, double *sum, double *dot) {                            \
    enum { W = (int)(sizeof(V) / sizeof(T)) };                                                     \
    V s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, d0 = {0}, d1 = {0}, d2 = {0}, d3 = {0};              \
    int64_t i = 0;                                                                                 \
    for (; i + 4 * W <= n; i += 4 * W) {                                                           \
      V_SUM_DEV(V, s0, d0, i);                                                                     \
      V_SUM_DEV(V, s1, d1, i + W);                                                                 \
      V_SUM_DEV(V, s2, d2, i + 2 * W);                                                             \
      V_SUM_DEV(V, s3, d3, i + 3 * W);                                                             \
    }                                                                                              \
    double ts, td;                                                                                 \
    VEC_FOLD(T, V, ts, s0, s1, s2, s3);                                                            \
    VEC_FOLD(T, V, td, d0, d1, d2, d3);                                                            \
    for (; i < n; i++) {                                                                           \
      ts += x[i];                                                                                  \
      td += x[i] * (y[i] + m);                                                                     \
    }                                                                                              \
    *sum = ts;                                                                                     \
    *dot = td;                                                                                     \
  }                                                                                                \
  TPU_SIMD static void bn_grad_##S(T *restrict out, const T *restrict dy, const T *restrict x,     \
                                   int64_t n, T a, T k, T ngm, T nmean) {                          \
    for (int64_t i = 0; i < n; i++) {                                                              \
      T b = (x[i] + nmean) * k + (T)0;                                                             \
      T t = (b * (T)-1 + (T)0) + (dy[i] + ngm);                                                    \
      out[i] = t * a + (T)0;                                                                       \
    }                                                                                              \
  }                                                                                                \
  TPU_SIMD static void bn_normalize_##S(T *restrict out, const T *restrict x, int64_t n,        \
                                        T nmean, T a, T s, T b) {                                  \
    for (int64_t i = 0; i < n; i++)                                                                \
      out[i] = ((x[i] + nmean) * a) * s + b;                                                       \
  }                                                                                                \
  TPU_SIMD static void accum_grads_##S(double *restrict pw, double *restrict pb,                   \
                                       const T *restrict dy, const T *restrict xhat, int64_t n) {  \
    for (int64_t i = 0; i < n; i++) {                                                              \
      pw[i] += (double)(dy[i] * xhat[i]);                                                          \
      pb[i] += (double)dy[i];                                                                      \
    }                                                                                              \
  }

ROW_FUNCS(f, float, vec_f, int32_t, EXP_F, T_EXP_F)
ROW_FUNCS(d, double, vec_d, int64_t, EXP_D, T_EXP_D)

double nk_max(rk_class cls, const void *x, int64_t n) {
  return cls == RK_F ? max_f(x, n) : max_d(x, n);
}

double nk_sum(rk_class cls, const void *x, int64_t n) {
  return cls == RK_F ? sum_f(x, n) : sum_d(x, n);
}

double nk_dot(rk_class cls, const void *x, const void *y, int64_t n) {
  return cls == RK_F ? dot_f(x, y, n) : dot_d(x, y, n);
}

double nk_exp_sum(rk_class cls, const void *x, int64_t n, double m) {
  return cls == RK_F ? exp_sum_f(x, n, (float)m) : exp_sum_d(x, n, m);
}

double nk_sq_dev(rk_class cls, const void *x, int64_t n, double m) {
  return cls == RK_F ? sq_dev_f(x, n, (float)m) : sq_dev_d(x, n, m);
}

double nk_exp_store(rk_class cls, void *y, const void *x, int64_t n, double m) {
  return cls == RK_F ? exp_store_f(y, x, n, (float)m) : exp_store_d(y, x, n, m);
}

void nk_scale(rk_class cls, void *y, int64_t n, double s) {
  if (cls == RK_F)
    scale_f(y, n, (float)s);
  else
    scale_d(y, n, s);
}

void nk_sub2(rk_class cls, void *y, const void *x, int64_t n, double a, double b) {
  if (cls == RK_F)
    sub2_f(y, x, n, (float)a, (float)b);
  else
    sub2_d(y, x, n, a, b);
}

void nk_affine(rk_class cls, void *y, const void *x, int64_t n, double a, double b, const void *w,
               const void *c) {
  if (cls == RK_F)
    affine_f(y, x, n, (float)a, (float)b, w, c);
  else
    affine_d(y, x, n, a, b, w, c);
}

void nk_sum_dot_dev(rk_class cls, const void *x, const void *y, int64_t n, double m, double *sum,
                    double *dot) {
  if (cls == RK_F)
    sum_dot_dev_f(x, y, n, (float)m, sum, dot);
  else
    sum_dot_dev_d(x, y, n, m, sum, dot);
}

void nk_bn_grad(rk_class cls, void *out, const void *dy, const void *x, int64_t n, double a,
                double k, double ngm, double nmean) {
  if (cls == RK_F)
    bn_grad_f(out, dy, x, n, (float)a, (float)k, (float)ngm, (float)nmean);
  else
    bn_grad_d(out, dy, x, n, a, k, ngm, nmean);
}

void nk_bn_normalize(rk_class cls, void *out, const void *x, int64_t n, double nmean, double a,
                     double s, double b) {
  if (cls == RK_F)
    bn_normalize_f(out, x, n, (float)nmean, (float)a, (float)s, (float)b);
  else
    bn_normalize_d(out, x, n, nmean, a, s, b);
}

void nk_accum_grads(rk_class cls, double *pw, double *pb, const void *dy, const void *xhat,
                    int64_t n) {
  if (cls == RK_F)
    accum_grads_f(pw, pb, dy, xhat, n);
  else
    accum_grads_d(pw, pb, dy, xhat, n);
}

rk_class nk_class(tpu_dtype dt) { return dt == TPU_FLOAT64 ? RK_D : RK_F; }

bool nk_dense(rk_class cls, tpu_dtype dt, int64_t stride) {
  return cls == RK_F ? dt == TPU_FLOAT32 && stride == 4 : dt == TPU_FLOAT64 && stride == 8;
}

const void *nk_load(rk_class cls, tpu_dtype dt, const char *src, int64_t n, int64_t stride,
                    void *buf) {
  if (nk_dense(cls, dt, stride))
    return src;
  rk_loader(dt, cls, false)(buf, src, n, stride);
  return buf;
}

void nk_store(rk_class cls, tpu_dtype dt, char *dst, const void *y, int64_t n, int64_t stride) {
  if (y != (const void *)dst)
    rk_storer(dt, cls)(dst, y, n, stride);
}
