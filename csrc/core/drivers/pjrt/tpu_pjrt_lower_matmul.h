/* The matmul family (ops/tpu_ops_matmul.h) in StableHLO: one dot_general at the highest
 * precision, float16 and bfloat16 accumulated in float32, integers in int64, then alpha and
 * beta * C; complex dtypes part by part (drivers/pjrt/tpu_pjrt_lower_complex.h). */
#ifndef TPU_PJRT_LOWER_MATMUL_H
#define TPU_PJRT_LOWER_MATMUL_H

#include <stdbool.h>

#include "drivers/pjrt/tpu_pjrt_lower_elementwise.h"

/* Whether the call has a lowering: the family's ops on floating, integer and complex dtypes
 * (conjugation flags apply to complex operands only, as on the host). */
bool tpu_pjrt_matmul_supports(const tpu_op_call *call);

/* The output's value (its dtype and sizes) from the inputs A, B and C (when the call has one),
 * as read from their views. */
tpu_hlo_value tpu_pjrt_matmul_emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                                   tpu_pjrt_scalar_fn scalar, void *ctx);

#endif
