/* The special family (ops/tpu_ops_special.h) in StableHLO, computing in the compute dtype with the
 * host kernel's formulas (drivers/host/kernels/special/special_math.h): every range's expansion
 * evaluated for every element and the one CPU takes selected. The polynomials' recurrences and
 * the Airy series run as one while loop over the whole tensor, each element stepping while it
 * still has terms to go, so the loop runs as long as the longest element's. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "drivers/pjrt/tpu_pjrt_family.h"
#include "ops/tpu_special_coeffs.h"

static bool is_polynomial(tpu_op_id op) {
  return op >= TPU_OP_CHEBYSHEV_T && op <= TPU_OP_LEGENDRE_P;
}

static bool supports(const tpu_op_call *call) {
  if (call->op < TPU_OP_CHEBYSHEV_T || call->op > TPU_OP_SPHERICAL_BESSEL_J0)
    return false;
  if (call->n_inputs != (is_polynomial(call->op) ? 2 : 1) || call->n_outputs != 1)
    return false;
  if (call->compute != TPU_FLOAT32 && call->compute != TPU_FLOAT64)
    return false;
  const tpu_tensor *out = &call->tensors[call->n_inputs];
  for (int i = 0; i < call->n_inputs; i++) {
    const tpu_tensor *t = &call->tensors[i];
    if (t->ndim > out->ndim || tpu_dtype_is_complex(t->dtype))
      return false;
    for (int d = 0; d < t->ndim; d++) {
      int64_t size = t->sizes[d], want = out->sizes[out->ndim - t->ndim + d];
      if (size != want && size != 1)
        return false;
    }
  }
  return !tpu_dtype_is_complex(out->dtype);
}

/* ---- Emitting: values of one dims (the output's) in the compute dtype ---- */

typedef struct em {
  tpu_hlo *h;
  tpu_dtype e;       /* the compute dtype */
  tpu_hlo_value like; /* a value of the output's dims */
} em;

/* The constant v as the compute dtype rounds it (float32: v rounded to float first, as CPU's
 * T(v)), broadcast to the output's dims. */
static tpu_hlo_value num(em *s, double v) {
  char literal[40];
  if (isnan(v) || isinf(v)) {
    bool f32 = s->e == TPU_FLOAT32;
    snprintf(literal, sizeof literal, "%s",
             isnan(v) ? (f32 ? "0x7FC00000" : "0x7FF8000000000000")
             : v > 0  ? (f32 ? "0x7F800000" : "0x7FF0000000000000")
                      : (f32 ? "0xFF800000" : "0xFFF0000000000000"));
  } else if (s->e == TPU_FLOAT32) {
    snprintf(literal, sizeof literal, "%.9e", (double)(float)v);
  } else {
    snprintf(literal, sizeof literal, "%.17e", v);
  }
  return tpu_hlo_full(s->h, s->e, literal, &s->like);
}

/* a / b rounded as the compute dtype divides (CPU's T(a) / T(b)). */
static double ratio(const em *s, double a, double b) {
  return s->e == TPU_FLOAT32 ? (double)((float)a / (float)b) : a / b;
}

static tpu_hlo_value add(em *s, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_binary(s->h, "add", a, b);
}
static tpu_hlo_value sub(em *s, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_binary(s->h, "subtract", a, b);
}
static tpu_hlo_value mul(em *s, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_binary(s->h, "multiply", a, b);
}
static tpu_hlo_value dvd(em *s, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_binary(s->h, "divide", a, b);
}
static tpu_hlo_value un(em *s, const char *op, tpu_hlo_value a) {
  return tpu_hlo_unary(s->h, op, a);
}
static tpu_hlo_value cmp(em *s, const char *dir, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_compare(s->h, dir, a, b);
}
static tpu_hlo_value sel(em *s, tpu_hlo_value p, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_select(s->h, p, a, b);
}
static tpu_hlo_value and_(em *s, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_binary(s->h, "and", a, b);
}
static tpu_hlo_value not_(em *s, tpu_hlo_value a) { return tpu_hlo_unary(s->h, "not", a); }
static tpu_hlo_value is_nan(em *s, tpu_hlo_value a) { return cmp(s, "NE", a, a); }
static tpu_hlo_value i64(em *s, int64_t v) { return tpu_hlo_full_i64(s->h, v, &s->like); }
static tpu_hlo_value to_e(em *s, tpu_hlo_value a) { return tpu_hlo_convert(s->h, a, s->e); }

/* ---- Polynomials ---- */

