/* Complex numbers in StableHLO. A module computes on a complex value as its parts: a value of the
 * part type (float32 for complex64, float64 for complex128) with a last dimension of 2, the real
 * part first, as torch.view_as_real lays them out and as drivers/pjrt/tpu_pjrt_view.h reads and
 * writes complex views. Here: COPY's conversions to and from complex dtypes and the matmul
 * family on complex operands. */
#ifndef TPU_PJRT_LOWER_COMPLEX_H
#define TPU_PJRT_LOWER_COMPLEX_H

#include "drivers/pjrt/tpu_pjrt_lower_elementwise.h"

/* `x`, a value of dtype `from` (its parts when complex), converted to `to` as COPY converts
 * (ops/tpu_ops_base.h, the host's copy kernel): complex to complex part by part, complex to bool
 * true where either part is nonzero, complex to another real dtype its real part converted,
 * real to complex the value converted to the part type with an imaginary part of +0; real to
 * real is tpu_hlo_cast. */
tpu_hlo_value tpu_pjrt_complex_convert(tpu_hlo *h, tpu_hlo_value x, tpu_dtype from, tpu_dtype to);

/* The value of `re` and `im` (equal dims, one floating type) as a complex value: their dims and a
 * last dimension of 2. */
tpu_hlo_value tpu_pjrt_complex_pair(tpu_hlo *h, tpu_hlo_value re, tpu_hlo_value im);

/* The matmul family's output (ops/tpu_ops_matmul.h) on complex operands, from A, B and C (when the
 * call has one) as read from their views: the four real products of the parts, one dot_general
 * each at the highest precision in the part type, then complex alpha (scalars 0 and 2) and beta
 * (1 and 3) as the host's epilogue applies them, C unread when beta is 0. Operands flagged in
 * scalars[4] are read conjugated. The host sums each product's parts as it goes, so results agree
 * with its within the rounding of the sums. */
tpu_hlo_value tpu_pjrt_complex_matmul_emit(tpu_hlo *h, const tpu_op_call *call,
                                           const tpu_hlo_value *in, tpu_pjrt_scalar_fn scalar,
                                           void *ctx);

#endif
