/* MULTINOMIAL (ops/tpu_ops_random.h) in StableHLO, drawing the host kernel's categories: the same
 * uniforms (drivers/pjrt/tpu_pjrt_philox.h) and the same integer weights, whose running sums are
 * exact in whatever order XLA adds them. With replacement a draw is a binary search of the
 * running sums, unrolled into bit_width(K - 1) gathers. Without, draws are sequential, each over
 * the running sums of the categories left, so the module unrolls the n draws, and calls of more
 * than MAX_SEQUENTIAL run through the driver fallback (the host kernel). The weights' errors are
 * checks whose flags pick PyTorch's message. */
#include <stdio.h>

#include "drivers/pjrt/tpu_pjrt_family.h"
#include "drivers/pjrt/tpu_pjrt_philox.h"

/* The most draws without replacement a call lowers to. */
#define MAX_SEQUENTIAL 32

static bool supports(const tpu_op_call *call) {
  const tpu_tensor *w = &call->tensors[0], *out = &call->tensors[1];
  bool replacement = call->scalars[0].i != 0;
  return call->n_inputs == 1 && call->n_outputs == 1 && tpu_dtype_is_floating(w->dtype) &&
         out->dtype == TPU_INT64 && w->ndim == 2 && out->ndim == 2 &&
         w->sizes[0] == out->sizes[0] && w->sizes[1] >= 1 && w->sizes[1] <= (1 << 24) &&
         out->sizes[1] >= 1 &&
         (replacement || (out->sizes[1] <= w->sizes[1] && out->sizes[1] <= MAX_SEQUENTIAL));
}

/* Whether the weights are checked row by row (with replacement, n > 1), as PyTorch CPU does. */
static bool by_rows(const tpu_op_call *call) {
  return call->scalars[0].i != 0 && call->tensors[1].sizes[1] > 1;
}

static tpu_hlo_value i64(tpu_hlo *h, int64_t v, const tpu_hlo_value *like) {
  return tpu_hlo_full_i64(h, v, like);
}

/* x (int64) reduced along `dim` with `combine` from the value `init`. */
static tpu_hlo_value reduce(tpu_hlo *h, tpu_hlo_value x, int64_t dim, int64_t init,
                            tpu_hlo_combine combine) {
  char literal[24];
  snprintf(literal, sizeof literal, "%lld", (long long)init);
  return tpu_hlo_reduce(h, x, tpu_hlo_constant(h, TPU_INT64, literal), &dim, 1, combine);
}

/* Sets the check flags from the float64 weights x [B, K]: by rows, bad[c] for c = the first bad
 * row's problem (0 negative or NaN, 1 infinite, 2 all zero); otherwise bad[0] for a bad value
 * anywhere and bad[1] for a row of zeros (the run fails on the first flag set). */
