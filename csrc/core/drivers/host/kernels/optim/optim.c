/* The fused optimizer steps and the gradient scaler's kernels (contract in ops/tpu_ops_optim.h).
 * Each step reads every operand once and writes it once, which is what makes fused optimizers
 * cheap: the unfused foreach form sweeps the parameters once per elementary op. */
#include <math.h>
#include <string.h>

#include "base/tpu_dtype.h"
#include "drivers/host/kernels/kernels.h"
#include "drivers/host/engine/engine_iter.h"

/* The value of a one-element tensor (step counts, learning rates, scales, flags). */
static double read_one(const tpu_tensor *t) {
  const void *p = tpu_tensor_data(t);
  switch (t->dtype) {
  case TPU_FLOAT32: { float v; memcpy(&v, p, sizeof v); return v; }
  case TPU_FLOAT64: { double v; memcpy(&v, p, sizeof v); return v; }
  case TPU_FLOAT16: { uint16_t v; memcpy(&v, p, sizeof v); return tpu_f16_to_f32(v); }
  case TPU_BFLOAT16: { uint16_t v; memcpy(&v, p, sizeof v); return tpu_bf16_to_f32(v); }
  case TPU_INT64: { int64_t v; memcpy(&v, p, sizeof v); return (double)v; }
  case TPU_INT32: { int32_t v; memcpy(&v, p, sizeof v); return v; }
  default: return NAN;
  }
}

static tpu_status check_one(const tpu_tensor *t, const char *what) {
  if (tpu_tensor_numel(t) != 1 || !tpu_dtype_is_floating(t->dtype))
    return tpu_error(TPU_ERR_RUNTIME, "%s must be a one-element floating-point tensor", what);
  return TPU_OK;
}

/* Checks that the `n` operands starting at `first` share the first one's shape and dtype. */
static tpu_status check_alike(const tpu_tensor *first, int n, const char *op) {
  if (!tpu_dtype_is_floating(first->dtype))
    return tpu_error(TPU_ERR_TYPE, "%s expects floating-point parameters, got %s", op,
                     tpu_dtype_name(first->dtype));
  for (int k = 1; k < n; k++) {
    const tpu_tensor *t = &first[k];
    if (t->dtype != first->dtype || !tpu_tensor_same_sizes(t, first))
      return tpu_error(TPU_ERR_RUNTIME,
                       "%s expects every state tensor to match its parameter's shape and dtype", op);
  }
  return TPU_OK;
}

static void add_operands(tpu_iter *it, const tpu_tensor *first, int n) {
  tpu_iter_init(it, first->ndim, first->sizes);
  for (int k = 0; k < n; k++)
    tpu_iter_add_tensor(it, &first[k]);
  tpu_iter_build(it, 0);
}

/* ---- Adam / AdamW ---------------------------------------------------------------------------- */

typedef struct adam_step {
  double lr, beta1, beta2, weight_decay, eps;
  double step_size, bias_correction2_sqrt, grad_scale;
  unsigned flags;
} adam_step;

/* One element of Adam in opmath type T (float or double). */
#define ADAM_ELEMENT(T, param, grad, m, v, vmax)                                                   \
  do {                                                                                             \
    if (s->flags & TPU_ADAM_GRAD_SCALE) {                                                          \
      grad = grad / (T)s->grad_scale;                                                              \
    }                                                                                              \
    T g = (s->flags & TPU_ADAM_MAXIMIZE) ? -grad : grad;                                           \
    if (s->flags & TPU_ADAM_DECOUPLED)                                                             \
      param = param * (T)(1.0 - s->lr * s->weight_decay);                                          \
    else if (s->weight_decay != 0.0)                                                               \
      g = g + param * (T)s->weight_decay;                                                          \
    m = m * (T)s->beta1 + g * (T)(1.0 - s->beta1);                                                 \
    v = v * (T)s->beta2 + g * g * (T)(1.0 - s->beta2);                                             \
    T second = v;                                                                                  \
    if (s->flags & TPU_ADAM_AMSGRAD) {                                                             \
      vmax = vmax > v ? vmax : v;                                                                  \
      second = vmax;                                                                               \
    }                                                                                              \
    T denom = (T)sqrt((double)second) / (T)s->bias_correction2_sqrt + (T)s->eps;                   \
    param = param - (T)s->step_size * m / denom;                                                   \
  } while (0)

