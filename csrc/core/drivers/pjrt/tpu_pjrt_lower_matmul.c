#include "drivers/pjrt/tpu_pjrt_lower_matmul.h"

#include "drivers/pjrt/tpu_pjrt_lower_complex.h"

bool tpu_pjrt_matmul_supports(const tpu_op_call *call) {
  switch (call->op) {
  case TPU_OP_MM: case TPU_OP_BMM: case TPU_OP_ADDMM: case TPU_OP_BADDBMM: case TPU_OP_ADDBMM:
  case TPU_OP_ADDMV: case TPU_OP_DOT:
    break;
  case TPU_OP_INT_MM: {
    if (call->n_inputs != 2 || call->n_outputs != 1)
      return false;
    tpu_dtype a = call->tensors[0].dtype, want[3] = {a == TPU_UINT8 ? a : TPU_INT8, TPU_INT8,
                                                       TPU_INT32};
    for (int i = 0; i < 3; i++)
      if (call->tensors[i].ndim != 3 || call->tensors[i].dtype != want[i] ||
          !call->tensors[i].buf)
        return false;
    return true;
  }
  default:
    return false;
  }
  const tpu_tensor *a = &call->tensors[0];
  if (!tpu_dtype_is_computable(a->dtype) || a->dtype == TPU_BOOL)
    return false;
  for (int i = 0; i < call->n_inputs + call->n_outputs; i++)
    if (call->tensors[i].ndim != 3 || call->tensors[i].dtype != a->dtype ||
        !call->tensors[i].buf)
      return false;
  return true;
}

tpu_hlo_value tpu_pjrt_matmul_emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                                   tpu_pjrt_scalar_fn scalar, void *ctx) {
  if (call->op == TPU_OP_INT_MM) { /* int8 or uint8 widened exactly; int32 sums wrap as the host's do */
    tpu_hlo_value a = tpu_hlo_convert(h, in[0], TPU_INT32), b = tpu_hlo_convert(h, in[1], TPU_INT32);
    return tpu_hlo_reshape(h, tpu_hlo_dot(h, a, b, false, TPU_INT32), 3,
                           call->tensors[2].sizes);
  }
  tpu_dtype dtype = call->tensors[0].dtype;
  if (tpu_dtype_is_complex(dtype))
    return tpu_pjrt_complex_matmul_emit(h, call, in, scalar, ctx);
  bool floating = tpu_dtype_is_floating(dtype);
  /* Integers multiply and add in int64, which wraps into the dtype as the host's sums do. */
  tpu_dtype acc = !floating ? TPU_INT64 : dtype == TPU_FLOAT64 ? TPU_FLOAT64 : TPU_FLOAT32;
  const tpu_tensor *out = &call->tensors[call->n_inputs];
  bool sum_batches = out->sizes[0] == 1 && call->tensors[0].sizes[0] != 1;
  /* Widened first (exactly): XLA's CPU dot has no bfloat16 x bfloat16 = float32 form. */
  tpu_hlo_value a = tpu_hlo_convert(h, in[0], acc), b = tpu_hlo_convert(h, in[1], acc);
  tpu_hlo_value ab = tpu_hlo_dot(h, a, b, sum_batches, acc);
  ab = tpu_hlo_reshape(h, ab, 3, out->sizes);
  tpu_hlo_value alpha = tpu_hlo_splat(h, tpu_hlo_convert(h, scalar(ctx, 0, floating), acc), &ab);
  tpu_hlo_value r = tpu_hlo_binary(h, "multiply", alpha, ab);
  if (call->n_inputs == 3) {
    tpu_hlo_value beta = tpu_hlo_convert(h, scalar(ctx, 1, floating), acc);
    tpu_hlo_value zero = tpu_hlo_constant(h, acc, floating ? "0.0" : "0");
    tpu_hlo_value keep = tpu_hlo_compare(h, "EQ", beta, zero);
    tpu_hlo_value c = tpu_hlo_convert(h, in[2], acc);
    tpu_hlo_value with_c =
        tpu_hlo_binary(h, "add", r, tpu_hlo_binary(h, "multiply", tpu_hlo_splat(h, beta, &r), c));
    r = tpu_hlo_select(h, tpu_hlo_splat(h, keep, &r), r, with_c);
  }
  return tpu_hlo_convert(h, r, dtype);
}
