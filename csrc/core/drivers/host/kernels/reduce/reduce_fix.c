/* The slow paths of the variance and of p-norms (reduce.h: rk_fix_variance, rk_fix_norm). The
 * variance's outputs whose fast two-pass result came out infinite or NaN are computed again as
 * PyTorch CPU computes them, in double. The fast pass sums in float lanes for float inputs and
 * squares deviations in the input's precision, so values near the dtype's largest overflow there
 * (two float32 3e38 sum to inf) where CPU's double Welford does not. A p-norm that came out
 * infinite from finite inputs is computed again scaled by the largest |x|, and a product that
 * came out NaN from inputs without NaN (a partial product overflowed, then met a zero) from the
 * count of zeros, infinities and signs. Only outputs that came out non-finite are redone, so
 * normal inputs pay one read of the outputs. */
#include <math.h>
#include <string.h>

#include "drivers/host/engine/engine_iter.h"
#include "drivers/host/engine/engine_pool.h"
#include "drivers/host/kernels/reduce/reduce.h"

/* Values loaded per call of the plan's loader. */
#define FIX_RUN 256

/* The reduced elements of the output whose input block starts at `base`, in the plan's order
 * (innermost reduced dimension first), as double; fn(state, x) per element. */
typedef void (*fix_fn)(double *state, double x);

static void walk(const rk_plan *pl, const char *base, double *state, fix_fn fn) {
  const rk_dims *r = &pl->red;
  int64_t outer = pl->n_red / r->shape[0];
  for (int64_t o = 0; o < outer; o++) {
    const char *p = base;
    for (int64_t d = 1, rest = o; d < r->nd; d++) {
      p += rest % r->shape[d] * r->stride[0][d];
      rest /= r->shape[d];
    }
    for (int64_t i = 0; i < r->shape[0]; i += FIX_RUN) {
      int64_t n = r->shape[0] - i < FIX_RUN ? r->shape[0] - i : FIX_RUN;
      _Alignas(64) union {
        float f[FIX_RUN];
        double d[FIX_RUN];
      } buf;
      pl->load(&buf, p + i * r->stride[0][0], n, r->stride[0][0]);
      if (pl->narrow)
        rk_narrow(buf.f, n, pl->spec->compute);
      for (int64_t k = 0; k < n; k++)
        fn(state, pl->cls == RK_F ? (double)buf.f[k] : buf.d[k]);
    }
  }
}

/* Welford's update, as PyTorch's WelfordOps: state = {mean, m2, count}. */
static void welford(double *s, double x) {
  s[2] += 1;
  double delta = x - s[0];
  s[0] += delta / s[2];
  s[1] += delta * (x - s[0]);
}

/* CPU's single-output path for float64 (std_var_all_cpu): a plain sum for the mean, then the sum
 * of squared deviations from it; state = {mean, sum}. */
static void sum(double *s, double x) { s[1] += x; }
static void sum_sq_dev(double *s, double x) { s[1] += (x - s[0]) * (x - s[0]); }

/* Reads element `p` of floating dtype dt as double. */
static double load_out(tpu_dtype dt, const char *p) {
  double v;
  rk_loader(dt, RK_D, false)(&v, p, 1, 0);
  return v;
}

/* The byte offsets of output o's input block and of its elements in the outputs. */
static void offsets(const rk_plan *pl, int64_t o, int64_t off[RK_OPS]) {
  const rk_dims *k = &pl->kept;
  for (int op = 0; op < RK_OPS; op++)
    off[op] = 0;
  for (int64_t d = 0, rest = o; d < k->nd; d++) {
    for (int op = 0; op < RK_OPS; op++)
      off[op] += rest % k->shape[d] * k->stride[op][d];
    rest /= k->shape[d];
  }
}

static void fix_chunk(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  const rk_plan *pl = ctx;
  const double n = (double)pl->n_red, corr = pl->spec->p;
  /* var and std of a float64 input down to one value take CPU's std_var_all_cpu: a plain mean,
   * which can overflow, then squared deviations. Everything else is CPU's Welford in double
   * (float32's std_var_all_cpu overflows in its float32 mean: the exact result is kept there). */
  const bool plain = pl->nout == 1 && pl->n_out == 1 && pl->cls == RK_D;
  for (int64_t o = begin; o < end; o++) {
    int64_t off[RK_OPS];
    offsets(pl, o, off);
    char *o0 = pl->out[0] + off[1], *o1 = pl->out[1] + off[2];
    if (isfinite(load_out(pl->out_dtype[0], o0)) &&
        (pl->nout == 1 || isfinite(load_out(pl->out_dtype[1], o1))))
      continue;
    double s[3] = {0, 0, 0}, mean, m2;
    if (plain) {
      walk(pl, pl->in + off[0], s, sum);
      s[0] = s[1] / n, s[1] = 0;
      walk(pl, pl->in + off[0], s, sum_sq_dev);
    } else {
      walk(pl, pl->in + off[0], s, welford);
    }
    mean = s[0], m2 = s[1];
    double var = m2 / (n > corr ? n - corr : 0);
    rk_store(pl->out_dtype[0], o0, false, 0, pl->spec->sqrt ? sqrt(var) : var);
    if (pl->nout == 2)
      rk_store(pl->out_dtype[1], o1, false, 0, mean);
  }
}