static void checks(tpu_hlo *h, tpu_hlo_value x, bool rows, tpu_hlo_value *bad) {
  int64_t B = x.dims[0], K = x.dims[1];
  tpu_hlo_value zero = tpu_hlo_full(h, TPU_FLOAT64, "0.0", &x);
  tpu_hlo_value nonneg = tpu_hlo_compare(h, "GE", x, zero);
  tpu_hlo_value negative = tpu_hlo_unary(h, "not", nonneg);
  tpu_hlo_value infinite = tpu_hlo_binary(
      h, "and", nonneg, tpu_hlo_unary(h, "not", tpu_hlo_unary(h, "is_finite", x)));
  tpu_hlo_value nonzero = tpu_hlo_convert(h, tpu_hlo_compare(h, "NE", x, zero), TPU_INT64);
  nonzero = reduce(h, nonzero, 1, 0, TPU_HLO_MAX);
  tpu_hlo_value zero_row = tpu_hlo_compare(h, "EQ", nonzero, i64(h, 0, &nonzero));
  if (!rows) {
    bad[0] = tpu_hlo_any(h, tpu_hlo_binary(h, "or", negative, infinite));
    bad[1] = tpu_hlo_any(h, zero_row);
    return;
  }
  /* Each row's first bad element as 2j (negative) or 2j + 1 (infinite), 2K when none; the row's
   * problem as 0, 1, 2 (all zero) or 3 (none); the first row b with one as 4b + its problem. */
  tpu_hlo_value col2 = tpu_hlo_binary(h, "multiply", tpu_hlo_coordinate(h, &x, 1), i64(h, 2, &x));
  tpu_hlo_value key = tpu_hlo_select(
      h, negative, col2,
      tpu_hlo_select(h, infinite, tpu_hlo_binary(h, "add", col2, i64(h, 1, &x)),
                     i64(h, 2 * K, &x)));
  tpu_hlo_value first = reduce(h, key, 1, 2 * K, TPU_HLO_MIN);
  tpu_hlo_value code = tpu_hlo_select(
      h, tpu_hlo_compare(h, "LT", first, i64(h, 2 * K, &first)),
      tpu_hlo_binary(h, "and", first, i64(h, 1, &first)),
      tpu_hlo_select(h, zero_row, i64(h, 2, &first), i64(h, 3, &first)));
  tpu_hlo_value row4 = tpu_hlo_binary(h, "multiply", tpu_hlo_iota(h, TPU_INT64, B),
                                      i64(h, 4, &code));
  tpu_hlo_value none = tpu_hlo_compare(h, "EQ", code, i64(h, 3, &code));
  tpu_hlo_value worst =
      reduce(h, tpu_hlo_select(h, none, i64(h, 4 * B, &code), tpu_hlo_binary(h, "add", row4, code)),
             0, 4 * B, TPU_HLO_MIN);
  tpu_hlo_value found = tpu_hlo_compare(h, "LT", worst, i64(h, 4 * B, &worst));
  tpu_hlo_value kind = tpu_hlo_binary(h, "and", worst, i64(h, 3, &worst));
  for (int c = 0; c < 3; c++)
    bad[c] = tpu_hlo_convert(
        h, tpu_hlo_binary(h, "and", found, tpu_hlo_compare(h, "EQ", kind, i64(h, c, &kind))),
        TPU_UINT8);
}

/* 2^e for int64 e in [-1022, 1023], as float64: the exponent field alone. */
static tpu_hlo_value power_of_two(tpu_hlo *h, tpu_hlo_value e) {
  tpu_hlo_value biased = tpu_hlo_binary(h, "add", e, i64(h, 1023, &e));
  tpu_hlo_value bits = tpu_hlo_binary(h, "shift_left", biased, i64(h, 52, &e));
  return tpu_hlo_bitcast(h, bits, TPU_FLOAT64, e.rank, e.dims);
}

/* The integer weights q [B, K] (int64) of the float64 weights x, with k = 53 - bit_width(K - 1):
 * q = ceil((x * 2^s1) * 2^s2), s = s1 + s2 = k - E, 2^(E-1) <= the row's largest < 2^E. */
static tpu_hlo_value integer_weights(tpu_hlo *h, tpu_hlo_value x, int k) {
  int64_t cols = 1, along_rows = 0;
  tpu_hlo_value largest = tpu_hlo_reduce(h, x, tpu_hlo_constant(h, TPU_FLOAT64, "0.0"), &cols, 1,
                                         TPU_HLO_MAX);
  tpu_hlo_value bits = tpu_hlo_bitcast(h, largest, TPU_INT64, largest.rank, largest.dims);
  tpu_hlo_value biased = tpu_hlo_binary(
      h, "and", tpu_hlo_binary(h, "shift_right_logical", bits, i64(h, 52, &bits)),
      i64(h, 2047, &bits));
  /* A subnormal largest m * 2^-1074 has E = bit_width(m) - 1074. */
  tpu_hlo_value mantissa = tpu_hlo_binary(h, "and", bits, i64(h, (INT64_C(1) << 52) - 1, &bits));
  tpu_hlo_value e = tpu_hlo_select(
      h, tpu_hlo_compare(h, "GT", biased, i64(h, 0, &biased)),
      tpu_hlo_binary(h, "subtract", biased, i64(h, 1022, &biased)),
      tpu_hlo_binary(h, "subtract", i64(h, 64 - 1074, &bits),
                     tpu_hlo_unary(h, "count_leading_zeros", mantissa)));
  tpu_hlo_value s = tpu_hlo_binary(h, "subtract", i64(h, k, &e), e);
  tpu_hlo_value s1 = tpu_hlo_select(
      h, tpu_hlo_compare(h, "LT", s, i64(h, 0, &s)), s,
      tpu_hlo_binary(h, "shift_right_arithmetic", s, i64(h, 1, &s)));
  tpu_hlo_value p1 = tpu_hlo_broadcast(h, power_of_two(h, s1), 2, x.dims, &along_rows);
  tpu_hlo_value p2 = tpu_hlo_broadcast(
      h, power_of_two(h, tpu_hlo_binary(h, "subtract", s, s1)), 2, x.dims, &along_rows);
  /* The barrier keeps XLA from multiplying p1 and p2 first, which could overflow. */
  tpu_hlo_value v = tpu_hlo_unary(h, "optimization_barrier", tpu_hlo_binary(h, "multiply", x, p1));
  v = tpu_hlo_binary(h, "multiply", v, p2);
  return tpu_hlo_convert(h, tpu_hlo_unary(h, "ceil", v), TPU_INT64);
}

