/* The fused LSTM and GRU cells and their backward (ops/tpu_ops_rnn.h) in StableHLO. As the
 * host's kernels do, every element computes in float64 and rounds once into its output; a bias
 * gradient is the column sum, in float64, of the gate gradients rounded to the dtype. */
#include "drivers/pjrt/tpu_pjrt_family.h"

static bool matrix(const tpu_tensor *t, int64_t rows, int64_t cols, tpu_dtype d) {
  return t->ndim == 2 && t->sizes[0] == rows && t->sizes[1] == cols && t->dtype == d;
}

static bool vector(const tpu_tensor *t, int64_t n, tpu_dtype d) {
  return t->ndim == 1 && t->sizes[0] == n && t->dtype == d;
}

/* Which output gradients LSTM_CELL_BACKWARD is given (TPU_RNN_* flags). */
static bool given(const tpu_op_call *call, unsigned flag) { return call->scalars[0].u & flag; }

/* A cell's forward inputs: input and hidden gates [B, count H], the state [B, H] (sizes its B and
 * H), optional biases [count H], one floating dtype. */
static bool forward_inputs(const tpu_op_call *call, int count) {
  const tpu_tensor *t = call->tensors;
  bool bias = call->n_inputs == 5;
  if ((call->n_inputs != 3 && !bias) || t[2].ndim != 2)
    return false;
  int64_t b = t[2].sizes[0], h = t[2].sizes[1];
  tpu_dtype d = t[2].dtype;
  return tpu_dtype_is_floating(d) && matrix(&t[0], b, count * h, d) &&
         matrix(&t[1], b, count * h, d) &&
         (!bias || (vector(&t[3], count * h, d) && vector(&t[4], count * h, d)));
}

static bool lstm_supported(const tpu_op_call *call) {
  const tpu_tensor *t = call->tensors;
  if (call->op == TPU_OP_LSTM_CELL) {
    if (!forward_inputs(call, 4) || call->n_outputs != 3)
      return false;
    const tpu_tensor *o = t + call->n_inputs;
    int64_t b = t[2].sizes[0], h = t[2].sizes[1];
    return matrix(&o[0], b, h, t[2].dtype) && matrix(&o[1], b, h, t[2].dtype) &&
           matrix(&o[2], b, 4 * h, t[2].dtype);
  }
  int n_in = 3 + given(call, TPU_RNN_GRAD_HY) + given(call, TPU_RNN_GRAD_CY);
  bool bias = call->n_outputs == 3;
  if (call->n_inputs != n_in || (call->n_outputs != 2 && !bias) || t[n_in - 3].ndim != 2)
    return false;
  const tpu_tensor *cx = &t[n_in - 3], *o = t + n_in;
  int64_t b = cx->sizes[0], h = cx->sizes[1];
  tpu_dtype d = cx->dtype;
  bool ok = tpu_dtype_is_floating(d) && matrix(&t[n_in - 2], b, h, d) &&
            matrix(&t[n_in - 1], b, 4 * h, d) && matrix(&o[0], b, 4 * h, d) &&
            matrix(&o[1], b, h, d) && (!bias || vector(&o[2], 4 * h, d));
  for (int i = 0; i < n_in - 3; i++)
    ok = ok && matrix(&t[i], b, h, d);
  return ok;
}

static bool gru_supported(const tpu_op_call *call) {
  const tpu_tensor *t = call->tensors;
  if (call->op == TPU_OP_GRU_CELL) {
    if (!forward_inputs(call, 3) || call->n_outputs != 2)
      return false;
    const tpu_tensor *o = t + call->n_inputs;
    int64_t b = t[2].sizes[0], h = t[2].sizes[1];
    return matrix(&o[0], b, h, t[2].dtype) && matrix(&o[1], b, 5 * h, t[2].dtype);
  }
  bool bias = call->n_outputs == 5;
  if (call->n_inputs != 2 || (call->n_outputs != 3 && !bias) || t[0].ndim != 2)
    return false;
  const tpu_tensor *o = t + 2;
  int64_t b = t[0].sizes[0], h = t[0].sizes[1];
  tpu_dtype d = t[0].dtype;
  return tpu_dtype_is_floating(d) && matrix(&t[1], b, 5 * h, d) &&
         matrix(&o[0], b, 3 * h, d) && matrix(&o[1], b, 3 * h, d) && matrix(&o[2], b, h, d) &&
         (!bias || (vector(&o[3], 3 * h, d) && vector(&o[4], 3 * h, d)));
}

