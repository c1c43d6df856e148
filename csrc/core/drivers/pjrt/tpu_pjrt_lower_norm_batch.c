/* Batch normalization (ops/tpu_ops_norm.h) over [N, C, S] views in StableHLO, with the host
 * kernel's precisions: statistics in float64 (the variance in two passes), per-channel factors
 * rounded to the compute type (float below float64), the elementwise passes in it. BATCH_NORM
 * reads the running statistics it updates; absent per-channel tensors (empty) are skipped. */
#include <stdio.h>

#include "drivers/pjrt/tpu_pjrt_family.h"

static bool present(const tpu_tensor *t) { return tpu_tensor_numel(t) > 0; }

static bool absent(const tpu_op_call *call, int i) { return !present(&call->tensors[i]); }

static bool supports(const tpu_op_call *call) {
  int n_in = call->op == TPU_OP_BATCH_NORM            ? 3
             : call->op == TPU_OP_BATCH_NORM_BACKWARD ? 5
             : call->op == TPU_OP_BATCH_NORM_APPLY    ? 5
                                                      : -1;
  int n_out = call->op == TPU_OP_BATCH_NORM ? 5 : call->op == TPU_OP_BATCH_NORM_APPLY ? 1 : 3;
  if (n_in < 0 || call->n_inputs != n_in || call->n_outputs != n_out)
    return false;
  const tpu_tensor *t = call->tensors, *x = &t[call->op == TPU_OP_BATCH_NORM_BACKWARD ? 1 : 0];
  if (x->ndim != 3 || x->sizes[0] * x->sizes[2] == 0 || x->sizes[1] == 0)
    return false;
  for (int i = 0; i < n_in + n_out; i++) {
    if (!tpu_dtype_is_floating(t[i].dtype) || tpu_dtype_is_complex(t[i].dtype))
      return false;
    bool like_x = t[i].ndim == 3 && tpu_tensor_same_sizes(&t[i], x);
    bool channels = t[i].ndim == 1 && t[i].sizes[0] == x->sizes[1];
    if (present(&t[i]) && !like_x && !channels)
      return false;
  }
  /* The statistics the apply and backward ops are given must be there. */
  return call->op == TPU_OP_BATCH_NORM || (present(&t[3]) && present(&t[4]));
}

/* BATCH_NORM reads the running mean and variance (outputs 3 and 4) it moves in training. */
static bool reads_output(const tpu_op_call *call, int k) {
  return call->op == TPU_OP_BATCH_NORM && k >= 3;
}

typedef struct bn {
  tpu_hlo *h;
  tpu_hlo_elem cls; /* the compute type: float32, or float64 for float64 inputs */
  tpu_hlo_value like_x;
  int64_t n, c;     /* elements per channel, channels */
} bn;

static tpu_hlo_value to(bn *b, tpu_hlo_value v, tpu_hlo_elem e) {
  return tpu_hlo_convert(b->h, v, e);
}

static tpu_hlo_value bin(bn *b, const char *op, tpu_hlo_value x, tpu_hlo_value y) {
  return tpu_hlo_binary(b->h, op, x, y);
}

/* A float64 per-channel value rounded to the compute type and back, as the host's in_class. */
static tpu_hlo_value in_class(bn *b, tpu_hlo_value v) {
  return to(b, to(b, v, b->cls), TPU_FLOAT64);
}

/* A [C] value spread over [N, C, S]. */
static tpu_hlo_value spread(bn *b, tpu_hlo_value v) {
  int64_t channel[1] = {1};
  return tpu_hlo_broadcast(b->h, v, 3, b->like_x.dims, channel);
}

/* Sum over N and S of a [N, C, S] float64 value: [C]. */
static tpu_hlo_value channel_sum(bn *b, tpu_hlo_value v) {
  int64_t dims[2] = {0, 2};
  return tpu_hlo_reduce(b->h, v, tpu_hlo_constant(b->h, TPU_FLOAT64, "0.0"), dims, 2,
                        TPU_HLO_ADD);
}