/* min(floor(u * total), total - 1) for float64 u and int64 total of equal dims. */
static tpu_hlo_value pick(tpu_hlo *h, tpu_hlo_value u, tpu_hlo_value total) {
  tpu_hlo_value x = tpu_hlo_binary(h, "multiply", u, tpu_hlo_convert(h, total, TPU_FLOAT64));
  tpu_hlo_value r = tpu_hlo_convert(h, tpu_hlo_unary(h, "floor", x), TPU_INT64);
  return tpu_hlo_binary(h, "minimum", r, tpu_hlo_binary(h, "subtract", total, i64(h, 1, &total)));
}

/* The running sums of q [B, K] along its rows, and their totals [B]. */
static tpu_hlo_value running_sums(tpu_hlo *h, tpu_hlo_value q, tpu_hlo_value *total) {
  int64_t B = q.dims[0], last[2] = {0, q.dims[1] - 1};
  tpu_hlo_value sums = tpu_hlo_prefix_sum(h, q, tpu_hlo_constant(h, TPU_INT64, "0"), 1);
  *total = tpu_hlo_reshape(h, tpu_hlo_slice(h, sums, last, q.dims), 1, &B);
  return sums;
}

/* With replacement: draw [b, s] is the first category whose running sum exceeds its r, found by
 * `steps` halving steps (2^steps >= K) over gathers of the running sums. */
static tpu_hlo_value draw_with(tpu_hlo *h, tpu_hlo_value q, tpu_hlo_value u, int steps) {
  int64_t K = q.dims[1], flat_k = q.dims[0] * K, flat_n = u.dims[0] * u.dims[1], along_rows = 0;
  tpu_hlo_value total, sums = running_sums(h, q, &total);
  tpu_hlo_value r = pick(h, u, tpu_hlo_broadcast(h, total, 2, u.dims, &along_rows));
  tpu_hlo_value flat = tpu_hlo_reshape(h, sums, 1, &flat_k);
  tpu_hlo_value row_start = tpu_hlo_binary(h, "multiply", tpu_hlo_coordinate(h, &r, 0),
                                           i64(h, K, &r));
  tpu_hlo_value count = i64(h, 0, &r); /* of running sums <= r, so far */
  for (int64_t step = steps ? INT64_C(1) << (steps - 1) : 0; step > 0; step /= 2) {
    tpu_hlo_value next = tpu_hlo_binary(h, "add", count, i64(h, step, &count));
    /* Past the row's end the total stands in: it exceeds r. */
    tpu_hlo_value at = tpu_hlo_binary(
        h, "minimum", tpu_hlo_binary(h, "subtract", next, i64(h, 1, &next)), i64(h, K - 1, &next));
    tpu_hlo_value index = tpu_hlo_reshape(h, tpu_hlo_binary(h, "add", row_start, at), 1, &flat_n);
    tpu_hlo_value sum = tpu_hlo_reshape(h, tpu_hlo_take(h, flat, index, 0), 2, r.dims);
    count = tpu_hlo_select(h, tpu_hlo_compare(h, "LE", sum, r), next, count);
  }
  return count;
}