/* Loops for a storage type S computed in T, with load/store conversions. */
#define ADAM_LOOP(NAME, S, T, LOAD, STORE)                                                         \
  static void NAME(char **data, const int64_t *strides, int64_t n, void *ctx) {                    \
    const adam_step *s = ctx;                                                                      \
    const int amsgrad = (s->flags & TPU_ADAM_AMSGRAD) != 0;                                        \
    for (int64_t i = 0; i < n; i++) {                                                              \
      S *pp = (S *)(data[0] + i * strides[0]), *gp = (S *)(data[1] + i * strides[1]);              \
      S *mp = (S *)(data[2] + i * strides[2]), *vp = (S *)(data[3] + i * strides[3]);              \
      S *xp = amsgrad ? (S *)(data[4] + i * strides[4]) : NULL;                                    \
      T param = LOAD(*pp), grad = LOAD(*gp), m = LOAD(*mp), v = LOAD(*vp);                         \
      T vmax = amsgrad ? LOAD(*xp) : (T)0;                                                         \
      ADAM_ELEMENT(T, param, grad, m, v, vmax);                                                    \
      *pp = STORE(param);                                                                          \
      if (s->flags & TPU_ADAM_GRAD_SCALE)                                                          \
        *gp = STORE(grad);                                                                         \
      *mp = STORE(m);                                                                              \
      *vp = STORE(v);                                                                              \
      if (amsgrad)                                                                                 \
        *xp = STORE(vmax);                                                                         \
    }                                                                                              \
  }

#define IDENTITY(x) (x)
ADAM_LOOP(adam_f32, float, float, IDENTITY, IDENTITY)
ADAM_LOOP(adam_f64, double, double, IDENTITY, IDENTITY)
ADAM_LOOP(adam_bf16, uint16_t, float, tpu_bf16_to_f32, tpu_f32_to_bf16)
ADAM_LOOP(adam_f16, uint16_t, float, tpu_f16_to_f32, tpu_f32_to_f16)

static tpu_loop_fn loop_for(tpu_dtype dtype, tpu_loop_fn f32, tpu_loop_fn f64, tpu_loop_fn bf16,
                            tpu_loop_fn f16) {
  switch (dtype) {
  case TPU_FLOAT32: return f32;
  case TPU_FLOAT64: return f64;
  case TPU_BFLOAT16: return bf16;
  case TPU_FLOAT16: return f16;
  default: return NULL;
  }
}

/* Reads the optional one-element inputs that follow `first_optional` in the order lr, grad_scale,
 * found_inf, as the flags say; returns whether the step is to be skipped (found_inf set). */
static tpu_status read_aux(const tpu_op_call *call, int first_optional, unsigned flags,
                           unsigned lr_flag, unsigned scale_flag, unsigned inf_flag, double *lr,
                           double *grad_scale, bool *skip) {
  int k = first_optional;
  const struct { unsigned flag; const char *what; double *out; } aux[] = {
      {lr_flag, "lr", lr}, {scale_flag, "grad_scale", grad_scale}, {inf_flag, "found_inf", NULL}};
  *skip = false;
  for (size_t a = 0; a < sizeof aux / sizeof aux[0]; a++) {
    if (!(flags & aux[a].flag))
      continue;
    if (k >= call->n_inputs)
      return tpu_error(TPU_ERR_VALUE, "optimizer step is missing its %s tensor", aux[a].what);
    tpu_status st = check_one(&call->tensors[k], aux[a].what);
    if (st != TPU_OK)
      return st;
    double value = read_one(&call->tensors[k++]);
    if (aux[a].out)
      *aux[a].out = value;
    else
      *skip = value != 0.0;
  }
  return TPU_OK;
}

tpu_status tpu_kernel_fused_adam(const tpu_op_call *call) {
  adam_step s = {.lr = call->scalars[0].f, .beta1 = call->scalars[1].f,
                 .beta2 = call->scalars[2].f, .weight_decay = call->scalars[3].f,
                 .eps = call->scalars[4].f, .grad_scale = 1.0, .flags = (unsigned)call->scalars[5].u};
  int n_state = (s.flags & TPU_ADAM_AMSGRAD) ? 5 : 4;
  if (call->n_inputs < 1 || call->n_outputs != n_state)
    return tpu_error(TPU_ERR_VALUE, "fused_adam: wrong number of tensors");
  const tpu_tensor *state = &call->tensors[call->n_inputs];
  tpu_status st = check_alike(state, n_state, "fused_adam");
  if (st == TPU_OK)
    st = check_one(&call->tensors[0], "state_step");
  bool skip;
  if (st == TPU_OK)
    st = read_aux(call, 1, s.flags, TPU_ADAM_LR_TENSOR, TPU_ADAM_GRAD_SCALE, TPU_ADAM_FOUND_INF,
                  &s.lr, &s.grad_scale, &skip);
  if (st != TPU_OK || skip || tpu_tensor_numel(state) == 0)
    return st;
  double step = read_one(&call->tensors[0]);
  /* Coefficients in double, as the non-fused implementations compute them. */
  s.step_size = s.lr / (1.0 - pow(s.beta1, step));
  s.bias_correction2_sqrt = sqrt(1.0 - pow(s.beta2, step));
  tpu_iter it;
  add_operands(&it, state, n_state);
  tpu_iter_run_parallel(&it, loop_for(state->dtype, adam_f32, adam_f64, adam_bf16, adam_f16), &s);
  return TPU_OK;
}