static tpu_hlo_value per_n(bn *b, tpu_hlo_value v, int64_t shift) {
  char count[32];
  snprintf(count, sizeof count, "%lld.0", (long long)(b->n - shift));
  return bin(b, "divide", v, tpu_hlo_full(b->h, TPU_FLOAT64, count, &v));
}

/* A per-channel input as float64 [C], or `fill` when absent. */
static tpu_hlo_value channels_or(bn *b, const tpu_tensor *t, const tpu_hlo_value *v,
                                 const char *fill) {
  tpu_hlo_value like = {.elem = TPU_FLOAT64, .rank = 1, .dims = {b->c}};
  return present(t) ? to(b, *v, TPU_FLOAT64) : tpu_hlo_full(b->h, TPU_FLOAT64, fill, &like);
}

/* 1 / sqrt(var + eps), each step rounded to the compute type. */
static tpu_hlo_value invstd_of(bn *b, tpu_hlo_value var, tpu_hlo_value eps) {
  tpu_hlo_value sum = in_class(b, bin(b, "add", var, tpu_hlo_splat(b->h, eps, &var)));
  tpu_hlo_value one = tpu_hlo_full(b->h, TPU_FLOAT64, "1.0", &var);
  return in_class(b, bin(b, "divide", one, tpu_hlo_unary(b->h, "sqrt", sum)));
}

/* Y = ((X - mean) * a) * s + B in the compute type, the mean rounded to it as save_mean stores
 * it: a = invstd * W and s = 1, or a = invstd and s = W in a channel where that product
 * overflows the compute type (the host kernel's forms, ops/tpu_ops_norm.h). */
static tpu_hlo_value normalize(bn *b, const tpu_op_call *call, const tpu_hlo_value *in,
                               tpu_hlo_value mean, tpu_hlo_value invstd) {
  const tpu_tensor *t = call->tensors;
  tpu_hlo_value w = channels_or(b, &t[1], &in[1], "1.0");
  tpu_hlo_value alpha = bin(b, "multiply", invstd, w);
  tpu_hlo_value limit = tpu_hlo_full(b->h, TPU_FLOAT64,
                                     b->cls == TPU_FLOAT64 ? "1.7976931348623157e+308"
                                                           : "3.4028234663852886e+38",
                                     &alpha);
  tpu_hlo_value split =
      tpu_hlo_compare(b->h, "GT", tpu_hlo_unary(b->h, "abs", alpha), limit);
  tpu_hlo_value one = tpu_hlo_full(b->h, TPU_FLOAT64, "1.0", &alpha);
  tpu_hlo_value a = tpu_hlo_select(b->h, split, invstd, alpha);
  tpu_hlo_value scale = tpu_hlo_select(b->h, split, w, one);
  tpu_hlo_value bias = to(b, channels_or(b, &t[2], &in[2], "0.0"), b->cls);
  tpu_hlo_value x = to(b, in[0], b->cls);
  tpu_hlo_value dev = bin(b, "subtract", x, spread(b, to(b, mean, b->cls)));
  tpu_hlo_value y = bin(b, "multiply", dev, spread(b, to(b, a, b->cls)));
  y = bin(b, "multiply", y, spread(b, to(b, scale, b->cls)));
  return bin(b, "add", y, spread(b, bias));
}