/* How a recurrence steps: r = a q - p (CHEB), r = a q - k p (HERMITE), r = ((2k + a) q - k p) /
 * (k + 1) (LAGUERRE, a = 1 - x), r = ((2k + 1) a q - k p) / (k + 1) (LEGENDRE, a = x). */
typedef enum recurrence { CHEB, HERMITE, LAGUERRE, LEGENDRE } recurrence;

typedef struct loop_kind {
  tpu_dtype e;
  recurrence rec;
  int64_t step;  /* k's step */
  bool nan_stop; /* an element stops at a NaN term */
} loop_kind;

/* Carried: k (int64 scalar), p, q, a (compute dtype), the end of k (int64, exclusive). */
enum { K, P, Q, A, KEND, N_CARRIED };

/* Per element: whether it takes another step. */
static tpu_hlo_value stepping(tpu_hlo *h, const tpu_hlo_value *v, const loop_kind *lk) {
  em s = {h, lk->e, v[Q]};
  tpu_hlo_value k = tpu_hlo_splat(h, v[K], &v[KEND]);
  tpu_hlo_value go = cmp(&s, "LT", k, v[KEND]);
  return lk->nan_stop ? and_(&s, go, not_(&s, is_nan(&s, v[Q]))) : go;
}

static tpu_hlo_value poly_cond(tpu_hlo *h, const tpu_hlo_value *v, void *ctx) {
  tpu_hlo_value any = tpu_hlo_any(h, stepping(h, v, ctx));
  return tpu_hlo_compare(h, "NE", any, tpu_hlo_constant(h, TPU_UINT8, "0"));
}

static void poly_step(tpu_hlo *h, const tpu_hlo_value *v, tpu_hlo_value *r, void *ctx) {
  const loop_kind *lk = ctx;
  em s = {h, lk->e, v[Q]};
  tpu_hlo_value active = stepping(h, v, lk);
  /* k, 2k and 2k + 1, k + 1 as the compute dtype, from int64 (CPU's conversions). */
  tpu_hlo_value one = tpu_hlo_constant(h, TPU_INT64, "1");
  tpu_hlo_value k2 = tpu_hlo_binary(h, "add", v[K], v[K]);
  tpu_hlo_value kt = tpu_hlo_splat(h, tpu_hlo_convert(h, v[K], lk->e), &v[Q]);
  tpu_hlo_value k1t =
      tpu_hlo_splat(h, tpu_hlo_convert(h, tpu_hlo_binary(h, "add", v[K], one), lk->e), &v[Q]);
  tpu_hlo_value next;
  switch (lk->rec) {
  case CHEB:
    next = sub(&s, mul(&s, v[A], v[Q]), v[P]);
    break;
  case HERMITE:
    next = sub(&s, mul(&s, v[A], v[Q]), mul(&s, kt, v[P]));
    break;
  case LAGUERRE: {
    tpu_hlo_value k2t = tpu_hlo_splat(h, tpu_hlo_convert(h, k2, lk->e), &v[Q]);
    next = dvd(&s, sub(&s, mul(&s, add(&s, k2t, v[A]), v[Q]), mul(&s, kt, v[P])), k1t);
    break;
  }
  case LEGENDRE: {
    tpu_hlo_value odd = tpu_hlo_convert(h, tpu_hlo_binary(h, "add", k2, one), lk->e);
    tpu_hlo_value c = tpu_hlo_splat(h, odd, &v[Q]);
    next = dvd(&s, sub(&s, mul(&s, mul(&s, c, v[A]), v[Q]), mul(&s, kt, v[P])), k1t);
    break;
  }
  }
  char step[24];
  snprintf(step, sizeof step, "%lld", (long long)lk->step);
  r[K] = tpu_hlo_binary(h, "add", v[K], tpu_hlo_constant(h, TPU_INT64, step));
  r[P] = sel(&s, active, v[Q], v[P]);
  r[Q] = sel(&s, active, next, v[Q]);
  r[A] = v[A];
  r[KEND] = v[KEND];
}

/* q after running the recurrence from p = 1, q and k = k0 up to kend (exclusive) where `run`. */
static tpu_hlo_value recur(em *s, loop_kind lk, tpu_hlo_value run, int64_t k0, tpu_hlo_value q,
                           tpu_hlo_value a, tpu_hlo_value kend) {
  char first[24];
  snprintf(first, sizeof first, "%lld", (long long)k0);
  tpu_hlo_value init[N_CARRIED], out[N_CARRIED];
  init[K] = tpu_hlo_constant(s->h, TPU_INT64, first);
  init[P] = num(s, 1);
  init[Q] = q;
  init[A] = a;
  init[KEND] = sel(s, run, kend, i64(s, k0));
  tpu_hlo_while(s->h, N_CARRIED, init, poly_cond, poly_step, &lk, out);
  return out[Q];
}

