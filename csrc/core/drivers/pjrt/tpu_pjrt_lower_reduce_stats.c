/* Reductions that compute statistics (ops/tpu_ops_reduce.h) in StableHLO: PROD, VAR (and the
 * standard deviation, with the mean), LOGSUMEXP, NORM (p a constant of the module: the host's
 * forms for 0, 1, 2 and +-inf, else (sum |x|^p)^(1/p)), and the running sums of CUMSUM. Floating
 * inputs compute in float64 and round once into their output, which is never less exact than the
 * host's float32 lanes; integers wrap in int64, exactly as the host's. */
#include <math.h>
#include <stdio.h>

#include "drivers/pjrt/tpu_pjrt_family.h"
#include "drivers/pjrt/tpu_pjrt_lower_reduce.h"

/* CUMSUM over a real or bool input of rank >= 1 into an output of its sizes: each element cast
 * to the output's dtype, then summed in float64 (floats) or wrapping int64 (integers). */
static bool supports_cumsum(const tpu_op_call *call) {
  const tpu_tensor *in = &call->tensors[0], *out = &call->tensors[1];
  return call->n_inputs == 1 && call->n_outputs == 1 && in->ndim >= 1 &&
         tpu_tensor_same_sizes(in, out) && out->dtype != TPU_BOOL &&
         call->scalars[0].i >= 0 && call->scalars[0].i < in->ndim;
}

static bool supports(const tpu_op_call *call) {
  tpu_op_id op = call->op;
  if (op == TPU_OP_CUMSUM)
    return supports_cumsum(call);
  if (op != TPU_OP_PROD && op != TPU_OP_VAR && op != TPU_OP_LOGSUMEXP && op != TPU_OP_NORM)
    return false;
  int max_outs = op == TPU_OP_VAR ? 2 : 1;
  if (call->n_inputs != 1 || call->n_outputs < 1 || call->n_outputs > max_outs)
    return false;
  const tpu_tensor *in = &call->tensors[0];
  if (in->dtype == TPU_BOOL || call->compute == TPU_BOOL ||
      (op != TPU_OP_PROD && !tpu_dtype_is_floating(call->compute)))
    return false;
  for (int k = 1; k <= call->n_outputs; k++)
    if (call->tensors[k].ndim != in->ndim)
      return false;
  return true;
}

static tpu_hlo_value sum(tpu_hlo *h, tpu_hlo_value x, const int64_t *dims, int n) {
  return tpu_hlo_reduce(h, x, tpu_hlo_constant(h, x.elem, "0.0"), dims, n, TPU_HLO_ADD);
}

