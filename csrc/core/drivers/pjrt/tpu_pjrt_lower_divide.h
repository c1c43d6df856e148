/* Integer division and remainders in StableHLO, as the host's kernels compute them
 * (ops/tpu_ops_elementwise.h): DIV_TRUNC and FMOD round toward zero, DIV_FLOOR and REMAINDER
 * toward negative infinity; a zero divisor gives 0 and is reported, and -1 divides by negation,
 * which wraps (INT_MIN / -1 is INT_MIN), so no element depends on what a plugin does with those
 * divisors. */
#ifndef TPU_PJRT_LOWER_DIVIDE_H
#define TPU_PJRT_LOWER_DIVIDE_H

#include <stdbool.h>

#include "drivers/pjrt/tpu_pjrt_hlo.h"
#include "ops/tpu_op.h"

/* Whether the call is an integer division or remainder this file lowers. */
bool tpu_pjrt_int_divides(const tpu_op_call *call);

/* The call's result of a and b (its inputs broadcast to the output's dims, in their own dtypes)
 * in its integer compute dtype; *zero receives the uint8 scalar flag, 1 when some divisor was 0
 * (the run then fails with "ZeroDivisionError", PyTorch CPU's message). */
tpu_hlo_value tpu_pjrt_int_divide(tpu_hlo *h, const tpu_op_call *call, tpu_hlo_value a,
                                  tpu_hlo_value b, tpu_hlo_value *zero);

#endif
