/* Row helpers shared by the norm family's kernels (private to the host driver): vectorized loops
 * over one row of float (class F: float16, bfloat16, float32 data) or double values, and a small
 * per-thread workspace. Rows arrive through the reduce family's loaders and storers
 * (reduce.h), so a row of any floating dtype and stride is computed on in float or double
 * and rounded once when stored. */
#ifndef TPU_HOST_KERNELS_NORM_H
#define TPU_HOST_KERNELS_NORM_H

#include <stdint.h>

#include "drivers/host/kernels/reduce/reduce.h"

/* Largest value; NaN when any is NaN. */
double nk_max(rk_class cls, const void *x, int64_t n);

/* Sum of x[i], of x[i] * y[i] (y may equal x), and of exp(x[i] - m), accumulated in lanes and
 * returned in double. */
double nk_sum(rk_class cls, const void *x, int64_t n);
double nk_dot(rk_class cls, const void *x, const void *y, int64_t n);
double nk_exp_sum(rk_class cls, const void *x, int64_t n, double m);

/* Sum of (x[i] - m)^2. */
double nk_sq_dev(rk_class cls, const void *x, int64_t n, double m);

/* y[i] = exp(x[i] - m), returning their sum. */
double nk_exp_store(rk_class cls, void *y, const void *x, int64_t n, double m);

/* y[i] = y[i] * s. */
void nk_scale(rk_class cls, void *y, int64_t n, double s);

/* y[i] = (x[i] - a) - b. */
void nk_sub2(rk_class cls, void *y, const void *x, int64_t n, double a, double b);

/* y[i] = (x[i] * a + b) * (w ? w[i] : 1) + (c ? c[i] : 0): the affine normalization. */
void nk_affine(rk_class cls, void *y, const void *x, int64_t n, double a, double b, const void *w,
               const void *c);

/* The sum of x[i] and of x[i] * (y[i] + m) (the sum in the class's precision), as nk_sum and
 * nk_dot over x and y + m would give them, in one pass: a batch norm backward's channel sums with
 * x = dY, y = X and m = -mean. */
void nk_sum_dot_dev(rk_class cls, const void *x, const void *y, int64_t n, double m, double *sum,
                    double *dot);

/* out[i] = (dy[i] + ngm - (x[i] + nmean) * k) * a, rounded step by step in the class's precision:
 * a batch norm's input gradient over one run of a channel, in one pass. */
void nk_bn_grad(rk_class cls, void *out, const void *dy, const void *x, int64_t n, double a,
                double k, double ngm, double nmean);

/* out[i] = ((x[i] + nmean) * a) * s + b, rounded step by step in the class's precision: a batch
 * norm's forward over one run of a channel, in one pass. */
void nk_bn_normalize(rk_class cls, void *out, const void *x, int64_t n, double nmean, double a,
                     double s, double b);

/* pw[i] += dy[i] * xhat[i] (the product in the class's precision) and pb[i] += dy[i], in double:
 * one row's share of the per-column sums of a norm's weight and bias gradients. */
void nk_accum_grads(rk_class cls, double *pw, double *pb, const void *dy, const void *xhat,
                    int64_t n);

/* Loads n elements of dtype dt (stride bytes apart) as class cls into buf, or returns the
 * elements themselves when they already are dense values of that class. */
const void *nk_load(rk_class cls, tpu_dtype dt, const char *src, int64_t n, int64_t stride,
                    void *buf);

/* Stores n values of class cls to dtype dt (stride bytes apart); nothing when y already is the
 * destination. */
void nk_store(rk_class cls, tpu_dtype dt, char *dst, const void *y, int64_t n, int64_t stride);

/* The class a floating dtype computes in: double for float64, else float. */
rk_class nk_class(tpu_dtype dt);

/* True when dtype dt at `stride` bytes holds dense values of class cls. */
bool nk_dense(rk_class cls, tpu_dtype dt, int64_t stride);

#endif