/* ---- SGD ------------------------------------------------------------------------------------- */

typedef struct sgd_step {
  double lr, weight_decay, momentum, dampening, grad_scale;
  unsigned flags;
} sgd_step;

#define SGD_LOOP(NAME, S, T, LOAD, STORE)                                                          \
  static void NAME(char **data, const int64_t *strides, int64_t n, void *ctx) {                    \
    const sgd_step *s = ctx;                                                                       \
    const int has_buf = s->momentum != 0.0;                                                        \
    for (int64_t i = 0; i < n; i++) {                                                              \
      S *pp = (S *)(data[0] + i * strides[0]), *gp = (S *)(data[1] + i * strides[1]);              \
      S *bp = has_buf ? (S *)(data[2] + i * strides[2]) : NULL;                                    \
      T param = LOAD(*pp), grad = LOAD(*gp);                                                       \
      if (s->flags & TPU_SGD_GRAD_SCALE) {                                                         \
        grad = grad / (T)s->grad_scale;                                                            \
        *gp = STORE(grad);                                                                         \
      }                                                                                            \
      T g = (s->flags & TPU_SGD_MAXIMIZE) ? -grad : grad;                                          \
      if (s->weight_decay != 0.0)                                                                  \
        g = g + param * (T)s->weight_decay;                                                        \
      if (has_buf) {                                                                               \
        T buf = (s->flags & TPU_SGD_FIRST_STEP)                                                    \
                    ? g                                                                            \
                    : LOAD(*bp) * (T)s->momentum + g * (T)(1.0 - s->dampening);                    \
        *bp = STORE(buf);                                                                          \
        g = (s->flags & TPU_SGD_NESTEROV) ? g + buf * (T)s->momentum : buf;                        \
      }                                                                                            \
      *pp = STORE(param - g * (T)s->lr);                                                           \
    }                                                                                              \
  }

SGD_LOOP(sgd_f32, float, float, IDENTITY, IDENTITY)
SGD_LOOP(sgd_f64, double, double, IDENTITY, IDENTITY)
SGD_LOOP(sgd_bf16, uint16_t, float, tpu_bf16_to_f32, tpu_f32_to_bf16)
SGD_LOOP(sgd_f16, uint16_t, float, tpu_f16_to_f32, tpu_f32_to_f16)

tpu_status tpu_kernel_fused_sgd(const tpu_op_call *call) {
  sgd_step s = {.lr = call->scalars[0].f, .weight_decay = call->scalars[1].f,
                .momentum = call->scalars[2].f, .dampening = call->scalars[3].f,
                .grad_scale = 1.0, .flags = (unsigned)call->scalars[4].u};
  int n_state = s.momentum != 0.0 ? 3 : 2;
  if (call->n_outputs != n_state)
    return tpu_error(TPU_ERR_VALUE, "fused_sgd: wrong number of tensors");
  const tpu_tensor *state = &call->tensors[call->n_inputs];
  tpu_status st = check_alike(state, n_state, "fused_sgd");
  bool skip;
  if (st == TPU_OK)
    st = read_aux(call, 0, s.flags, TPU_SGD_LR_TENSOR, TPU_SGD_GRAD_SCALE, TPU_SGD_FOUND_INF,
                  &s.lr, &s.grad_scale, &skip);
  if (st != TPU_OK || skip || tpu_tensor_numel(state) == 0)
    return st;
  tpu_iter it;
  add_operands(&it, state, n_state);
  tpu_iter_run_parallel(&it, loop_for(state->dtype, sgd_f32, sgd_f64, sgd_bf16, sgd_f16), &s);
  return TPU_OK;
}

/* ---- Gradient scaler ------------------------------------------------------------------------- */