void rk_fix_variance(const rk_plan *pl) {
  if (pl->n_red == 0)
    return; /* no element: the fast result (NaN) is CPU's */
  int64_t grain = TPU_ITER_GRAIN / pl->n_red;
  tpu_parallel_for(pl->n_out, grain > 1 ? grain : 1, fix_chunk, (void *)pl);
}

/* A single-output slow path: recomputes one output (at o0) from its input block `in`. */
typedef void (*redo_fn)(const rk_plan *pl, const char *in, char *o0);

typedef struct redo {
  const rk_plan *pl;
  bool (*needs)(double fast); /* whether the fast result calls for the slow path */
  redo_fn fn;
} redo;

static void redo_chunk(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  const redo *r = ctx;
  for (int64_t o = begin; o < end; o++) {
    int64_t off[RK_OPS];
    offsets(r->pl, o, off);
    char *o0 = r->pl->out[0] + off[1];
    if (r->needs(load_out(r->pl->out_dtype[0], o0)))
      r->fn(r->pl, r->pl->in + off[0], o0);
  }
}

static void redo_outputs(const rk_plan *pl, bool (*needs)(double), redo_fn fn) {
  redo r = {pl, needs, fn};
  int64_t grain = TPU_ITER_GRAIN / pl->n_red;
  tpu_parallel_for(pl->n_out, grain > 1 ? grain : 1, redo_chunk, &r);
}

/* The p-norm's slow path: state = {largest |x|, sum of (|x| / largest)^p, p}. */
static void largest(double *s, double x) { s[0] = fmax(s[0], fabs(x)); }
static void scaled_pow(double *s, double x) { s[1] += pow(fabs(x) / s[0], s[2]); }
static bool infinite(double fast) { return isinf(fast); }

static void norm_one(const rk_plan *pl, const char *in, char *o0) {
  double s[3] = {0, 0, pl->spec->fin == RK_SQRT ? 2 : pl->spec->p};
  walk(pl, in, s, largest);
  if (!isfinite(s[0]) || s[0] == 0)
    return; /* an infinite element: the norm is infinite */
  walk(pl, in, s, scaled_pow);
  rk_store(pl->out_dtype[0], o0, false, 0, s[0] * pow(s[1], 1 / s[2]));
}

void rk_fix_norm(const rk_plan *pl) {
  if (pl->n_red > 0 && (pl->spec->fin == RK_SQRT || pl->spec->p > 0))
    redo_outputs(pl, infinite, norm_one);
}

/* The product's slow path: state = {NaNs, zeros, infinities, negatives, sum of log|x|}. */
static void census(double *s, double x) {
  if (isnan(x)) {
    s[0] += 1;
    return;
  }
  s[1] += x == 0, s[2] += isinf(x) != 0, s[3] += signbit(x) != 0; /* isinf(-inf) may be -1 */
  if (x != 0 && !isinf(x))
    s[4] += log(fabs(x));
}

static bool not_a_number(double fast) { return isnan(fast); }

static void prod_one(const rk_plan *pl, const char *in, char *o0) {
  double s[5] = {0, 0, 0, 0, 0};
  walk(pl, in, s, census);
  if (s[0] > 0 || (s[1] > 0 && s[2] > 0))
    return; /* a NaN, or zero times infinity: NaN is the product */
  const double sign = fmod(s[3], 2) ? -1.0 : 1.0;
  const double magnitude = s[1] > 0 ? 0 : s[2] > 0 ? INFINITY : exp(s[4]);
  rk_store(pl->out_dtype[0], o0, false, 0, sign * magnitude);
}

void rk_fix_prod(const rk_plan *pl) {
  if (pl->n_red > 0 && pl->cls != RK_I && !tpu_dtype_is_complex(pl->spec->compute))
    redo_outputs(pl, not_a_number, prod_one);
}
