/* MSE_LOSS and its backward (ops/tpu_ops_nn.h) in StableHLO: each elementwise step in the dtype
 * (XLA rounds every float16 and bfloat16 op to the dtype, as PyTorch CPU does here), a reduced
 * loss summed in float64 and rounded once. */
#include <stdio.h>

#include "drivers/pjrt/tpu_pjrt_family.h"

enum { REDUCE_NONE = 0, REDUCE_MEAN = 1, REDUCE_SUM = 2 };

static bool floating(const tpu_tensor *t) {
  return tpu_dtype_is_floating(t->dtype) && !tpu_dtype_is_complex(t->dtype);
}

static bool supports(const tpu_op_call *call) {
  const tpu_tensor *t = call->tensors;
  if (call->op == TPU_OP_MSE_LOSS) {
    int64_t reduction = call->scalars[0].i;
    if (call->n_inputs != 2 || call->n_outputs != 1 || reduction < REDUCE_NONE ||
        reduction > REDUCE_SUM)
      return false;
    bool out_ok = reduction == REDUCE_NONE ? tpu_tensor_same_sizes(&t[2], &t[0]) : t[2].ndim == 0;
    return floating(&t[0]) && t[1].dtype == t[0].dtype && t[2].dtype == t[0].dtype &&
           tpu_tensor_same_sizes(&t[1], &t[0]) && out_ok;
  }
  if (call->op != TPU_OP_MSE_LOSS_BACKWARD || call->n_inputs != 3 || call->n_outputs != 1)
    return false;
  for (int i = 0; i < 4; i++)
    if (t[i].dtype != t[1].dtype || !tpu_tensor_same_sizes(&t[i], &t[1]))
      return false;
  return floating(&t[1]);
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)bad;
  if (call->op == TPU_OP_MSE_LOSS_BACKWARD) { /* norm * (input - target) * grad_output */
    tpu_hlo_value d = tpu_hlo_binary(h, "subtract", in[1], in[2]);
    tpu_hlo_value norm = tpu_hlo_splat(h, tpu_hlo_convert(h, scalar(ctx, 0, true), d.elem), &d);
    out[0] = tpu_hlo_binary(h, "multiply", tpu_hlo_binary(h, "multiply", norm, d), in[0]);
    return;
  }
  tpu_hlo_value d = tpu_hlo_binary(h, "subtract", in[0], in[1]);
  tpu_hlo_value loss = tpu_hlo_binary(h, "multiply", d, d);
  int64_t reduction = call->scalars[0].i;
  if (reduction == REDUCE_NONE) {
    out[0] = loss;
    return;
  }
  int64_t dims[TPU_MAX_DIMS];
  for (int i = 0; i < loss.rank; i++)
    dims[i] = i;
  tpu_hlo_value sum = tpu_hlo_reduce(h, tpu_hlo_convert(h, loss, TPU_FLOAT64),
                                     tpu_hlo_constant(h, TPU_FLOAT64, "0.0"), dims, loss.rank,
                                     TPU_HLO_ADD);
  if (reduction == REDUCE_MEAN) {
    char count[32];
    snprintf(count, sizeof count, "%lld.0", (long long)tpu_tensor_numel(&call->tensors[0]));
    /* Behind a barrier XLA cannot see the divisor: by a constant it multiplies by the
     * reciprocal instead, an ulp off the division PyTorch does. */
    tpu_hlo_value n = tpu_hlo_unary(h, "optimization_barrier",
                                    tpu_hlo_constant(h, TPU_FLOAT64, count));
    sum = tpu_hlo_binary(h, "divide", sum, n);
  }
  out[0] = sum;
}

const tpu_pjrt_family tpu_pjrt_loss_family = {.supports = supports, .emit = emit};
