/* The chips of the process's driver (drivers/tpu_driver.h). Nothing here runs at load time: the
 * first call selects the driver, reads its chips and installs the fork handlers. */
#ifndef TPU_DEVICE_H
#define TPU_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/tpu_status.h"
#include "drivers/tpu_driver.h"

/* "simulated", "tpu", "gpu" or "cpu". */
const char *tpu_device_kind_name(tpu_device_kind kind);

/* Number of chips (at most TPU_MAX_DEVICES; 0 when no driver could be selected). */
int tpu_device_count(void);

/* TPU_OK when `device` names an existing chip; otherwise a RuntimeError-kind status with a
 * message like CUDA's "invalid device ordinal", or the reason no driver could be selected. Also
 * fails in a child forked after init. */
tpu_status tpu_device_check(int device);

/* Memory capacity of a chip in bytes: at least one 2 MiB segment, and under an address-space limit
 * no more than its arena can hold (mem/tpu_reserve.h); 0 for an invalid index. */
size_t tpu_device_capacity(int device);

/* The driver's properties of a chip (name, capacity, kind), or NULL for an invalid index. */
const tpu_device_props *tpu_device_props_of(int device);

/* Waits for the work an asynchronous driver (drivers/tpu_driver.h, device_wait) still runs on the
 * chip after its calls returned, and returns that work's first error, once; TPU_OK at once for a
 * synchronous driver. */
tpu_status tpu_device_drain(int device);

/* Whether no such work runs on the chip (always for a synchronous driver). */
bool tpu_device_drained(int device);

/* Marks the runtime as initialized: from here on a fork() leaves the child unable to use it. */
void tpu_runtime_mark_initialized(void);

/* True in a child process forked after the runtime was initialized in the parent. */
bool tpu_runtime_in_bad_fork(void);

#endif
