/* The optim family (ops/tpu_ops_optim.h) in StableHLO, every output updated in place as on the
 * host. FUSED_ADAM and FUSED_SGD follow the host's element math in float (double for float64
 * parameters) with the coefficients in double; their hyperparameters are runtime arguments, the
 * flags constants of the module, and a set found_inf leaves every output as it was.
 * AMP_UNSCALE multiplies the gradient by inv_scale in the gradient's compute type and sets
 * found_inf to 1 when an element was not finite (leaving it as it was otherwise); AMP_UPDATE_SCALE
 * backs the scale off on found_inf, and grows it every growth_interval steps while the grown
 * scale stays finite, each product taken in float64 and rounded to float32. */
#include "drivers/pjrt/tpu_pjrt_family.h"
#include "ops/tpu_ops_optim.h"

/* Where the optional one-element inputs (lr, grad_scale, found_inf) sit, in that order from
 * `first`, as the flags say; -1 for those not given. */
typedef struct aux_inputs {
  int lr, scale, inf, end;
} aux_inputs;

static aux_inputs aux_of(unsigned flags, int first, unsigned lr_flag, unsigned scale_flag,
                         unsigned inf_flag) {
  aux_inputs a = {-1, -1, -1, first};
  a.lr = flags & lr_flag ? a.end++ : -1;
  a.scale = flags & scale_flag ? a.end++ : -1;
  a.inf = flags & inf_flag ? a.end++ : -1;
  return a;
}

static aux_inputs adam_aux(const tpu_op_call *call) {
  return aux_of((unsigned)call->scalars[5].u, 1, TPU_ADAM_LR_TENSOR, TPU_ADAM_GRAD_SCALE,
                TPU_ADAM_FOUND_INF);
}

static aux_inputs sgd_aux(const tpu_op_call *call) {
  return aux_of((unsigned)call->scalars[4].u, 0, TPU_SGD_LR_TENSOR, TPU_SGD_GRAD_SCALE,
                TPU_SGD_FOUND_INF);
}

/* Inputs [0, n_inputs) one-element floats, outputs n_state alike floating tensors. */
static bool optimizer_operands(const tpu_op_call *call, int n_inputs, int n_state) {
  if (call->n_inputs != n_inputs || call->n_outputs != n_state)
    return false;
  for (int i = 0; i < n_inputs; i++)
    if (!tpu_dtype_is_floating(call->tensors[i].dtype) || tpu_tensor_numel(&call->tensors[i]) != 1)
      return false;
  const tpu_tensor *state = &call->tensors[n_inputs];
  for (int k = 0; k < n_state; k++)
    if (!tpu_dtype_is_floating(state[k].dtype) || state[k].dtype != state[0].dtype ||
        !tpu_tensor_same_sizes(&state[k], &state[0]))
      return false;
  return true;
}

static bool one_element(const tpu_tensor *t, tpu_dtype dtype) {
  return t->dtype == dtype && tpu_tensor_numel(t) == 1;
}

static bool supports(const tpu_op_call *call) {
  const tpu_tensor *t = call->tensors;
  bool scaler = call->op == TPU_OP_AMP_UNSCALE || call->op == TPU_OP_AMP_UPDATE_SCALE;
  if (scaler && (call->n_inputs != 1 || call->n_outputs != 2))
    return false;
  switch (call->op) {
  case TPU_OP_FUSED_ADAM:
    return optimizer_operands(call, adam_aux(call).end,
                              call->scalars[5].u & TPU_ADAM_AMSGRAD ? 5 : 4);
  case TPU_OP_FUSED_SGD:
    return call->n_outputs >= 2 && optimizer_operands(call, sgd_aux(call).end, call->n_outputs);
  case TPU_OP_AMP_UNSCALE:
    return one_element(&t[0], TPU_FLOAT32) && tpu_dtype_is_floating(t[1].dtype) &&
           one_element(&t[2], TPU_FLOAT32);
  case TPU_OP_AMP_UPDATE_SCALE:
    return one_element(&t[0], TPU_FLOAT32) && one_element(&t[1], TPU_FLOAT32) &&
           one_element(&t[2], TPU_INT32);
  default:
    return false;
  }
}

