/* The batch normalization kernels (contract in ops/tpu_ops_norm.h). Training's batch statistics
 * come from the reduction engine's two-pass VAR. The channel sums split over the pool in fixed
 * chunks whose partial sums add in chunk order. */
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/kernels/kernels.h"
#include "drivers/host/kernels/norm/norm.h"
#include "drivers/host/engine/engine_iter.h"
#include "drivers/host/engine/engine_pool.h"

static bool present(const tpu_tensor *t) { return tpu_tensor_numel(t) > 0; }

/* True when t is absent or a floating [c] vector, and when u is a [N, C, S] view like x: the kernels
 * read exactly those elements. */
static bool channels_ok(const tpu_tensor *t, int64_t c) {
  return !present(t) || (t->ndim == 1 && t->sizes[0] == c && tpu_dtype_is_floating(t->dtype));
}

static bool like_x(const tpu_tensor *u, const tpu_tensor *x) {
  return u->ndim == 3 && tpu_dtype_is_floating(u->dtype) && tpu_tensor_same_sizes(u, x);
}

/* A per-channel tensor as doubles (fill when absent). */
static void load_channels(const tpu_tensor *t, int64_t c, double fill, double *out) {
  if (!present(t)) {
    for (int64_t k = 0; k < c; k++)
      out[k] = fill;
    return;
  }
  rk_loader(t->dtype, RK_D, false)(out, tpu_tensor_data(t), c,
                                  t->strides[0] * (int64_t)tpu_dtype_size(t->dtype));
}

static void store_channels(const tpu_tensor *t, int64_t c, const double *v) {
  if (present(t))
    rk_storer(t->dtype, RK_D)(tpu_tensor_data(t), v, c,
                              t->strides[0] * (int64_t)tpu_dtype_size(t->dtype));
}

/* Rounds a value to the class's precision (where PyTorch computes it in float). */
static double in_class(rk_class cls, double v) { return cls == RK_F ? (double)(float)v : v; }

/* ---- The elementwise passes ---- */

/* The forward's Y = ((X - mean) * a) * s + B and the backward's dX = ((dY - gm) - (X - mean) *
 * k) * a, with per-channel a, B, s or a, k, -gm, and -mean. Operands: 0 = the output, 1 = X or
 * dY, 2 = X (backward), 3..6 = the per-channel arrays, in the class's type. */
typedef struct bn_apply {
  rk_class cls;
  bool backward;
  tpu_dtype out_dt, in_dt[2];
  tpu_iter it;
} bn_apply;

/* A run's per-channel value: one value (the run stays in a channel) or an array stepping with the
 * run (channels last): the arrays' only non-zero stride is along C, which no other dimension
 * merges with. */
typedef struct chan {
  const void *p;
  bool array;
  double v;
} chan;

static chan chan_at(rk_class c, const char *p, int64_t stride) {
  chan ch = {.p = p, .array = stride != 0};
  ch.v = c == RK_F ? *(const float *)(const void *)p : *(const double *)(const void *)p;
  return ch;
}

/* y = x * mul + add over n values; an absent mul is 1, an absent add 0. */
static void mul_add(rk_class c, void *y, const void *x, int64_t n, const chan *mul,
                    const chan *add) {
  if ((mul && mul->array) || (add && add->array))
    nk_affine(c, y, x, n, 1, 0, mul ? mul->p : NULL, add ? add->p : NULL);
  else
    nk_affine(c, y, x, n, mul ? mul->v : 1, add ? add->v : 0, NULL, NULL);
}

