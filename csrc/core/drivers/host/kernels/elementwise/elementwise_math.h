/* Private to the elementwise kernels: the special functions of elementwise_math.c in double,
 * written from their standard series, asymptotic expansions and continued fractions, with the
 * special values of PyTorch CPU's kernels (ATen/native/Math.h). float32 and narrower dtypes call
 * them too and round the result once. */
#ifndef TPU_HOST_KERNELS_ELEMENTWISE_MATH_H
#define TPU_HOST_KERNELS_ELEMENTWISE_MATH_H

/* log|Gamma(x)|, without touching libm's global signgam (kernels run on many threads). */
double tpu_ew_lgamma(double x);

/* The digamma function psi(x): -inf at +0, +inf at -0, NaN at negative integers and -inf. */
double tpu_ew_digamma(double x);

/* The trigamma function psi'(x). */
double tpu_ew_trigamma(double x);

/* The Hurwitz zeta function sum_k (q + k)^-x: inf at x == 1 and at integers q <= 0, NaN for x < 1
 * and for q < 0 with a fractional x. */
double tpu_ew_zeta(double x, double q);

/* The polygamma function psi^(n)(x) for an integer n >= 0. */
double tpu_ew_polygamma(double n, double x);

/* Modified Bessel functions of the first kind I0 and I1, and their scaled forms
 * e^-|x| I0(x) and e^-|x| I1(x). */
double tpu_ew_i0(double x);
double tpu_ew_i0e(double x);
double tpu_ew_i1(double x);
double tpu_ew_i1e(double x);

/* The scaled complementary error function e^(x^2) erfc(x). */
double tpu_ew_erfcx(double x);

/* The standard normal distribution's quantile, and the logarithm of its CDF. */
double tpu_ew_ndtri(double p);
double tpu_ew_log_ndtr(double x);

/* The regularized lower and upper incomplete gamma functions P(a, x) and Q(a, x). */
double tpu_ew_igamma(double a, double x);
double tpu_ew_igammac(double a, double x);

#endif
