/* The linalg family (ops/tpu_ops_linalg.h) in StableHLO. CHOLESKY is stablehlo.cholesky with the
 * other triangle zeroed; XLA fills a failed factor with NaN whole, so info comes from a while loop
 * of potf2's elimination that runs only for matrices whose factor is not finite.
 * TRIANGULAR_SOLVE is stablehlo.triangular_solve.
 * StableHLO has no LU and XLA's CPU plugin expands none, so LU_FACTOR is LAPACK's unblocked
 * algorithm (getf2) unrolled, one step per column, each a masked pivot search, row swap, scaling
 * and rank-1 update over whole matrices; LU_SOLVE applies the row swaps the same way around two
 * triangular solves. Unrolled, they are refused past TPU_PJRT_LINALG_MAX_STEPS steps (the driver
 * fallback runs them). EIGH is refused: XLA's Eigh expansion is a Jacobi method whose eigenvectors
 * differ from LAPACK's in sign and in the order of ties. */
#include <stdio.h>

#include "drivers/pjrt/tpu_pjrt_family.h"

/* The most columns LU_FACTOR unrolls, and rows LU_SOLVE swaps: each step is a few whole-matrix
 * ops, so a program grows with the order. */
#define TPU_PJRT_LINALG_MAX_STEPS 64

/* The error of an LU_SOLVE whose pivots are out of range, on every driver. */
#define TPU_LU_SOLVE_BAD_PIVOT "lu_solve: a pivot is out of range [1, n]"

/* Whether t holds nonempty float32 or float64 matrices. */
static bool matrices(const tpu_tensor *t) {
  return t->ndim >= 2 && (t->dtype == TPU_FLOAT32 || t->dtype == TPU_FLOAT64) &&
         tpu_tensor_numel(t) > 0;
}

static bool same_batch(const tpu_tensor *a, const tpu_tensor *b, int nb) {
  for (int d = 0; d < nb; d++)
    if (a->sizes[d] != b->sizes[d])
      return false;
  return true;
}

static bool supports(const tpu_op_call *call) {
  const tpu_tensor *a = &call->tensors[0];
  const int nb = a->ndim - 2;
  switch (call->op) {
  case TPU_OP_CHOLESKY: {
    if (call->n_inputs != 1 || call->n_outputs != 2 || !matrices(a))
      return false;
    const tpu_tensor *l = &call->tensors[1], *info = &call->tensors[2];
    return a->sizes[nb] == a->sizes[nb + 1] && tpu_tensor_same_sizes(a, l) &&
           l->dtype == a->dtype && info->ndim == nb && info->dtype == TPU_INT32 &&
           same_batch(a, info, nb);
  }
  case TPU_OP_TRIANGULAR_SOLVE: {
    if (call->n_inputs != 2 || call->n_outputs != 1 || !matrices(a))
      return false;
    const tpu_tensor *b = &call->tensors[1], *x = &call->tensors[2];
    const bool left = call->scalars[1].i != 0;
    return b->ndim == a->ndim && matrices(b) && b->dtype == a->dtype && x->dtype == a->dtype &&
           a->sizes[nb] == a->sizes[nb + 1] && b->sizes[left ? nb : nb + 1] == a->sizes[nb] &&
           same_batch(a, b, nb) && tpu_tensor_same_sizes(b, x);
  }
  case TPU_OP_LU_FACTOR: {
    if (call->n_inputs != 1 || call->n_outputs != 3 || !matrices(a))
      return false;
    const tpu_tensor *lu = &call->tensors[1], *piv = &call->tensors[2], *info = &call->tensors[3];
    const int64_t k = a->sizes[nb] < a->sizes[nb + 1] ? a->sizes[nb] : a->sizes[nb + 1];
    return k <= TPU_PJRT_LINALG_MAX_STEPS && tpu_tensor_same_sizes(a, lu) &&
           lu->dtype == a->dtype && piv->ndim == nb + 1 && piv->sizes[nb] == k &&
           piv->dtype == TPU_INT32 && same_batch(a, piv, nb) && info->ndim == nb &&
           info->dtype == TPU_INT32 && same_batch(a, info, nb);
  }
  case TPU_OP_LU_SOLVE: {
    if (call->n_inputs != 3 || call->n_outputs != 1 || !matrices(a))
      return false;
    const tpu_tensor *piv = &call->tensors[1], *b = &call->tensors[2], *x = &call->tensors[3];
    const int64_t n = a->sizes[nb];
    return n <= TPU_PJRT_LINALG_MAX_STEPS && a->sizes[nb + 1] == n && piv->ndim == nb + 1 &&
           piv->sizes[nb] == n && piv->dtype == TPU_INT32 && same_batch(a, piv, nb) &&
           b->ndim == a->ndim && matrices(b) && b->dtype == a->dtype && b->sizes[nb] == n &&
           same_batch(a, b, nb) && tpu_tensor_same_sizes(b, x) && x->dtype == a->dtype;
  }
  default:
    return false;
  }
}

