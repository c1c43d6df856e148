/* The sort family's scans, searches and histograms (ops/tpu_ops_sort.h) in StableHLO.
 * SCAN: a reduce_window over the window ending at each element, as CUMSUM's running sums: the
 *   product in float64 or wrapping int64, logsumexp in float64, and the running extreme with its
 *   position as the maximum of a total order (NaN above every number, then the later position
 *   among equals) over value and position together, which is the host's rule written as an
 *   associative, commutative combination.
 * SEARCH: every value compared with every element of its sorted row and the predicate counted,
 *   which is the bisection's answer on rows sorted without NaN; past MAX_COMPARISONS the driver
 *   fallback runs the host's bisection.
 * HISTC: each element's bin from the host's formula, rounded as the host rounds, then a
 *   scatter-add of the weights (or ones) into the bins; elements outside [min, max] go to a
 *   position past the end, which the scatter drops. */
#include "drivers/pjrt/tpu_pjrt_family.h"

/* The most comparisons a SEARCH lowers to (2^26, a few tens of milliseconds on a CPU). */
#define MAX_COMPARISONS (INT64_C(1) << 26)

enum { SCAN_PRODUCT, SCAN_MAX, SCAN_MIN, SCAN_LOGSUMEXP };

static bool supports_scan(const tpu_op_call *call) {
  const tpu_tensor *in = &call->tensors[0];
  const int64_t kind = call->scalars[1].i, dim = call->scalars[0].i;
  const bool indexed = kind == SCAN_MAX || kind == SCAN_MIN;
  if (kind < SCAN_PRODUCT || kind > SCAN_LOGSUMEXP || call->n_inputs != 1 ||
      call->n_outputs != (indexed ? 2 : 1) || in->ndim < 1 || dim < 0 || dim >= in->ndim ||
      tpu_dtype_is_complex(in->dtype) ||
      (kind == SCAN_LOGSUMEXP && !tpu_dtype_is_floating(in->dtype)))
    return false;
  for (int t = 1; t <= call->n_outputs; t++)
    if (!tpu_tensor_same_sizes(in, &call->tensors[t]))
      return false;
  return call->tensors[1].dtype == in->dtype && (!indexed || call->tensors[2].dtype == TPU_INT64);
}

static bool supports_search(const tpu_op_call *call) {
  const tpu_tensor *sorted = &call->tensors[0], *values = &call->tensors[1],
                   *out = &call->tensors[2];
  if (call->n_inputs != 2 || call->n_outputs != 1 || sorted->ndim < 1 ||
      !tpu_tensor_same_sizes(values, out) || values->dtype != sorted->dtype ||
      tpu_dtype_is_complex(sorted->dtype) ||
      (out->dtype != TPU_INT64 && out->dtype != TPU_INT32))
    return false;
  if (sorted->ndim > 1) {
    if (values->ndim != sorted->ndim)
      return false;
    for (int d = 0; d + 1 < sorted->ndim; d++)
      if (values->sizes[d] != sorted->sizes[d])
        return false;
  }
  const int64_t n = sorted->sizes[sorted->ndim - 1];
  return n == 0 || tpu_tensor_numel(values) <= MAX_COMPARISONS / n;
}

static bool supports_histc(const tpu_op_call *call) {
  const tpu_tensor *in = &call->tensors[0], *out = &call->tensors[call->n_inputs];
  if (call->n_inputs < 1 || call->n_inputs > 2 || call->n_outputs != 1 || out->ndim != 1 ||
      out->sizes[0] < 1 || in->dtype == TPU_BOOL || tpu_dtype_is_complex(in->dtype) ||
      (!tpu_dtype_is_floating(out->dtype) && out->dtype != TPU_INT64))
    return false;
  return call->n_inputs == 1 || (tpu_tensor_same_sizes(in, &call->tensors[1]) &&
                                 tpu_dtype_is_floating(call->tensors[1].dtype));
}

static bool supports(const tpu_op_call *call) {
  switch (call->op) {
  case TPU_OP_SCAN: return supports_scan(call);
  case TPU_OP_SEARCH: return supports_search(call);
  case TPU_OP_HISTC: return supports_histc(call);
  default: return false;
  }
}

/* ---- SCAN ---- */

/* The running extreme's region: q (the later element, or the later part) replaces p when it is
 * above p in the total order; *(const int *)ctx is the kind. */
