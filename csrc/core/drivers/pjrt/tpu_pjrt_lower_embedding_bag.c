/* EMBEDDING_BAG (ops/tpu_ops_nn.h) in StableHLO: each position's bag from a scatter of the
 * offsets and a prefix sum, the rows gathered and combined into their bags by one scatter (add
 * in float32, float64 for float64, or max), max_indices by a scatter-min of the first position
 * attaining each maximum. XLA adds a bag's rows in an order it chooses, so sums may differ from
 * the host's position order in the last bits; a NaN row wins a max here, where on the host only
 * a bag's first element can be NaN. Bad indices and offsets set the call's flags. */
#include <stdio.h>

#include "drivers/pjrt/tpu_pjrt_family.h"

enum { MODE_SUM = 0, MODE_MEAN = 1, MODE_MAX = 2 };

static bool index_dtype(const tpu_tensor *t) {
  return t->ndim == 1 && (t->dtype == TPU_INT64 || t->dtype == TPU_INT32);
}

static bool i64(const tpu_tensor *t, int ndim) {
  return t->dtype == TPU_INT64 && t->ndim == ndim;
}

static bool supports(const tpu_op_call *call) {
  const tpu_tensor *t = call->tensors;
  int n = call->n_inputs;
  int64_t mode = call->scalars[0].i;
  if ((n != 3 && n != 4) || call->n_outputs != 4 || mode < MODE_SUM || mode > MODE_MAX ||
      (n == 4 && mode != MODE_SUM))
    return false;
  const tpu_tensor *o = &t[n];
  int64_t B = t[2].sizes[0], N = t[1].sizes[0];
  return t[0].ndim == 2 && tpu_dtype_is_floating(t[0].dtype) &&
         !tpu_dtype_is_complex(t[0].dtype) && index_dtype(&t[1]) && index_dtype(&t[2]) &&
         t[2].dtype == t[1].dtype && B > 0 && N > 0 &&
         (n == 3 || (t[3].ndim == 1 && t[3].sizes[0] == N && t[3].dtype == t[0].dtype)) &&
         o[0].ndim == 2 && o[0].dtype == t[0].dtype && o[0].sizes[0] == B &&
         o[0].sizes[1] == t[0].sizes[1] && i64(&o[1], 1) &&
         (o[1].sizes[0] == 0 || o[1].sizes[0] == N) && i64(&o[2], 1) && o[2].sizes[0] == B &&
         i64(&o[3], mode == MODE_MAX ? 2 : 1) && o[3].sizes[0] == B;
}

/* offset2bag is absent when it is empty. */
static bool absent(const tpu_op_call *call, int i) {
  return i == call->n_inputs + 1 && call->tensors[i].sizes[0] == 0;
}

static tpu_hlo_value vec(tpu_hlo *h, tpu_dtype elem, const char *literal, int64_t n) {
  tpu_hlo_value like = {.elem = elem, .rank = 1, .dims = {n}};
  return tpu_hlo_full(h, elem, literal, &like);
}

static tpu_hlo_value mat(tpu_hlo *h, tpu_dtype elem, const char *literal, int64_t r, int64_t c) {
  tpu_hlo_value like = {.elem = elem, .rank = 2, .dims = {r, c}};
  return tpu_hlo_full(h, elem, literal, &like);
}

/* A rank-1 value [n] broadcast along the columns of [n, D]. */
static tpu_hlo_value rows_of(tpu_hlo *h, tpu_hlo_value x, int64_t D) {
  int64_t dims[2] = {x.dims[0], D}, map = 0;
  return tpu_hlo_broadcast(h, x, 2, dims, &map);
}

