/* Convolutions (ops/tpu_ops_conv.h) as StableHLO convolutions, in float (double for float64) and
 * rounded once: CONV; CONV_BACKWARD_INPUT as the convolution of the stride-dilated dy with the
 * spatially reversed kernel, its two channel dimensions swapped within each group;
 * CONV_BACKWARD_WEIGHT as the convolution of x with dy over the batch, groups as batch groups;
 * CONV_BACKWARD_BIAS as a sum. Each padding is chosen so the result has exactly the output's
 * sizes (a transposed convolution's output_padding). */
#include "drivers/pjrt/tpu_pjrt_family.h"

static bool floating(tpu_dtype d) {
  return tpu_dtype_is_floating(d) && tpu_dtype_is_computable(d) && !tpu_dtype_is_complex(d);
}

/* The x-like tensor, the kernel-shaped one (w or dw) and the y-like one of a call. */
typedef struct geometry {
  const tpu_tensor *x, *w, *y;
  int spatial;
  int64_t groups;
} geometry;

static geometry geometry_of(const tpu_op_call *call) {
  const tpu_tensor *t = call->tensors;
  geometry g = {0};
  switch (call->op) {
  case TPU_OP_CONV: g.x = &t[0], g.w = &t[1], g.y = &t[call->n_inputs]; break;
  case TPU_OP_CONV_BACKWARD_INPUT: g.y = &t[0], g.w = &t[1], g.x = &t[call->n_inputs]; break;
  default: g.y = &t[0], g.x = &t[1], g.w = &t[2]; break; /* CONV_BACKWARD_WEIGHT */
  }
  g.spatial = g.x->ndim - 2;
  g.groups = g.w->ndim > 1 && g.w->sizes[1] > 0 ? g.x->sizes[1] / g.w->sizes[1] : 0;
  return g;
}

static bool supports(const tpu_op_call *call) {
  if (call->op != TPU_OP_CONV && call->op != TPU_OP_CONV_BACKWARD_INPUT &&
      call->op != TPU_OP_CONV_BACKWARD_WEIGHT && call->op != TPU_OP_CONV_BACKWARD_BIAS)
    return false;
  const tpu_tensor *t = call->tensors;
  int n = call->n_inputs + call->n_outputs;
  for (int i = 0; i < n; i++)
    if (!floating(t[i].dtype) || t[i].dtype != t[0].dtype)
      return false;
  if (call->op == TPU_OP_CONV_BACKWARD_BIAS)
    return call->n_inputs == 1 && call->n_outputs == 1 && t[0].ndim >= 3 && t[1].ndim == 1 &&
           t[1].sizes[0] == t[0].sizes[1];
  int max_inputs = call->op == TPU_OP_CONV_BACKWARD_WEIGHT ? 2 : 3; /* the others: a bias */
  if (call->n_outputs != 1 || call->n_inputs < 2 || call->n_inputs > max_inputs)
    return false;
  geometry g = geometry_of(call);
  if (g.spatial < 1 || g.spatial > 3 || g.w->ndim != g.x->ndim || g.y->ndim != g.x->ndim ||
      g.groups < 1 || g.x->sizes[1] != g.groups * g.w->sizes[1] ||
      g.w->sizes[0] % g.groups != 0 || g.y->sizes[1] != g.w->sizes[0] ||
      g.y->sizes[0] != g.x->sizes[0])
    return false;
  if (call->n_inputs == 3) {
    int64_t channels = call->op == TPU_OP_CONV ? g.y->sizes[1] : g.x->sizes[1];
    if (t[2].ndim != 1 || t[2].sizes[0] != channels)
      return false;
  }
  for (int d = 0; d < g.spatial; d++)
    if (g.x->sizes[2 + d] < 1 || g.y->sizes[2 + d] < 1 || g.w->sizes[2 + d] < 1)
      return false;
  return true;
}

/* Spatial dimension d's stride, padding and dilation: the last `spatial` of three packed slots. */
static int64_t param(const tpu_op_call *call, int which, const geometry *g, int d) {
  return tpu_conv_unpack(call->scalars[which].u, 3 - g->spatial + d);
}

static tpu_hlo_value work(tpu_hlo *h, tpu_hlo_value v) {
  return tpu_hlo_convert(h, v, v.elem == TPU_FLOAT64 ? TPU_FLOAT64 : TPU_FLOAT32);
}

/* v + bias spread along dimension 1. */
static tpu_hlo_value plus_bias(tpu_hlo *h, tpu_hlo_value v, tpu_hlo_value bias) {
  int64_t channel[1] = {1};
  return tpu_hlo_binary(h, "add", v,
                        tpu_hlo_broadcast(h, work(h, bias), v.rank, v.dims, channel));
}

