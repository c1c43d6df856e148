/* The PJRT driver's runtime scalars (a module's 0-d float64 or int64 arguments) as device
 * buffers kept by value: a value runs take again and again (an alpha of 1, a learning rate) is
 * uploaded once and lent to each run. The table is fixed; a value whose place another holds is
 * uploaded for its run alone. Thread-safe. */
#ifndef TPU_PJRT_SCALARS_H
#define TPU_PJRT_SCALARS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/tpu_dtype.h"
#include "base/tpu_status.h"
#include "drivers/pjrt/tpu_pjrt_client.h"

/* The 0-d buffer holding the 8 bytes at `value` as `dtype` (TPU_FLOAT64 or TPU_INT64), on the
 * client's device `device`. *owned: whether the caller destroys it after the run (else the table
 * keeps it, and the caller must not). */
tpu_status tpu_pjrt_scalar_buffer(const tpu_pjrt_client *client, size_t device, tpu_dtype dtype,
                                  const void *value, PJRT_Buffer **out, bool *owned);

#endif
