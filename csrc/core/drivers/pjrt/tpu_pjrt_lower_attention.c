/* The attention family (ops/tpu_ops_attention.h) in StableHLO: SDPA and its backward as whole
 * matrices in float32 (dot_general at the highest precision), heads flattened into the batch and
 * key/value heads repeated for grouped-query attention. XLA fuses the softmax around the two
 * products; rows whose keys are all masked give out = 0 and logsumexp = 0, as on the host. */
#include "drivers/pjrt/tpu_pjrt_family.h"

static bool float_qkv(tpu_dtype d) {
  return d == TPU_FLOAT32 || d == TPU_BFLOAT16 || d == TPU_FLOAT16;
}

/* q [B, Hq, L, D], k [B, Hkv, S, D], v [B, Hkv, S, Dv], mask [B, Hq, L, S] or NULL. */
static bool shapes_ok(const tpu_tensor *q, const tpu_tensor *k, const tpu_tensor *v,
                      const tpu_tensor *mask) {
  if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4 || !float_qkv(q->dtype) ||
      k->dtype != q->dtype || v->dtype != q->dtype)
    return false;
  int64_t B = q->sizes[0], Hq = q->sizes[1], L = q->sizes[2], S = k->sizes[2];
  if (k->sizes[0] != B || v->sizes[0] != B || k->sizes[1] != v->sizes[1] || k->sizes[1] < 1 ||
      Hq % k->sizes[1] != 0 || k->sizes[3] != q->sizes[3] || v->sizes[2] != S)
    return false;
  if (!mask)
    return true;
  int64_t want[4] = {B, Hq, L, S};
  for (int i = 0; i < 4; i++)
    if (mask->ndim != 4 || mask->sizes[i] != want[i])
      return false;
  return mask->dtype == TPU_BOOL || mask->dtype == TPU_FLOAT32 || mask->dtype == q->dtype;
}

static bool same_sizes_dtype(const tpu_tensor *a, const tpu_tensor *b) {
  return tpu_tensor_same_sizes(a, b) && a->dtype == b->dtype;
}

static bool supports(const tpu_op_call *call) {
  const tpu_tensor *t = call->tensors;
  int n = call->n_inputs;
  if (call->op == TPU_OP_SDPA) {
    if ((n != 3 && n != 4) || call->n_outputs != 2 ||
        !shapes_ok(&t[0], &t[1], &t[2], n == 4 ? &t[3] : NULL))
      return false;
    const tpu_tensor *out = &t[n], *lse = &t[n + 1];
    return out->ndim == 4 && out->dtype == t[0].dtype && out->sizes[3] == t[2].sizes[3] &&
           out->sizes[2] == t[0].sizes[2] && out->sizes[1] == t[0].sizes[1] &&
           out->sizes[0] == t[0].sizes[0] && lse->dtype == TPU_FLOAT32 && lse->ndim == 3 &&
           lse->sizes[0] == t[0].sizes[0] && lse->sizes[1] == t[0].sizes[1] &&
           lse->sizes[2] == t[0].sizes[2];
  }
  if (call->op != TPU_OP_SDPA_BACKWARD || (n != 6 && n != 7) || call->n_outputs < 3 ||
      call->n_outputs > (n == 7 ? 4 : 3))
    return false;
  const tpu_tensor *mask = n == 7 ? &t[6] : NULL;
  if (!shapes_ok(&t[1], &t[2], &t[3], mask) || !same_sizes_dtype(&t[n], &t[1]) ||
      !same_sizes_dtype(&t[n + 1], &t[2]) || !same_sizes_dtype(&t[n + 2], &t[3]) ||
      !same_sizes_dtype(&t[4], &t[0]) || t[0].dtype != t[1].dtype || t[5].dtype != TPU_FLOAT32 ||
      t[0].ndim != 4 || t[0].sizes[3] != t[3].sizes[3] || t[5].ndim != 3)
    return false;
  return call->n_outputs == 3 || (mask->dtype != TPU_BOOL && same_sizes_dtype(&t[n + 3], mask));
}

/* [B, H, X, E] as float32 [B * H, X, E]. */
static tpu_hlo_value flat_heads(tpu_hlo *h, tpu_hlo_value x) {
  int64_t dims[3] = {x.dims[0] * x.dims[1], x.dims[2], x.dims[3]};
  return tpu_hlo_reshape(h, tpu_hlo_convert(h, x, TPU_FLOAT32), 3, dims);
}

