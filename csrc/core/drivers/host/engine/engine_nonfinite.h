/* Finding NaN and infinity in a tensor view: the scan behind debug mode's per-op NaN/Inf check
 * (ops/tpu_op_debug.h). A value is non-finite when its exponent bits are all ones, so the scan
 * tests bits and never does float arithmetic. */
#ifndef TPU_HOST_ENGINE_NONFINITE_H
#define TPU_HOST_ENGINE_NONFINITE_H

#include <stdbool.h>
#include <stdint.h>

#include "tensor/tpu_tensor.h"

/* True for the dtypes that can hold NaN or infinity: float16, bfloat16, float32, float64 and the
 * two complex dtypes (either part). */
bool tpu_dtype_has_nonfinite(tpu_dtype dtype);

/* True when the view holds a NaN or an infinity (false for dtypes that cannot). Walks memory in
 * its own order with a vectorized loop, split over the thread pool for big views; the view's
 * memory must be live. */
bool tpu_has_nonfinite(const tpu_tensor *t);

/* The first NaN or infinity in row-major (logical) order: its flat index and its value (for a
 * complex element, its non-finite part). False when there is none. Serial: for error messages. */
bool tpu_first_nonfinite(const tpu_tensor *t, int64_t *index, double *value);

#endif
