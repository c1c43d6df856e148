/* The ops driven by set elements in StableHLO (ops/tpu_ops_index.h): NONZERO, MASKED_SELECT and
 * MASKED_SCATTER. Their outputs' sizes depend on the data, but the caller counted the set
 * elements first (NONZERO_COUNT), so each call's sizes are static. One running sum over the
 * flattened mask (PyTorch's nonzero: NaN is set, -0.0 is not) ranks each set element among the
 * others in row-major order: NONZERO and MASKED_SELECT scatter each set element's position to
 * the output slot of its rank (slots are unique; an unset element aims past the end, which a
 * scatter drops), then decode coordinates or gather self there; MASKED_SCATTER gathers the
 * source element of each set element's rank. As on the host, a count that differs from the
 * output's size (the input changed after counting) and a source shorter than the count are
 * RuntimeErrors, raised through the family's flag: nothing is written. */
#include <stdio.h>

#include "drivers/pjrt/tpu_pjrt_family.h"
#include "drivers/pjrt/tpu_pjrt_lower_index.h"

static bool is_mask(const tpu_tensor *mask, const tpu_tensor *self) {
  return (mask->dtype == TPU_BOOL || mask->dtype == TPU_UINT8) &&
         tpu_tensor_same_sizes(mask, self);
}

/* Refuses what the host kernels reject as malformed (they report that error). */
static bool supports(const tpu_op_call *call) {
  const tpu_tensor *t = call->tensors;
  if (call->n_outputs != 1)
    return false;
  switch (call->op) {
  case TPU_OP_NONZERO:
    return call->n_inputs == 1 && t[1].dtype == TPU_INT64 && t[1].ndim == 2 &&
           t[1].sizes[1] == t[0].ndim;
  case TPU_OP_MASKED_SELECT:
    return call->n_inputs == 2 && is_mask(&t[1], &t[0]) && t[2].ndim == 1 &&
           t[2].dtype == t[0].dtype;
  case TPU_OP_MASKED_SCATTER:
    return call->n_inputs == 2 && is_mask(&t[0], &t[2]) && t[1].dtype == t[2].dtype &&
           (tpu_tensor_numel(&t[1]) == 0 || tpu_tensor_is_contiguous(&t[1]));
  default:
    return false;
  }
}

/* An empty source (valid while the mask has no set element) has nothing to read. */
static bool absent(const tpu_op_call *call, int i) {
  return call->op == TPU_OP_MASKED_SCATTER && i == 1 &&
         tpu_tensor_numel(&call->tensors[1]) == 0;
}

/* MASKED_SCATTER updates self in place. */
static bool reads_output(const tpu_op_call *call, int k) {
  (void)k;
  return call->op == TPU_OP_MASKED_SCATTER;
}

/* How many elements of `set` (i1 [M]) before each one are set, a set element's rank among them
 * (int64 [M]), and *count, how many are set in all (an int64 scalar). */
static tpu_hlo_value ranks(tpu_hlo *h, tpu_hlo_value set, tpu_hlo_value *count) {
  tpu_hlo_value ones = tpu_hlo_convert(h, set, TPU_INT64);
  tpu_hlo_value through = tpu_hlo_prefix_sum(h, ones, tpu_hlo_constant(h, TPU_INT64, "0"), 0);
  int64_t last = set.dims[0] - 1, end = set.dims[0];
  *count = tpu_hlo_reshape(h, tpu_hlo_slice(h, through, &last, &end), 0, NULL);
  return tpu_hlo_binary(h, "subtract", through, ones);
}

/* The row-major position (in `set`, i1 [M]) of the set element of each rank 0 .. n - 1 (int64
 * [n]). */
static tpu_hlo_value picked(tpu_hlo *h, tpu_hlo_value set, tpu_hlo_value rank, int64_t n) {
  tpu_hlo_value slot = tpu_hlo_select(h, set, rank, tpu_hlo_full_i64(h, n, &rank));
  tpu_hlo_value slots = {.elem = TPU_INT64, .rank = 1, .dims = {n}};
  return tpu_hlo_scatter(h, tpu_hlo_full_i64(h, 0, &slots), slot,
                         tpu_hlo_iota(h, TPU_INT64, set.dims[0]), TPU_HLO_ADD);
}

