/* The elementwise family (ops/tpu_ops_elementwise.h) in StableHLO: the math of one op on inputs
 * already broadcast to the output's shape. */
#ifndef TPU_PJRT_LOWER_ELEMENTWISE_H
#define TPU_PJRT_LOWER_ELEMENTWISE_H

#include <stdbool.h>

#include "drivers/pjrt/tpu_pjrt_hlo.h"
#include "ops/tpu_op.h"

/* A runtime scalar of the call, slot k, as a 0-d argument: float64 when is_float, else int64. */
typedef tpu_hlo_value (*tpu_pjrt_scalar_fn)(void *ctx, int slot, bool is_float);

/* Whether the op has a lowering for this compute dtype. */
bool tpu_pjrt_ew_supports(tpu_op_id op, tpu_dtype compute);

/* The op's result: bool for the ops whose output is bool, else of the compute dtype. `in` are the
 * call's inputs in their own dtypes; the lowering converts them as the op's contract says. */
tpu_hlo_value tpu_pjrt_ew_emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                               tpu_pjrt_scalar_fn scalar, void *ctx);

#endif
