/* The nn family (ops/tpu_ops_nn.h) in StableHLO: NLL_LOSS and its backward on floating inputs,
 * EMBEDDING_BACKWARD on floating gradients (scale_grad_by_freq's counts too). Bad targets and
 * indices set the call's flag (an IndexError, nothing stored). Losses compute in float64: each
 * product of two values of the dtype is exact there and rounds once, as the host kernel's; sums
 * differ from its block order only in float64's last bits. Embedding rows are a scatter-add in
 * the dtype. */
#include <stdio.h>

#include "drivers/pjrt/tpu_pjrt_family.h"

enum { REDUCE_NONE = 0, REDUCE_MEAN = 1 };

static bool floating(const tpu_tensor *t) { return tpu_dtype_is_floating(t->dtype); }

/* NLL_LOSS's [N, C, S] input and [N, S] target, or NLL_LOSS_BACKWARD's grad_input and target. */
static bool nll_supported(const tpu_op_call *call, const tpu_tensor *input,
                          const tpu_tensor *target, const tpu_tensor *weight) {
  int64_t reduction = call->scalars[0].i;
  return input->ndim == 3 && floating(input) && target->ndim == 2 &&
         (target->dtype == TPU_INT64 || target->dtype == TPU_UINT8) &&
         target->sizes[0] == input->sizes[0] && target->sizes[1] == input->sizes[2] &&
         reduction >= 0 && reduction <= 2 &&
         (!weight || (weight->ndim == 1 && weight->sizes[0] == input->sizes[1] &&
                      weight->dtype == input->dtype));
}

static bool supports(const tpu_op_call *call) {
  const tpu_tensor *t = call->tensors;
  switch (call->op) {
  case TPU_OP_NLL_LOSS:
    return (call->n_inputs == 2 || call->n_inputs == 3) && call->n_outputs == 2 &&
           nll_supported(call, &t[0], &t[1], call->n_inputs == 3 ? &t[2] : NULL) &&
           t[call->n_inputs].dtype == t[0].dtype && t[call->n_inputs + 1].dtype == t[0].dtype;
  case TPU_OP_NLL_LOSS_BACKWARD:
    return (call->n_inputs == 3 || call->n_inputs == 4) && call->n_outputs == 1 &&
           nll_supported(call, &t[call->n_inputs], &t[1], call->n_inputs == 4 ? &t[3] : NULL) &&
           t[0].dtype == t[call->n_inputs].dtype && t[2].dtype == t[0].dtype && t[2].ndim == 0;
  case TPU_OP_EMBEDDING_BACKWARD: { /* with scale_grad_by_freq, counts [V] as a second output */
    bool freq = call->scalars[1].i != 0;
    return call->n_inputs == 2 && call->n_outputs == (freq ? 2 : 1) && t[0].ndim == 2 &&
           t[1].ndim == 1 && t[2].ndim == 2 && floating(&t[0]) && t[2].dtype == t[0].dtype &&
           (t[1].dtype == TPU_INT64 || t[1].dtype == TPU_INT32) &&
           t[0].sizes[0] == t[1].sizes[0] && t[0].sizes[1] == t[2].sizes[1] &&
           (!freq || (t[3].dtype == TPU_INT64 && t[3].ndim == 1 && t[3].sizes[0] == t[2].sizes[0]));
  }
  default:
    return false;
  }
}

/* The classes of an NLL call, flattened to [N * S] int64, with the masks of the ones that count
 * (not ignore_index) and of bad ones (counting, outside [0, C)). */
typedef struct targets {
  tpu_hlo_value cls, counts, bad;
} targets;

/* Whether each index lies outside [0, size). */
static tpu_hlo_value outside(tpu_hlo *h, tpu_hlo_value index, int64_t size) {
  return tpu_hlo_binary(h, "or", tpu_hlo_compare(h, "LT", index, tpu_hlo_full_i64(h, 0, &index)),
                        tpu_hlo_compare(h, "GE", index, tpu_hlo_full_i64(h, size, &index)));
}

static targets read_targets(tpu_hlo *h, const tpu_op_call *call, tpu_hlo_value target,
                            int64_t C) {
  int64_t n = target.dims[0] * target.dims[1];
  targets t;
  t.cls = tpu_hlo_reshape(h, tpu_hlo_convert(h, target, TPU_INT64), 1, &n);
  t.counts = tpu_hlo_compare(h, "NE", t.cls, tpu_hlo_full_i64(h, call->scalars[1].i, &t.cls));
  t.bad = tpu_hlo_binary(h, "and", t.counts, outside(h, t.cls, C));
  return t;
}

/* v where the mask holds, else 0. */
static tpu_hlo_value where(tpu_hlo *h, tpu_hlo_value mask, tpu_hlo_value v) {
  const char *zero = tpu_dtype_is_floating(v.elem) ? "0.0" : "0";
  return tpu_hlo_select(h, mask, v, tpu_hlo_full(h, v.elem, zero, &v));
}