/* v for an even n, -v for an odd one. */
static tpu_hlo_value alternate(em *s, tpu_hlo_value n, tpu_hlo_value v) {
  tpu_hlo_value even = cmp(s, "EQ", tpu_hlo_binary(s->h, "remainder", n, i64(s, 2)), i64(s, 0));
  return sel(s, even, v, un(s, "negate", v));
}

static tpu_hlo_value chebyshev(em *s, tpu_op_id op, tpu_hlo_value x, tpu_hlo_value n) {
  bool shifted = op >= TPU_OP_SHIFTED_CHEBYSHEV_T;
  int kind = (int)(op - (shifted ? TPU_OP_SHIFTED_CHEBYSHEV_T : TPU_OP_CHEBYSHEV_T)); /* TUVW */
  tpu_hlo_value one = num(s, 1), y = shifted ? sub(s, add(s, x, x), one) : x;
  tpu_hlo_value nt = to_e(s, n), n1t = to_e(s, add(s, n, i64(s, 1)));
  tpu_hlo_value odd = to_e(s, add(s, add(s, n, n), i64(s, 1)));
  /* The closed values at the ends: x == 1 and x == -1, or x == 1 and x == 0 shifted. */
  tpu_hlo_value hi = cmp(s, "EQ", x, one), lo = cmp(s, "EQ", x, num(s, shifted ? 0 : -1));
  const tpu_hlo_value hi_value[4] = {one, n1t, one, odd};
  const tpu_hlo_value lo_value[4] = {alternate(s, n, one), alternate(s, n, n1t),
                                     alternate(s, n, odd), alternate(s, n, one)};
  /* The trigonometric forms for |y| < 1 past a degree. */
  static const int unshifted_from[4] = {6, 8, 8, 8}, shifted_from[4] = {6, 6, 6, 4};
  int from = shifted ? shifted_from[kind] : unshifted_from[kind];
  tpu_hlo_value trig_range = and_(s, cmp(s, "GT", n, i64(s, from)),
                                  cmp(s, "LT", un(s, "abs", y), one));
  tpu_hlo_value t = tpu_hlo_chlo_unary(s->h, "acos", y), half = dvd(s, t, num(s, 2));
  tpu_hlo_value nh = mul(s, add(s, nt, num(s, 0.5)), t), trig;
  switch (kind) {
  case 0:
    trig = un(s, "cosine", mul(s, nt, t));
    break;
  case 1: {
    tpu_hlo_value st = un(s, "sine", t), a = mul(s, n1t, t);
    trig = sel(s, cmp(s, "NE", st, num(s, 0)), dvd(s, un(s, "sine", a), st),
               dvd(s, mul(s, n1t, un(s, "cosine", a)), y));
    break;
  }
  case 2:
    trig = sel(s, cmp(s, "NE", un(s, "sine", half), one),
               dvd(s, un(s, "cosine", nh), un(s, "cosine", half)), lo_value[2]);
    break;
  default: {
    tpu_hlo_value end = shifted ? lo_value[3] : sel(s, cmp(s, "GT", x, num(s, 0)), odd,
                                                   lo_value[3]);
    trig = sel(s, cmp(s, "NE", un(s, "cosine", half), one),
               dvd(s, un(s, "sine", nh), un(s, "sine", half)), end);
    break;
  }
  }
  /* Degree 1 and the recurrence's multiplier 2y. */
  tpu_hlo_value yy = add(s, y, y);
  const tpu_hlo_value first[4] = {y, yy, sub(s, yy, one), add(s, yy, one)};
  tpu_hlo_value closed = and_(s, cmp(s, "GE", n, i64(s, 0)), tpu_hlo_binary(s->h, "or", hi, lo));
  tpu_hlo_value early = tpu_hlo_binary(s->h, "or", closed, and_(s, cmp(s, "GE", n, i64(s, 0)),
                                                                 trig_range));
  tpu_hlo_value run = and_(s, cmp(s, "GE", n, i64(s, 2)), not_(s, early));
  loop_kind lk = {s->e, CHEB, 1, true};
  tpu_hlo_value r = recur(s, lk, run, 2, first[kind], yy, add(s, n, i64(s, 1)));
  r = sel(s, cmp(s, "EQ", n, i64(s, 1)), first[kind], r);
  r = sel(s, cmp(s, "EQ", n, i64(s, 0)), one, r);
  r = sel(s, trig_range, trig, r);
  r = sel(s, lo, lo_value[kind], r);
  r = sel(s, hi, hi_value[kind], r);
  return sel(s, cmp(s, "LT", n, i64(s, 0)), num(s, 0), r);
}

