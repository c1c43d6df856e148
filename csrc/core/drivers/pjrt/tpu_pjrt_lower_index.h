/* What the index families (tpu_pjrt_lower_index.c, tpu_pjrt_lower_index_advanced.c,
 * tpu_pjrt_lower_mask.c) share: index values checked against a dimension's size, and values
 * flattened for gathers and scatters over row-major positions. */
#ifndef TPU_PJRT_LOWER_INDEX_H
#define TPU_PJRT_LOWER_INDEX_H

#include <stdint.h>

#include "drivers/pjrt/tpu_pjrt_hlo.h"

/* x (any rank) as a rank-1 value of its elements in row-major order. */
tpu_hlo_value tpu_pjrt_flat(tpu_hlo *h, tpu_hlo_value x);

/* index (int64, any dims) with the values in [-size, 0) moved up by size: negative indices
 * counting from the end. */
tpu_hlo_value tpu_pjrt_index_wrap(tpu_hlo *h, tpu_hlo_value index, int64_t size);

/* index (int64, any dims) clamped into [0, size) (size >= 1), so a gather or scatter through it
 * stays in bounds whatever the input; *bad receives a uint8 scalar, 1 when some index was
 * outside [0, size). */
tpu_hlo_value tpu_pjrt_index_checked(tpu_hlo *h, tpu_hlo_value index, int64_t size,
                                     tpu_hlo_value *bad);

#endif