/* The coordinates in a tensor of dims `dims` of each row-major position (int64 [n]): [n, rank],
 * position / (the product of the later sizes) % the size, per column. */
static tpu_hlo_value coordinates(tpu_hlo *h, tpu_hlo_value at, const int64_t *dims, int rank) {
  int64_t table[2] = {at.dims[0], rank}, rows = 0;
  tpu_hlo_value pos = tpu_hlo_broadcast(h, at, 2, table, &rows);
  tpu_hlo_value column = tpu_hlo_coordinate(h, &pos, 1);
  tpu_hlo_value divisor = tpu_hlo_full_i64(h, 1, &pos), size = divisor;
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; d--) {
    tpu_hlo_value here = tpu_hlo_compare(h, "EQ", column, tpu_hlo_full_i64(h, d, &column));
    divisor = tpu_hlo_select(h, here, tpu_hlo_full_i64(h, stride, &pos), divisor);
    size = tpu_hlo_select(h, here, tpu_hlo_full_i64(h, dims[d], &pos), size);
    stride *= dims[d];
  }
  return tpu_hlo_binary(h, "remainder", tpu_hlo_binary(h, "divide", pos, divisor), size);
}

/* A uint8 scalar: 1 when the int64 scalars a and b compare as `direction` says. */
static tpu_hlo_value flag(tpu_hlo *h, const char *direction, tpu_hlo_value a, int64_t b) {
  return tpu_hlo_convert(h, tpu_hlo_compare(h, direction, a, tpu_hlo_full_i64(h, b, &a)),
                         TPU_UINT8);
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)scalar;
  (void)ctx;
  tpu_hlo_value count;
  if (call->op == TPU_OP_MASKED_SCATTER) {
    tpu_hlo_value set = tpu_pjrt_flat(h, tpu_hlo_cast(h, in[0], TPU_BOOL));
    tpu_hlo_value rank = ranks(h, set, &count), self = in[2], r = tpu_pjrt_flat(h, self);
    int64_t length = tpu_tensor_numel(&call->tensors[1]);
    if (length > 0) { /* the source element of each rank, clamped for ranks past it (flagged) */
      rank = tpu_hlo_binary(h, "minimum", rank, tpu_hlo_full_i64(h, length - 1, &rank));
      r = tpu_hlo_select(h, set, tpu_hlo_take(h, tpu_pjrt_flat(h, in[1]), rank, 0), r);
    }
    out[0] = tpu_hlo_reshape(h, r, self.rank, self.dims);
    *bad = flag(h, "GT", count, length);
    return;
  }
  tpu_hlo_value tested = call->op == TPU_OP_NONZERO ? in[0] : in[1];
  tpu_hlo_value set = tpu_pjrt_flat(h, tpu_hlo_cast(h, tested, TPU_BOOL));
  int64_t n = call->tensors[call->n_inputs].sizes[0];
  tpu_hlo_value at = picked(h, set, ranks(h, set, &count), n);
  *bad = flag(h, "NE", count, n);
  if (call->op == TPU_OP_NONZERO)
    out[0] = coordinates(h, at, in[0].dims, in[0].rank);
  else
    out[0] = tpu_hlo_take(h, tpu_pjrt_flat(h, in[0]), at, 0);
}

static bool message(const tpu_op_call *call, int check, char *buf, size_t len,
                    tpu_status *code) {
  if (check != 0) /* one check */
    return false;
  *code = TPU_ERR_RUNTIME;
  if (call->op == TPU_OP_MASKED_SCATTER) /* the count is the module's: the message cannot say */
    snprintf(buf, len, "masked_scatter_: expected source to have at least as many elements as "
             "ones in mask, got %lld", (long long)tpu_tensor_numel(&call->tensors[1]));
  else
    snprintf(buf, len, "%s: the %s changed between counting and writing",
             tpu_op_name(call->op), call->op == TPU_OP_NONZERO ? "input" : "mask");
  return true;
}

const tpu_pjrt_family tpu_pjrt_mask_family = {.supports = supports,
                                              .absent = absent,
                                              .reads_output = reads_output,
                                              .emit = emit,
                                              .message = message};
