/* The reduce family (ops/tpu_ops_reduce.h) in StableHLO: SUM (and the mean), AMAX and AMIN. */
#ifndef TPU_PJRT_LOWER_REDUCE_H
#define TPU_PJRT_LOWER_REDUCE_H

#include <stdbool.h>

#include "drivers/pjrt/tpu_pjrt_hlo.h"
#include "ops/tpu_op.h"

/* Whether the call has a lowering: SUM of real inputs, AMAX and AMIN of floats and integers. */
bool tpu_pjrt_reduce_supports(const tpu_op_call *call);

/* The output's value (its sizes; the compute dtype for SUM, the input's for AMAX and AMIN) from
 * the input as read from its view. */
tpu_hlo_value tpu_pjrt_reduce_emit(tpu_hlo *h, const tpu_op_call *call, tpu_hlo_value in);

/* The identity of the maximum (max) or minimum for `elem` (float16 and bfloat16 reduce as
 * float32), as an MLIR literal. */
const char *tpu_pjrt_reduce_identity(tpu_dtype elem, bool max);

#endif