typedef struct unscale {
  double inv_scale;
  _Atomic int non_finite; /* set by any chunk that met inf or nan */
} unscale;

#define UNSCALE_LOOP(NAME, S, T, LOAD, STORE)                                                      \
  static void NAME(char **data, const int64_t *strides, int64_t n, void *ctx) {                    \
    unscale *u = ctx;                                                                              \
    int bad = 0;                                                                                   \
    for (int64_t i = 0; i < n; i++) {                                                              \
      S *gp = (S *)(data[0] + i * strides[0]);                                                     \
      T g = LOAD(*gp);                                                                             \
      bad |= !isfinite(g);                                                                         \
      *gp = STORE(g * (T)u->inv_scale);                                                            \
    }                                                                                              \
    if (bad)                                                                                       \
      u->non_finite = 1;                                                                           \
  }

UNSCALE_LOOP(unscale_f32, float, float, IDENTITY, IDENTITY)
UNSCALE_LOOP(unscale_f64, double, double, IDENTITY, IDENTITY)
UNSCALE_LOOP(unscale_bf16, uint16_t, float, tpu_bf16_to_f32, tpu_f32_to_bf16)
UNSCALE_LOOP(unscale_f16, uint16_t, float, tpu_f16_to_f32, tpu_f32_to_f16)

static void write_f32(const tpu_tensor *t, float v) { memcpy(tpu_tensor_data(t), &v, sizeof v); }

tpu_status tpu_kernel_amp_unscale(const tpu_op_call *call) {
  if (call->n_inputs != 1 || call->n_outputs != 2)
    return tpu_error(TPU_ERR_VALUE, "amp_unscale: wrong number of tensors");
  const tpu_tensor *inv_scale = &call->tensors[0], *grad = &call->tensors[1],
                   *found_inf = &call->tensors[2];
  tpu_status st = check_one(inv_scale, "inv_scale");
  if (st == TPU_OK)
    st = check_one(found_inf, "found_inf");
  if (st == TPU_OK && found_inf->dtype != TPU_FLOAT32)
    st = tpu_error(TPU_ERR_TYPE, "found_inf must be a float tensor");
  tpu_loop_fn loop =
      loop_for(grad->dtype, unscale_f32, unscale_f64, unscale_bf16, unscale_f16);
  if (st == TPU_OK && !loop)
    st = tpu_error(TPU_ERR_TYPE, "_amp_foreach_non_finite_check_and_unscale_ expects "
                                 "floating-point gradients, got %s", tpu_dtype_name(grad->dtype));
  if (st != TPU_OK || tpu_tensor_numel(grad) == 0)
    return st;
  unscale u = {.inv_scale = read_one(inv_scale)};
  tpu_iter it;
  add_operands(&it, grad, 1);
  tpu_iter_run_parallel(&it, loop, &u);
  if (u.non_finite)
    write_f32(found_inf, 1.0f);
  return TPU_OK;
}

tpu_status tpu_kernel_amp_update_scale(const tpu_op_call *call) {
  if (call->n_inputs != 1 || call->n_outputs != 2)
    return tpu_error(TPU_ERR_VALUE, "amp_update_scale: wrong number of tensors");
  const tpu_tensor *found_inf = &call->tensors[0], *scale = &call->tensors[1],
                   *tracker = &call->tensors[2];
  if (tpu_tensor_numel(scale) != 1 || scale->dtype != TPU_FLOAT32 ||
      tpu_tensor_numel(tracker) != 1 || tracker->dtype != TPU_INT32 ||
      check_one(found_inf, "found_inf") != TPU_OK)
    return tpu_error(TPU_ERR_RUNTIME, "_amp_update_scale_ expects a one-element float scale, "
                                      "int growth tracker and float found_inf");
  float current;
  int32_t growth;
  memcpy(&current, tpu_tensor_data(scale), sizeof current);
  memcpy(&growth, tpu_tensor_data(tracker), sizeof growth);
  if (read_one(found_inf) != 0.0) {
    current = (float)(current * call->scalars[1].f);
    growth = 0;
  } else if (growth + 1 == call->scalars[2].i) {
    /* Grows only while the result stays finite, as PyTorch's kernel does. */
    float grown = (float)(current * call->scalars[0].f);
    if (isfinite(grown))
      current = grown;
    growth = 0;
  } else {
    growth++;
  }
  write_f32(scale, current);
  memcpy(tpu_tensor_data(tracker), &growth, sizeof growth);
  return TPU_OK;
}
