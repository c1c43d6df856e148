/* The gradient scaler's ops (ops/tpu_ops_optim.h) in StableHLO, in place as on the host:
 * AMP_UNSCALE multiplies the gradient by inv_scale in the gradient's compute type and sets
 * found_inf to 1 when an element was not finite (leaving it as it was otherwise); AMP_UPDATE_SCALE
 * backs the scale off on found_inf, and grows it every growth_interval steps while the grown
 * scale stays finite, each product taken in float64 and rounded to float32. The factors and the
 * interval are runtime arguments. */
#include "drivers/pjrt/tpu_pjrt_family.h"

static bool one_element(const tpu_tensor *t, tpu_dtype dtype) {
  return t->dtype == dtype && tpu_tensor_numel(t) == 1;
}

static bool supports(const tpu_op_call *call) {
  if (call->n_inputs != 1 || call->n_outputs != 2)
    return false;
  const tpu_tensor *t = call->tensors;
  switch (call->op) {
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

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)bad;
  if (call->op == TPU_OP_AMP_UNSCALE)
    unscale(h, call, in, out);
  else
    update_scale(h, call, in, scalar, ctx, out);
}

const tpu_pjrt_family tpu_pjrt_optim_family = {
    .supports = supports, .reads_output = reads_output, .emit = emit};
