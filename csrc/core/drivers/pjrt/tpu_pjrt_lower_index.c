/* Index ops in StableHLO: INDEX_SELECT (ops/tpu_ops_index.h) of a self of rank >= 1 as a gather,
 * with its bounds check as a flag the driver reads back. */
#include <stdio.h>

#include "drivers/pjrt/tpu_pjrt_family.h"

/* The selected dimension, negative counting from the end. */
static int dim_of(const tpu_op_call *call) {
  int64_t d = call->scalars[0].i, rank = call->tensors[0].ndim;
  return (int)(d < 0 ? d + rank : d);
}

static bool supports(const tpu_op_call *call) {
  if (call->op != TPU_OP_INDEX_SELECT || call->n_inputs != 2 || call->n_outputs != 1)
    return false;
  const tpu_tensor *self = &call->tensors[0], *index = &call->tensors[1],
                   *out = &call->tensors[2];
  int d = dim_of(call);
  if (self->ndim < 1 || out->ndim != self->ndim || out->dtype != self->dtype || d < 0 ||
      d >= self->ndim || index->ndim > 1 || !index->buf ||
      (index->dtype != TPU_INT32 && index->dtype != TPU_INT64))
    return false;
  int64_t count = index->ndim ? index->sizes[0] : 1;
  for (int i = 0; i < self->ndim; i++)
    if (out->sizes[i] != (i == d ? count : self->sizes[i]))
      return false;
  return true;
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out,
                 tpu_hlo_value *out_of_range) {
  (void)scalar;
  (void)ctx;
  int d = dim_of(call);
  int64_t count = call->tensors[1].ndim ? call->tensors[1].sizes[0] : 1;
  tpu_hlo_value index = tpu_hlo_reshape(h, tpu_hlo_convert(h, in[1], TPU_INT64), 1, &count);
  char size[24];
  snprintf(size, sizeof size, "%lld", (long long)in[0].dims[d]);
  tpu_hlo_value zero = tpu_hlo_full(h, TPU_INT64, "0", &index);
  tpu_hlo_value limit = tpu_hlo_full(h, TPU_INT64, size, &index);
  *out_of_range = tpu_hlo_any(h, tpu_hlo_binary(h, "or", tpu_hlo_compare(h, "LT", index, zero),
                                                tpu_hlo_compare(h, "GE", index, limit)));
  /* Clamped, so the gather stays in bounds whatever the flag says. */
  tpu_hlo_value one = tpu_hlo_full(h, TPU_INT64, "1", &index);
  tpu_hlo_value last = tpu_hlo_binary(h, "subtract", limit, one);
  index = tpu_hlo_binary(h, "minimum", tpu_hlo_binary(h, "maximum", index, zero), last);
  out[0] = tpu_hlo_take(h, in[0], index, d);
}

static void message(const tpu_op_call *call, char *buf, size_t len) {
  int d = dim_of(call);
  snprintf(buf, len, "index_select(): index out of bounds for dimension %d with size %lld", d,
           (long long)call->tensors[0].sizes[d]);
}

const tpu_pjrt_family tpu_pjrt_index_family = {
    .supports = supports, .emit = emit, .message = message};