static void apply_run(char **data, const int64_t *strides, int64_t n, void *arg) {
  const bn_apply *ap = arg;
  const rk_class c = ap->cls;
  rk_buf a, b, y;
  for (int64_t k = 0; k < n; k += RK_BLOCK) {
    int64_t m = n - k < RK_BLOCK ? n - k : RK_BLOCK;
    chan ch[4];
    for (int i = 0; i < 4; i++)
      ch[i] = chan_at(c, data[3 + i] + k * strides[3 + i], strides[3 + i]);
    const void *v0 = nk_load(c, ap->in_dt[0], data[1] + k * strides[1], m, strides[1], &a);
    const bool one_channel = !ch[0].array && !ch[1].array && !ch[2].array && !ch[3].array;
    if (!ap->backward && one_channel) {
      nk_bn_normalize(c, &y, v0, m, ch[3].v, ch[0].v, ch[2].v, ch[1].v);
    } else if (!ap->backward) {
      mul_add(c, &b, v0, m, NULL, &ch[3]); /* X - mean */
      mul_add(c, &b, &b, m, &ch[0], NULL); /* (X - mean) * a */
      mul_add(c, &y, &b, m, &ch[2], &ch[1]);
    } else if (one_channel) {
      /* One channel along the run: the steps below in one pass, rounded the same way. */
      nk_bn_grad(c, &y, v0, nk_load(c, ap->in_dt[1], data[2] + k * strides[2], m, strides[2], &b),
                 m, ch[0].v, ch[1].v, ch[2].v, ch[3].v);
    } else {
      const void *v1 = nk_load(c, ap->in_dt[1], data[2] + k * strides[2], m, strides[2], &b);
      mul_add(c, &b, v1, m, NULL, &ch[3]); /* X - mean */
      mul_add(c, &b, &b, m, &ch[1], NULL); /* (X - mean) * k */
      mul_add(c, &y, v0, m, NULL, &ch[2]); /* dY - gm */
      nk_affine(c, &y, &b, m, -1, 0, NULL, &y);
      mul_add(c, &y, &y, m, &ch[0], NULL);
    }
    nk_store(c, ap->out_dt, data[0] + k * strides[0], &y, m, strides[0]);
  }
}

static void apply_chunk(int64_t begin, int64_t end, int index, void *arg) {
  (void)index;
  bn_apply *ap = arg;
  tpu_iter_run(&ap->it, begin, end, apply_run, ap);
}

/* A [N, C, S] tensor's byte strides. */
static void view_strides(const tpu_tensor *t, int64_t st[3]) {
  int64_t el = (int64_t)tpu_dtype_size(t->dtype);
  for (int d = 0; d < 3; d++)
    st[d] = t->sizes[d] == 1 ? 0 : t->strides[d] * el;
}

/* The forward pass (in1 NULL: out = ((in0 + ch[3]) * ch[0]) * ch[2] + ch[1]) or the backward one
 * (in0 = dY, in1 = X, ch = a, k, -gm, -mean) over [N, C, S]. */
static void apply(rk_class cls, const tpu_tensor *out, const tpu_tensor *in0, const tpu_tensor *in1,
                  void *const ch[4]) {
  bn_apply ap = {.cls = cls, .backward = in1 != NULL, .out_dt = out->dtype};
  const tpu_tensor *ins[2] = {in0, in1 ? in1 : in0};
  int64_t st[3], el = cls == RK_F ? 4 : 8;
  int64_t chan_st[3] = {0, out->sizes[1] == 1 ? 0 : el, 0};
  tpu_iter_init(&ap.it, 3, out->sizes);
  view_strides(out, st);
  tpu_iter_add(&ap.it, tpu_tensor_data(out), (int64_t)tpu_dtype_size(out->dtype), st);
  for (int i = 0; i < 2; i++) {
    ap.in_dt[i] = ins[i]->dtype;
    view_strides(ins[i], st);
    tpu_iter_add(&ap.it, tpu_tensor_data(ins[i]), (int64_t)tpu_dtype_size(ins[i]->dtype), st);
  }
  for (int i = 0; i < 4; i++)
    tpu_iter_add(&ap.it, ch[i], el, chan_st);
  tpu_iter_build(&ap.it, 0);
  tpu_parallel_for(ap.it.numel, TPU_ITER_GRAIN, apply_chunk, &ap);
}

/* Per-channel arrays of the class's type from doubles. */
static void *class_array(rk_class cls, const double *v, int64_t c, void *out) {
  for (int64_t k = 0; k < c; k++) {
    if (cls == RK_F)
      ((float *)out)[k] = (float)v[k];
    else
      ((double *)out)[k] = v[k];
  }
  return out;
}

/* ---- Forward ---- */

/* mean and biased variance per channel of X through the reduction engine. */
static tpu_status batch_stats(const tpu_tensor *x, double *var, double *mean) {
  tpu_op_call *call = tpu_op_call_new(TPU_OP_VAR, 1, 2);
  if (!call)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "batch_norm: cannot allocate a call");
  call->tensors[0] = *x;
  const int64_t c = x->sizes[1];
  tpu_tensor *outs[2] = {&call->tensors[1], &call->tensors[2]};
  double *mem[2] = {var, mean};
  for (int k = 0; k < 2; k++) {
    memset(outs[k], 0, sizeof *outs[k]);
    outs[k]->host = mem[k];
    outs[k]->dtype = TPU_FLOAT64;
    outs[k]->ndim = 3;
    outs[k]->sizes[0] = 1, outs[k]->sizes[1] = c, outs[k]->sizes[2] = 1;
    outs[k]->strides[0] = c, outs[k]->strides[1] = 1, outs[k]->strides[2] = 1;
  }
  rk_spec spec = {.kind = RK_VAR, .fin = RK_VARIANCE, .compute = x->dtype, .p = 0};
  tpu_status st = tpu_reduce(call, &spec);
  tpu_op_call_free(call);
  return st;
}