/* A select of x where `keep`, else the constant literal. */
static tpu_hlo_value keep_or(tpu_hlo *h, tpu_hlo_value keep, tpu_hlo_value x,
                             const char *literal) {
  return tpu_hlo_select(h, keep, x, tpu_hlo_full(h, x.elem, literal, &x));
}

/* The zero of x's element type. */
static const char *zero_of(tpu_hlo_value x) { return tpu_dtype_is_floating(x.elem) ? "0.0" : "0"; }

/* Along dimension d (or the last two, from d, when `two`), the one element of x that pred picks
 * in each line: x where pred is true summed with zeros, x's dims without those. */
static tpu_hlo_value pick(tpu_hlo *h, tpu_hlo_value pred, tpu_hlo_value x, int d, bool two) {
  const int64_t dims[2] = {d, d + 1};
  tpu_hlo_value picked = keep_or(h, pred, x, zero_of(x));
  return tpu_hlo_reduce(h, picked, tpu_hlo_constant(h, x.elem, zero_of(x)), dims, two ? 2 : 1,
                        TPU_HLO_ADD);
}

/* x, of like's dims without dimension d (and d + 1 when `two`), broadcast back to like's. */
static tpu_hlo_value spread(tpu_hlo *h, tpu_hlo_value x, const tpu_hlo_value *like, int d,
                            bool two) {
  int64_t bdims[TPU_MAX_DIMS + 1];
  for (int i = 0, j = 0; i < like->rank; i++)
    if (i != d && !(two && i == d + 1))
      bdims[j++] = i;
  return tpu_hlo_broadcast(h, x, like->rank, like->dims, bdims);
}

static tpu_hlo_value both(tpu_hlo *h, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_binary(h, "and", a, b);
}

static tpu_hlo_value equals(tpu_hlo *h, tpu_hlo_value coordinate, int64_t v) {
  return tpu_hlo_compare(h, "EQ", coordinate, tpu_hlo_full_i64(h, v, &coordinate));
}

/* x with rows s and p swapped (row: x's coordinate along dimension d; p: per matrix, x's dims). */
static tpu_hlo_value swap_rows(tpu_hlo *h, tpu_hlo_value x, tpu_hlo_value row, int d, int64_t s,
                               tpu_hlo_value p) {
  tpu_hlo_value at_s = equals(h, row, s), at_p = tpu_hlo_compare(h, "EQ", row, p);
  tpu_hlo_value row_s = spread(h, pick(h, at_s, x, d, false), &x, d, false);
  tpu_hlo_value row_p = spread(h, pick(h, at_p, x, d, false), &x, d, false);
  return tpu_hlo_select(h, at_s, row_p, tpu_hlo_select(h, at_p, row_s, x));
}

/* One step of getf2 on column s: pivot search, swap, scaling and the rank-1 update of a; the
 * pivot's 0-based row (per matrix) into *pivot. */