static tpu_hlo_value polynomial(em *s, tpu_op_id op, tpu_hlo_value x, tpu_hlo_value nf) {
  tpu_hlo_value n = tpu_hlo_cast(s->h, nf, TPU_INT64); /* x86's conversion, INT64_MIN for NaN */
  if (op <= TPU_OP_SHIFTED_CHEBYSHEV_W)
    return chebyshev(s, op, x, n);
  tpu_hlo_value one = num(s, 1), zero = num(s, 0), r;
  tpu_hlo_value n0 = cmp(s, "EQ", n, i64(s, 0)), n1 = cmp(s, "EQ", n, i64(s, 1));
  tpu_hlo_value many = cmp(s, "GE", n, i64(s, 2));
  switch (op) {
  case TPU_OP_HERMITE_H:
  case TPU_OP_HERMITE_HE: {
    bool h = op == TPU_OP_HERMITE_H;
    tpu_hlo_value first = h ? add(s, x, x) : x;
    int64_t limit = s->e == TPU_FLOAT32 ? 128 : 512;
    tpu_hlo_value over = cmp(s, "GT", n, i64(s, limit));
    loop_kind lk = {s->e, HERMITE, h ? 2 : 1, false};
    tpu_hlo_value run = and_(s, many, not_(s, over));
    r = recur(s, lk, run, h ? 2 : 1, first, first, h ? add(s, n, n) : n);
    r = sel(s, over, num(s, NAN), r);
    r = sel(s, n1, first, r);
    r = sel(s, n0, one, r);
    break;
  }
  case TPU_OP_LAGUERRE_L: {
    tpu_hlo_value x0 = cmp(s, "EQ", x, zero), first = sub(s, one, x);
    loop_kind lk = {s->e, LAGUERRE, 1, true};
    r = recur(s, lk, and_(s, many, not_(s, x0)), 1, first, first, n);
    r = sel(s, n1, first, r);
    r = sel(s, tpu_hlo_binary(s->h, "or", x0, n0), one, r);
    break;
  }
  default: { /* LEGENDRE_P */
    tpu_hlo_value ends = cmp(s, "EQ", un(s, "abs", x), one);
    loop_kind lk = {s->e, LEGENDRE, 1, true};
    r = recur(s, lk, and_(s, many, not_(s, ends)), 1, x, x, n);
    r = sel(s, n1, x, r);
    r = sel(s, n0, one, r);
    tpu_hlo_value up = tpu_hlo_binary(s->h, "or", cmp(s, "GT", x, zero),
                                      cmp(s, "EQ", tpu_hlo_binary(s->h, "remainder", n,
                                                                  i64(s, 2)),
                                          i64(s, 0)));
    r = sel(s, ends, sel(s, up, one, num(s, -1)), r);
    break;
  }
  }
  return sel(s, cmp(s, "LT", n, i64(s, 0)), zero, r);
}

/* ---- Bessel-family functions (coefficients in ops/tpu_special_coeffs.h) ---- */

/* c[0] z^(n-1) + ... + c[n-1] by Horner's rule. */
static tpu_hlo_value horner(em *s, const double *c, int n, tpu_hlo_value z) {
  tpu_hlo_value r = num(s, c[0]);
  for (int i = 1; i < n; i++)
    r = add(s, mul(s, r, z), num(s, c[i]));
  return r;
}

/* The Chebyshev series c (last term first) at z by Clenshaw's recurrence, halved. */
static tpu_hlo_value clenshaw(em *s, const double *c, int n, tpu_hlo_value z) {
  tpu_hlo_value b0 = num(s, c[0]), b1 = num(s, 0), b2 = b1;
  for (int i = 1; i < n; i++) {
    b2 = b1;
    b1 = b0;
    b0 = add(s, sub(s, mul(s, z, b1), b2), num(s, c[i]));
  }
  return mul(s, num(s, 0.5), sub(s, b0, b2));
}

