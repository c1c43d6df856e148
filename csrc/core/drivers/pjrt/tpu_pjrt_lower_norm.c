/* The norm family (ops/tpu_ops_norm.h) in StableHLO: softmax and log_softmax on floating tensors
 * of rank >= 1, layer and RMS norm on floating rows, and their backward ops, computed in float32
 * (float64 for float64) and rounded once. Empty weights, biases and their gradients are absent. */
#include <stdio.h>

#include "drivers/pjrt/tpu_pjrt_family.h"

static bool is_row_norm(tpu_op_id op) {
  return op == TPU_OP_LAYER_NORM || op == TPU_OP_LAYER_NORM_BACKWARD || op == TPU_OP_RMS_NORM ||
         op == TPU_OP_RMS_NORM_BACKWARD;
}

static bool absent(const tpu_op_call *call, int i) {
  return is_row_norm(call->op) && tpu_tensor_numel(&call->tensors[i]) == 0;
}

/* A row norm's rows: X (tensors[0], or [1] for the backward ops) is [M, N] with M, N > 0; the
 * per-row statistics [M]; weights, bias and their gradients [N] or absent. */
static bool row_norm_supported(const tpu_op_call *call) {
  bool forward = call->op == TPU_OP_LAYER_NORM || call->op == TPU_OP_RMS_NORM;
  const tpu_tensor *x = &call->tensors[forward ? 0 : 1];
  if (x->ndim != 2 || tpu_tensor_numel(x) == 0)
    return false;
  for (int i = 0; i < call->n_inputs + call->n_outputs; i++) {
    const tpu_tensor *t = &call->tensors[i];
    if (!tpu_dtype_is_floating(t->dtype))
      return false;
    if (tpu_tensor_numel(t) == 0)
      continue;
    bool rows = t->ndim == 2 && tpu_tensor_same_sizes(t, x);
    bool per_row = t->ndim == 1 && t->sizes[0] == x->sizes[0];
    bool per_column = t->ndim == 1 && t->sizes[0] == x->sizes[1];
    if (!rows && !per_row && !per_column)
      return false;
  }
  return true;
}

static bool supports(const tpu_op_call *call) {
  switch (call->op) {
  case TPU_OP_SOFTMAX: case TPU_OP_LOG_SOFTMAX: case TPU_OP_SOFTMAX_BACKWARD:
  case TPU_OP_LOG_SOFTMAX_BACKWARD:
    break;
  case TPU_OP_LAYER_NORM:
    return call->n_inputs == 3 && call->n_outputs == 3 && row_norm_supported(call);
  case TPU_OP_LAYER_NORM_BACKWARD:
    return call->n_inputs == 5 && call->n_outputs == 3 && row_norm_supported(call);
  case TPU_OP_RMS_NORM:
    return call->n_inputs == 2 && call->n_outputs == 2 && row_norm_supported(call);
  case TPU_OP_RMS_NORM_BACKWARD:
    return call->n_inputs == 4 && call->n_outputs == 2 && row_norm_supported(call);
  default:
    return false;
  }
  int n = call->n_inputs + call->n_outputs;
  for (int i = 0; i < n; i++)
    if (!tpu_dtype_is_floating(call->tensors[i].dtype) || call->tensors[i].ndim < 1 ||
        !tpu_tensor_same_sizes(&call->tensors[i], &call->tensors[0]))
      return false;
  return call->scalars[0].i >= 0 && call->scalars[0].i < call->tensors[0].ndim;
}

/* x reduced along `dim` and broadcast back to x's dims. */
static tpu_hlo_value along(tpu_hlo *h, tpu_hlo_value x, int64_t dim, tpu_hlo_combine combine) {
  const char *init = combine == TPU_HLO_ADD     ? "0.0"
                     : x.elem == TPU_FLOAT64    ? "0xFFF0000000000000"
                                                : "0xFF800000";
  tpu_hlo_value r = tpu_hlo_reduce(h, x, tpu_hlo_constant(h, x.elem, init), &dim, 1, combine);
  int64_t bdims[TPU_MAX_DIMS];
  for (int i = 0, j = 0; i < x.rank; i++)
    if (i != dim)
      bdims[j++] = i;
  return tpu_hlo_broadcast(h, r, x.rank, x.dims, bdims);
}

/* A [M] statistic as [M, N] (rows) or a [N] parameter as [M, N] (columns). */
static tpu_hlo_value spread(tpu_hlo *h, tpu_hlo_value v, const tpu_hlo_value *like, int64_t dim) {
  return tpu_hlo_broadcast(h, v, 2, like->dims, &dim);
}

/* A row reduction of an [M, N] value: [M]. */
static tpu_hlo_value row_sum(tpu_hlo *h, tpu_hlo_value x, int64_t dim) {
  return tpu_hlo_reduce(h, x, tpu_hlo_constant(h, x.elem, "0.0"), &dim, 1, TPU_HLO_ADD);
}