static tpu_hlo_value lu_step(tpu_hlo *h, tpu_hlo_value a, tpu_hlo_value row, tpu_hlo_value col,
                             int64_t s, tpu_hlo_value *pivot) {
  const int nb = a.rank - 2;
  const int64_t m = a.dims[nb];
  /* The first row at or below s of the largest magnitude in column s (s when none compares:
   * NaN). */
  tpu_hlo_value in_col = both(h, equals(h, col, s),
                              tpu_hlo_compare(h, "GE", row, tpu_hlo_full_i64(h, s, &row)));
  tpu_hlo_value mag = keep_or(h, in_col, tpu_hlo_unary(h, "abs", a), "-1.0");
  tpu_hlo_value top = spread(h, tpu_hlo_reduce(h, mag, tpu_hlo_constant(h, a.elem, "-1.0"),
                                               (const int64_t[]){nb, nb + 1}, 2, TPU_HLO_MAX),
                             &a, nb, true);
  tpu_hlo_value rows = tpu_hlo_select(h, both(h, in_col, tpu_hlo_compare(h, "EQ", mag, top)),
                                      row, tpu_hlo_full_i64(h, m, &row));
  char none[24];
  snprintf(none, sizeof none, "%lld", (long long)m);
  tpu_hlo_value p = tpu_hlo_reduce(h, rows, tpu_hlo_constant(h, TPU_INT64, none),
                                   (const int64_t[]){nb, nb + 1}, 2, TPU_HLO_MIN);
  p = tpu_hlo_select(h, tpu_hlo_compare(h, "LT", p, tpu_hlo_full_i64(h, m, &p)), p,
                     tpu_hlo_full_i64(h, s, &p));
  *pivot = p;
  a = swap_rows(h, a, row, nb, s, spread(h, p, &a, nb, true));
  /* Scale the column below the pivot, unless the pivot is zero (getf2 leaves it then). */
  tpu_hlo_value d = spread(h, pick(h, both(h, equals(h, row, s), equals(h, col, s)), a, nb, true),
                           &a, nb, true);
  tpu_hlo_value below = tpu_hlo_compare(h, "GT", row, tpu_hlo_full_i64(h, s, &row));
  tpu_hlo_value scale = both(h, both(h, below, equals(h, col, s)),
                             tpu_hlo_compare(h, "NE", d, tpu_hlo_full(h, a.elem, "0.0", &d)));
  a = tpu_hlo_select(h, scale, tpu_hlo_binary(h, "divide", a, d), a);
  /* The trailing matrix less the outer product of the scaled column and the pivot row. */
  tpu_hlo_value l = spread(h, pick(h, equals(h, col, s), a, nb + 1, false), &a, nb + 1, false);
  tpu_hlo_value u = spread(h, pick(h, equals(h, row, s), a, nb, false), &a, nb, false);
  tpu_hlo_value trailing =
      both(h, below, tpu_hlo_compare(h, "GT", col, tpu_hlo_full_i64(h, s, &col)));
  return tpu_hlo_select(h, trailing,
                        tpu_hlo_binary(h, "subtract", a, tpu_hlo_binary(h, "multiply", l, u)), a);
}

/* The carried values of CHOLESKY's info search. */
enum { STEP, WORK, INFO, FAILED, INFO_CARRIED };

/* Whether some matrix whose factor failed has no info yet, while steps remain. */
static tpu_hlo_value info_cond(tpu_hlo *h, const tpu_hlo_value *v, void *ctx) {
  const int64_t *n = ctx;
  tpu_hlo_value open = both(h, v[FAILED], tpu_hlo_compare(h, "EQ", v[INFO],
                                                          tpu_hlo_full_i64(h, 0, &v[INFO])));
  tpu_hlo_value searching = tpu_hlo_compare(h, "NE", tpu_hlo_any(h, open),
                                            tpu_hlo_constant(h, TPU_UINT8, "0"));
  char last[24];
  snprintf(last, sizeof last, "%lld", (long long)*n);
  return both(h, searching,
              tpu_hlo_compare(h, "LT", v[STEP], tpu_hlo_constant(h, TPU_INT64, last)));
}

/* One step of potf2's elimination on the symmetric matrix: the pivot of column k sets info to
 * k + 1 where it is not positive (NaN included), then the trailing matrix loses its rank-1 term. */
static void info_step(tpu_hlo *h, const tpu_hlo_value *v, tpu_hlo_value *r, void *ctx) {
  (void)ctx;
  tpu_hlo_value a = v[WORK], info = v[INFO];
  const int nb = a.rank - 2;
  tpu_hlo_value row = tpu_hlo_coordinate(h, &a, nb), col = tpu_hlo_coordinate(h, &a, nb + 1);
  tpu_hlo_value k = tpu_hlo_splat(h, v[STEP], &a);
  tpu_hlo_value at_row = tpu_hlo_compare(h, "EQ", row, k);
  tpu_hlo_value at_col = tpu_hlo_compare(h, "EQ", col, k);
  tpu_hlo_value d = pick(h, both(h, at_row, at_col), a, nb, true);
  tpu_hlo_value positive = tpu_hlo_compare(h, "GT", d, tpu_hlo_full(h, d.elem, "0.0", &d));
  tpu_hlo_value first = both(h, both(h, v[FAILED], tpu_hlo_unary(h, "not", positive)),
                             tpu_hlo_compare(h, "EQ", info, tpu_hlo_full_i64(h, 0, &info)));
  tpu_hlo_value next = tpu_hlo_binary(h, "add", v[STEP], tpu_hlo_constant(h, TPU_INT64, "1"));
  r[INFO] = tpu_hlo_select(h, first, tpu_hlo_splat(h, next, &info), info);
  tpu_hlo_value l = spread(h, pick(h, at_col, a, nb + 1, false), &a, nb + 1, false);
  tpu_hlo_value u = spread(h, pick(h, at_row, a, nb, false), &a, nb, false);
  tpu_hlo_value trailing = both(h, tpu_hlo_compare(h, "GT", row, k),
                                tpu_hlo_compare(h, "GT", col, k));
  tpu_hlo_value update = tpu_hlo_binary(h, "divide", tpu_hlo_binary(h, "multiply", l, u),
                                        spread(h, d, &a, nb, true));
  r[WORK] = tpu_hlo_select(h, trailing, tpu_hlo_binary(h, "subtract", a, update), a);
  r[STEP] = next;
  r[FAILED] = v[FAILED];
}

