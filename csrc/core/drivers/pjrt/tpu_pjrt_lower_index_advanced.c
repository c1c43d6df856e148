/* Advanced indexing in StableHLO (ops/tpu_ops_index.h): INDEX as a gather and INDEX_PUT as a
 * scatter over self read whole, its k indexed dimensions flattened into one: each position of I
 * takes (or puts) the element its k indices name together. The call carries self restrided to
 * B + I + A (stride 0 across I) and a 1-d view per indexed dimension; the family reads and
 * writes self through the view those make (B + K + A) instead, and never reads the 1-d views.
 * Indices wrap once from the end and one outside [-size, size) sets the bounds flag (an
 * IndexError, nothing written); the offsets scratch gets the host's byte offsets. An assignment
 * keeps, per target, the duplicate latest in I's row-major order, as on the host, by scattering
 * the positions with a maximum first. Accumulation adds duplicates in the scatter's order, which
 * XLA chooses (XLA's CPU plugin runs the updates in turn: the host's order and sums, float16 and
 * bfloat16 rounded per step), bool as a logical or. */
#include <stdio.h>

#include "drivers/pjrt/tpu_pjrt_family.h"
#include "drivers/pjrt/tpu_pjrt_lower_index.h"

/* The problem's shape: k index tensors, nb dimensions before them in the big tensor (INDEX's src,
 * INDEX_PUT's self: B + I + A) and ni in I, the offsets' rank. */
typedef struct shape {
  int k, nb, ni;
  const tpu_tensor *big;
} shape;

/* Only for a call `supports` accepts: its scalars[0] is in range there. */
static shape shape_of(const tpu_op_call *call) {
  shape s = {.k = (call->n_inputs - 1) / 2, .nb = (int)call->scalars[0].i};
  s.ni = call->tensors[call->n_inputs].ndim;
  s.big = &call->tensors[call->op == TPU_OP_INDEX ? 0 : call->n_inputs + 1];
  return s;
}

/* The 1-d view of indexed dimension j: its size bounds index j and its stride scales it. */
static const tpu_tensor *along(const tpu_op_call *call, int j) {
  return &call->tensors[1 + (call->n_inputs - 1) / 2 + j];
}

/* Refuses what the host kernel rejects as malformed (it reports that error), and big tensors
 * whose self would pass TPU_MAX_DIMS. */
static bool supports(const tpu_op_call *call) {
  if ((call->op != TPU_OP_INDEX && call->op != TPU_OP_INDEX_PUT) || call->n_inputs < 3 ||
      call->n_inputs % 2 == 0 || call->n_outputs != 2)
    return false;
  int k = (call->n_inputs - 1) / 2;
  const tpu_tensor *offsets = &call->tensors[call->n_inputs];
  const tpu_tensor *first = &call->tensors[0], *last = &call->tensors[call->n_inputs + 1];
  const tpu_tensor *big = call->op == TPU_OP_INDEX ? first : last;
  int64_t nb = call->scalars[0].i;
  if (offsets->dtype != TPU_INT64 || !tpu_tensor_is_contiguous(offsets) || nb < 0 ||
      nb > big->ndim - offsets->ndim || big->ndim - offsets->ndim + k > TPU_MAX_DIMS ||
      !big->buf || first->dtype != last->dtype || !tpu_tensor_same_sizes(first, last))
    return false;
  for (int d = 0; d < offsets->ndim; d++)
    if (big->sizes[nb + d] != offsets->sizes[d])
      return false;
  for (int j = 0; j < k; j++) {
    const tpu_tensor *index = &call->tensors[1 + j];
    if ((index->dtype != TPU_INT32 && index->dtype != TPU_INT64) ||
        !tpu_tensor_same_sizes(index, offsets) || along(call, j)->ndim != 1)
      return false;
  }
  return true;
}

/* The 1-d views only describe self's indexed dimensions. */
static bool absent(const tpu_op_call *call, int i) {
  int k = (call->n_inputs - 1) / 2;
  return i > k && i <= 2 * k;
}

/* INDEX_PUT updates self in place. */
static bool reads_output(const tpu_op_call *call, int k) {
  return call->op == TPU_OP_INDEX_PUT && k == 1;
}

/* Self whole, B + K + A: the big tensor with its I dimensions replaced by the indexed ones. */
static bool view(const tpu_op_call *call, int i, tpu_tensor *t) {
  shape s = shape_of(call);
  if (&call->tensors[i] != s.big)
    return false;
  *t = *s.big;
  t->ndim = s.big->ndim - s.ni + s.k;
  for (int j = 0; j < s.k; j++) {
    t->sizes[s.nb + j] = along(call, j)->sizes[0];
    t->strides[s.nb + j] = along(call, j)->strides[0];
  }
  for (int d = s.nb + s.ni; d < s.big->ndim; d++) {
    t->sizes[d - s.ni + s.k] = s.big->sizes[d];
    t->strides[d - s.ni + s.k] = s.big->strides[d];
  }
  return true;
}

/* x with its dimensions [nb, nb + n) merged into one of `merged` elements (n = 0, for a 0-d I:
 * one of `merged` = 1 element inserted at nb). */
static tpu_hlo_value merge(tpu_hlo *h, tpu_hlo_value x, int nb, int n, int64_t merged) {
  int64_t dims[TPU_MAX_DIMS + 1];
  int rank = 0;
  for (int d = 0; d < x.rank; d++) {
    if (d < nb || d >= nb + n)
      dims[rank++] = x.dims[d];
    else if (d == nb)
      dims[rank++] = merged;
  }
  if (n == 0) { /* a 0-d I: one position, inserted */
    for (int d = rank; d > nb; d--)
      dims[d] = dims[d - 1];
    dims[nb] = merged;
    rank++;
  }
  return tpu_hlo_reshape(h, x, rank, dims);
}