static bool supports(const tpu_op_call *call) {
  switch (call->op) {
  case TPU_OP_LSTM_CELL: case TPU_OP_LSTM_CELL_BACKWARD: return lstm_supported(call);
  case TPU_OP_GRU_CELL: case TPU_OP_GRU_CELL_BACKWARD: return gru_supported(call);
  default: return false;
  }
}

static tpu_hlo_value f64(tpu_hlo *h, tpu_hlo_value x) {
  return tpu_hlo_convert(h, x, TPU_FLOAT64);
}

static tpu_hlo_value mul(tpu_hlo *h, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_binary(h, "multiply", a, b);
}

static tpu_hlo_value add(tpu_hlo *h, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_binary(h, "add", a, b);
}

static tpu_hlo_value one_minus(tpu_hlo *h, tpu_hlo_value x) {
  return tpu_hlo_binary(h, "subtract", tpu_hlo_full(h, TPU_FLOAT64, "1.0", &x), x);
}

static tpu_hlo_value sigmoid(tpu_hlo *h, tpu_hlo_value x) {
  tpu_hlo_value e = tpu_hlo_unary(h, "exponential", tpu_hlo_unary(h, "negate", x));
  return tpu_hlo_binary(h, "divide", tpu_hlo_full(h, TPU_FLOAT64, "1.0", &x),
                        add(h, tpu_hlo_full(h, TPU_FLOAT64, "1.0", &x), e));
}

/* Gate q of the `count` gates [B, H] side by side in x [B, count H]. */
static tpu_hlo_value gate(tpu_hlo *h, tpu_hlo_value x, int q, int count) {
  int64_t hidden = x.dims[1] / count, start[2] = {0, q * hidden},
          limit[2] = {x.dims[0], (q + 1) * hidden};
  return tpu_hlo_slice(h, x, start, limit);
}

/* `count` [B, H] values side by side as one [B, count H] value. */
static tpu_hlo_value gates(tpu_hlo *h, const tpu_hlo_value *g, int count) {
  int64_t dims[2] = {g[0].dims[0], count * g[0].dims[1]};
  tpu_hlo_value like = {.elem = TPU_FLOAT64, .rank = 2, .dims = {dims[0], dims[1]}};
  tpu_hlo_value all = tpu_hlo_full(h, TPU_FLOAT64, "0.0", &like);
  for (int q = 0; q < count; q++) {
    int64_t start[2] = {0, q * g[0].dims[1]};
    all = tpu_hlo_update_slice(h, all, g[q], start);
  }
  return all;
}

/* The column sums of gate gradients `g`, rounded to `dtype` first. */
static tpu_hlo_value bias_grad(tpu_hlo *h, tpu_hlo_value g, tpu_dtype dtype) {
  tpu_hlo_value rounded = tpu_hlo_convert(h, tpu_hlo_cast(h, g, dtype), TPU_FLOAT64);
  int64_t rows[1] = {0};
  return tpu_hlo_reduce(h, rounded, tpu_hlo_constant(h, TPU_FLOAT64, "0.0"), rows, 1,
                        TPU_HLO_ADD);
}

/* A bias [G H] spread over the rows of `like` [B, G H]. */
static tpu_hlo_value rows_of(tpu_hlo *h, tpu_hlo_value bias, const tpu_hlo_value *like) {
  int64_t along[1] = {1};
  return tpu_hlo_broadcast(h, f64(h, bias), 2, like->dims, along);
}

static void lstm(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_hlo_value *out) {
  tpu_hlo_value g = add(h, f64(h, in[0]), f64(h, in[1]));
  if (call->n_inputs == 5)
    g = add(h, add(h, g, rows_of(h, in[3], &g)), rows_of(h, in[4], &g));
  tpu_hlo_value a[4] = {sigmoid(h, gate(h, g, 0, 4)), sigmoid(h, gate(h, g, 1, 4)),
                        tpu_hlo_unary(h, "tanh", gate(h, g, 2, 4)), sigmoid(h, gate(h, g, 3, 4))};
  tpu_hlo_value cy = add(h, mul(h, a[1], f64(h, in[2])), mul(h, a[0], a[2]));
  out[0] = mul(h, a[3], tpu_hlo_unary(h, "tanh", cy));
  out[1] = cy;
  out[2] = gates(h, a, 4);
}