#define LEN(name) (int)(sizeof TPU_SPECIAL_##name / sizeof(double))
#define H(name, z) horner(s, TPU_SPECIAL_##name, LEN(name), z)
#define C(name, z) clenshaw(s, TPU_SPECIAL_##name, LEN(name), z)

/* The Hankel asymptotic form of J (sine = false) or Y (sine = true) from P = p and Q = q. */
static tpu_hlo_value hankel(em *s, tpu_hlo_value x, tpu_hlo_value p, tpu_hlo_value q,
                            double shift, bool sine) {
  tpu_hlo_value phase = sub(s, x, num(s, shift));
  tpu_hlo_value c = un(s, "cosine", phase), sn = un(s, "sine", phase);
  tpu_hlo_value fq = mul(s, dvd(s, num(s, 5), x), q);
  tpu_hlo_value v =
      sine ? add(s, mul(s, p, sn), mul(s, fq, c)) : sub(s, mul(s, p, c), mul(s, fq, sn));
  return dvd(s, mul(s, v, num(s, TPU_SPECIAL_SQRT_2_PI)), un(s, "sqrt", x));
}

static tpu_hlo_value bessel_j0(em *s, tpu_hlo_value x) {
  x = un(s, "abs", x);
  tpu_hlo_value z = mul(s, x, x);
  tpu_hlo_value tiny = sub(s, num(s, 1), dvd(s, z, num(s, 4)));
  tpu_hlo_value small = dvd(s, mul(s, mul(s, sub(s, z, num(s, TPU_SPECIAL_J0_Z1SQ)),
                                             sub(s, z, num(s, TPU_SPECIAL_J0_Z2SQ))),
                                      H(J0_RP, z)),
                            H(J0_RQ, z));
  tpu_hlo_value w = dvd(s, num(s, 25), z);
  tpu_hlo_value big = hankel(s, x, dvd(s, H(J0_PP, w), H(J0_PQ, w)),
                             dvd(s, H(J0_QP, w), H(J0_QQ, w)), TPU_SPECIAL_PI_4, false);
  return sel(s, cmp(s, "LE", x, num(s, 5)), sel(s, cmp(s, "LT", x, num(s, 0.00001)), tiny, small),
             big);
}

/* J1 of x >= 0 (or NaN; -0.0 keeps its sign). */
static tpu_hlo_value bessel_j1_right(em *s, tpu_hlo_value x) {
  tpu_hlo_value z = mul(s, x, x);
  tpu_hlo_value small = mul(s, mul(s, mul(s, dvd(s, H(J1_RP, z), H(J1_RQ, z)), x),
                                   sub(s, z, num(s, TPU_SPECIAL_J1_Z1SQ))),
                            sub(s, z, num(s, TPU_SPECIAL_J1_Z2SQ)));
  tpu_hlo_value f = dvd(s, num(s, 5), x), w = mul(s, f, f);
  tpu_hlo_value big = hankel(s, x, dvd(s, H(J1_PP, w), H(J1_PQ, w)),
                             dvd(s, H(J1_QP, w), H(J1_QQ, w)), TPU_SPECIAL_3PI_4, false);
  return sel(s, cmp(s, "LE", x, num(s, 5)), small, big);
}

static tpu_hlo_value bessel_j1(em *s, tpu_hlo_value x) {
  tpu_hlo_value negative = cmp(s, "LT", x, num(s, 0));
  tpu_hlo_value r = bessel_j1_right(s, sel(s, negative, un(s, "negate", x), x));
  return sel(s, negative, un(s, "negate", r), r);
}

/* Y0 or Y1 from the small-argument value below 5 and the Hankel form beyond. */
static tpu_hlo_value y_of(em *s, tpu_hlo_value x, tpu_hlo_value small, tpu_hlo_value big) {
  tpu_hlo_value r = sel(s, cmp(s, "LT", x, num(s, 0)), num(s, NAN), small);
  r = sel(s, cmp(s, "EQ", x, num(s, 0)), num(s, -INFINITY), r);
  return sel(s, cmp(s, "LE", x, num(s, 5)), r, big);
}

static tpu_hlo_value bessel_y0(em *s, tpu_hlo_value x) {
  tpu_hlo_value z = mul(s, x, x);
  tpu_hlo_value log_term = mul(s, mul(s, num(s, TPU_SPECIAL_2_PI), un(s, "log", x)),
                               bessel_j0(s, x));
  tpu_hlo_value small = add(s, dvd(s, H(Y0_YP, z), H(Y0_YQ, z)), log_term);
  tpu_hlo_value w = dvd(s, num(s, 25), z);
  tpu_hlo_value big = hankel(s, x, dvd(s, H(J0_PP, w), H(J0_PQ, w)),
                             dvd(s, H(J0_QP, w), H(J0_QQ, w)), TPU_SPECIAL_PI_4, true);
  return y_of(s, x, small, big);
}