/* x's dimension `from` moved to position `to`, the others in order. */
static tpu_hlo_value move_dim(tpu_hlo *h, tpu_hlo_value x, int from, int to) {
  int64_t perm[TPU_MAX_DIMS + 1];
  for (int d = 0, o = 0; d < x.rank; d++) {
    if (d == to) {
      perm[d] = from;
      continue;
    }
    o += o == from;
    perm[d] = o++;
  }
  return tpu_hlo_transpose(h, x, perm);
}

/* self (B + [P] + A) with values (B + [N] + A) put at the targets (int64 [N]) along nb. */
static tpu_hlo_value put(tpu_hlo *h, tpu_hlo_value self, tpu_hlo_value values,
                         tpu_hlo_value targets, int nb, bool accumulate) {
  if (accumulate) { /* scatters combine along dimension 0 */
    tpu_hlo_value x = move_dim(h, self, nb, 0), v = move_dim(h, values, nb, 0);
    bool logical = self.elem == TPU_BOOL;
    if (logical) {
      x = tpu_hlo_convert(h, x, TPU_UINT8);
      v = tpu_hlo_convert(h, v, TPU_UINT8);
    }
    x = tpu_hlo_scatter(h, x, targets, v, logical ? TPU_HLO_MAX : TPU_HLO_ADD);
    return move_dim(h, logical ? tpu_hlo_cast(h, x, TPU_BOOL) : x, 0, nb);
  }
  int64_t nb64 = nb;
  tpu_hlo_value positions = {.elem = TPU_INT64, .rank = 1, .dims = {self.dims[nb]}};
  tpu_hlo_value winner = tpu_hlo_scatter(h, tpu_hlo_full_i64(h, -1, &positions), targets,
                                         tpu_hlo_iota(h, TPU_INT64, values.dims[nb]),
                                         TPU_HLO_MAX);
  tpu_hlo_value at = tpu_hlo_binary(h, "maximum", winner, tpu_hlo_full_i64(h, 0, &winner));
  tpu_hlo_value taken = tpu_hlo_take(h, values, at, nb);
  tpu_hlo_value written = tpu_hlo_compare(h, "GE", winner, tpu_hlo_full_i64(h, 0, &winner));
  written = tpu_hlo_broadcast(h, written, self.rank, self.dims, &nb64);
  return tpu_hlo_select(h, written, taken, self);
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)scalar;
  (void)ctx;
  shape s = shape_of(call);
  int64_t elsize = (int64_t)tpu_dtype_size(s.big->dtype), p = 1;
  tpu_hlo_value target = {0}, offsets = {0};
  for (int j = 0; j < s.k; j++) {
    int64_t size = along(call, j)->sizes[0];
    int64_t bytes = size == 1 ? 0 : along(call, j)->strides[0] * elsize; /* as the host's */
    tpu_hlo_value flag, index = tpu_hlo_convert(h, in[1 + j], TPU_INT64);
    index = tpu_pjrt_index_checked(h, tpu_pjrt_index_wrap(h, index, size), size, &flag);
    tpu_hlo_value scaled =
        tpu_hlo_binary(h, "multiply", index, tpu_hlo_full_i64(h, bytes, &index));
    p *= size;
    if (j == 0) {
      target = index;
      offsets = scaled;
      *bad = flag;
      continue;
    }
    target = tpu_hlo_binary(h, "multiply", target, tpu_hlo_full_i64(h, size, &target));
    target = tpu_hlo_binary(h, "add", target, index);
    offsets = tpu_hlo_binary(h, "add", offsets, scaled);
    *bad = tpu_hlo_binary(h, "or", *bad, flag);
  }
  out[0] = offsets;
  target = tpu_pjrt_flat(h, target);
  int64_t n = target.dims[0];
  const tpu_tensor *result = &call->tensors[call->n_inputs + 1];
  if (call->op == TPU_OP_INDEX) {
    tpu_hlo_value taken = tpu_hlo_take(h, merge(h, in[0], s.nb, s.k, p), target, s.nb);
    out[1] = tpu_hlo_reshape(h, taken, result->ndim, result->sizes);
    return;
  }
  tpu_hlo_value self = in[call->n_inputs + 1];
  tpu_hlo_value r = put(h, merge(h, self, s.nb, s.k, p), merge(h, in[0], s.nb, s.ni, n), target,
                        s.nb, call->scalars[1].i != 0);
  out[1] = tpu_hlo_reshape(h, r, self.rank, self.dims);
}

/* The host names the offending index's value, which a module's flag cannot carry: the message
 * names each indexed dimension's bound instead. */
static bool message(const tpu_op_call *call, int check, char *buf, size_t len,
                    tpu_status *code) {
  if (check != 0) /* one check */
    return false;
  (void)code; /* an IndexError */
  int k = (call->n_inputs - 1) / 2;
  size_t used =
      (size_t)snprintf(buf, len, "%s is out of bounds for", k > 1 ? "an index" : "index");
  for (int j = 0; j < k && used < len; j++)
    used += (size_t)snprintf(buf + used, len - used, "%s dimension %d with size %lld",
                             j ? " or" : "", j, (long long)along(call, j)->sizes[0]);
  return true;
}

const tpu_pjrt_family tpu_pjrt_advanced_index_family = {.supports = supports,
                                                         .absent = absent,
                                                         .reads_output = reads_output,
                                                         .view = view,
                                                         .emit = emit,
                                                         .message = message};