/* The p-norm of float64 x over the reduced dimensions, in the host's forms. */
static tpu_hlo_value vector_norm(tpu_hlo *h, tpu_hlo_value x, double p, const int64_t *dims,
                                 int n) {
  tpu_hlo_value mag = tpu_hlo_unary(h, "abs", x);
  if (p == 0)
    return sum(h, tpu_hlo_convert(h, tpu_hlo_cast(h, x, TPU_BOOL), TPU_FLOAT64), dims, n);
  if (p == 1)
    return sum(h, mag, dims, n);
  if (p == 2)
    return tpu_hlo_unary(h, "sqrt", sum(h, tpu_hlo_binary(h, "multiply", x, x), dims, n));
  if (isinf(p))
    return tpu_hlo_reduce(h, mag, tpu_hlo_constant(h, TPU_FLOAT64, p > 0 ? "0xFFF0000000000000"
                                                                         : "0x7FF0000000000000"),
                          dims, n, p > 0 ? TPU_HLO_MAX : TPU_HLO_MIN);
  char exponent[40], root[40];
  snprintf(exponent, sizeof exponent, "%.17e", p); /* a float literal even for whole p */
  snprintf(root, sizeof root, "%.17e", 1.0 / p);
  tpu_hlo_value powered =
      tpu_hlo_binary(h, "power", mag, tpu_hlo_full(h, TPU_FLOAT64, exponent, &mag));
  tpu_hlo_value total = sum(h, powered, dims, n);
  return tpu_hlo_binary(h, "power", total, tpu_hlo_full(h, TPU_FLOAT64, root, &total));
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)bad;
  if (call->op == TPU_OP_CUMSUM) {
    tpu_dtype to = call->tensors[1].dtype;
    tpu_dtype acc = tpu_dtype_is_floating(to) ? TPU_FLOAT64 : TPU_INT64;
    tpu_hlo_value x = tpu_hlo_convert(h, tpu_hlo_cast(h, in[0], to), acc);
    out[0] = tpu_hlo_prefix_sum(h, x, tpu_hlo_constant(h, acc, acc == TPU_FLOAT64 ? "0.0" : "0"),
                                (int)call->scalars[0].i);
    return;
  }
  int64_t dims[TPU_MAX_DIMS], count;
  int n = tpu_pjrt_reduced_dims(call, dims, &count);
  const tpu_tensor *first = &call->tensors[1];
  bool floating = tpu_dtype_is_floating(call->compute);
  tpu_dtype acc = floating ? TPU_FLOAT64 : TPU_INT64;
  tpu_hlo_value x = tpu_hlo_convert(h, tpu_hlo_cast(h, in[0], call->compute), acc), r;
  switch (call->op) {
  case TPU_OP_PROD:
    r = tpu_hlo_reduce(h, x, tpu_hlo_constant(h, acc, floating ? "1.0" : "1"), dims, n,
                       TPU_HLO_MUL);
    break;
  case TPU_OP_LOGSUMEXP: { /* log(sum(exp(x - m))) + m, m the maximum or 0 when infinite */
    tpu_hlo_value m = tpu_hlo_reduce(h, x, tpu_hlo_constant(h, acc, "0xFFF0000000000000"), dims,
                                     n, TPU_HLO_MAX);
    m = tpu_hlo_select(h, tpu_hlo_unary(h, "is_finite", m), m, tpu_hlo_full(h, acc, "0.0", &m));
    tpu_hlo_value shifted =
        tpu_hlo_binary(h, "subtract", x, tpu_pjrt_reduce_spread(h, m, x, dims, n));
    tpu_hlo_value e = tpu_hlo_unary(h, "exponential", shifted);
    r = tpu_hlo_binary(h, "add", tpu_hlo_unary(h, "log", sum(h, e, dims, n)), m);
    break;
  }
  case TPU_OP_NORM:
    r = vector_norm(h, x, call->scalars[0].f, dims, n);
    break;
  default: { /* VAR: squared deviations from the mean over max(n - correction, 0) */
    char literal[32];
    snprintf(literal, sizeof literal, "%lld.0", (long long)count);
    tpu_hlo_value total = sum(h, x, dims, n);
    tpu_hlo_value mean =
        tpu_hlo_binary(h, "divide", total, tpu_hlo_full(h, acc, literal, &total));
    tpu_hlo_value dev =
        tpu_hlo_binary(h, "subtract", x, tpu_pjrt_reduce_spread(h, mean, x, dims, n));
    tpu_hlo_value squares = sum(h, tpu_hlo_binary(h, "multiply", dev, dev), dims, n);
    tpu_hlo_value correction = tpu_hlo_splat(h, scalar(ctx, 0, true), &squares);
    tpu_hlo_value divisor = tpu_hlo_binary(h, "maximum",
                                           tpu_hlo_binary(h, "subtract",
                                                          tpu_hlo_full(h, acc, literal, &squares),
                                                          correction),
                                           tpu_hlo_full(h, acc, "0.0", &squares));
    r = tpu_hlo_binary(h, "divide", squares, divisor);
    if (call->scalars[1].i)
      r = tpu_hlo_unary(h, "sqrt", r);
    if (call->n_outputs == 2)
      out[1] = tpu_hlo_reshape(h, tpu_hlo_convert(h, mean, call->compute),
                               call->tensors[2].ndim, call->tensors[2].sizes);
    break;
  }
  }
  out[0] = tpu_hlo_reshape(h, tpu_hlo_convert(h, r, call->compute), first->ndim, first->sizes);
}

const tpu_pjrt_family tpu_pjrt_reduce_stats_family = {.supports = supports, .emit = emit};