/* Key or value heads [B, Hkv, S, E], each repeated for its `group` query heads: [B * Hq, S, E]. */
static tpu_hlo_value repeat_heads(tpu_hlo *h, tpu_hlo_value x, int64_t group) {
  if (group == 1)
    return flat_heads(h, x);
  int64_t dims[5] = {x.dims[0], x.dims[1], group, x.dims[2], x.dims[3]}, keep[4] = {0, 1, 3, 4};
  tpu_hlo_value wide = tpu_hlo_broadcast(h, tpu_hlo_convert(h, x, TPU_FLOAT32), 5, dims, keep);
  int64_t flat[3] = {x.dims[0] * x.dims[1] * group, x.dims[2], x.dims[3]};
  return tpu_hlo_reshape(h, wide, 3, flat);
}

/* The gradient of repeated heads [B * Hq, S, E] summed back over each group: [B, Hkv, S, E]. */
static tpu_hlo_value sum_groups(tpu_hlo *h, tpu_hlo_value x, const tpu_tensor *kv) {
  int64_t group = x.dims[0] / (kv->sizes[0] * kv->sizes[1]), two = 2;
  int64_t dims[5] = {kv->sizes[0], kv->sizes[1], group, x.dims[1], x.dims[2]};
  tpu_hlo_value split = tpu_hlo_reshape(h, x, 5, dims);
  return tpu_hlo_reduce(h, split, tpu_hlo_constant(h, TPU_FLOAT32, "0.0"), &two, 1, TPU_HLO_ADD);
}

static tpu_hlo_value transposed(tpu_hlo *h, tpu_hlo_value x) {
  static const int64_t swap[3] = {0, 2, 1};
  return tpu_hlo_transpose(h, x, swap);
}

/* [BH, L] spread over [BH, L, S]. */
static tpu_hlo_value rows(tpu_hlo *h, tpu_hlo_value x, const tpu_hlo_value *like) {
  static const int64_t keep[2] = {0, 1};
  return tpu_hlo_broadcast(h, x, 3, like->dims, keep);
}

/* q kᵀ * scale with the mask and the causal flag applied: [BH, L, S] float32, -inf hidden. */
static tpu_hlo_value scores(tpu_hlo *h, const tpu_op_call *call, tpu_hlo_value q, tpu_hlo_value k,
                            const tpu_hlo_value *mask, tpu_pjrt_scalar_fn scalar, void *ctx) {
  tpu_hlo_value s = tpu_hlo_dot(h, q, transposed(h, k), false, TPU_FLOAT32);
  tpu_hlo_value scale = tpu_hlo_convert(h, scalar(ctx, 0, true), TPU_FLOAT32);
  s = tpu_hlo_binary(h, "multiply", s, tpu_hlo_splat(h, scale, &s));
  tpu_hlo_value hidden = tpu_hlo_full(h, TPU_FLOAT32, "0xFF800000", &s);
  if (mask && mask->elem == TPU_BOOL)
    s = tpu_hlo_select(h, tpu_hlo_reshape(h, *mask, 3, s.dims), s, hidden);
  else if (mask)
    s = tpu_hlo_binary(h, "add", s, flat_heads(h, *mask));
  if (call->scalars[1].i & TPU_SDPA_CAUSAL) {
    int64_t one = 1, two = 2;
    tpu_hlo_value i =
        tpu_hlo_broadcast(h, tpu_hlo_iota(h, TPU_INT64, s.dims[1]), 3, s.dims, &one);
    tpu_hlo_value j =
        tpu_hlo_broadcast(h, tpu_hlo_iota(h, TPU_INT64, s.dims[2]), 3, s.dims, &two);
    s = tpu_hlo_select(h, tpu_hlo_compare(h, "GT", j, i), hidden, s);
  }
  return s;
}