/* LAPACK's info for the matrices whose factor l is not finite: the order of the first leading
 * minor that is not positive-definite, found by eliminating a (its triangle read, mirrored) until
 * each failed matrix has it. The loop runs no step when every factor is finite. */
static tpu_hlo_value cholesky_info(tpu_hlo *h, tpu_hlo_value a, tpu_hlo_value l, bool upper) {
  const int nb = a.rank - 2;
  int64_t n = a.dims[nb], perm[TPU_MAX_DIMS + 1];
  for (int d = 0; d < a.rank; d++)
    perm[d] = d < nb ? d : 2 * nb + 1 - d;
  tpu_hlo_value row = tpu_hlo_coordinate(h, &a, nb), col = tpu_hlo_coordinate(h, &a, nb + 1);
  tpu_hlo_value read = tpu_hlo_compare(h, upper ? "LE" : "GE", row, col);
  tpu_hlo_value init[INFO_CARRIED], out[INFO_CARRIED];
  init[STEP] = tpu_hlo_constant(h, TPU_INT64, "0");
  init[WORK] = tpu_hlo_select(h, read, a, tpu_hlo_transpose(h, a, perm));
  tpu_hlo_value bad = tpu_hlo_unary(h, "not", tpu_hlo_unary(h, "is_finite", l));
  tpu_hlo_value count = pick(h, bad, tpu_hlo_full_i64(h, 1, &row), nb, true);
  init[FAILED] = tpu_hlo_compare(h, "GT", count, tpu_hlo_full_i64(h, 0, &count));
  init[INFO] = tpu_hlo_full_i64(h, 0, &count);
  tpu_hlo_while(h, INFO_CARRIED, init, info_cond, info_step, &n, out);
  return out[INFO];
}

static void emit_cholesky(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                          tpu_hlo_value *out) {
  const bool upper = call->scalars[0].i != 0;
  const int nb = in[0].rank - 2;
  tpu_hlo_value l = tpu_hlo_cholesky(h, in[0], !upper);
  tpu_hlo_value row = tpu_hlo_coordinate(h, &l, nb), col = tpu_hlo_coordinate(h, &l, nb + 1);
  out[0] = keep_or(h, tpu_hlo_compare(h, upper ? "LE" : "GE", row, col), l, "0.0");
  out[1] = tpu_hlo_cast(h, cholesky_info(h, in[0], out[0], upper), TPU_INT32);
}

static void emit_lu_factor(tpu_hlo *h, const tpu_hlo_value *in, tpu_hlo_value *out) {
  tpu_hlo_value a = in[0];
  const int nb = a.rank - 2;
  const int64_t m = a.dims[nb], n = a.dims[nb + 1], k = m < n ? m : n;
  tpu_hlo_value row = tpu_hlo_coordinate(h, &a, nb), col = tpu_hlo_coordinate(h, &a, nb + 1);
  tpu_hlo_value pivots = {.elem = TPU_INT64, .rank = nb + 1};
  for (int d = 0; d < nb; d++)
    pivots.dims[d] = a.dims[d];
  pivots.dims[nb] = k;
  pivots = tpu_hlo_full_i64(h, 0, &pivots);
  tpu_hlo_value step = tpu_hlo_coordinate(h, &pivots, nb);
  for (int64_t s = 0; s < k; s++) {
    tpu_hlo_value p;
    a = lu_step(h, a, row, col, s, &p);
    tpu_hlo_value one_based = tpu_hlo_binary(h, "add", p, tpu_hlo_full_i64(h, 1, &p));
    pivots = tpu_hlo_select(h, equals(h, step, s), spread(h, one_based, &pivots, nb, false),
                            pivots);
  }
  out[0] = a;
  out[1] = tpu_hlo_cast(h, pivots, TPU_INT32);
  /* info: the first zero on U's diagonal (1-based), else 0. */
  tpu_hlo_value zero = both(h, tpu_hlo_compare(h, "EQ", row, col),
                            tpu_hlo_compare(h, "EQ", a, tpu_hlo_full(h, a.elem, "0.0", &a)));
  tpu_hlo_value at = tpu_hlo_select(h, zero, tpu_hlo_binary(h, "add", col,
                                                            tpu_hlo_full_i64(h, 1, &col)),
                                    tpu_hlo_full_i64(h, k + 1, &col));
  char none[24];
  snprintf(none, sizeof none, "%lld", (long long)(k + 1));
  tpu_hlo_value first = tpu_hlo_reduce(h, at, tpu_hlo_constant(h, TPU_INT64, none),
                                       (const int64_t[]){nb, nb + 1}, 2, TPU_HLO_MIN);
  first = keep_or(h, tpu_hlo_compare(h, "LE", first, tpu_hlo_full_i64(h, k, &first)), first, "0");
  out[2] = tpu_hlo_cast(h, first, TPU_INT32);
}