static tpu_hlo_value clamp(tpu_hlo *h, tpu_hlo_value x, int64_t lo, int64_t hi) {
  x = tpu_hlo_binary(h, "maximum", x, tpu_hlo_full_i64(h, lo, &x));
  return tpu_hlo_binary(h, "minimum", x, tpu_hlo_full_i64(h, hi, &x));
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)scalar;
  (void)ctx;
  const tpu_tensor *w = &call->tensors[0];
  int64_t V = w->sizes[0], D = w->sizes[1], N = call->tensors[1].sizes[0];
  int64_t B = call->tensors[2].sizes[0], mode = call->scalars[0].i;
  tpu_hlo_value idx = tpu_hlo_convert(h, in[1], TPU_INT64);
  tpu_hlo_value off = tpu_hlo_convert(h, in[2], TPU_INT64);
  /* A negative padding_idx is none: every position is kept (an index equals itself). */
  int64_t padding_idx = call->scalars[1].i;
  tpu_hlo_value keep = padding_idx >= 0
                           ? tpu_hlo_compare(h, "NE", idx, tpu_hlo_full_i64(h, padding_idx, &idx))
                           : tpu_hlo_compare(h, "EQ", idx, idx);
  tpu_hlo_value outside = tpu_hlo_binary(
      h, "or", tpu_hlo_compare(h, "LT", idx, tpu_hlo_full_i64(h, 0, &idx)),
      tpu_hlo_compare(h, "GE", idx, tpu_hlo_full_i64(h, V, &idx)));
  bad[0] = tpu_hlo_any(h, tpu_hlo_binary(h, "and", keep, outside));
  int64_t zero = 0, one = 1, last = B - 1;
  tpu_hlo_value first = tpu_hlo_slice(h, off, &zero, &one);
  bad[1] = tpu_hlo_any(h, tpu_hlo_compare(h, "NE", first, tpu_hlo_full_i64(h, 0, &first)));
  /* Offsets above N, or below their predecessor. */
  tpu_hlo_value over = tpu_hlo_compare(h, "GT", off, tpu_hlo_full_i64(h, N, &off));
  if (B > 1) {
    int64_t b = B;
    tpu_hlo_value lo = tpu_hlo_slice(h, off, &zero, &last);
    tpu_hlo_value hi = tpu_hlo_slice(h, off, &one, &b);
    over = tpu_hlo_binary(h, "or", over,
                          tpu_hlo_pad_end(h, tpu_hlo_compare(h, "LT", hi, lo), B));
  }
  bad[2] = tpu_hlo_any(h, over);
  /* bag[p] = (the number of offsets <= p) - 1. */
  tpu_hlo_value starts = tpu_hlo_scatter(h, vec(h, TPU_INT64, "0", N + 1), off,
                                         tpu_hlo_full_i64(h, 1, &off), TPU_HLO_ADD);
  int64_t n = N;
  tpu_hlo_value bag = tpu_hlo_slice(
      h, tpu_hlo_prefix_sum(h, starts, tpu_hlo_constant(h, TPU_INT64, "0"), 0), &zero, &n);
  bag = clamp(h, tpu_hlo_binary(h, "subtract", bag, tpu_hlo_full_i64(h, 1, &bag)), 0, last);
  out[1] = bag;
  /* Skipped positions (padding, bad indices) go to bag B, which the scatters drop. */
  tpu_hlo_value target = tpu_hlo_select(h, keep, bag, tpu_hlo_full_i64(h, B, &bag));
  tpu_hlo_value count = tpu_hlo_scatter(h, vec(h, TPU_INT64, "0", B), target,
                                        tpu_hlo_full_i64(h, 1, &target), TPU_HLO_ADD);
  tpu_dtype work = w->dtype == TPU_FLOAT64 ? TPU_FLOAT64 : TPU_FLOAT32;
  tpu_hlo_value rows = tpu_hlo_convert(h, tpu_hlo_take(h, in[0], clamp(h, idx, 0, V - 1), 0),
                                       work);
  tpu_hlo_value none_in = tpu_hlo_compare(h, "EQ", count, tpu_hlo_full_i64(h, 0, &count));
  tpu_hlo_value empty = rows_of(h, none_in, D);
  tpu_hlo_value zeros = mat(h, work, "0.0", B, D);
  if (mode == MODE_MAX) {
    const char *minus_inf = work == TPU_FLOAT64 ? "0xFFF0000000000000" : "0xFF800000";
    tpu_hlo_value m = tpu_hlo_scatter(h, mat(h, work, minus_inf, B, D), target, rows,
                                      TPU_HLO_MAX);
    out[0] = tpu_hlo_select(h, empty, zeros, m);
    /* The first position of each bag whose row attains the maximum, then its index. */
    tpu_hlo_value best = tpu_hlo_take(h, m, clamp(h, target, 0, last), 0);
    tpu_hlo_value hit = tpu_hlo_binary(h, "and", tpu_hlo_compare(h, "EQ", rows, best),
                                       rows_of(h, keep, D));
    tpu_hlo_value pos = tpu_hlo_coordinate(h, &rows, 0);
    pos = tpu_hlo_select(h, hit, pos, tpu_hlo_full_i64(h, N, &pos));
    tpu_hlo_value none = mat(h, TPU_INT64, "0", B, D);
    tpu_hlo_value at =
        tpu_hlo_scatter(h, tpu_hlo_full_i64(h, N, &none), target, pos, TPU_HLO_MIN);
    int64_t flat = B * D, dims[2] = {B, D};
    tpu_hlo_value first_at = clamp(h, tpu_hlo_reshape(h, at, 1, &flat), 0, N - 1);
    tpu_hlo_value arg = tpu_hlo_take(h, idx, first_at, 0);
    arg = tpu_hlo_reshape(h, arg, 2, dims);
    out[3] = tpu_hlo_select(h, empty, tpu_hlo_full_i64(h, 0, &arg), arg);
    out[2] = count;
    return;
  }
  if (call->n_inputs == 4)
    rows = tpu_hlo_binary(h, "multiply", rows, rows_of(h, tpu_hlo_convert(h, in[3], work), D));
  tpu_hlo_value sum = tpu_hlo_scatter(h, zeros, target, rows, TPU_HLO_ADD);
  if (mode == MODE_MEAN) {
    tpu_hlo_value divisor = tpu_hlo_convert(
        h, tpu_hlo_binary(h, "maximum", count, tpu_hlo_full_i64(h, 1, &count)), work);
    sum = tpu_hlo_binary(h, "divide", sum, rows_of(h, divisor, D));
  }
  out[0] = sum;
  out[2] = mode == MODE_SUM ? tpu_hlo_full_i64(h, 0, &count) : count;
  out[3] = out[2];
}

static bool message(const tpu_op_call *call, int check, char *buf, size_t len,
                    tpu_status *code) {
  *code = TPU_ERR_RUNTIME;
  switch (check) {
  case 0:
    snprintf(buf, len, "Expected i < index_size to be true, but got false.  (an index is out of "
             "range for %lld embeddings)", (long long)call->tensors[0].sizes[0]);
    return true;
  case 1:
    snprintf(buf, len, "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has "
             "to start from position 0.");
    return true;
  case 2:
    snprintf(buf, len, "offsets[-1] can not be greater than input's length %lld, and offsets "
             "may not decrease", (long long)call->tensors[1].sizes[0]);
    return true;
  default:
    return false;
  }
}

const tpu_pjrt_family tpu_pjrt_embedding_bag_family = {
    .supports = supports, .absent = absent, .emit = emit, .message = message};