static tpu_hlo_value scaled(tpu_hlo *h, tpu_hlo_value x, int64_t n) {
  char literal[32];
  snprintf(literal, sizeof literal, "%lld.0", (long long)n);
  tpu_hlo_value count = tpu_hlo_splat(h, tpu_hlo_constant(h, x.elem, literal), &x);
  return tpu_hlo_binary(h, "divide", x, count);
}

/* LAYER_NORM: Y, mean, rstd from X, W, B. */
static void layer_norm(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                       tpu_dtype work, tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out) {
  tpu_hlo_value x = tpu_hlo_convert(h, in[0], work);
  int64_t n = x.dims[1];
  tpu_hlo_value mean = scaled(h, row_sum(h, x, 1), n);
  /* A row near the type's largest value overflows its sum, and the mean of x / n does not (the
   * host kernel's Welford path; the variance of such a row is then 0 or overflows itself). */
  tpu_hlo_value limit = tpu_hlo_splat(
      h,
      tpu_hlo_constant(h, work,
                       work == TPU_FLOAT64 ? "1.7976931348623157e+308" : "3.4028234663852886e+38"),
      &mean);
  tpu_hlo_value finite = tpu_hlo_compare(h, "LE", tpu_hlo_unary(h, "abs", mean), limit);
  mean = tpu_hlo_select(h, finite, mean, row_sum(h, scaled(h, x, n), 1));
  tpu_hlo_value diff = tpu_hlo_binary(h, "subtract", x, spread(h, mean, &x, 0));
  tpu_hlo_value var = scaled(h, row_sum(h, tpu_hlo_binary(h, "multiply", diff, diff), 1), n);
  tpu_hlo_value zero = tpu_hlo_splat(h, tpu_hlo_constant(h, work, "0.0"), &var);
  tpu_hlo_value eps = tpu_hlo_splat(h, tpu_hlo_convert(h, scalar(ctx, 0, true), work), &var);
  tpu_hlo_value rstd = tpu_hlo_unary(
      h, "rsqrt", tpu_hlo_binary(h, "add", tpu_hlo_binary(h, "maximum", var, zero), eps));
  /* (X - mean) * rstd rather than PyTorch's X * rstd - mean * rstd: XLA's CPU compiler may
   * contract the latter into a fused multiply-add, which leaves a rounding error where the
   * variance is zero. */
  tpu_hlo_value y = tpu_hlo_binary(h, "multiply", diff, spread(h, rstd, &x, 0));
  if (!absent(call, 1))
    y = tpu_hlo_binary(h, "multiply", y, spread(h, tpu_hlo_convert(h, in[1], work), &x, 1));
  if (!absent(call, 2))
    y = tpu_hlo_binary(h, "add", y, spread(h, tpu_hlo_convert(h, in[2], work), &x, 1));
  out[0] = y;
  out[1] = mean;
  out[2] = rstd;
}

/* LAYER_NORM_BACKWARD: dX, dW, dB from dY, X, mean, rstd, W. */
static void layer_norm_backward(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                                tpu_dtype work, tpu_hlo_value *out) {
  tpu_hlo_value dy = tpu_hlo_convert(h, in[0], work), x = tpu_hlo_convert(h, in[1], work);
  int64_t n = x.dims[1];
  tpu_hlo_value r = spread(h, tpu_hlo_convert(h, in[3], work), &x, 0);
  tpu_hlo_value m = spread(h, tpu_hlo_convert(h, in[2], work), &x, 0);
  tpu_hlo_value xhat = tpu_hlo_binary(h, "multiply", tpu_hlo_binary(h, "subtract", x, m), r);
  tpu_hlo_value g = dy;
  if (!absent(call, 4))
    g = tpu_hlo_binary(h, "multiply", dy, spread(h, tpu_hlo_convert(h, in[4], work), &x, 1));
  tpu_hlo_value mean_g = spread(h, scaled(h, row_sum(h, g, 1), n), &x, 0);
  tpu_hlo_value mean_gx =
      spread(h, scaled(h, row_sum(h, tpu_hlo_binary(h, "multiply", g, xhat), 1), n), &x, 0);
  tpu_hlo_value inner = tpu_hlo_binary(h, "subtract", tpu_hlo_binary(h, "subtract", g, mean_g),
                                       tpu_hlo_binary(h, "multiply", xhat, mean_gx));
  out[0] = tpu_hlo_binary(h, "multiply", r, inner);
  out[1] = row_sum(h, tpu_hlo_binary(h, "multiply", dy, xhat), 0);
  out[2] = row_sum(h, dy, 0);
}