static void forward(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                    tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out) {
  int64_t group = in[0].dims[1] / in[1].dims[1], two = 2;
  tpu_hlo_value q = flat_heads(h, in[0]), k = repeat_heads(h, in[1], group);
  tpu_hlo_value v = repeat_heads(h, in[2], group);
  tpu_hlo_value s = scores(h, call, q, k, call->n_inputs == 4 ? &in[3] : NULL, scalar, ctx);
  tpu_hlo_value m = tpu_hlo_reduce(h, s, tpu_hlo_constant(h, TPU_FLOAT32, "0xFF800000"), &two, 1,
                                   TPU_HLO_MAX);
  tpu_hlo_value zero = tpu_hlo_full(h, TPU_FLOAT32, "0.0", &m);
  tpu_hlo_value empty =
      tpu_hlo_compare(h, "EQ", m, tpu_hlo_full(h, TPU_FLOAT32, "0xFF800000", &m));
  m = tpu_hlo_select(h, empty, zero, m); /* a row with every key hidden: exp(-inf - 0) = 0 */
  tpu_hlo_value p =
      tpu_hlo_unary(h, "exponential", tpu_hlo_binary(h, "subtract", s, rows(h, m, &s)));
  tpu_hlo_value sum = tpu_hlo_reduce(h, p, tpu_hlo_constant(h, TPU_FLOAT32, "0.0"), &two, 1,
                                     TPU_HLO_ADD);
  tpu_hlo_value o = tpu_hlo_dot(h, p, v, false, TPU_FLOAT32);
  tpu_hlo_value safe = tpu_hlo_select(h, empty, tpu_hlo_full(h, TPU_FLOAT32, "1.0", &sum), sum);
  o = tpu_hlo_binary(h, "divide", o, rows(h, safe, &o));
  const tpu_tensor *o_t = &call->tensors[call->n_inputs], *lse_t = o_t + 1;
  out[0] = tpu_hlo_reshape(h, o, 4, o_t->sizes);
  tpu_hlo_value lse = tpu_hlo_binary(h, "add", m, tpu_hlo_unary(h, "log", safe));
  out[1] = tpu_hlo_reshape(h, lse, 3, lse_t->sizes);
}

static void backward(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                     tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out) {
  const tpu_tensor *k_t = &call->tensors[2];
  int64_t group = in[1].dims[1] / in[2].dims[1], two = 2;
  tpu_hlo_value dout = flat_heads(h, in[0]), q = flat_heads(h, in[1]);
  tpu_hlo_value k = repeat_heads(h, in[2], group), v = repeat_heads(h, in[3], group);
  tpu_hlo_value o = flat_heads(h, in[4]);
  int64_t bh_l[2] = {q.dims[0], q.dims[1]};
  tpu_hlo_value lse = tpu_hlo_reshape(h, in[5], 2, bh_l);
  tpu_hlo_value s = scores(h, call, q, k, call->n_inputs == 7 ? &in[6] : NULL, scalar, ctx);
  tpu_hlo_value p =
      tpu_hlo_unary(h, "exponential", tpu_hlo_binary(h, "subtract", s, rows(h, lse, &s)));
  tpu_hlo_value dv = tpu_hlo_dot(h, transposed(h, p), dout, false, TPU_FLOAT32);
  tpu_hlo_value dp = tpu_hlo_dot(h, dout, transposed(h, v), false, TPU_FLOAT32);
  tpu_hlo_value d = tpu_hlo_reduce(h, tpu_hlo_binary(h, "multiply", dout, o),
                                   tpu_hlo_constant(h, TPU_FLOAT32, "0.0"), &two, 1, TPU_HLO_ADD);
  tpu_hlo_value ds =
      tpu_hlo_binary(h, "multiply", p, tpu_hlo_binary(h, "subtract", dp, rows(h, d, &dp)));
  tpu_hlo_value scale = tpu_hlo_convert(h, scalar(ctx, 0, true), TPU_FLOAT32);
  tpu_hlo_value dq = tpu_hlo_dot(h, ds, k, false, TPU_FLOAT32);
  dq = tpu_hlo_binary(h, "multiply", dq, tpu_hlo_splat(h, scale, &dq));
  tpu_hlo_value dk = tpu_hlo_dot(h, transposed(h, ds), q, false, TPU_FLOAT32);
  dk = tpu_hlo_binary(h, "multiply", dk, tpu_hlo_splat(h, scale, &dk));
  out[0] = tpu_hlo_reshape(h, dq, 4, call->tensors[1].sizes);
  out[1] = sum_groups(h, dk, k_t);
  out[2] = sum_groups(h, dv, k_t);
  if (call->n_outputs == 4)
    out[3] = tpu_hlo_reshape(h, ds, 4, call->tensors[6].sizes);
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)bad;
  if (call->op == TPU_OP_SDPA)
    forward(h, call, in, scalar, ctx, out);
  else
    backward(h, call, in, scalar, ctx, out);
}

const tpu_pjrt_family tpu_pjrt_attention_family = {.supports = supports, .emit = emit};