/* Y = (X - mean) * alpha + B per channel with alpha = invstd * W, in the class's precision with
 * the mean and invstd as save_mean and save_invstd store them; a channel whose alpha overflows
 * the class takes ((X - mean) * invstd) * W (see ops/tpu_ops_norm.h). `tmp` holds 8 * C
 * doubles. */
static void normalize(rk_class cls, const tpu_tensor *y, const tpu_tensor *x, const tpu_tensor *w,
                      const tpu_tensor *b, const double *mean, const double *invstd, double *tmp) {
  const int64_t c = x->sizes[1];
  double *a = tmp, *bv = tmp + c, *s = tmp + 2 * c, *nmean = tmp + 3 * c;
  char *arrays = (char *)(tmp + 4 * c); /* 4 arrays of C values of the class's type */
  const size_t el = cls == RK_F ? sizeof(float) : sizeof(double);
  const double limit = cls == RK_F ? FLT_MAX : DBL_MAX;
  load_channels(w, c, 1, s);
  load_channels(b, c, 0, bv);
  for (int64_t k = 0; k < c; k++) {
    double alpha = invstd[k] * s[k];
    bool split = isfinite(invstd[k]) && isfinite(s[k]) && !(fabs(alpha) <= limit);
    a[k] = split ? invstd[k] : in_class(cls, alpha);
    s[k] = split ? s[k] : 1;
    nmean[k] = -in_class(cls, mean[k]);
  }
  const double *from[4] = {a, bv, s, nmean};
  void *ch[4];
  for (int i = 0; i < 4; i++)
    ch[i] = class_array(cls, from[i], c, arrays + (size_t)i * (size_t)c * el);
  apply(cls, y, x, NULL, ch);
}

tpu_status tpu_kernel_batch_norm(const tpu_op_call *call) {
  const tpu_tensor *x = &call->tensors[0], *w = &call->tensors[1], *b = &call->tensors[2],
                   *y = &call->tensors[3], *save_mean = &call->tensors[4],
                   *save_invstd = &call->tensors[5], *run_mean = &call->tensors[6],
                   *run_var = &call->tensors[7];
  const double eps = call->scalars[0].f, momentum = call->scalars[1].f;
  const bool training = call->scalars[2].i != 0;
  if (!like_x(x, x) || !like_x(y, x))
    return tpu_error(TPU_ERR_VALUE, "batch_norm: expected floating [N, C, S] views");
  const int64_t c = x->sizes[1], n = x->sizes[0] * x->sizes[2];
  const tpu_tensor *per_channel[] = {w, b, save_mean, save_invstd, run_mean, run_var};
  for (size_t k = 0; k < sizeof per_channel / sizeof *per_channel; k++)
    if (!channels_ok(per_channel[k], c))
      return tpu_error(TPU_ERR_VALUE, "batch_norm: per-channel tensors must have C elements");
  const rk_class cls = nk_class(x->dtype);
  double *mem = malloc((size_t)(c > 0 ? c : 1) * 13 * sizeof(double));
  if (!mem)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "batch_norm: cannot allocate channel statistics");
  double *mean = mem, *var = mem + c, *invstd = mem + 2 * c, *rm = mem + 3 * c, *rv = mem + 4 * c;
  tpu_status st = TPU_OK;
  if (training) {
    st = n > 0 ? batch_stats(x, var, mean) : TPU_OK;
    for (int64_t k = 0; n == 0 && k < c; k++)
      mean[k] = var[k] = NAN;
  } else {
    load_channels(run_mean, c, 0, mean);
    load_channels(run_var, c, 1, var);
  }
  if (st != TPU_OK) {
    free(mem);
    return st;
  }
  for (int64_t k = 0; k < c; k++)
    invstd[k] = in_class(cls, 1 / sqrt(in_class(cls, var[k] + eps)));
  store_channels(save_mean, c, mean);
  store_channels(save_invstd, c, invstd);
  if (training && present(run_mean) && present(run_var)) {
    load_channels(run_mean, c, 0, rm);
    load_channels(run_var, c, 1, rv);
    for (int64_t k = 0; k < c; k++) {
      double unbiased = n > 1 ? var[k] * (double)n / (double)(n - 1) : INFINITY;
      rm[k] = momentum * mean[k] + (1 - momentum) * rm[k];
      rv[k] = momentum * unbiased + (1 - momentum) * rv[k];
    }
    store_channels(run_mean, c, rm);
    store_channels(run_var, c, rv);
  }
  if (tpu_tensor_numel(y) > 0)
    normalize(cls, y, x, w, b, mean, invstd, mem + 5 * c);
  free(mem);
  return TPU_OK;
}