static void forward(bn *b, const tpu_op_call *call, const tpu_hlo_value *in,
                    tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out) {
  const tpu_tensor *t = call->tensors;
  tpu_hlo_value eps = scalar(ctx, 0, true), mean, var;
  if (call->scalars[2].i) {
    tpu_hlo_value x = to(b, in[0], TPU_FLOAT64);
    mean = per_n(b, channel_sum(b, x), 0);
    tpu_hlo_value dev = bin(b, "subtract", x, spread(b, mean));
    var = per_n(b, channel_sum(b, bin(b, "multiply", dev, dev)), 0);
  } else {
    mean = channels_or(b, &t[6], &in[6], "0.0");
    var = channels_or(b, &t[7], &in[7], "1.0");
  }
  tpu_hlo_value invstd = invstd_of(b, var, eps);
  out[0] = normalize(b, call, in, mean, invstd);
  out[1] = mean;
  out[2] = invstd;
  if (call->scalars[2].i && present(&t[6]) && present(&t[7])) {
    tpu_hlo_value m = tpu_hlo_splat(b->h, scalar(ctx, 1, true), &mean);
    tpu_hlo_value keep = tpu_hlo_binary(b->h, "subtract",
                                        tpu_hlo_full(b->h, TPU_FLOAT64, "1.0", &mean), m);
    char count[32];
    snprintf(count, sizeof count, "%lld.0", (long long)b->n);
    tpu_hlo_value unbiased = /* var * n / (n - 1) */
        b->n > 1 ? per_n(b, bin(b, "multiply", var, tpu_hlo_full(b->h, TPU_FLOAT64, count, &var)),
                         1)
                 : tpu_hlo_full(b->h, TPU_FLOAT64, "0x7FF0000000000000", &var);
    out[3] = bin(b, "add", bin(b, "multiply", m, mean),
                 bin(b, "multiply", keep, to(b, in[6], TPU_FLOAT64)));
    out[4] = bin(b, "add", bin(b, "multiply", m, unbiased),
                 bin(b, "multiply", keep, to(b, in[7], TPU_FLOAT64)));
  } else {
    out[3] = in[6]; /* unchanged (written back as they were) */
    out[4] = in[7];
  }
}

static void backward(bn *b, const tpu_op_call *call, const tpu_hlo_value *in,
                     tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out) {
  const tpu_tensor *t = call->tensors;
  bool training = call->scalars[2].i != 0;
  tpu_hlo_value mean = to(b, in[3], TPU_FLOAT64), invstd = to(b, in[4], TPU_FLOAT64);
  if (!training)
    invstd = invstd_of(b, invstd, scalar(ctx, 0, true));
  tpu_hlo_value dy = to(b, in[0], b->cls), x = to(b, in[1], b->cls);
  tpu_hlo_value dev = bin(b, "subtract", to(b, x, TPU_FLOAT64), spread(b, mean));
  tpu_hlo_value dy64 = to(b, dy, TPU_FLOAT64);
  tpu_hlo_value sum = channel_sum(b, dy64), dot = channel_sum(b, bin(b, "multiply", dy64, dev));
  tpu_hlo_value a = to(b, bin(b, "multiply", invstd, channels_or(b, &t[2], &in[2], "1.0")),
                       b->cls);
  if (training) {
    tpu_hlo_value k = per_n(b, bin(b, "multiply", bin(b, "multiply", dot, invstd), invstd), 0);
    tpu_hlo_value gm = per_n(b, sum, 0);
    tpu_hlo_value xm = bin(b, "subtract", x, spread(b, to(b, mean, b->cls)));
    tpu_hlo_value y = bin(b, "subtract", dy, spread(b, to(b, gm, b->cls)));
    y = bin(b, "subtract", y, bin(b, "multiply", xm, spread(b, to(b, k, b->cls))));
    out[0] = bin(b, "multiply", y, spread(b, a));
  } else {
    out[0] = bin(b, "multiply", dy, spread(b, a));
  }
  out[1] = bin(b, "multiply", dot, invstd);
  out[2] = sum;
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)bad;
  const tpu_tensor *x = &call->tensors[call->op == TPU_OP_BATCH_NORM_BACKWARD ? 1 : 0];
  bn b = {.h = h, .cls = x->dtype == TPU_FLOAT64 ? TPU_FLOAT64 : TPU_FLOAT32,
          .n = x->sizes[0] * x->sizes[2], .c = x->sizes[1]};
  b.like_x = (tpu_hlo_value){.elem = TPU_FLOAT64, .rank = 3,
                             .dims = {x->sizes[0], x->sizes[1], x->sizes[2]}};
  if (call->op == TPU_OP_BATCH_NORM)
    forward(&b, call, in, scalar, ctx, out);
  else if (call->op == TPU_OP_BATCH_NORM_BACKWARD)
    backward(&b, call, in, scalar, ctx, out);
  else
    out[0] = normalize(&b, call, in, to(&b, in[3], TPU_FLOAT64), to(&b, in[4], TPU_FLOAT64));
}

const tpu_pjrt_family tpu_pjrt_batch_norm_family = {
    .supports = supports, .absent = absent, .reads_output = reads_output, .emit = emit};
