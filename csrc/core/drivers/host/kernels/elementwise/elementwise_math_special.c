/* The special functions of elementwise_math.h in double. Each is written from its textbook form
 * (Abramowitz and Stegun; the NIST Digital Library of Mathematical Functions, DLMF): a recurrence
 * that moves the argument where an asymptotic expansion is accurate to double precision, a power
 * series where it converges fast, or a continued fraction. */
#include "drivers/host/kernels/elementwise/elementwise_math.h"

#include <float.h>
#include <math.h>
#include <stdint.h>

double tpu_ew_lgamma(double x) {
  int sign;
  return lgamma_r(x, &sign);
}

/* psi(x) = log x - 1/(2x) - sum_k B_2k / (2k x^2k) (DLMF 5.11.2) once x >= 10, after the
 * recurrence psi(x) = psi(x + 1) - 1/x; below 0 the reflection psi(x) = psi(1 - x) - pi cot(pi x)
 * (DLMF 5.5.4), with the cotangent of the fractional part so that large |x| keep its accuracy. */
double tpu_ew_digamma(double x) {
  if (x == 0)
    return copysign(INFINITY, -x);
  if (x < 0) {
    if (x == trunc(x))
      return NAN;
    return tpu_ew_digamma(1 - x) - M_PI / tan(M_PI * (x - trunc(x)));
  }
  double acc = 0;
  for (; x < 10; x += 1)
    acc -= 1 / x;
  double z = 1 / (x * x);
  double s = z * (1.0 / 12 -
                  z * (1.0 / 120 -
                       z * (1.0 / 252 -
                            z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
  return acc + log(x) - 0.5 / x - s;
}

/* psi'(x) = 1/x + 1/(2x^2) + sum_k B_2k / x^(2k+1) (DLMF 5.15.8) once x >= 10, after the
 * recurrence psi'(x) = psi'(x + 1) + 1/x^2; below 1/2 the reflection
 * psi'(x) = pi^2 / sin^2(pi x) - psi'(1 - x) (DLMF 5.15.6). */
double tpu_ew_trigamma(double x) {
  if (x < 0.5) {
    double s = sin(M_PI * x);
    return M_PI * M_PI / (s * s) - tpu_ew_trigamma(1 - x);
  }
  double acc = 0;
  for (; x < 10; x += 1)
    acc += 1 / (x * x);
  double z = 1 / (x * x);
  double s = z * (1.0 / 6 -
                  z * (1.0 / 30 -
                       z * (1.0 / 42 -
                            z * (1.0 / 30 - z * (5.0 / 66 - z * (691.0 / 2730 - z * 7 / 6))))));
  return acc + (1 + 0.5 / x + s) / x;
}

/* B_2j / (2j)!, j = 1..12: the Euler-Maclaurin tail's coefficients. */
static const double bernoulli_over_factorial[12] = {
    1.0 / 12,
    -1.0 / 720,
    1.0 / 30240,
    -1.0 / 1209600,
    1.0 / 47900160,
    -691.0 / 1307674368000.0,
    1.0 / 74724249600.0,
    -3617.0 / 510 / 20922789888000.0,
    43867.0 / 798 / 6402373705728000.0,
    -174611.0 / 330 / 2432902008176640000.0,
    854513.0 / 138 / 1124000727777607680000.0,
    -236364091.0 / 2730 / 620448401733239439360000.0,
};

/* The first terms summed, then the rest by the Euler-Maclaurin formula from w = q + n (DLMF
 * 25.11.5 and 2.10.1): w^(1-x)/(x-1) + w^-x/2 + sum_j B_2j/(2j)! x(x+1)..(x+2j-2) w^(-x-2j+1).
 * An infinite q or x meets 0 * inf there and gives NaN, as CPU's. */
double tpu_ew_zeta(double x, double q) {
  if (x == 1)
    return INFINITY;
  if (x < 1)
    return NAN;
  if (q <= 0) {
    if (q == floor(q))
      return INFINITY;
    if (x != floor(x))
      return NAN; /* a negative base to a fractional power */
  }
  double sum = 0, w = q;
  for (int n = 0; n < 9 || w <= 9; n++, w += 1) {
    double term = pow(w, -x);
    sum += term;
    if (n > 0 && fabs(term / sum) < DBL_EPSILON / 2)
      return sum; /* the rest cannot change it (a ratio, so that 0 / 0 goes on, as CPU's) */
  }
  double b = pow(w, -x);
  double tail = w * b / (x - 1) + 0.5 * b, rising = x, power = b / w;
  for (int j = 0; j < 12; j++) {
    double t = bernoulli_over_factorial[j] * rising * power;
    tail += t;
    if (fabs(t / (sum + tail)) < DBL_EPSILON / 2)
      break;
    rising *= (x + 2 * j + 1) * (x + 2 * j + 2);
    power /= w * w;
  }
  return sum + tail;
}

/* psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 2 (DLMF 25.11.12). */
double tpu_ew_polygamma(double n, double x) {
  if (n == 0)
    return tpu_ew_digamma(x);
  if (n == 1)
    return tpu_ew_trigamma(x);
  double sign = fmod(n, 2) == 0 ? -1 : 1;
  return sign * exp(tpu_ew_lgamma(n + 1)) * tpu_ew_zeta(n + 1, x);
}

/* e^-|x| I_nu(|x|) for nu = 0 or 1 (scaled), or I_nu(|x|): the power series
 * (x/2)^nu sum_k (x^2/4)^k / (k! (k+nu)!) (DLMF 10.25.2), whose terms are all positive, up to 30;
 * beyond, the asymptotic expansion e^x / sqrt(2 pi x) sum_k (-1)^k a_k(nu) / x^k (DLMF 10.40.1),
 * whose terms fall below double precision before they grow again. There the unscaled value is
 * e^x times the scaled one, as CPU's: infinite from x = 709.8 on, and NaN at infinity. */
static double bessel_i(int nu, double ax, int scaled) {
  if (ax <= 30) {
    double y = ax * ax / 4, term = nu ? ax / 2 : 1, sum = term;
    for (int k = 1; k < 200 && term > DBL_EPSILON / 4 * sum; k++) {
      term *= y / ((double)k * (k + nu));
      sum += term;
    }
    return scaled ? sum * exp(-ax) : sum;
  }
  double mu = 4.0 * nu * nu, term = 1, sum = 1;
  for (int k = 1; k < 40 && fabs(term) > DBL_EPSILON / 4 * sum; k++) {
    term *= -(mu - (2.0 * k - 1) * (2.0 * k - 1)) / (8.0 * k * ax);
    sum += term;
  }
  double e = sum / sqrt(2 * M_PI * ax);
  return scaled ? e : exp(ax) * e;
}

double tpu_ew_i0(double x) { return bessel_i(0, fabs(x), 0); }
double tpu_ew_i0e(double x) { return bessel_i(0, fabs(x), 1); }
double tpu_ew_i1(double x) { return copysign(bessel_i(1, fabs(x), 0), x); }
double tpu_ew_i1e(double x) { return copysign(bessel_i(1, fabs(x), 1), x); }

/* e^(x^2) erfc(x): the product with x^2 split exactly into hi + lo (so e^(x^2) carries no
 * rounding of x^2) while erfc stays a normal number; beyond 25 the asymptotic expansion
 * 1 / (x sqrt(pi)) sum_k (-1)^k (2k-1)!! / (2x^2)^k (DLMF 7.12.1). */
double tpu_ew_erfcx(double x) {
  if (x < -26.7)
    return INFINITY; /* e^(x^2) overflows */
  if (x < 25) {
    double hi = x * x, lo = fma(x, x, -hi);
    return exp(hi) * (erfc(x) * (1 + lo));
  }
  double z = 1 / (2 * x * x), term = 1, sum = 1;
  for (int k = 1; k < 12; k++) {
    term *= -(2 * k - 1) * z;
    sum += term;
  }
  return sum / (x * 1.77245385090551602730); /* sqrt(pi) */
}

/* log Phi(x): log1p(-erfc(x / sqrt 2) / 2) where Phi is not small, else through erfcx so that the
 * far tail keeps its relative accuracy. */
double tpu_ew_log_ndtr(double x) {
  double t = x * M_SQRT1_2;
  if (x < -1)
    return log(tpu_ew_erfcx(-t) / 2) - t * t;
  return log1p(-erfc(t) / 2);
}

/* The quantile for 0 < p <= 1/2: Abramowitz and Stegun's 26.2.23 (error below 4.5e-4), then
 * Newton's method on log Phi(x) = log p, with log Phi and its derivative
 * Phi'(x) / Phi(x) = sqrt(2/pi) / erfcx(-x / sqrt 2) free of under- and overflow. log Phi is
 * concave, so the iterates approach the root from one side, quadratically. */
static double ndtri_lower(double p) {
  if (p == 0.5)
    return 0;
  double lp = log(p), t = sqrt(-2 * lp);
  double x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) /
                       (1 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
  for (int i = 0; i < 4; i++) {
    double u = -x * M_SQRT1_2, e = tpu_ew_erfcx(u);
    double h = log(e / 2) - u * u - lp;
    x -= h * e / 0.79788456080286535588; /* h / (sqrt(2/pi) / e) */
  }
  return x;
}

double tpu_ew_ndtri(double p) {
  if (!(p > 0 && p < 1))
    return p == 0 ? -INFINITY : p == 1 ? INFINITY : NAN;
  return p > 0.5 ? -ndtri_lower(1 - p) : ndtri_lower(p); /* 1 - p is exact from 1/2 on */
}

/* x^a e^-x / Gamma(a), the factor both of the incomplete gamma's expansions share. */
static double igamma_factor(double a, double x) {
  return exp(a * log(x) - x - tpu_ew_lgamma(a));
}

/* P(a, x) by its series sum_n x^n / (a (a+1) .. (a+n)) (DLMF 8.7.1), for x < a + 1. */
static double igamma_series(double a, double x) {
  double ap = a, term = 1 / a, sum = term;
  for (int n = 0; n < 100000 && fabs(term) > DBL_EPSILON / 4 * fabs(sum); n++) {
    ap += 1;
    term *= x / ap;
    sum += term;
  }
  return sum * igamma_factor(a, x);
}

/* Q(a, x) by its continued fraction (DLMF 8.9.2) evaluated with the modified Lentz method, for
 * x >= a + 1. */
static double igammac_fraction(double a, double x) {
  const double tiny = DBL_MIN / DBL_EPSILON;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, f = d;
  for (int i = 1; i < 100000; i++) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    d = fabs(d) < tiny ? tiny : d;
    c = b + an / c;
    c = fabs(c) < tiny ? tiny : c;
    d = 1 / d;
    double delta = d * c;
    f *= delta;
    if (!(fabs(delta - 1) > DBL_EPSILON))
      break;
  }
  return f * igamma_factor(a, x);
}

double tpu_ew_igamma(double a, double x) {
  if (x < 0 || a < 0)
    return NAN;
  if (a == 0)
    return x > 0 ? 1 : NAN;
  if (x == 0)
    return 0;
  if (isinf(a))
    return isinf(x) ? NAN : 0;
  if (isinf(x))
    return 1;
  return x < a + 1 ? igamma_series(a, x) : 1 - igammac_fraction(a, x);
}

double tpu_ew_igammac(double a, double x) {
  if (x < 0 || a < 0)
    return NAN;
  if (a == 0)
    return x > 0 ? 0 : NAN;
  if (x == 0)
    return 1;
  if (isinf(a))
    return isinf(x) ? NAN : 1;
  if (isinf(x))
    return 0;
  return x < a + 1 ? 1 - igamma_series(a, x) : igammac_fraction(a, x);
}