static tpu_hlo_value forward(tpu_hlo *h, const tpu_op_call *call, const geometry *g,
                             tpu_hlo_value x, tpu_hlo_value w) {
  tpu_hlo_conv c = {.layout = {"b, f", "o, i", "b, f"}, .spatial = g->spatial,
                    .groups = g->groups};
  for (int d = 0; d < g->spatial; d++) {
    int64_t s = param(call, 0, g, d), p = param(call, 1, g, d), dil = param(call, 2, g, d);
    int64_t k = g->w->sizes[2 + d], in = g->x->sizes[2 + d], out = g->y->sizes[2 + d];
    c.stride[d] = s;
    c.pad_low[d] = p;
    c.pad_high[d] = (out - 1) * s + dil * (k - 1) + 1 - in - p;
    c.lhs_dilation[d] = 1;
    c.rhs_dilation[d] = dil;
  }
  return tpu_hlo_convolution(h, x, w, &c, g->y->ndim, g->y->sizes);
}

static tpu_hlo_value backward_input(tpu_hlo *h, const tpu_op_call *call, const geometry *g,
                                    tpu_hlo_value dy, tpu_hlo_value w) {
  /* [G Kg, Cg, k...] -> reversed, [G, Kg, Cg, k...] -> [G, Cg, Kg, k...] -> [G Cg, Kg, k...]. */
  int64_t spatial[3], split[TPU_MAX_DIMS + 1], perm[TPU_MAX_DIMS + 1], merged[TPU_MAX_DIMS];
  for (int d = 0; d < g->spatial; d++)
    spatial[d] = 2 + d;
  w = tpu_hlo_reverse(h, w, spatial, g->spatial);
  int64_t kg = g->w->sizes[0] / g->groups, cg = g->w->sizes[1];
  split[0] = g->groups, split[1] = kg, split[2] = cg;
  perm[0] = 0, perm[1] = 2, perm[2] = 1;
  merged[0] = g->groups * cg, merged[1] = kg;
  for (int d = 0; d < g->spatial; d++) {
    split[3 + d] = g->w->sizes[2 + d];
    perm[3 + d] = 3 + d;
    merged[2 + d] = g->w->sizes[2 + d];
  }
  w = tpu_hlo_reshape(h, w, g->w->ndim + 1, split);
  w = tpu_hlo_reshape(h, tpu_hlo_transpose(h, w, perm), g->w->ndim, merged);
  tpu_hlo_conv c = {.layout = {"b, f", "o, i", "b, f"}, .spatial = g->spatial,
                    .groups = g->groups};
  for (int d = 0; d < g->spatial; d++) {
    int64_t s = param(call, 0, g, d), p = param(call, 1, g, d), dil = param(call, 2, g, d);
    int64_t k = g->w->sizes[2 + d], in = g->x->sizes[2 + d], out = g->y->sizes[2 + d];
    c.stride[d] = 1;
    c.pad_low[d] = dil * (k - 1) - p;
    c.pad_high[d] = in - (out - 1) * s - 1 + p;
    c.lhs_dilation[d] = s;
    c.rhs_dilation[d] = dil;
  }
  return tpu_hlo_convolution(h, dy, w, &c, g->x->ndim, g->x->sizes);
}

/* dw[o, i, k] = sum over n and y of dy[n, o, y] x[n, G(o) Cg + i, y s + k dil - p]: the batch
 * is the contracted feature dimension of both operands, and x's channels, its batch here, split
 * into the groups that dy's channels, the output features, split into (batch_group_count). */
static tpu_hlo_value backward_weight(tpu_hlo *h, const tpu_op_call *call, const geometry *g,
                                     tpu_hlo_value dy, tpu_hlo_value x) {
  tpu_hlo_conv c = {.layout = {"f, b", "i, o", "f, b"}, .spatial = g->spatial, .groups = 1,
                    .batch_groups = g->groups};
  for (int d = 0; d < g->spatial; d++) {
    int64_t s = param(call, 0, g, d), p = param(call, 1, g, d), dil = param(call, 2, g, d);
    int64_t k = g->w->sizes[2 + d], in = g->x->sizes[2 + d], out = g->y->sizes[2 + d];
    c.stride[d] = dil;
    c.pad_low[d] = p;
    c.pad_high[d] = (k - 1) * dil + (out - 1) * s + 1 - in - p;
    c.lhs_dilation[d] = 1;
    c.rhs_dilation[d] = s;
  }
  return tpu_hlo_convolution(h, x, dy, &c, g->w->ndim, g->w->sizes);
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)scalar;
  (void)ctx;
  (void)bad;
  if (call->op == TPU_OP_CONV_BACKWARD_BIAS) {
    int64_t dims[TPU_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < in[0].rank; i++)
      if (i != 1)
        dims[n++] = i;
    tpu_hlo_value v = work(h, in[0]);
    out[0] = tpu_hlo_reduce(h, v, tpu_hlo_constant(h, v.elem, "0.0"), dims, n, TPU_HLO_ADD);
    return;
  }
  geometry g = geometry_of(call);
  tpu_hlo_value a = work(h, in[0]), b = work(h, in[1]);
  if (call->op == TPU_OP_CONV)
    out[0] = forward(h, call, &g, a, b);
  else if (call->op == TPU_OP_CONV_BACKWARD_INPUT)
    out[0] = backward_input(h, call, &g, a, b);
  else
    out[0] = backward_weight(h, call, &g, a, b);
  if (call->n_inputs == 3)
    out[0] = plus_bias(h, out[0], in[2]);
}

const tpu_pjrt_family tpu_pjrt_conv_family = {.supports = supports, .emit = emit};
