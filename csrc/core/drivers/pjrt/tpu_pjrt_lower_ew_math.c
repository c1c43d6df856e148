#include "drivers/pjrt/tpu_pjrt_lower_ew_math.h"

#include <math.h>
#include <stdio.h>

enum { F = 1, I = 2, B = 4 };

int tpu_pjrt_ew_math_kinds(tpu_op_id op) {
  switch (op) {
  case TPU_OP_SIGNBIT: case TPU_OP_FMAX: case TPU_OP_FMIN: case TPU_OP_HEAVISIDE:
    return F | I | B;
  case TPU_OP_ACOSH: case TPU_OP_ASINH: case TPU_OP_ATANH: case TPU_OP_SINC: case TPU_OP_ANGLE:
  case TPU_OP_ENTR: case TPU_OP_LGAMMA: case TPU_OP_DIGAMMA: case TPU_OP_POLYGAMMA:
  case TPU_OP_I0: case TPU_OP_I0E: case TPU_OP_I1: case TPU_OP_I1E: case TPU_OP_NDTRI:
  case TPU_OP_LOG_NDTR: case TPU_OP_ERFCX: case TPU_OP_LOGADDEXP: case TPU_OP_LOGADDEXP2:
  case TPU_OP_HYPOT: case TPU_OP_XLOGY: case TPU_OP_XLOG1PY: case TPU_OP_ZETA:
  case TPU_OP_NEXTAFTER:
    return F;
  default:
    return 0;
  }
}

/* The emitting state: values of one element type `t` and the shape of `like`. */
typedef struct mx {
  tpu_hlo *h;
  tpu_dtype t;
  tpu_hlo_value like;
} mx;

/* A constant of `t`, broadcast: infinities and NaN by their bits, other values in full. */
static tpu_hlo_value k(mx *m, double v) {
  char lit[48];
  bool f64 = m->t == TPU_FLOAT64;
  if (isnan(v))
    snprintf(lit, sizeof lit, "%s", f64 ? "0x7FF8000000000000" : "0x7FC00000");
  else if (isinf(v))
    snprintf(lit, sizeof lit, "%s",
             v > 0 ? (f64 ? "0x7FF0000000000000" : "0x7F800000")
                   : (f64 ? "0xFFF0000000000000" : "0xFF800000"));
  else
    snprintf(lit, sizeof lit, "%.17e", v);
  return tpu_hlo_splat(m->h, tpu_hlo_constant(m->h, m->t, lit), &m->like);
}

static tpu_hlo_value add(mx *m, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_binary(m->h, "add", a, b);
}
static tpu_hlo_value sub(mx *m, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_binary(m->h, "subtract", a, b);
}
static tpu_hlo_value mul(mx *m, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_binary(m->h, "multiply", a, b);
}
static tpu_hlo_value dv(mx *m, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_binary(m->h, "divide", a, b);
}
static tpu_hlo_value un(mx *m, const char *op, tpu_hlo_value a) {
  return tpu_hlo_unary(m->h, op, a);
}
static tpu_hlo_value cmp(mx *m, const char *dir, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_compare(m->h, dir, a, b);
}
static tpu_hlo_value sel(mx *m, tpu_hlo_value p, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_select(m->h, p, a, b);
}
static tpu_hlo_value and_(mx *m, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_binary(m->h, "and", a, b);
}
static tpu_hlo_value or_(mx *m, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_binary(m->h, "or", a, b);
}
static tpu_hlo_value isnan_(mx *m, tpu_hlo_value a) { return cmp(m, "NE", a, a); }
static tpu_hlo_value isinf_(mx *m, tpu_hlo_value a) {
  return cmp(m, "EQ", un(m, "abs", a), k(m, INFINITY));
}
/* The larger of a and b by a comparison (a NaN b gives b). */
static tpu_hlo_value larger(mx *m, tpu_hlo_value a, tpu_hlo_value b) {
  return sel(m, cmp(m, "GT", a, b), a, b);
}

/* e^-|x| I_nu(|x|) (scaled) or I_nu(x): the power series up to 30, the asymptotic expansion
 * beyond, as the host computes them; each on the argument clamped to its own range. */