static tpu_hlo_value bessel_y1(em *s, tpu_hlo_value x) {
  tpu_hlo_value z = mul(s, x, x);
  tpu_hlo_value log_term = sub(s, mul(s, bessel_j1(s, x), un(s, "log", x)), dvd(s, num(s, 1), x));
  tpu_hlo_value small = add(s, mul(s, x, dvd(s, H(Y1_YP, z), H(Y1_YQ, z))),
                            mul(s, num(s, TPU_SPECIAL_2_PI), log_term));
  tpu_hlo_value f = dvd(s, num(s, 5), x), w = mul(s, f, f);
  tpu_hlo_value big = hankel(s, x, dvd(s, H(J1_PP, w), H(J1_PQ, w)),
                             dvd(s, H(J1_QP, w), H(J1_QQ, w)), TPU_SPECIAL_3PI_4, true);
  return y_of(s, x, small, big);
}

static tpu_hlo_value bessel_i0(em *s, tpu_hlo_value x) {
  tpu_hlo_value a = un(s, "abs", x), e = un(s, "exponential", a);
  tpu_hlo_value small = mul(s, e, C(I0_A, sub(s, dvd(s, a, num(s, 2)), num(s, 2))));
  tpu_hlo_value big = dvd(s, mul(s, e, C(I0_B, sub(s, dvd(s, num(s, 32), a), num(s, 2)))),
                          un(s, "sqrt", a));
  return sel(s, cmp(s, "LE", a, num(s, 8)), small, big);
}

static tpu_hlo_value bessel_i1(em *s, tpu_hlo_value x) {
  tpu_hlo_value a = un(s, "abs", x), e = un(s, "exponential", a);
  tpu_hlo_value small = mul(s, mul(s, C(I1_A, sub(s, dvd(s, a, num(s, 2)), num(s, 2))), a), e);
  tpu_hlo_value big = dvd(s, mul(s, e, C(I1_B, sub(s, dvd(s, num(s, 32), a), num(s, 2)))),
                          un(s, "sqrt", a));
  tpu_hlo_value v = sel(s, cmp(s, "LE", a, num(s, 8)), small, big);
  return sel(s, cmp(s, "LT", x, num(s, 0)), un(s, "negate", v), v);
}

/* K0 or K1 of x from its value v for x > 0: inf at 0, NaN below. */
static tpu_hlo_value k_of(em *s, tpu_hlo_value x, tpu_hlo_value v) {
  tpu_hlo_value r = sel(s, cmp(s, "LT", x, num(s, 0)), num(s, NAN), v);
  return sel(s, cmp(s, "EQ", x, num(s, 0)), num(s, INFINITY), r);
}

/* Beyond 2: the series in 8/x - 2, over sqrt(x), times e^-x unless `scaled`. */
static tpu_hlo_value k_tail(em *s, tpu_hlo_value x, tpu_hlo_value series, bool scaled) {
  if (!scaled)
    series = mul(s, un(s, "exponential", un(s, "negate", x)), series);
  return dvd(s, series, un(s, "sqrt", x));
}

static tpu_hlo_value bessel_k0(em *s, tpu_hlo_value x, bool scaled) {
  tpu_hlo_value series = C(K0_A, sub(s, mul(s, x, x), num(s, 2))), small;
  if (scaled) {
    tpu_hlo_value lg = un(s, "log", mul(s, num(s, 0.5), x));
    small = mul(s, sub(s, series, mul(s, lg, bessel_i0(s, x))), un(s, "exponential", x));
  } else {
    /* CPU takes this logarithm of a double 0.5 x, and the difference in double. */
    em d = {s->h, TPU_FLOAT64, tpu_hlo_convert(s->h, x, TPU_FLOAT64)};
    tpu_hlo_value lg = un(&d, "log", mul(&d, num(&d, 0.5), d.like));
    tpu_hlo_value v = sub(&d, tpu_hlo_convert(s->h, series, TPU_FLOAT64),
                          mul(&d, lg, tpu_hlo_convert(s->h, bessel_i0(s, x), TPU_FLOAT64)));
    small = tpu_hlo_convert(s->h, v, s->e);
  }
  tpu_hlo_value big = k_tail(s, x, C(K0_B, sub(s, dvd(s, num(s, 8), x), num(s, 2))), scaled);
  return k_of(s, x, sel(s, cmp(s, "LE", x, num(s, 2)), small, big));
}

