/* Private to special.c, which includes it once per float type: the special family's functions of
 * one element (ops/tpu_ops_special.h) in the type T, named SP(name), computing in T as PyTorch CPU
 * does (float32 in float, double constants rounded to float). The includer defines T, SP(name),
 * SP_EPS (T's machine epsilon) and SP_HERMITE_LIMIT, and includes <tgmath.h> so that the math
 * functions take T. No include guard: meant to be included twice. */

/* The degree n of a polynomial as x86 converts a float to int64: toward zero, INT64_MIN for NaN,
 * infinities and values out of range (where C leaves the conversion undefined). */
static int64_t SP(degree)(T n) {
  return n >= (T)-0x1p63 && n < (T)0x1p63 ? (int64_t)n : INT64_MIN;
}

/* 2n + 1 as int64 arithmetic wraps (n is at most 2^63 - 1024 here), in T. */
static T SP(odd)(int64_t n) { return (T)(int64_t)(2 * (uint64_t)n + 1); }

/* v for an even degree n, -v for an odd one. */
static T SP(alternate)(int64_t n, T v) { return n % 2 == 0 ? v : -v; }

/* The Chebyshev recurrence r = c q - p from p = 1 and q (degree 1) up to degree n >= 2, stopping
 * at a NaN term. */
static T SP(chebyshev_run)(T c, T q, int64_t n) {
  T p = 1;
  for (int64_t k = 2; k <= n && !isnan(q); k++) {
    T r = c * q - p;
    p = q;
    q = r;
  }
  return q;
}

static T SP(chebyshev_t)(T x, int64_t n) {
  if (n < 0)
    return 0;
  if (fabs(x) == 1)
    return x > 0 || n % 2 == 0 ? 1 : -1;
  if (n > 6 && fabs(x) < 1)
    return cos((T)n * acos(x));
  if (n < 2)
    return n == 0 ? 1 : x;
  return SP(chebyshev_run)(x + x, x, n);
}

static T SP(chebyshev_u)(T x, int64_t n) {
  if (n < 0)
    return 0;
  if (fabs(x) == 1)
    return x > 0 || n % 2 == 0 ? (T)(n + 1) : -(T)(n + 1);
  if (n > 8 && fabs(x) < 1) {
    T t = acos(x);
    if (sin(t) != 0)
      return sin((T)(n + 1) * t) / sin(t);
    return (T)(n + 1) * cos((T)(n + 1) * t) / x;
  }
  if (n < 2)
    return n == 0 ? 1 : x + x;
  return SP(chebyshev_run)(x + x, x + x, n);
}

static T SP(chebyshev_v)(T x, int64_t n) {
  if (n < 0)
    return 0;
  if (fabs(x) == 1)
    return x > 0 ? 1 : SP(alternate)(n, SP(odd)(n));
  if (n > 8 && fabs(x) < 1) {
    T t = acos(x);
    if (sin(t / 2) != 1)
      return cos(((T)n + (T)0.5) * t) / cos(t / 2);
    return SP(alternate)(n, SP(odd)(n));
  }
  if (n < 2)
    return n == 0 ? 1 : x + x - 1;
  return SP(chebyshev_run)(x + x, x + x - 1, n);
}

static T SP(chebyshev_w)(T x, int64_t n) {
  if (n < 0)
    return 0;
  if (fabs(x) == 1)
    return x > 0 ? SP(odd)(n) : SP(alternate)(n, 1);
  if (n > 8 && fabs(x) < 1) {
    T t = acos(x);
    if (cos(t / 2) != 1)
      return sin(((T)n + (T)0.5) * t) / sin(t / 2);
    return x > 0 ? SP(odd)(n) : SP(alternate)(n, 1);
  }
  if (n < 2)
    return n == 0 ? 1 : x + x + 1;
  return SP(chebyshev_run)(x + x, x + x + 1, n);
}

/* The shifted kinds are the kinds above of y = 2x - 1, with their own thresholds and end points
 * tested on x. */
static T SP(shifted_chebyshev_t)(T x, int64_t n) {
  T y = x + x - 1;
  if (n < 0)
    return 0;
  if (x == 1 || x == 0)
    return x == 1 ? 1 : SP(alternate)(n, 1);
  if (n > 6 && fabs(y) < 1)
    return cos((T)n * acos(y));
  if (n < 2)
    return n == 0 ? 1 : y;
  return SP(chebyshev_run)(y + y, y, n);
}