/* Both outputs are updated in place. */
static bool reads_output(const tpu_op_call *call, int k) {
  (void)call;
  (void)k;
  return true;
}

static tpu_hlo_value scalar_of(tpu_hlo *h, tpu_hlo_value one) {
  return tpu_hlo_reshape(h, one, 0, NULL);
}

static tpu_hlo_value shaped_as(tpu_hlo *h, tpu_hlo_value scalar, const tpu_tensor *t) {
  return tpu_hlo_reshape(h, scalar, t->ndim, t->sizes);
}

static void unscale(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                    tpu_hlo_value *out) {
  tpu_hlo_value grad = in[1];
  tpu_dtype work = grad.elem == TPU_FLOAT64 ? TPU_FLOAT64 : TPU_FLOAT32;
  tpu_hlo_value g = tpu_hlo_convert(h, grad, work);
  tpu_hlo_value inv = tpu_hlo_splat(h, tpu_hlo_convert(h, scalar_of(h, in[0]), work), &g);
  out[0] = tpu_hlo_convert(h, tpu_hlo_binary(h, "multiply", g, inv), grad.elem);
  tpu_hlo_value bad = tpu_hlo_any(h, tpu_hlo_unary(h, "not", tpu_hlo_unary(h, "is_finite", g)));
  tpu_hlo_value found = tpu_hlo_compare(h, "NE", bad, tpu_hlo_constant(h, TPU_UINT8, "0"));
  out[1] = shaped_as(h,
                     tpu_hlo_select(h, found, tpu_hlo_constant(h, TPU_FLOAT32, "1.0"),
                                    scalar_of(h, in[2])),
                     &call->tensors[2]);
}

static void update_scale(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                         tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out) {
  tpu_hlo_value found = tpu_hlo_compare(h, "NE", scalar_of(h, in[0]),
                                        tpu_hlo_constant(h, TPU_FLOAT32, "0.0"));
  tpu_hlo_value scale = scalar_of(h, in[1]), tracker = scalar_of(h, in[2]);
  tpu_hlo_value wide = tpu_hlo_convert(h, scale, TPU_FLOAT64);
  tpu_hlo_value grown =
      tpu_hlo_convert(h, tpu_hlo_binary(h, "multiply", wide, scalar(ctx, 0, true)), TPU_FLOAT32);
  tpu_hlo_value backed_off =
      tpu_hlo_convert(h, tpu_hlo_binary(h, "multiply", wide, scalar(ctx, 1, true)), TPU_FLOAT32);
  tpu_hlo_value next = tpu_hlo_binary(h, "add", tracker, tpu_hlo_constant(h, TPU_INT32, "1"));
  tpu_hlo_value due = tpu_hlo_compare(h, "EQ", tpu_hlo_convert(h, next, TPU_INT64),
                                      scalar(ctx, 2, false));
  tpu_hlo_value zero = tpu_hlo_constant(h, TPU_INT32, "0");
  tpu_hlo_value kept =
      tpu_hlo_select(h, tpu_hlo_unary(h, "is_finite", grown), grown, scale);
  tpu_hlo_value good_scale = tpu_hlo_select(h, due, kept, scale);
  tpu_hlo_value good_tracker = tpu_hlo_select(h, due, zero, next);
  out[0] = shaped_as(h, tpu_hlo_select(h, found, backed_off, good_scale), &call->tensors[1]);
  out[1] = shaped_as(h, tpu_hlo_select(h, found, zero, good_tracker), &call->tensors[2]);
}

