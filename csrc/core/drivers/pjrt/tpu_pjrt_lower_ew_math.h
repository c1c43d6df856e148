/* The elementwise family's math ops (ops/tpu_ops_elementwise.h, "Math") in StableHLO and CHLO,
 * for tpu_pjrt_lower_elementwise.c: the same formulas as the host's kernels
 * (drivers/host/kernels/elementwise/elementwise_math.c), the special functions in float64. */
#ifndef TPU_PJRT_LOWER_EW_MATH_H
#define TPU_PJRT_LOWER_EW_MATH_H

#include "drivers/pjrt/tpu_pjrt_lower_elementwise.h"

/* The compute dtypes a math op lowers for, as a mask: 1 floats, 2 integers, 4 bool; 0 for the
 * elementwise family's other ops. */
int tpu_pjrt_ew_math_kinds(tpu_op_id op);

/* The op's result from inputs `x` already in the work dtype (float32 for float16 and bfloat16,
 * else the compute dtype): a value of the work dtype, or bool for SIGNBIT. */
tpu_hlo_value tpu_pjrt_ew_math_emit(tpu_hlo *h, const tpu_op_call *call, tpu_dtype work,
                                    const tpu_hlo_value *x, tpu_pjrt_scalar_fn scalar, void *ctx);

#endif