/* Without replacement: draw s of each row, in order, over the q of the categories not drawn; the
 * first category not drawn once their q are all 0. */
static tpu_hlo_value draw_without(tpu_hlo *h, tpu_hlo_value q, tpu_hlo_value u) {
  int64_t B = q.dims[0], K = q.dims[1], along_rows = 0;
  tpu_hlo_value col = tpu_hlo_coordinate(h, &q, 1), out_col = tpu_hlo_coordinate(h, &u, 1);
  tpu_hlo_value drawn = tpu_hlo_compare(h, "LT", col, i64(h, 0, &col)); /* none */
  tpu_hlo_value out = i64(h, 0, &out_col);
  for (int64_t s = 0; s < u.dims[1]; s++) {
    int64_t start[2] = {0, s}, end[2] = {B, s + 1};
    tpu_hlo_value total, sums = running_sums(h, tpu_hlo_select(h, drawn, i64(h, 0, &q), q), &total);
    tpu_hlo_value r = pick(h, tpu_hlo_reshape(h, tpu_hlo_slice(h, u, start, end), 1, &B), total);
    tpu_hlo_value below = tpu_hlo_compare(h, "LE", sums,
                                          tpu_hlo_broadcast(h, r, 2, q.dims, &along_rows));
    tpu_hlo_value count = reduce(h, tpu_hlo_convert(h, below, TPU_INT64), 1, 0, TPU_HLO_ADD);
    tpu_hlo_value first_left = reduce(h, tpu_hlo_select(h, drawn, i64(h, K, &col), col), 1, K,
                                      TPU_HLO_MIN);
    tpu_hlo_value j = tpu_hlo_select(h, tpu_hlo_compare(h, "GT", total, i64(h, 0, &total)), count,
                                     first_left);
    drawn = tpu_hlo_binary(
        h, "or", drawn,
        tpu_hlo_compare(h, "EQ", col, tpu_hlo_broadcast(h, j, 2, q.dims, &along_rows)));
    out = tpu_hlo_select(h, tpu_hlo_compare(h, "EQ", out_col, i64(h, s, &out_col)),
                         tpu_hlo_broadcast(h, j, 2, u.dims, &along_rows), out);
  }
  return out;
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  int64_t dims[2] = {call->tensors[1].sizes[0], call->tensors[1].sizes[1]};
  int k = 53, steps = 0; /* 53 - bit_width(K - 1), bit_width(K - 1) */
  for (int64_t left = call->tensors[0].sizes[1] - 1; left > 0; left /= 2)
    k--, steps++;
  tpu_hlo_value x = tpu_hlo_convert(h, in[0], TPU_FLOAT64);
  checks(h, x, by_rows(call), bad);
  tpu_hlo_value q = integer_weights(h, x, k);
  tpu_hlo_value u = tpu_pjrt_philox_uniforms_f64(h, scalar, ctx, dims[0] * dims[1]);
  u = tpu_hlo_reshape(h, u, 2, dims);
  out[0] = call->scalars[0].i ? draw_with(h, q, u, steps) : draw_without(h, q, u);
}

static bool message(const tpu_op_call *call, int check, char *buf, size_t len,
                    tpu_status *code) {
  static const char *const whole[] = {TPU_MULTINOMIAL_INVALID, TPU_MULTINOMIAL_ZERO_SUM};
  static const char *const rows[] = {TPU_MULTINOMIAL_NEGATIVE, TPU_MULTINOMIAL_INFINITE,
                                     TPU_MULTINOMIAL_ZERO_SUM};
  bool in_rows = by_rows(call);
  if (check >= (in_rows ? 3 : 2))
    return false;
  snprintf(buf, len, "%s", in_rows ? rows[check] : whole[check]);
  *code = TPU_ERR_RUNTIME;
  return true;
}

const tpu_pjrt_family tpu_pjrt_multinomial_family = {
    .supports = supports, .emit = emit, .message = message};