static tpu_hlo_value bessel(mx *m, tpu_hlo_value x, int nu, bool scaled) {
  tpu_hlo_value ax = un(m, "abs", x), thirty = k(m, 30);
  tpu_hlo_value in_series = cmp(m, "LE", ax, thirty);
  tpu_hlo_value xs = sel(m, in_series, ax, thirty), xa = sel(m, in_series, thirty, ax);
  tpu_hlo_value y = mul(m, mul(m, xs, xs), k(m, 0.25));
  tpu_hlo_value term = nu ? mul(m, xs, k(m, 0.5)) : k(m, 1), sum = term;
  for (int j = 1; j <= 50; j++) {
    term = mul(m, mul(m, term, y), k(m, 1.0 / ((double)j * (j + nu))));
    sum = add(m, sum, term);
  }
  tpu_hlo_value series = scaled ? mul(m, sum, un(m, "exponential", un(m, "negate", xs))) : sum;
  tpu_hlo_value inv = dv(m, k(m, 1), xa), aterm = k(m, 1), asum = aterm;
  for (int j = 1; j <= 24; j++) {
    double c = -(4.0 * nu * nu - (2.0 * j - 1) * (2.0 * j - 1)) / (8.0 * j);
    aterm = mul(m, mul(m, aterm, inv), k(m, c));
    asum = add(m, asum, aterm);
  }
  tpu_hlo_value e = dv(m, asum, un(m, "sqrt", mul(m, xa, k(m, 2 * M_PI))));
  tpu_hlo_value big = scaled ? e : mul(m, un(m, "exponential", xa), e);
  tpu_hlo_value r = sel(m, in_series, series, big);
  if (nu)
    r = sel(m, cmp(m, "LT", x, k(m, 0)), un(m, "negate", r), r);
  return sel(m, isnan_(m, x), x, r);
}

/* e^(x^2) erfc(x), from erfc below 25, its asymptotic expansion above, inf below -26.7. */
static tpu_hlo_value erfcx(mx *m, tpu_hlo_value x) {
  tpu_hlo_value low = cmp(m, "LT", x, k(m, -26.7)), mid = cmp(m, "LT", x, k(m, 25));
  tpu_hlo_value xs = sel(m, low, k(m, -26.7), sel(m, mid, x, k(m, 25)));
  tpu_hlo_value small = mul(m, un(m, "exponential", mul(m, xs, xs)),
                            tpu_hlo_chlo_unary(m->h, "erfc", xs));
  tpu_hlo_value xb = sel(m, mid, k(m, 25), x);
  tpu_hlo_value z = dv(m, k(m, 0.5), mul(m, xb, xb)), term = k(m, 1), sum = term;
  for (int j = 1; j < 12; j++) {
    term = mul(m, mul(m, term, z), k(m, -(2.0 * j - 1)));
    sum = add(m, sum, term);
  }
  tpu_hlo_value big = dv(m, sum, mul(m, xb, k(m, 1.77245385090551602730)));
  return sel(m, low, k(m, INFINITY), sel(m, mid, small, big));
}

/* log Phi(x) as the host computes it. */
static tpu_hlo_value log_ndtr(mx *m, tpu_hlo_value x) {
  tpu_hlo_value t = mul(m, x, k(m, M_SQRT1_2));
  tpu_hlo_value tail = sub(m, un(m, "log", mul(m, erfcx(m, un(m, "negate", t)), k(m, 0.5))),
                           mul(m, t, t));
  tpu_hlo_value body = un(m, "log_plus_one", mul(m, tpu_hlo_chlo_unary(m->h, "erfc", t),
                                                 k(m, -0.5)));
  return sel(m, cmp(m, "LT", x, k(m, -1)), tail, body);
}

/* The normal quantile: Abramowitz and Stegun's 26.2.23 for min(p, 1 - p), four Newton steps on
 * log Phi(x) = log p, the sign by the side of 1/2, then the special values. */