static tpu_hlo_value bessel_k1(em *s, tpu_hlo_value x, bool scaled) {
  tpu_hlo_value v = add(s, mul(s, un(s, "log", mul(s, num(s, 0.5), x)), bessel_i1(s, x)),
                        dvd(s, C(K1_A, sub(s, mul(s, x, x), num(s, 2))), x));
  tpu_hlo_value small = scaled ? mul(s, v, un(s, "exponential", x)) : v;
  tpu_hlo_value big = k_tail(s, x, C(K1_B, sub(s, dvd(s, num(s, 8), x), num(s, 2))), scaled);
  return k_of(s, x, sel(s, cmp(s, "LE", x, num(s, 2)), small, big));
}

static tpu_hlo_value spherical_j0(em *s, tpu_hlo_value x) {
  static const double denominators[6] = {6, 120, 5040, 362880, 39916800, 6227020800};
  tpu_hlo_value z = mul(s, x, x), series = num(s, ratio(s, 1, denominators[5]));
  for (int i = 4; i >= 0; i--)
    series = add(s, num(s, ratio(s, i % 2 ? 1 : -1, denominators[i])), mul(s, z, series));
  series = add(s, num(s, 1), mul(s, z, series));
  tpu_hlo_value r = sel(s, cmp(s, "LT", un(s, "abs", x), num(s, 0.5)), series,
                        dvd(s, un(s, "sine", x), x));
  return sel(s, cmp(s, "EQ", un(s, "abs", x), num(s, INFINITY)), num(s, 0), r);
}

/* The Airy series' state: f, g, k, m, n, t, z as special_math.h names them. */
enum { AF, AG, AK, AM, AN_, AT, AZ, AIRY_CARRIED };

static tpu_hlo_value airy_active(em *s, const tpu_hlo_value *v) {
  double eps = s->e == TPU_FLOAT32 ? 0x1p-23 : 0x1p-52;
  return cmp(s, "GT", v[AT], num(s, eps));
}

static tpu_hlo_value airy_cond(tpu_hlo *h, const tpu_hlo_value *v, void *ctx) {
  em s = {h, *(const tpu_dtype *)ctx, v[AF]};
  tpu_hlo_value any = tpu_hlo_any(h, airy_active(&s, v));
  return tpu_hlo_compare(h, "NE", any, tpu_hlo_constant(h, TPU_UINT8, "0"));
}

static void airy_step(tpu_hlo *h, const tpu_hlo_value *v, tpu_hlo_value *r, void *ctx) {
  em s = {h, *(const tpu_dtype *)ctx, v[AF]};
  tpu_hlo_value active = airy_active(&s, v), one = num(&s, 1);
  tpu_hlo_value m = mul(&s, v[AM], v[AZ]), k = add(&s, v[AK], one);
  m = dvd(&s, m, k);
  tpu_hlo_value n = mul(&s, v[AN_], v[AZ]);
  k = add(&s, k, one);
  n = dvd(&s, n, k);
  m = dvd(&s, m, k);
  tpu_hlo_value f = add(&s, v[AF], m);
  k = add(&s, k, one);
  n = dvd(&s, n, k);
  tpu_hlo_value g = add(&s, v[AG], n);
  tpu_hlo_value t = un(&s, "abs", dvd(&s, m, f));
  const tpu_hlo_value next[AIRY_CARRIED] = {f, g, k, m, n, t, v[AZ]};
  for (int i = 0; i < AIRY_CARRIED; i++)
    r[i] = i == AZ ? v[AZ] : sel(&s, active, next[i], v[i]);
}