/* An optimizer step's emitting state: the parameter's compute type and shape. */
typedef struct step {
  tpu_hlo *h;
  tpu_dtype work;
  tpu_hlo_value like;
} step;

static tpu_hlo_value f64_of(step *s, tpu_hlo_value one) {
  return tpu_hlo_convert(s->h, scalar_of(s->h, one), TPU_FLOAT64);
}
/* A double coefficient rounded to the compute type, broadcast. */
static tpu_hlo_value coef(step *s, tpu_hlo_value d) {
  return tpu_hlo_splat(s->h, tpu_hlo_convert(s->h, d, s->work), &s->like);
}
static tpu_hlo_value op2(step *s, const char *op, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_binary(s->h, op, a, b);
}
static tpu_hlo_value one_minus(step *s, tpu_hlo_value d) {
  return op2(s, "subtract", tpu_hlo_constant(s->h, TPU_FLOAT64, "1.0"), d);
}
/* g + param * weight_decay where weight_decay != 0 (a runtime value), else g. */
static tpu_hlo_value decayed(step *s, tpu_hlo_value g, tpu_hlo_value param, tpu_hlo_value wd) {
  tpu_hlo_value nonzero =
      tpu_hlo_compare(s->h, "NE", wd, tpu_hlo_constant(s->h, TPU_FLOAT64, "0.0"));
  tpu_hlo_value with = op2(s, "add", g, op2(s, "multiply", param, coef(s, wd)));
  return tpu_hlo_select(s->h, tpu_hlo_splat(s->h, nonzero, &s->like), with, g);
}

/* The state in the compute type: outputs [n_inputs, n_inputs + n) read back. */
static step load_state(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                       tpu_hlo_value *state) {
  const tpu_tensor *first = &call->tensors[call->n_inputs];
  step s = {.h = h, .work = first->dtype == TPU_FLOAT64 ? TPU_FLOAT64 : TPU_FLOAT32};
  for (int k = 0; k < call->n_outputs; k++)
    state[k] = tpu_hlo_convert(h, in[call->n_inputs + k], s.work);
  s.like = state[0];
  return s;
}

/* The new state into out, as the outputs' dtype; the old one where found_inf is set. */
static void store_state(step *s, const tpu_op_call *call, const tpu_hlo_value *in,
                        const tpu_hlo_value *state, int inf, tpu_hlo_value *out) {
  tpu_dtype dtype = call->tensors[call->n_inputs].dtype;
  for (int k = 0; k < call->n_outputs; k++) {
    out[k] = tpu_hlo_convert(s->h, state[k], dtype);
    if (inf >= 0) {
      tpu_hlo_value skip = tpu_hlo_compare(s->h, "NE", f64_of(s, in[inf]),
                                           tpu_hlo_constant(s->h, TPU_FLOAT64, "0.0"));
      out[k] = tpu_hlo_select(s->h, tpu_hlo_splat(s->h, skip, &out[k]), in[call->n_inputs + k],
                              out[k]);
    }
  }
}