/* weight[cls] as float64 for each element, 0 where it does not count (1 without weights). */
static tpu_hlo_value class_weights(tpu_hlo *h, const targets *t, const tpu_hlo_value *weight) {
  tpu_hlo_value safe = where(h, t->counts, t->cls); /* in range for the gather */
  safe = tpu_hlo_select(h, t->bad, tpu_hlo_full_i64(h, 0, &safe), safe);
  tpu_hlo_value w = weight ? tpu_hlo_convert(h, tpu_hlo_take(h, *weight, safe, 0), TPU_FLOAT64)
                           : tpu_hlo_full(h, TPU_FLOAT64, "1.0", &safe);
  return where(h, t->counts, w);
}

static void nll_loss(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                     tpu_hlo_value *out, tpu_hlo_value *bad) {
  tpu_hlo_value x = in[0];
  int64_t N = x.dims[0], C = x.dims[1], S = x.dims[2], flat = N * C * S, all = 0;
  targets t = read_targets(h, call, in[1], C);
  *bad = tpu_hlo_any(h, t.bad);
  tpu_hlo_value w = class_weights(h, &t, call->n_inputs == 3 ? &in[2] : NULL);
  /* Element (n, s) reads input[n, cls, s], flat index (n * C + cls) * S + s. */
  tpu_hlo_value e = tpu_hlo_iota(h, TPU_INT64, N * S);
  tpu_hlo_value n = tpu_hlo_binary(h, "divide", e, tpu_hlo_full_i64(h, S, &e));
  tpu_hlo_value s = tpu_hlo_binary(h, "remainder", e, tpu_hlo_full_i64(h, S, &e));
  tpu_hlo_value cls = tpu_hlo_select(h, t.counts, t.cls, tpu_hlo_full_i64(h, 0, &e));
  cls = tpu_hlo_select(h, t.bad, tpu_hlo_full_i64(h, 0, &e), cls);
  tpu_hlo_value row =
      tpu_hlo_binary(h, "add", tpu_hlo_binary(h, "multiply", n, tpu_hlo_full_i64(h, C, &e)), cls);
  tpu_hlo_value at =
      tpu_hlo_binary(h, "add", tpu_hlo_binary(h, "multiply", row, tpu_hlo_full_i64(h, S, &e)), s);
  tpu_hlo_value picked =
      tpu_hlo_convert(h, tpu_hlo_take(h, tpu_hlo_reshape(h, x, 1, &flat), at, 0), TPU_FLOAT64);
  tpu_hlo_value loss =
      where(h, t.counts, tpu_hlo_unary(h, "negate", tpu_hlo_binary(h, "multiply", picked, w)));
  int64_t reduction = call->scalars[0].i;
  if (reduction == REDUCE_NONE) {
    int64_t dims[2] = {N, S};
    out[0] = tpu_hlo_reshape(h, loss, 2, dims);
    out[1] = tpu_hlo_constant(h, TPU_FLOAT64, "0.0");
    return;
  }
  tpu_hlo_value zero = tpu_hlo_constant(h, TPU_FLOAT64, "0.0");
  tpu_hlo_value sum = tpu_hlo_reduce(h, loss, zero, &all, 1, TPU_HLO_ADD);
  tpu_hlo_value total = tpu_hlo_reduce(h, w, zero, &all, 1, TPU_HLO_ADD);
  out[0] = reduction == REDUCE_MEAN ? tpu_hlo_binary(h, "divide", sum, total) : sum;
  out[1] = total;
}