static void extreme_body(tpu_hlo *h, const tpu_hlo_value *p, const tpu_hlo_value *q,
                         tpu_hlo_value *r, void *ctx) {
  const bool max = *(const int *)ctx == SCAN_MAX;
  tpu_hlo_value later = tpu_hlo_compare(h, "GT", q[1], p[1]);
  tpu_hlo_value beyond = tpu_hlo_compare(h, max ? "GT" : "LT", q[0], p[0]);
  tpu_hlo_value tie = tpu_hlo_binary(h, "and", tpu_hlo_compare(h, "EQ", q[0], p[0]), later);
  tpu_hlo_value wins = tpu_hlo_binary(h, "or", beyond, tie);
  if (tpu_dtype_is_floating(p[0].elem)) {
    tpu_hlo_value q_nan = tpu_hlo_compare(h, "NE", q[0], q[0]);
    tpu_hlo_value p_nan = tpu_hlo_compare(h, "NE", p[0], p[0]);
    /* q wins as a NaN over a number or an earlier NaN; a number never wins over a NaN. */
    tpu_hlo_value nan_wins =
        tpu_hlo_binary(h, "and", q_nan, tpu_hlo_binary(h, "or", tpu_hlo_unary(h, "not", p_nan),
                                                       later));
    tpu_hlo_value numbers = tpu_hlo_binary(h, "and", tpu_hlo_unary(h, "not", q_nan),
                                           tpu_hlo_unary(h, "not", p_nan));
    wins = tpu_hlo_binary(h, "or", nan_wins, tpu_hlo_binary(h, "and", numbers, wins));
  }
  r[0] = tpu_hlo_select(h, wins, q[0], p[0]);
  r[1] = tpu_hlo_select(h, wins, q[1], p[1]);
}

/* log(exp(p) + exp(q)) as the host computes it: max + log1p(exp(min - max)), or p when both are
 * the same infinity, and NaN (p + q) when either is NaN: XLA's CPU minimum and maximum may drop
 * a NaN. */
static void logaddexp_body(tpu_hlo *h, const tpu_hlo_value *p, const tpu_hlo_value *q,
                           tpu_hlo_value *r, void *ctx) {
  (void)ctx;
  tpu_hlo_value lo = tpu_hlo_binary(h, "minimum", p[0], q[0]);
  tpu_hlo_value hi = tpu_hlo_binary(h, "maximum", p[0], q[0]);
  tpu_hlo_value sum = tpu_hlo_binary(
      h, "add",
      tpu_hlo_unary(h, "log_plus_one",
                    tpu_hlo_unary(h, "exponential", tpu_hlo_binary(h, "subtract", lo, hi))),
      hi);
  tpu_hlo_value general = tpu_hlo_binary(h, "or", tpu_hlo_compare(h, "NE", lo, hi),
                                         tpu_hlo_unary(h, "is_finite", lo));
  tpu_hlo_value nan = tpu_hlo_binary(h, "or", tpu_hlo_compare(h, "NE", p[0], p[0]),
                                     tpu_hlo_compare(h, "NE", q[0], q[0]));
  r[0] = tpu_hlo_select(h, nan, tpu_hlo_binary(h, "add", p[0], q[0]),
                        tpu_hlo_select(h, general, sum, p[0]));
}

static void emit_scan(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                      tpu_hlo_value *out) {
  const int dim = (int)call->scalars[0].i;
  int kind = (int)call->scalars[1].i;
  const bool floating = tpu_dtype_is_floating(in[0].elem);
  const tpu_dtype acc = floating ? TPU_FLOAT64 : TPU_INT64;
  tpu_hlo_value x = tpu_hlo_convert(h, in[0], acc);
  tpu_hlo_window w = tpu_hlo_window_one(x.rank);
  w.size[dim] = x.dims[dim];
  w.pad_low[dim] = x.dims[dim] - 1;
  if (kind == SCAN_PRODUCT) {
    tpu_hlo_value one = tpu_hlo_constant(h, acc, floating ? "1.0" : "1");
    tpu_hlo_combine mul = TPU_HLO_MUL;
    tpu_hlo_reduce_window(h, 1, &x, &one, &w, tpu_hlo_combine_body, &mul, out);
    return;
  }
  if (kind == SCAN_LOGSUMEXP) {
    tpu_hlo_value init = tpu_hlo_constant(h, acc, "0xFFF0000000000000");
    tpu_hlo_reduce_window(h, 1, &x, &init, &w, logaddexp_body, NULL, out);
    return;
  }
  /* The padding ranks below every element: the extreme's far end at position -1. */
  const bool max = kind == SCAN_MAX;
  const char *far = floating ? (max ? "0xFFF0000000000000" : "0x7FF0000000000000")
                             : (max ? "-9223372036854775808" : "9223372036854775807");
  tpu_hlo_value xs[2] = {x, tpu_hlo_coordinate(h, &x, dim)};
  tpu_hlo_value inits[2] = {tpu_hlo_constant(h, acc, far), tpu_hlo_constant(h, TPU_INT64, "-1")};
  tpu_hlo_reduce_window(h, 2, xs, inits, &w, extreme_body, &kind, out);
}

/* ---- SEARCH ---- */