static void adam(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out) {
  unsigned flags = (unsigned)call->scalars[5].u;
  aux_inputs a = adam_aux(call);
  tpu_hlo_value x[5];
  step s = load_state(h, call, in, x); /* param, grad, exp_avg, exp_avg_sq [, max_exp_avg_sq] */
  tpu_hlo_value lr = a.lr >= 0 ? f64_of(&s, in[a.lr]) : scalar(ctx, 0, true);
  tpu_hlo_value b1 = scalar(ctx, 1, true), b2 = scalar(ctx, 2, true), wd = scalar(ctx, 3, true);
  tpu_hlo_value eps = scalar(ctx, 4, true), count = f64_of(&s, in[0]);
  tpu_hlo_value step_size = op2(&s, "divide", lr, one_minus(&s, op2(&s, "power", b1, count)));
  tpu_hlo_value bc2_sqrt = tpu_hlo_unary(h, "sqrt", one_minus(&s, op2(&s, "power", b2, count)));
  if (a.scale >= 0)
    x[1] = op2(&s, "divide", x[1], coef(&s, f64_of(&s, in[a.scale])));
  tpu_hlo_value g = flags & TPU_ADAM_MAXIMIZE ? tpu_hlo_unary(h, "negate", x[1]) : x[1];
  if (flags & TPU_ADAM_DECOUPLED)
    x[0] = op2(&s, "multiply", x[0], coef(&s, one_minus(&s, op2(&s, "multiply", lr, wd))));
  else
    g = decayed(&s, g, x[0], wd);
  x[2] = op2(&s, "add", op2(&s, "multiply", x[2], coef(&s, b1)),
             op2(&s, "multiply", g, coef(&s, one_minus(&s, b1))));
  x[3] = op2(&s, "add", op2(&s, "multiply", x[3], coef(&s, b2)),
             op2(&s, "multiply", op2(&s, "multiply", g, g), coef(&s, one_minus(&s, b2))));
  tpu_hlo_value second = x[3];
  if (flags & TPU_ADAM_AMSGRAD)
    second = x[4] = tpu_hlo_select(h, tpu_hlo_compare(h, "GT", x[4], x[3]), x[4], x[3]);
  tpu_hlo_value root = tpu_hlo_convert(
      h, tpu_hlo_unary(h, "sqrt", tpu_hlo_convert(h, second, TPU_FLOAT64)), s.work);
  tpu_hlo_value denom = op2(&s, "add", op2(&s, "divide", root, coef(&s, bc2_sqrt)), coef(&s, eps));
  x[0] = op2(&s, "subtract", x[0],
             op2(&s, "divide", op2(&s, "multiply", coef(&s, step_size), x[2]), denom));
  store_state(&s, call, in, x, a.inf, out);
}

static void sgd(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out) {
  unsigned flags = (unsigned)call->scalars[4].u;
  aux_inputs a = sgd_aux(call);
  tpu_hlo_value x[3];
  step s = load_state(h, call, in, x); /* param, grad [, momentum_buffer] */
  tpu_hlo_value lr = a.lr >= 0 ? f64_of(&s, in[a.lr]) : scalar(ctx, 0, true);
  tpu_hlo_value wd = scalar(ctx, 1, true), momentum = scalar(ctx, 2, true);
  if (a.scale >= 0)
    x[1] = op2(&s, "divide", x[1], coef(&s, f64_of(&s, in[a.scale])));
  tpu_hlo_value g = flags & TPU_SGD_MAXIMIZE ? tpu_hlo_unary(h, "negate", x[1]) : x[1];
  g = decayed(&s, g, x[0], wd);
  if (call->n_outputs == 3) {
    x[2] = flags & TPU_SGD_FIRST_STEP
               ? g
               : op2(&s, "add", op2(&s, "multiply", x[2], coef(&s, momentum)),
                     op2(&s, "multiply", g, coef(&s, one_minus(&s, scalar(ctx, 3, true)))));
    g = flags & TPU_SGD_NESTEROV ? op2(&s, "add", g, op2(&s, "multiply", x[2], coef(&s, momentum)))
                                 : x[2];
  }
  x[0] = op2(&s, "subtract", x[0], op2(&s, "multiply", g, coef(&s, lr)));
  store_state(&s, call, in, x, a.inf, out);
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)bad;
  switch (call->op) {
  case TPU_OP_FUSED_ADAM: adam(h, call, in, scalar, ctx, out); break;
  case TPU_OP_FUSED_SGD: sgd(h, call, in, scalar, ctx, out); break;
  case TPU_OP_AMP_UNSCALE: unscale(h, call, in, out); break;
  default: update_scale(h, call, in, scalar, ctx, out); break;
  }
}

const tpu_pjrt_family tpu_pjrt_optim_family = {
    .supports = supports, .reads_output = reads_output, .emit = emit};