static T SP(shifted_chebyshev_u)(T x, int64_t n) {
  T y = x + x - 1;
  if (n < 0)
    return 0;
  if (x == 1 || x == 0)
    return x == 1 ? (T)(n + 1) : SP(alternate)(n, (T)(n + 1));
  if (n > 6 && fabs(y) < 1) {
    T t = acos(y);
    if (sin(t) != 0)
      return sin((T)(n + 1) * t) / sin(t);
    return (T)(n + 1) * cos((T)(n + 1) * t) / y;
  }
  if (n < 2)
    return n == 0 ? 1 : y + y;
  return SP(chebyshev_run)(y + y, y + y, n);
}

static T SP(shifted_chebyshev_v)(T x, int64_t n) {
  T y = x + x - 1;
  if (n < 0)
    return 0;
  if (x == 1 || x == 0)
    return x == 1 ? 1 : SP(alternate)(n, SP(odd)(n));
  if (n > 6 && fabs(y) < 1) {
    T t = acos(y);
    if (sin(t / 2) != 1)
      return cos(((T)n + (T)0.5) * t) / cos(t / 2);
    return SP(alternate)(n, SP(odd)(n));
  }
  if (n < 2)
    return n == 0 ? 1 : y + y - 1;
  return SP(chebyshev_run)(y + y, y + y - 1, n);
}

static T SP(shifted_chebyshev_w)(T x, int64_t n) {
  T y = x + x - 1;
  if (n < 0)
    return 0;
  if (x == 1 || x == 0)
    return x == 1 ? SP(odd)(n) : SP(alternate)(n, 1);
  if (n > 4 && fabs(y) < 1) {
    T t = acos(y);
    if (cos(t / 2) != 1)
      return sin(((T)n + (T)0.5) * t) / sin(t / 2);
    return SP(alternate)(n, 1);
  }
  if (n < 2)
    return n == 0 ? 1 : y + y + 1;
  return SP(chebyshev_run)(y + y, y + y + 1, n);
}

static T SP(hermite_h)(T x, int64_t n) {
  if (n < 2)
    return n < 0 ? 0 : n == 0 ? 1 : x + x;
  if (n > SP_HERMITE_LIMIT)
    return NAN;
  T p = 1, q = x + x;
  for (int64_t k = 2; k < n + n; k += 2) {
    T r = (x + x) * q - (T)k * p;
    p = q;
    q = r;
  }
  return q;
}

static T SP(hermite_he)(T x, int64_t n) {
  if (n < 2)
    return n < 0 ? 0 : n == 0 ? 1 : x;
  if (n > SP_HERMITE_LIMIT)
    return NAN;
  T p = 1, q = x;
  for (int64_t k = 1; k < n; k++) {
    T r = x * q - (T)k * p;
    p = q;
    q = r;
  }
  return q;
}

static T SP(laguerre_l)(T x, int64_t n) {
  if (n < 0)
    return 0;
  if (x == 0 || n == 0)
    return 1;
  T p = 1, q = 1 - x;
  for (int64_t k = 1; k < n && !isnan(q); k++) {
    T r = (((T)(k + k) + (1 - x)) * q - (T)k * p) / (T)(k + 1);
    p = q;
    q = r;
  }
  return q;
}

static T SP(legendre_p)(T x, int64_t n) {
  if (n < 0)
    return 0;
  if (fabs(x) == 1)
    return x > 0 || n % 2 == 0 ? 1 : -1;
  if (n < 2)
    return n == 0 ? 1 : x;
  T p = 1, q = x;
  for (int64_t k = 1; k < n && !isnan(q); k++) {
    T r = ((T)(k + k + 1) * x * q - (T)k * p) / (T)(k + 1);
    p = q;
    q = r;
  }
  return q;
}

/* ---- Bessel-family functions (coefficients in ops/tpu_special_coeffs.h) ---- */

