/* The norm family (ops/tpu_ops_norm.h) in StableHLO: softmax, log_softmax, layer norm and their
 * backward ops, computed in float32 (float64 for float64) and rounded once. */
#ifndef TPU_PJRT_LOWER_NORM_H
#define TPU_PJRT_LOWER_NORM_H

#include <stdbool.h>

#include "drivers/pjrt/tpu_pjrt_hlo.h"
#include "ops/tpu_op.h"

#include "drivers/pjrt/tpu_pjrt_lower_ew.h"

/* Whether the call has a lowering: the softmax ops on floating tensors of rank >= 1, layer norm
 * and its backward on floating rows. */
bool tpu_pjrt_norm_supports(const tpu_op_call *call);

/* Whether tensor i of a supported call is an absent operand (an empty weight, bias or gradient):
 * not read, not written. */
bool tpu_pjrt_norm_absent(const tpu_op_call *call, int i);

/* The outputs' values out[k] (in the compute type; the caller rounds each to its output's dtype
 * and skips absent ones) from the present inputs as read from their views. */
void tpu_pjrt_norm_emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                        tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out);

#endif