/* grad_input[n, c, s] = weight[c] * -g where c is the class of (n, s), else 0. */
static void nll_loss_backward(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                              tpu_hlo_value *out, tpu_hlo_value *bad) {
  const tpu_tensor *gi = &call->tensors[call->n_inputs];
  int64_t N = gi->sizes[0], C = gi->sizes[1], S = gi->sizes[2];
  targets t = read_targets(h, call, in[1], C);
  *bad = tpu_hlo_any(h, t.bad);
  tpu_hlo_value w = class_weights(h, &t, call->n_inputs == 4 ? &in[3] : NULL);
  tpu_hlo_value g = tpu_hlo_convert(h, in[0], TPU_FLOAT64);
  int64_t reduction = call->scalars[0].i, flat = N * S;
  if (reduction == REDUCE_NONE) {
    g = tpu_hlo_reshape(h, g, 1, &flat);
  } else {
    if (reduction == REDUCE_MEAN) { /* g / total_weight, rounded to the dtype as on the host */
      tpu_hlo_value mean =
          tpu_hlo_binary(h, "divide", g, tpu_hlo_convert(h, in[2], TPU_FLOAT64));
      g = tpu_hlo_convert(h, tpu_hlo_cast(h, mean, gi->dtype), TPU_FLOAT64);
    }
    g = tpu_hlo_splat(h, g, &w);
  }
  tpu_hlo_value v = tpu_hlo_binary(h, "multiply", w, tpu_hlo_unary(h, "negate", g));
  int64_t dims[3] = {N, C, S}, ns[2] = {0, 2}, c = 1, rows[2] = {N, S};
  tpu_hlo_value hit = tpu_hlo_compare(
      h, "EQ", tpu_hlo_broadcast(h, tpu_hlo_reshape(h, t.cls, 2, rows), 3, dims, ns),
      tpu_hlo_broadcast(h, tpu_hlo_iota(h, TPU_INT64, C), 3, dims, &c));
  hit = tpu_hlo_binary(h, "and", hit,
                       tpu_hlo_broadcast(h, tpu_hlo_reshape(h, t.counts, 2, rows), 3, dims, ns));
  out[0] = where(h, hit, tpu_hlo_broadcast(h, tpu_hlo_reshape(h, v, 2, rows), 3, dims, ns));
}

/* grad_weight[k] = sum of grad[n] over indices[n] == k, except the padding row. */
static void embedding_backward(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                               tpu_hlo_value *out, tpu_hlo_value *bad) {
  const tpu_tensor *gw = &call->tensors[2];
  int64_t V = gw->sizes[0];
  tpu_hlo_value index = tpu_hlo_convert(h, in[1], TPU_INT64), grad = in[0];
  tpu_hlo_value padding = tpu_hlo_full_i64(h, call->scalars[0].i, &index);
  tpu_hlo_value counts = tpu_hlo_compare(h, "NE", index, padding);
  *bad = tpu_hlo_any(h, tpu_hlo_binary(h, "and", counts, outside(h, index, V)));
  if (call->scalars[1].i) { /* each row scaled by 1 / its index's count, the padding's counted */
    tpu_hlo_value uses = tpu_hlo_full_i64(h, 0, &(tpu_hlo_value){.rank = 1, .dims = {V}});
    uses = tpu_hlo_scatter(h, uses, index, tpu_hlo_full_i64(h, 1, &index), TPU_HLO_ADD);
    out[1] = uses;
    tpu_hlo_value at = tpu_hlo_binary(h, "maximum", index, tpu_hlo_full_i64(h, 0, &index));
    at = tpu_hlo_binary(h, "minimum", at, tpu_hlo_full_i64(h, V - 1, &index));
    tpu_hlo_value used = tpu_hlo_convert(h, tpu_hlo_take(h, uses, at, 0), TPU_FLOAT64);
    tpu_hlo_value scale = tpu_hlo_binary(h, "divide", tpu_hlo_full(h, TPU_FLOAT64, "1.0", &used),
                                         used);
    tpu_dtype work = grad.elem == TPU_FLOAT64 ? TPU_FLOAT64 : TPU_FLOAT32;
    int64_t rows = 0;
    scale = tpu_hlo_broadcast(h, tpu_hlo_convert(h, scale, work), 2, grad.dims, &rows);
    grad = tpu_hlo_convert(h, tpu_hlo_binary(h, "multiply", tpu_hlo_convert(h, grad, work), scale),
                           grad.elem);
  }
  /* The padding row's index moves out of range, where the scatter adds nothing. */
  index = tpu_hlo_select(h, counts, index, tpu_hlo_full_i64(h, V, &index));
  tpu_hlo_value zeros = {.elem = gw->dtype, .rank = 2, .dims = {V, gw->sizes[1]}};
  zeros = tpu_hlo_full(h, gw->dtype, "0.0", &zeros);
  out[0] = tpu_hlo_scatter(h, zeros, index, grad, TPU_HLO_ADD);
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)scalar;
  (void)ctx;
  if (call->op == TPU_OP_NLL_LOSS)
    nll_loss(h, call, in, out, bad);
  else if (call->op == TPU_OP_NLL_LOSS_BACKWARD)
    nll_loss_backward(h, call, in, out, bad);
  else
    embedding_backward(h, call, in, out, bad);
}

static bool message(const tpu_op_call *call, int check, char *buf, size_t len,
                    tpu_status *code) {
  if (check != 0) /* one check */
    return false;
  (void)code; /* an IndexError */
  if (call->op == TPU_OP_EMBEDDING_BACKWARD)
    snprintf(buf, len, "embedding_dense_backward(): an index is out of bounds for %lld embeddings",
             (long long)call->tensors[2].sizes[0]);
  else
    snprintf(buf, len, "Target is out of bounds.");
  return true;
}

const tpu_pjrt_family tpu_pjrt_nn_family = {
    .supports = supports, .emit = emit, .message = message};