static tpu_hlo_value airy_ai(em *s, tpu_hlo_value x) {
  tpu_hlo_value one = num(s, 1);
  /* Below -2.09. */
  tpu_hlo_value neg = un(s, "negate", x), root = un(s, "sqrt", neg);
  tpu_hlo_value sv = dvd(s, mul(s, mul(s, num(s, -2), x), root), num(s, 3));
  tpu_hlo_value z = dvd(s, one, sv), zz = mul(s, z, z);
  tpu_hlo_value t = add(s, sv, mul(s, num(s, 0.25), num(s, 3.14159265358979323846)));
  tpu_hlo_value f = add(s, one, dvd(s, mul(s, zz, H(AIRY_AFN, zz)), H(AIRY_AFD, zz)));
  tpu_hlo_value g = dvd(s, mul(s, z, H(AIRY_AGN, zz)), H(AIRY_AGD, zz));
  tpu_hlo_value left = mul(s, dvd(s, num(s, TPU_SPECIAL_1_SQRT_PI), un(s, "sqrt", root)),
                           sub(s, mul(s, un(s, "sine", t), f), mul(s, un(s, "cosine", t), g)));
  /* From 2.09. */
  tpu_hlo_value zeta = dvd(s, mul(s, mul(s, num(s, 2), x), un(s, "sqrt", x)), num(s, 3));
  tpu_hlo_value w = dvd(s, one, zeta);
  tpu_hlo_value right = dvd(s, mul(s, num(s, TPU_SPECIAL_1_SQRT_PI),
                                   dvd(s, H(AIRY_AN, w), H(AIRY_AD, w))),
                            mul(s, mul(s, num(s, 2), un(s, "sqrt", un(s, "sqrt", x))),
                                un(s, "exponential", zeta)));
  /* Between, the series; other elements start it finished. */
  tpu_hlo_value is_left = cmp(s, "LT", x, num(s, -2.09)), is_right = cmp(s, "GE", x, num(s, 2.09));
  tpu_hlo_value series_range = not_(s, tpu_hlo_binary(s->h, "or", is_left, is_right));
  tpu_hlo_value init[AIRY_CARRIED] = {one, x, one, one, x, sel(s, series_range, one, num(s, 0)),
                                      mul(s, mul(s, x, x), x)},
                out[AIRY_CARRIED];
  tpu_hlo_while(s->h, AIRY_CARRIED, init, airy_cond, airy_step, &s->e, out);
  tpu_hlo_value mid = sub(s, mul(s, num(s, TPU_SPECIAL_AIRY_C1), out[AF]),
                          mul(s, num(s, TPU_SPECIAL_AIRY_C2), out[AG]));
  tpu_hlo_value r = sel(s, is_left, left, sel(s, is_right, right, mid));
  r = sel(s, cmp(s, "GT", x, num(s, 103.892)), num(s, 0), r);
  return sel(s, cmp(s, "EQ", un(s, "abs", x), num(s, INFINITY)), num(s, NAN), r);
}

#undef LEN
#undef H
#undef C

static tpu_hlo_value special(em *s, tpu_op_id op, tpu_hlo_value x) {
  switch (op) {
  case TPU_OP_AIRY_AI: return airy_ai(s, x);
  case TPU_OP_BESSEL_J0: return bessel_j0(s, x);
  case TPU_OP_BESSEL_J1: return bessel_j1(s, x);
  case TPU_OP_BESSEL_Y0: return bessel_y0(s, x);
  case TPU_OP_BESSEL_Y1: return bessel_y1(s, x);
  case TPU_OP_MODIFIED_BESSEL_I0: return bessel_i0(s, x);
  case TPU_OP_MODIFIED_BESSEL_I1: return bessel_i1(s, x);
  case TPU_OP_MODIFIED_BESSEL_K0: return bessel_k0(s, x, false);
  case TPU_OP_MODIFIED_BESSEL_K1: return bessel_k1(s, x, false);
  case TPU_OP_SCALED_MODIFIED_BESSEL_K0: return bessel_k0(s, x, true);
  case TPU_OP_SCALED_MODIFIED_BESSEL_K1: return bessel_k1(s, x, true);
  default: return spherical_j0(s, x);
  }
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)scalar;
  (void)ctx;
  (void)bad;
  const tpu_tensor *o = &call->tensors[call->n_inputs];
  tpu_hlo_value x[2];
  for (int i = 0; i < call->n_inputs; i++) {
    int64_t bdims[TPU_MAX_DIMS];
    for (int d = 0; d < in[i].rank; d++)
      bdims[d] = o->ndim - in[i].rank + d;
    x[i] = tpu_hlo_broadcast(h, tpu_hlo_cast(h, in[i], call->compute), o->ndim, o->sizes, bdims);
  }
  em s = {h, call->compute, x[0]};
  out[0] = is_polynomial(call->op) ? polynomial(&s, call->op, x[0], x[1])
                                   : special(&s, call->op, x[0]);
}

const tpu_pjrt_family tpu_pjrt_special_family = {.supports = supports, .emit = emit};