/* The polynomial c[0] z^(n-1) + ... + c[n-1], by Horner's rule in T. */
static T SP(horner)(const double *c, int n, T z) {
  T r = 0;
  for (int i = 0; i < n; i++)
    r = r * z + (T)c[i];
  return r;
}

/* The Chebyshev series c (last term first) at z, by Clenshaw's recurrence, halved. */
static T SP(clenshaw)(const double *c, int n, T z) {
  T b0 = (T)c[0], b1 = 0, b2 = 0;
  for (int i = 1; i < n; i++) {
    b2 = b1;
    b1 = b0;
    b0 = z * b1 - b2 + (T)c[i];
  }
  return (T)0.5 * (b0 - b2);
}

#define SP_LEN(name) (int)(sizeof TPU_SPECIAL_##name / sizeof(double))
#define SP_H(name, z) SP(horner)(TPU_SPECIAL_##name, SP_LEN(name), z)
#define SP_C(name, z) SP(clenshaw)(TPU_SPECIAL_##name, SP_LEN(name), z)

/* The Hankel asymptotic form beyond 5 of J0/J1 (sine = false) or Y0/Y1 (sine = true) from their
 * P and Q rationals at z, with phase x - shift. */
static T SP(hankel)(T x, T p, T q, T shift, bool sine) {
  T c = cos(x - shift), s = sin(x - shift);
  T v = sine ? p * s + (T)5 / x * q * c : p * c - (T)5 / x * q * s;
  return v * (T)TPU_SPECIAL_SQRT_2_PI / sqrt(x);
}

static T SP(bessel_j0)(T x) {
  x = fabs(x);
  if (x <= 5) {
    if (x < (T)0.00001)
      return 1 - x * x / 4;
    T z = x * x;
    return (z - (T)TPU_SPECIAL_J0_Z1SQ) * (z - (T)TPU_SPECIAL_J0_Z2SQ) * SP_H(J0_RP, z) /
           SP_H(J0_RQ, z);
  }
  T w = (T)25 / (x * x);
  return SP(hankel)(x, SP_H(J0_PP, w) / SP_H(J0_PQ, w), SP_H(J0_QP, w) / SP_H(J0_QQ, w),
                    (T)TPU_SPECIAL_PI_4, false);
}

static T SP(bessel_j1)(T x) {
  if (x < 0)
    return -SP(bessel_j1)(-x);
  if (x <= 5) {
    T z = x * x;
    return SP_H(J1_RP, z) / SP_H(J1_RQ, z) * x * (z - (T)TPU_SPECIAL_J1_Z1SQ) *
           (z - (T)TPU_SPECIAL_J1_Z2SQ);
  }
  T w = (T)5 / x * ((T)5 / x);
  return SP(hankel)(x, SP_H(J1_PP, w) / SP_H(J1_PQ, w), SP_H(J1_QP, w) / SP_H(J1_QQ, w),
                    (T)TPU_SPECIAL_3PI_4, false);
}

static T SP(bessel_y0)(T x) {
  if (x <= 5) {
    if (x == 0)
      return -INFINITY;
    if (x < 0)
      return NAN;
    T z = x * x;
    return SP_H(Y0_YP, z) / SP_H(Y0_YQ, z) +
           (T)TPU_SPECIAL_2_PI * log(x) * SP(bessel_j0)(x);
  }
  T w = (T)25 / (x * x);
  return SP(hankel)(x, SP_H(J0_PP, w) / SP_H(J0_PQ, w), SP_H(J0_QP, w) / SP_H(J0_QQ, w),
                    (T)TPU_SPECIAL_PI_4, true);
}

static T SP(bessel_y1)(T x) {
  if (x <= 5) {
    if (x == 0)
      return -INFINITY;
    if (x < 0)
      return NAN;
    T z = x * x;
    return x * (SP_H(Y1_YP, z) / SP_H(Y1_YQ, z)) +
           (T)TPU_SPECIAL_2_PI * (SP(bessel_j1)(x) * log(x) - 1 / x);
  }
  T w = (T)5 / x * ((T)5 / x);
  return SP(hankel)(x, SP_H(J1_PP, w) / SP_H(J1_PQ, w), SP_H(J1_QP, w) / SP_H(J1_QQ, w),
                    (T)TPU_SPECIAL_3PI_4, true);
}