/* RMS_NORM: Y = (X * rstd) * W and rstd = 1 / sqrt(mean(X^2) + eps), from X, W. */
static void rms_norm(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                     tpu_dtype work, tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out) {
  tpu_hlo_value x = tpu_hlo_convert(h, in[0], work);
  tpu_hlo_value ms = scaled(h, row_sum(h, tpu_hlo_binary(h, "multiply", x, x), 1), x.dims[1]);
  tpu_hlo_value eps = tpu_hlo_splat(h, tpu_hlo_convert(h, scalar(ctx, 0, true), work), &ms);
  tpu_hlo_value rstd = tpu_hlo_unary(h, "rsqrt", tpu_hlo_binary(h, "add", ms, eps));
  tpu_hlo_value y = tpu_hlo_binary(h, "multiply", x, spread(h, rstd, &x, 0));
  if (!absent(call, 1))
    y = tpu_hlo_binary(h, "multiply", y, spread(h, tpu_hlo_convert(h, in[1], work), &x, 1));
  out[0] = y;
  out[1] = rstd;
}

/* RMS_NORM_BACKWARD: dX = (g - xhat * sum(g * xhat) / N) * rstd with g = dY * W and xhat =
 * X * rstd; dW = the column sums of dY * xhat. From dY, X, rstd, W. */
static void rms_norm_backward(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                              tpu_dtype work, tpu_hlo_value *out) {
  tpu_hlo_value dy = tpu_hlo_convert(h, in[0], work), x = tpu_hlo_convert(h, in[1], work);
  tpu_hlo_value r = spread(h, tpu_hlo_convert(h, in[2], work), &x, 0);
  tpu_hlo_value xhat = tpu_hlo_binary(h, "multiply", x, r), g = dy;
  if (!absent(call, 3))
    g = tpu_hlo_binary(h, "multiply", dy, spread(h, tpu_hlo_convert(h, in[3], work), &x, 1));
  tpu_hlo_value dot = row_sum(h, tpu_hlo_binary(h, "multiply", g, xhat), 1);
  tpu_hlo_value inner = tpu_hlo_binary(
      h, "subtract", g,
      tpu_hlo_binary(h, "multiply", xhat, spread(h, scaled(h, dot, x.dims[1]), &x, 0)));
  out[0] = tpu_hlo_binary(h, "multiply", inner, r);
  out[1] = row_sum(h, tpu_hlo_binary(h, "multiply", dy, xhat), 0);
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)bad;
  tpu_dtype work = call->tensors[0].dtype == TPU_FLOAT64 ? TPU_FLOAT64 : TPU_FLOAT32;
  switch (call->op) {
  case TPU_OP_LAYER_NORM: layer_norm(h, call, in, work, scalar, ctx, out); return;
  case TPU_OP_LAYER_NORM_BACKWARD: layer_norm_backward(h, call, in, work, out); return;
  case TPU_OP_RMS_NORM: rms_norm(h, call, in, work, scalar, ctx, out); return;
  case TPU_OP_RMS_NORM_BACKWARD: rms_norm_backward(h, call, in, work, out); return;
  default: break;
  }
  int64_t dim = call->scalars[0].i;
  tpu_hlo_value a = tpu_hlo_convert(h, in[0], work);
  tpu_hlo_value b = call->n_inputs > 1 ? tpu_hlo_convert(h, in[1], work) : a;
  switch (call->op) {
  case TPU_OP_SOFTMAX: case TPU_OP_LOG_SOFTMAX: {
    tpu_hlo_value shifted = tpu_hlo_binary(h, "subtract", a, along(h, a, dim, TPU_HLO_MAX));
    tpu_hlo_value sum = along(h, tpu_hlo_unary(h, "exponential", shifted), dim, TPU_HLO_ADD);
    if (call->op == TPU_OP_LOG_SOFTMAX) {
      out[0] = tpu_hlo_binary(h, "subtract", shifted, tpu_hlo_unary(h, "log", sum));
      return;
    }
    tpu_hlo_value one = tpu_hlo_splat(h, tpu_hlo_constant(h, work, "1.0"), &sum);
    out[0] = tpu_hlo_binary(h, "multiply", tpu_hlo_unary(h, "exponential", shifted),
                            tpu_hlo_binary(h, "divide", one, sum));
    return;
  }
  case TPU_OP_SOFTMAX_BACKWARD: /* y * (g - sum(g * y)) */
    out[0] = tpu_hlo_binary(
        h, "multiply", b,
        tpu_hlo_binary(h, "subtract", a,
                       along(h, tpu_hlo_binary(h, "multiply", a, b), dim, TPU_HLO_ADD)));
    return;
  default: /* LOG_SOFTMAX_BACKWARD: g - exp(y) * sum(g) */
    out[0] = tpu_hlo_binary(h, "subtract", a,
                            tpu_hlo_binary(h, "multiply", tpu_hlo_unary(h, "exponential", b),
                                           along(h, a, dim, TPU_HLO_ADD)));
  }
}

const tpu_pjrt_family tpu_pjrt_norm_family = {.supports = supports, .absent = absent, .emit = emit};