tpu_status tpu_kernel_batch_norm_apply(const tpu_op_call *call) {
  const tpu_tensor *x = &call->tensors[0], *w = &call->tensors[1], *b = &call->tensors[2],
                   *mean_t = &call->tensors[3], *invstd_t = &call->tensors[4],
                   *y = &call->tensors[5];
  if (!like_x(x, x) || !like_x(y, x))
    return tpu_error(TPU_ERR_VALUE, "batch_norm_apply: expected floating [N, C, S] views");
  const int64_t c = x->sizes[1];
  const tpu_tensor *per_channel[] = {w, b, mean_t, invstd_t};
  for (size_t k = 0; k < sizeof per_channel / sizeof *per_channel; k++)
    if (!channels_ok(per_channel[k], c) || (k >= 2 && !present(per_channel[k])))
      return tpu_error(TPU_ERR_VALUE, "batch_norm_apply: per-channel tensors must have C elements");
  double *mem = malloc((size_t)(c > 0 ? c : 1) * 10 * sizeof(double));
  if (!mem)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "batch_norm_apply: cannot allocate channel numbers");
  load_channels(mean_t, c, 0, mem);
  load_channels(invstd_t, c, 1, mem + c);
  if (tpu_tensor_numel(y) > 0)
    normalize(nk_class(x->dtype), y, x, w, b, mem, mem + c, mem + 2 * c);
  free(mem);
  return TPU_OK;
}

/* ---- Backward ---- */

/* The per-channel sums of dY and dY * (X - mean) over [N, C, S], split in fixed chunks. */
typedef struct bn_sums {
  rk_class cls;
  tpu_dtype dy_dt, x_dt;
  const double *mean;
  int64_t c, chunks;
  double *partial; /* [chunk][sum | dot][c] */
  tpu_iter it;     /* operands: 0 = dY, 1 = X, 2 = the channel numbers (int64 [C]) */
} bn_sums;

typedef struct sums_ctx {
  const bn_sums *s;
  double *sum, *dot;
} sums_ctx;

static void sums_run(char **data, const int64_t *strides, int64_t n, void *arg) {
  const sums_ctx *ctx = arg;
  const bn_sums *s = ctx->s;
  const rk_class c = s->cls;
  rk_buf dy, xm;
  for (int64_t k = 0; k < n; k += RK_BLOCK) {
    int64_t m = n - k < RK_BLOCK ? n - k : RK_BLOCK;
    const void *vdy = nk_load(c, s->dy_dt, data[0] + k * strides[0], m, strides[0], &dy);
    const void *vx = nk_load(c, s->x_dt, data[1] + k * strides[1], m, strides[1], &xm);
    const char *chan = data[2] + k * strides[2];
    if (strides[2] == 0) { /* one channel along the run */
      int64_t ch = *(const int64_t *)(const void *)chan;
      double sum, dot;
      nk_sum_dot_dev(c, vdy, vx, m, -s->mean[ch], &sum, &dot);
      ctx->sum[ch] += sum;
      ctx->dot[ch] += dot;
      continue;
    }
    for (int64_t i = 0; i < m; i++) { /* the channel steps along the run (channels last) */
      int64_t ch = *(const int64_t *)(const void *)(chan + i * strides[2]);
      double d = c == RK_F ? ((const float *)vdy)[i] : ((const double *)vdy)[i];
      double xv = c == RK_F ? ((const float *)vx)[i] : ((const double *)vx)[i];
      ctx->sum[ch] += d;
      ctx->dot[ch] += d * (xv - s->mean[ch]);
    }
  }
}

static void sums_chunk(int64_t begin, int64_t end, int piece, void *arg) {
  (void)piece;
  const bn_sums *s = arg;
  for (int64_t k = begin; k < end; k++) {
    sums_ctx ctx = {.s = s, .sum = s->partial + k * 2 * s->c};
    ctx.dot = ctx.sum + s->c;
    int64_t total = s->it.numel;
    tpu_iter_run(&s->it, total * k / s->chunks, total * (k + 1) / s->chunks, sums_run, &ctx);
  }
}