static tpu_hlo_value ndtri(mx *m, tpu_hlo_value p) {
  tpu_hlo_value upper = cmp(m, "GT", p, k(m, 0.5));
  tpu_hlo_value q = sel(m, upper, sub(m, k(m, 1), p), p);
  tpu_hlo_value inside = and_(m, cmp(m, "GT", q, k(m, 0)), cmp(m, "LT", q, k(m, 0.5)));
  q = sel(m, inside, q, k(m, 0.25)); /* any value inside keeps the iteration finite */
  tpu_hlo_value lp = un(m, "log", q), t = un(m, "sqrt", mul(m, k(m, -2), lp));
  tpu_hlo_value num = add(m, k(m, 2.515517), mul(m, t, add(m, k(m, 0.802853),
                                                           mul(m, t, k(m, 0.010328)))));
  tpu_hlo_value den = add(m, k(m, 1), mul(m, t, add(m, k(m, 1.432788),
                                                    mul(m, t, add(m, k(m, 0.189269),
                                                                  mul(m, t, k(m, 0.001308)))))));
  tpu_hlo_value x = un(m, "negate", sub(m, t, dv(m, num, den)));
  for (int i = 0; i < 4; i++) {
    tpu_hlo_value u = mul(m, x, k(m, -M_SQRT1_2)), e = erfcx(m, u);
    tpu_hlo_value h = sub(m, sub(m, un(m, "log", mul(m, e, k(m, 0.5))), mul(m, u, u)), lp);
    x = sub(m, x, mul(m, h, mul(m, e, k(m, 1 / 0.79788456080286535588))));
  }
  tpu_hlo_value r = sel(m, upper, un(m, "negate", x), x);
  r = sel(m, cmp(m, "EQ", p, k(m, 0.5)), k(m, 0), r);
  r = sel(m, cmp(m, "EQ", p, k(m, 0)), k(m, -INFINITY), r);
  r = sel(m, cmp(m, "EQ", p, k(m, 1)), k(m, INFINITY), r);
  tpu_hlo_value outside = or_(m, cmp(m, "LT", p, k(m, 0)), cmp(m, "GT", p, k(m, 1)));
  return sel(m, or_(m, outside, isnan_(m, p)), k(m, NAN), r);
}

/* digamma with CPU's values at 0 (-inf at +0, inf at -0) and at negative integers (NaN). */
static tpu_hlo_value digamma(mx *m, tpu_hlo_value x) {
  tpu_hlo_value r = tpu_hlo_chlo_unary(m->h, "digamma", x);
  tpu_dtype bits = m->t == TPU_FLOAT64 ? TPU_INT64 : TPU_INT32;
  tpu_hlo_value negative_zero = cmp(m, "LT", tpu_hlo_bitcast(m->h, x, bits, x.rank, x.dims),
                                    tpu_hlo_full(m->h, bits, "0", &x));
  tpu_hlo_value at_zero = sel(m, negative_zero, k(m, INFINITY), k(m, -INFINITY));
  tpu_hlo_value pole = and_(m, cmp(m, "LT", x, k(m, 0)), cmp(m, "EQ", x, un(m, "floor", x)));
  r = sel(m, pole, k(m, NAN), r);
  return sel(m, cmp(m, "EQ", x, k(m, 0)), at_zero, r);
}

/* polygamma(n, x) with CPU's values at the edges the CHLO form leaves to its own choice. */
static tpu_hlo_value polygamma(mx *m, tpu_hlo_value n, tpu_hlo_value x) {
  tpu_hlo_value r = tpu_hlo_chlo_binary(m->h, "polygamma", n, x);
  tpu_hlo_value n0 = cmp(m, "EQ", n, k(m, 0)), n1 = cmp(m, "EQ", n, k(m, 1));
  /* the poles (integers x <= 0): +-inf by the order's parity (CHLO gives NaN); CPU's trigamma
   * reaches only 0 exactly, its reflection giving large finite values at the other ones */
  tpu_hlo_value odd = cmp(m, "NE", un(m, "floor", mul(m, n, k(m, 0.5))), mul(m, n, k(m, 0.5)));
  tpu_hlo_value signed_inf = sel(m, odd, k(m, INFINITY), k(m, -INFINITY));
  tpu_hlo_value pole = and_(m, cmp(m, "LE", x, k(m, 0)), cmp(m, "EQ", x, un(m, "floor", x)));
  pole = and_(m, pole, or_(m, cmp(m, "EQ", x, k(m, 0)), cmp(m, "GT", n, k(m, 1))));
  r = sel(m, pole, signed_inf, r);
  r = sel(m, n0, digamma(m, x), r);
  /* at +inf: psi = inf, psi' = 0, higher orders NaN (CPU's zeta of an infinite q) */
  tpu_hlo_value at_inf = sel(m, n0, k(m, INFINITY), sel(m, n1, k(m, 0), k(m, NAN)));
  r = sel(m, cmp(m, "EQ", x, k(m, INFINITY)), at_inf, r);
  /* at -inf: psi and psi' NaN, higher orders +-inf by the order's parity */
  tpu_hlo_value at_minus_inf = sel(m, or_(m, n0, n1), k(m, NAN), signed_inf);
  r = sel(m, cmp(m, "EQ", x, k(m, -INFINITY)), at_minus_inf, r);
  return r;
}

