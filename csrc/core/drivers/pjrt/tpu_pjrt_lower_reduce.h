/* The reduce family (ops/tpu_ops_reduce.h) in StableHLO: SUM (and the mean), AMAX and AMIN, and
 * what the reduction families (tpu_pjrt_lower_reduce_pick.c, _stats.c) share. */
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

/* The dimensions a reduction of call->tensors[0] into call->tensors[1] reduces (those the output
 * takes to size 1, or all of them into a 0-d output), ascending, into dims; returns how many, and
 * *count the elements each output element reduces. */
int tpu_pjrt_reduced_dims(const tpu_op_call *call, int64_t *dims, int64_t *count);

/* r, a reduction of x over dims[0..n), broadcast back over x's dims. */
tpu_hlo_value tpu_pjrt_reduce_spread(tpu_hlo *h, tpu_hlo_value r, tpu_hlo_value x,
                                     const int64_t *dims, int n);

#endif