tpu_status tpu_kernel_batch_norm_backward(const tpu_op_call *call) {
  const tpu_tensor *dy = &call->tensors[0], *x = &call->tensors[1], *w = &call->tensors[2],
                   *mean_t = &call->tensors[3], *stat_t = &call->tensors[4],
                   *dx = &call->tensors[5], *dw = &call->tensors[6], *db = &call->tensors[7];
  const double eps = call->scalars[0].f;
  const bool training = call->scalars[2].i != 0;
  if (!like_x(x, x) || !like_x(dy, x) || (present(dx) && !like_x(dx, x)))
    return tpu_error(TPU_ERR_VALUE, "batch_norm backward: expected floating [N, C, S] views");
  const int64_t c = x->sizes[1], n = x->sizes[0] * x->sizes[2];
  const tpu_tensor *per_channel[] = {w, mean_t, stat_t, dw, db};
  for (size_t k = 0; k < sizeof per_channel / sizeof *per_channel; k++)
    if (!channels_ok(per_channel[k], c))
      return tpu_error(TPU_ERR_VALUE, "batch_norm backward: per-channel tensors must have C "
                                      "elements");
  const rk_class cls = nk_class(x->dtype);
  bn_sums s = {.cls = cls, .dy_dt = dy->dtype, .x_dt = x->dtype, .c = c};
  s.chunks = tpu_parallel_chunks(n * c, TPU_ITER_GRAIN);
  double *mem = malloc((size_t)(c > 0 ? c : 1) * (12 + 2 * (size_t)s.chunks) * sizeof(double));
  if (!mem)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "batch_norm backward: cannot allocate channel sums");
  double *mean = mem, *invstd = mem + c, *wv = mem + 2 * c, *coef = mem + 3 * c; /* 4 arrays */
  int64_t *chan = (int64_t *)(void *)(mem + 7 * c);
  void *cls_coef = mem + 8 * c; /* coef in the class's type, 4 arrays of at most c doubles */
  s.partial = mem + 12 * c;
  load_channels(mean_t, c, 0, mean);
  load_channels(stat_t, c, 1, invstd);
  load_channels(w, c, 1, wv);
  if (!training)
    for (int64_t k = 0; k < c; k++)
      invstd[k] = in_class(cls, 1 / sqrt(in_class(cls, invstd[k] + eps)));
  for (int64_t k = 0; k < c; k++)
    chan[k] = k;
  memset(s.partial, 0, (size_t)c * 2 * (size_t)s.chunks * sizeof(double));
  s.mean = mean;
  int64_t st[3], cst[3] = {0, c == 1 ? 0 : 8, 0};
  tpu_iter_init(&s.it, 3, x->sizes);
  view_strides(dy, st);
  tpu_iter_add(&s.it, tpu_tensor_data(dy), (int64_t)tpu_dtype_size(dy->dtype), st);
  view_strides(x, st);
  tpu_iter_add(&s.it, tpu_tensor_data(x), (int64_t)tpu_dtype_size(x->dtype), st);
  tpu_iter_add(&s.it, chan, 8, cst);
  tpu_iter_build(&s.it, 0);
  if (n > 0 && c > 0)
    tpu_parallel_for(s.chunks, 1, sums_chunk, &s);
  double *sum = s.partial, *dot = s.partial + c;
  for (int64_t k = 1; k < s.chunks; k++)
    for (int64_t j = 0; j < c; j++)
      sum[j] += s.partial[k * 2 * c + j], dot[j] += s.partial[k * 2 * c + c + j];
  if (present(dx)) {
    for (int64_t k = 0; k < c; k++) {
      coef[k] = invstd[k] * wv[k];
      coef[c + k] = training ? dot[k] * invstd[k] * invstd[k] / (double)n : 1;
      coef[2 * c + k] = training ? -sum[k] / (double)n : 0;
      coef[3 * c + k] = -mean[k];
    }
    void *ch[4];
    for (int i = 0; i < 4; i++)
      ch[i] = class_array(cls, coef + i * c, c, (char *)cls_coef + i * c * (cls == RK_F ? 4 : 8));
    if (training) {
      apply(cls, dx, dy, x, ch);
    } else { /* dX = ((dY + 0) * a) * 1 + 0 through the forward pass: in evaluation the second
              * array is all ones, the third all zeros */
      void *scale[4] = {ch[0], ch[2], ch[1], ch[2]};
      apply(cls, dx, dy, NULL, scale);
    }
  }
  for (int64_t k = 0; k < c; k++)
    dot[k] *= invstd[k];
  store_channels(dw, c, dot);
  store_channels(db, c, sum);
  free(mem);
  return TPU_OK;
}