/* Hurwitz zeta, NaN at an infinite x or q (CPU's). */
static tpu_hlo_value zeta(mx *m, tpu_hlo_value x, tpu_hlo_value q) {
  tpu_hlo_value r = tpu_hlo_chlo_binary(m->h, "zeta", x, q);
  tpu_hlo_value inf_x = and_(m, cmp(m, "EQ", x, k(m, INFINITY)), cmp(m, "GT", q, k(m, 1)));
  return sel(m, or_(m, inf_x, cmp(m, "EQ", q, k(m, INFINITY))), k(m, NAN), r);
}

/* The special functions, in float64. */
static tpu_hlo_value emit_special(mx *m, tpu_op_id op, const tpu_hlo_value *x,
                                  tpu_hlo_value s0) {
  switch (op) {
  case TPU_OP_LGAMMA: return tpu_hlo_chlo_unary(m->h, "lgamma", x[0]);
  case TPU_OP_DIGAMMA: return digamma(m, x[0]);
  case TPU_OP_POLYGAMMA: return polygamma(m, s0, x[0]);
  case TPU_OP_ZETA: return zeta(m, x[0], x[1]);
  case TPU_OP_I0: return bessel(m, x[0], 0, false);
  case TPU_OP_I0E: return bessel(m, x[0], 0, true);
  case TPU_OP_I1: return bessel(m, x[0], 1, false);
  case TPU_OP_I1E: return bessel(m, x[0], 1, true);
  case TPU_OP_ERFCX: return erfcx(m, x[0]);
  case TPU_OP_LOG_NDTR: return log_ndtr(m, x[0]);
  case TPU_OP_NDTRI: return ndtri(m, x[0]);
  default: return x[0];
  }
}

static bool is_special(tpu_op_id op) {
  switch (op) {
  case TPU_OP_LGAMMA: case TPU_OP_DIGAMMA: case TPU_OP_POLYGAMMA: case TPU_OP_ZETA:
  case TPU_OP_I0: case TPU_OP_I0E: case TPU_OP_I1: case TPU_OP_I1E: case TPU_OP_ERFCX:
  case TPU_OP_LOG_NDTR: case TPU_OP_NDTRI:
    return true;
  default:
    return false;
  }
}

/* fmax, fmin, heaviside, signbit: also on integers and bool. */
static tpu_hlo_value emit_any(mx *m, const tpu_op_call *call, const tpu_hlo_value *x) {
  tpu_hlo_value a = x[0], b = call->n_inputs > 1 ? x[1] : x[0];
  bool floating = tpu_dtype_is_floating(m->t), boolean = m->t == TPU_BOOL;
  switch (call->op) {
  case TPU_OP_FMAX: case TPU_OP_FMIN: {
    bool max = call->op == TPU_OP_FMAX;
    if (boolean)
      return tpu_hlo_binary(m->h, max ? "or" : "and", a, b);
    tpu_hlo_value r = tpu_hlo_binary(m->h, max ? "maximum" : "minimum", a, b);
    if (!floating)
      return r;
    r = sel(m, isnan_(m, b), a, r);
    return sel(m, isnan_(m, a), b, r);
  }
  case TPU_OP_HEAVISIDE: {
    if (boolean)
      return or_(m, a, b);
    tpu_hlo_value zero = tpu_hlo_full(m->h, m->t, floating ? "0.0" : "0", &a);
    return sel(m, cmp(m, "EQ", a, zero), b, tpu_hlo_convert(m->h, cmp(m, "GT", a, zero), m->t));
  }
  case TPU_OP_SIGNBIT: {
    if (boolean)
      return cmp(m, "NE", a, a);
    if (!floating)
      return cmp(m, "LT", a, tpu_hlo_full(m->h, m->t, "0", &a));
    tpu_dtype bits = m->t == TPU_FLOAT64 ? TPU_INT64 : TPU_INT32;
    return cmp(m, "LT", tpu_hlo_bitcast(m->h, a, bits, a.rank, a.dims),
               tpu_hlo_full(m->h, bits, "0", &a));
  }
  default: return a;
  }
}