static void lstm_backward(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                          tpu_hlo_value *out) {
  int next = 0;
  const tpu_hlo_value *ghy = given(call, TPU_RNN_GRAD_HY) ? &in[next++] : NULL;
  const tpu_hlo_value *gcy = given(call, TPU_RNN_GRAD_CY) ? &in[next++] : NULL;
  tpu_hlo_value cx = f64(h, in[next]), cy = f64(h, in[next + 1]), ws = f64(h, in[next + 2]);
  tpu_hlo_value i = gate(h, ws, 0, 4), f = gate(h, ws, 1, 4), c = gate(h, ws, 2, 4),
                o = gate(h, ws, 3, 4);
  tpu_hlo_value zero = tpu_hlo_full(h, TPU_FLOAT64, "0.0", &cx);
  tpu_hlo_value gh = ghy ? f64(h, *ghy) : zero, tc = tpu_hlo_unary(h, "tanh", cy);
  tpu_hlo_value gc = add(h, gcy ? f64(h, *gcy) : zero,
                         mul(h, mul(h, gh, o), one_minus(h, mul(h, tc, tc))));
  tpu_hlo_value gg[4] = {
      mul(h, mul(h, mul(h, gc, c), i), one_minus(h, i)),
      mul(h, mul(h, mul(h, gc, cx), f), one_minus(h, f)),
      mul(h, mul(h, gc, i), one_minus(h, mul(h, c, c))),
      mul(h, mul(h, mul(h, gh, tc), o), one_minus(h, o)),
  };
  out[0] = gates(h, gg, 4);
  out[1] = mul(h, gc, f);
  if (call->n_outputs == 3)
    out[2] = bias_grad(h, out[0], call->tensors[next].dtype);
}

static void gru(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                tpu_hlo_value *out) {
  tpu_hlo_value ig = f64(h, in[0]), hg = f64(h, in[1]), x = f64(h, in[2]);
  if (call->n_inputs == 5) {
    ig = add(h, ig, rows_of(h, in[3], &ig));
    hg = add(h, hg, rows_of(h, in[4], &hg));
  }
  tpu_hlo_value r = sigmoid(h, add(h, gate(h, ig, 0, 3), gate(h, hg, 0, 3)));
  tpu_hlo_value z = sigmoid(h, add(h, gate(h, ig, 1, 3), gate(h, hg, 1, 3)));
  tpu_hlo_value hn = gate(h, hg, 2, 3);
  tpu_hlo_value n = tpu_hlo_unary(h, "tanh", add(h, gate(h, ig, 2, 3), mul(h, r, hn)));
  out[0] = add(h, n, mul(h, z, tpu_hlo_binary(h, "subtract", x, n)));
  tpu_hlo_value ws[5] = {r, z, n, x, hn};
  out[1] = gates(h, ws, 5);
}

static void gru_backward(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                         tpu_hlo_value *out) {
  tpu_hlo_value g = f64(h, in[0]), ws = f64(h, in[1]);
  tpu_hlo_value r = gate(h, ws, 0, 5), z = gate(h, ws, 1, 5), n = gate(h, ws, 2, 5),
                x = gate(h, ws, 3, 5), hn = gate(h, ws, 4, 5);
  tpu_hlo_value gn = mul(h, mul(h, g, one_minus(h, z)), one_minus(h, mul(h, n, n)));
  tpu_hlo_value gr = mul(h, mul(h, mul(h, gn, hn), r), one_minus(h, r));
  tpu_hlo_value gz =
      mul(h, mul(h, mul(h, g, tpu_hlo_binary(h, "subtract", x, n)), z), one_minus(h, z));
  tpu_hlo_value input_gates[3] = {gr, gz, gn}, hidden_gates[3] = {gr, gz, mul(h, gn, r)};
  out[0] = gates(h, input_gates, 3);
  out[1] = gates(h, hidden_gates, 3);
  out[2] = mul(h, g, z);
  if (call->n_outputs == 5) {
    out[3] = bias_grad(h, out[0], call->tensors[0].dtype);
    out[4] = bias_grad(h, out[1], call->tensors[0].dtype);
  }
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)scalar;
  (void)ctx;
  (void)bad;
  switch (call->op) {
  case TPU_OP_LSTM_CELL: lstm(h, call, in, out); break;
  case TPU_OP_LSTM_CELL_BACKWARD: lstm_backward(h, call, in, out); break;
  case TPU_OP_GRU_CELL: gru(h, call, in, out); break;
  default: gru_backward(h, call, in, out); break;
  }
}

const tpu_pjrt_family tpu_pjrt_rnn_family = {.supports = supports, .emit = emit};