static void emit_lu_solve(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                          tpu_hlo_value *out, tpu_hlo_value *bad) {
  tpu_hlo_value lu = in[0], b = in[2];
  const int nb = lu.rank - 2;
  const int64_t n = lu.dims[nb];
  tpu_hlo_value piv = tpu_hlo_cast(h, in[1], TPU_INT64);
  piv = tpu_hlo_binary(h, "subtract", piv, tpu_hlo_full_i64(h, 1, &piv));
  bad[0] = tpu_hlo_any(
      h, tpu_hlo_binary(h, "or", tpu_hlo_compare(h, "LT", piv, tpu_hlo_full_i64(h, 0, &piv)),
                        tpu_hlo_compare(h, "GE", piv, tpu_hlo_full_i64(h, n, &piv))));
  tpu_hlo_value step = tpu_hlo_coordinate(h, &piv, nb), row = tpu_hlo_coordinate(h, &b, nb);
  tpu_hlo_value pivot_of[TPU_PJRT_LINALG_MAX_STEPS];
  for (int64_t s = 0; s < n; s++)
    pivot_of[s] = spread(h, pick(h, equals(h, step, s), piv, nb, false), &b, nb, true);
  if (call->scalars[0].i == 0) { /* A = P L U: X = U^-1 L^-1 P^T B */
    for (int64_t s = 0; s < n; s++)
      b = swap_rows(h, b, row, nb, s, pivot_of[s]);
    b = tpu_hlo_triangular_solve(h, lu, b, true, true, true);
    out[0] = tpu_hlo_triangular_solve(h, lu, b, true, false, false);
    return;
  }
  /* A^T = U^T L^T P^T: X = P L^-T U^-T B, the triangles read from LU^T. */
  int64_t perm[TPU_MAX_DIMS + 1];
  for (int d = 0; d < lu.rank; d++)
    perm[d] = d < nb ? d : 2 * nb + 1 - d;
  tpu_hlo_value lu_t = tpu_hlo_transpose(h, lu, perm);
  b = tpu_hlo_triangular_solve(h, lu_t, b, true, true, false);
  b = tpu_hlo_triangular_solve(h, lu_t, b, true, false, true);
  for (int64_t s = n - 1; s >= 0; s--)
    b = swap_rows(h, b, row, nb, s, pivot_of[s]);
  out[0] = b;
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)scalar;
  (void)ctx;
  switch (call->op) {
  case TPU_OP_CHOLESKY: emit_cholesky(h, call, in, out); return;
  case TPU_OP_LU_FACTOR: emit_lu_factor(h, in, out); return;
  case TPU_OP_LU_SOLVE: emit_lu_solve(h, call, in, out, bad); return;
  default: break;
  }
  const bool upper = call->scalars[0].i != 0, left = call->scalars[1].i != 0,
             unit = call->scalars[2].i != 0;
  out[0] = tpu_hlo_triangular_solve(h, in[0], in[1], left, !upper, unit);
}

static bool message(const tpu_op_call *call, int check, char *buf, size_t len,
                    tpu_status *code) {
  if (call->op != TPU_OP_LU_SOLVE || check != 0)
    return false;
  snprintf(buf, len, "%s", TPU_LU_SOLVE_BAD_PIVOT);
  *code = TPU_ERR_INDEX;
  return true;
}

const tpu_pjrt_family tpu_pjrt_linalg_family = {
    .supports = supports, .emit = emit, .message = message};