/* The float ops CPU computes in the dtype itself (float in float). */
static tpu_hlo_value emit_float(mx *m, const tpu_op_call *call, const tpu_hlo_value *x) {
  tpu_hlo_value a = x[0], b = call->n_inputs > 1 ? x[1] : x[0];
  switch (call->op) {
  case TPU_OP_ACOSH: return tpu_hlo_chlo_unary(m->h, "acosh", a);
  case TPU_OP_ASINH: return tpu_hlo_chlo_unary(m->h, "asinh", a);
  case TPU_OP_ATANH: return tpu_hlo_chlo_unary(m->h, "atanh", a);
  case TPU_OP_SINC: {
    tpu_hlo_value pa = mul(m, k(m, M_PI), a);
    return sel(m, cmp(m, "EQ", a, k(m, 0)), k(m, 1), dv(m, un(m, "sine", pa), pa));
  }
  case TPU_OP_ANGLE:
    return sel(m, isnan_(m, a), a, sel(m, cmp(m, "LT", a, k(m, 0)), k(m, M_PI), k(m, 0)));
  case TPU_OP_ENTR: {
    tpu_hlo_value r = sel(m, cmp(m, "EQ", a, k(m, 0)), k(m, 0), k(m, -INFINITY));
    r = sel(m, cmp(m, "GT", a, k(m, 0)), un(m, "negate", mul(m, a, un(m, "log", a))), r);
    return sel(m, isnan_(m, a), a, r);
  }
  case TPU_OP_LOGADDEXP: case TPU_OP_LOGADDEXP2: {
    tpu_hlo_value d = un(m, "negate", un(m, "abs", sub(m, a, b))), r;
    if (call->op == TPU_OP_LOGADDEXP)
      r = un(m, "log_plus_one", un(m, "exponential", d));
    else
      r = mul(m, un(m, "log_plus_one", tpu_hlo_binary(m->h, "power", k(m, 2), d)),
              k(m, 1.44269504088896340736));
    r = add(m, larger(m, a, b), r);
    return sel(m, and_(m, cmp(m, "EQ", a, b), isinf_(m, a)), a, r);
  }
  case TPU_OP_HYPOT: {
    tpu_hlo_value aa = un(m, "abs", a), ab = un(m, "abs", b);
    tpu_hlo_value big = larger(m, aa, ab), small = sel(m, cmp(m, "GT", aa, ab), ab, aa);
    tpu_hlo_value ratio = dv(m, small, big);
    tpu_hlo_value r = mul(m, big, un(m, "sqrt", add(m, k(m, 1), mul(m, ratio, ratio))));
    r = sel(m, cmp(m, "EQ", big, k(m, 0)), k(m, 0), r);
    r = sel(m, or_(m, isnan_(m, a), isnan_(m, b)), add(m, a, b), r);
    return sel(m, or_(m, isinf_(m, a), isinf_(m, b)), k(m, INFINITY), r);
  }
  case TPU_OP_XLOGY: case TPU_OP_XLOG1PY: {
    tpu_hlo_value l = un(m, call->op == TPU_OP_XLOGY ? "log" : "log_plus_one", b);
    tpu_hlo_value r = sel(m, cmp(m, "EQ", a, k(m, 0)), k(m, 0), mul(m, a, l));
    return sel(m, isnan_(m, b), k(m, NAN), r);
  }
  default: return a;
  }
}

tpu_hlo_value tpu_pjrt_ew_math_emit(tpu_hlo *h, const tpu_op_call *call, tpu_dtype work,
                                    const tpu_hlo_value *x, tpu_pjrt_scalar_fn scalar, void *ctx) {
  mx m = {.h = h, .t = work, .like = x[0]};
  m.like.elem = work;
  if (call->op == TPU_OP_NEXTAFTER) { /* in the compute dtype's own precision */
    tpu_hlo_value a = tpu_hlo_convert(h, x[0], call->compute);
    tpu_hlo_value b = tpu_hlo_convert(h, x[1], call->compute);
    return tpu_hlo_convert(h, tpu_hlo_chlo_binary(h, "next_after", a, b), work);
  }
  if (!is_special(call->op)) {
    if (call->op == TPU_OP_FMAX || call->op == TPU_OP_FMIN || call->op == TPU_OP_HEAVISIDE ||
        call->op == TPU_OP_SIGNBIT)
      return emit_any(&m, call, x);
    return emit_float(&m, call, x);
  }
  mx d = {.h = h, .t = TPU_FLOAT64, .like = x[0]};
  d.like.elem = TPU_FLOAT64;
  tpu_hlo_value wide[2];
  wide[0] = tpu_hlo_convert(h, x[0], TPU_FLOAT64);
  wide[1] = call->n_inputs > 1 ? tpu_hlo_convert(h, x[1], TPU_FLOAT64) : wide[0];
  tpu_hlo_value s0 = wide[0];
  if (call->op == TPU_OP_POLYGAMMA)
    s0 = tpu_hlo_splat(h, tpu_hlo_convert(h, scalar(ctx, 0, true), TPU_FLOAT64), &d.like);
  return tpu_hlo_convert(h, emit_special(&d, call->op, wide, s0), work);
}