static T SP(modified_bessel_i0)(T x) {
  T a = fabs(x);
  if (a <= 8)
    return exp(a) * SP_C(I0_A, a / 2 - 2);
  return exp(a) * SP_C(I0_B, (T)32 / a - 2) / sqrt(a);
}

static T SP(modified_bessel_i1)(T x) {
  T a = fabs(x);
  T v = a <= 8 ? SP_C(I1_A, a / 2 - 2) * a * exp(a) : exp(a) * SP_C(I1_B, (T)32 / a - 2) / sqrt(a);
  return x < 0 ? -v : v;
}

/* K0 and K1, scaled by e^x when `scaled`. */
static T SP(bessel_k0)(T x, bool scaled) {
  if (x == 0 || x < 0)
    return x == 0 ? INFINITY : NAN;
  if (x <= 2) {
    T series = SP_C(K0_A, x * x - 2);
    if (scaled)
      return (series - log((T)0.5 * x) * SP(modified_bessel_i0)(x)) * exp(x);
    /* CPU takes this logarithm of a double 0.5 x, and the difference in double. */
    return (T)((double)series - log(0.5 * (double)x) * (double)SP(modified_bessel_i0)(x));
  }
  T tail = SP_C(K0_B, (T)8 / x - 2);
  return scaled ? tail / sqrt(x) : exp(-x) * tail / sqrt(x);
}

static T SP(bessel_k1)(T x, bool scaled) {
  if (x == 0 || x < 0)
    return x == 0 ? INFINITY : NAN;
  if (x <= 2) {
    T v = log((T)0.5 * x) * SP(modified_bessel_i1)(x) + SP_C(K1_A, x * x - 2) / x;
    return scaled ? v * exp(x) : v;
  }
  T tail = SP_C(K1_B, (T)8 / x - 2);
  return scaled ? tail / sqrt(x) : exp(-x) * tail / sqrt(x);
}

static T SP(spherical_bessel_j0)(T x) {
  if (isinf(x))
    return 0;
  if (fabs(x) < (T)0.5) {
    T z = x * x;
    return 1 + z * ((T)-1 / (T)6 +
                    z * ((T)1 / (T)120 +
                         z * ((T)-1 / (T)5040 +
                              z * ((T)1 / (T)362880 +
                                   z * ((T)-1 / (T)39916800 + z * ((T)1 / (T)6227020800))))));
  }
  return sin(x) / x;
}

static T SP(airy_ai)(T x) {
  if (isinf(x))
    return NAN;
  if (x > (T)103.892)
    return 0;
  if (x < (T)-2.09) {
    T s = (T)-2 * x * sqrt(-x) / 3, z = 1 / s, zz = z * z;
    T t = s + (T)0.25 * (T)3.14159265358979323846;
    T f = 1 + zz * SP_H(AIRY_AFN, zz) / SP_H(AIRY_AFD, zz);
    T g = z * SP_H(AIRY_AGN, zz) / SP_H(AIRY_AGD, zz);
    return (T)TPU_SPECIAL_1_SQRT_PI / sqrt(sqrt(-x)) * (sin(t) * f - cos(t) * g);
  }
  if (x >= (T)2.09) {
    T zeta = (T)2 * x * sqrt(x) / 3, w = 1 / zeta;
    return (T)TPU_SPECIAL_1_SQRT_PI * (SP_H(AIRY_AN, w) / SP_H(AIRY_AD, w)) /
           ((T)2 * sqrt(sqrt(x)) * exp(zeta));
  }
  /* The Maclaurin series Ai(x) = c1 f(x) - c2 g(x), f and g summed until a term of f is below
   * epsilon relative to f. */
  T f = 1, g = x, k = 1, m = 1, n = x, t = 1, z = x * x * x;
  while (t > SP_EPS) {
    m *= z;
    k += 1;
    m /= k;
    n *= z;
    k += 1;
    n /= k;
    m /= k;
    f += m;
    k += 1;
    n /= k;
    g += n;
    t = fabs(m / f);
  }
  return (T)TPU_SPECIAL_AIRY_C1 * f - (T)TPU_SPECIAL_AIRY_C2 * g;
}

#undef SP_LEN
#undef SP_H
#undef SP_C