static void emit_search(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                        tpu_hlo_value *out) {
  const tpu_tensor *sorted = &call->tensors[0], *values = &call->tensors[1];
  const int rank = values->ndim;
  const tpu_dtype acc = tpu_dtype_is_floating(sorted->dtype) ? TPU_FLOAT64 : TPU_INT64;
  int64_t dims[TPU_MAX_DIMS + 1], keep[TPU_MAX_DIMS + 1], last = rank;
  for (int d = 0; d < rank; d++) {
    dims[d] = values->sizes[d];
    keep[d] = d;
  }
  dims[rank] = sorted->sizes[sorted->ndim - 1];
  /* A shared row spreads along the new last dimension; rows of their own keep their leading
   * dimensions and spread over the values of a row. */
  int64_t sdims[TPU_MAX_DIMS + 1];
  for (int d = 0; d + 1 < sorted->ndim; d++)
    sdims[d] = d;
  sdims[sorted->ndim - 1] = rank;
  tpu_hlo_value v = tpu_hlo_broadcast(h, tpu_hlo_convert(h, in[1], acc), rank + 1, dims, keep);
  tpu_hlo_value s =
      tpu_hlo_broadcast(h, tpu_hlo_convert(h, in[0], acc), rank + 1, dims, sdims);
  tpu_hlo_value stop = tpu_hlo_compare(h, call->scalars[0].i ? "GT" : "GE", s, v);
  tpu_hlo_value before = tpu_hlo_convert(h, tpu_hlo_unary(h, "not", stop), TPU_INT64);
  out[0] = tpu_hlo_reduce(h, before, tpu_hlo_constant(h, TPU_INT64, "0"), &last, 1, TPU_HLO_ADD);
}

/* ---- HISTC ---- */

/* x (float64) rounded to the input's floating `dtype`, as each operation in that type rounds on
 * the host. Each operation runs in float64 and rounds once: exactly the float32 operation's
 * result, whatever XLA's float32 division does. */
static tpu_hlo_value narrow(tpu_hlo *h, tpu_hlo_value x, tpu_dtype dtype) {
  if (dtype == TPU_FLOAT64 || !tpu_dtype_is_floating(dtype))
    return x;
  return tpu_hlo_convert(h, tpu_hlo_convert(h, x, dtype), TPU_FLOAT64);
}

/* v (a rank-0 float64 runtime scalar) as the bins are computed from it: rounded to the input's
 * dtype for the floating dtypes, truncated for integers, then spread like `like`. */
static tpu_hlo_value bound(tpu_hlo *h, tpu_hlo_value v, tpu_dtype dtype, tpu_dtype compute,
                           const tpu_hlo_value *like) {
  if (tpu_dtype_is_floating(dtype))
    v = tpu_hlo_convert(h, v, dtype);
  return tpu_hlo_splat(h, tpu_hlo_convert(h, v, compute), like);
}

static void emit_histc(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                       tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out) {
  const tpu_tensor *input = &call->tensors[0], *hist = &call->tensors[call->n_inputs];
  const tpu_dtype dtype = input->dtype;
  const tpu_dtype compute = tpu_dtype_is_floating(dtype) ? TPU_FLOAT64 : TPU_INT64;
  const int64_t bins = hist->sizes[0], numel = tpu_tensor_numel(input);
  tpu_hlo_value x = tpu_hlo_reshape(h, tpu_hlo_convert(h, in[0], compute), 1, &numel);
  tpu_hlo_value lo = bound(h, scalar(ctx, 0, true), dtype, compute, &x);
  tpu_hlo_value hi = bound(h, scalar(ctx, 1, true), dtype, compute, &x);
  tpu_hlo_value nb = narrow(h, tpu_hlo_convert(h, tpu_hlo_full_i64(h, bins, &x), compute), dtype);
  tpu_hlo_value offset = narrow(h, tpu_hlo_binary(h, "subtract", x, lo), dtype);
  tpu_hlo_value range = narrow(h, tpu_hlo_binary(h, "subtract", hi, lo), dtype);
  tpu_hlo_value scaled = narrow(
      h,
      tpu_hlo_binary(h, "divide", narrow(h, tpu_hlo_binary(h, "multiply", offset, nb), dtype),
                     range),
      dtype);
  tpu_hlo_value pos = tpu_hlo_binary(h, "minimum", tpu_hlo_convert(h, scaled, TPU_INT64),
                                     tpu_hlo_full_i64(h, bins - 1, &x));
  tpu_hlo_value inside = tpu_hlo_binary(h, "and", tpu_hlo_compare(h, "GE", x, lo),
                                        tpu_hlo_compare(h, "LE", x, hi));
  pos = tpu_hlo_select(h, inside, pos, tpu_hlo_full_i64(h, bins, &x));
  const bool weighted = call->n_inputs == 2;
  const tpu_dtype acc = weighted ? TPU_FLOAT64 : TPU_INT64;
  tpu_hlo_value updates =
      weighted ? tpu_hlo_reshape(h, tpu_hlo_convert(h, in[1], TPU_FLOAT64), 1, &numel)
               : tpu_hlo_full_i64(h, 1, &x);
  tpu_hlo_value zero = tpu_hlo_constant(h, acc, weighted ? "0.0" : "0");
  tpu_hlo_value counts = tpu_hlo_broadcast(h, zero, 1, &bins, NULL);
  out[0] = tpu_hlo_scatter(h, counts, pos, updates, TPU_HLO_ADD);
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)bad;
  if (call->op == TPU_OP_SCAN)
    emit_scan(h, call, in, out);
  else if (call->op == TPU_OP_SEARCH)
    emit_search(h, call, in, out);
  else
    emit_histc(h, call, in, scalar, ctx, out);
}

const tpu_pjrt_family tpu_pjrt_scan_family = {.supports = supports, .emit = emit};
