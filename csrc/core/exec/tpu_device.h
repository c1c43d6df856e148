/* The registry of simulated chips. Nothing here runs at load time: the first call reads the
 * environment (TORCH_TPU_NUM_DEVICES, TORCH_TPU_DEVICE_MEMORY) and installs the fork handlers. */
#ifndef TPU_DEVICE_H
#define TPU_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/tpu_status.h"

#define TPU_MAX_DEVICES 64

/* Number of chips (at least 1, at most TPU_MAX_DEVICES). */
int tpu_device_count(void);

/* TPU_OK when `device` names an existing chip; otherwise a RuntimeError-kind status with a
 * message like CUDA's "invalid device ordinal". Also fails in a child forked after init. */
tpu_status tpu_device_check(int device);

/* Memory capacity of a chip in bytes: at least one 2 MiB segment; 0 for an invalid index. */
size_t tpu_device_capacity(int device);

/* Marketing-style name of a chip, e.g. "TPU v5e (simulated)". */
const char *tpu_device_name(int device);

/* Marks the runtime as initialized: from here on a fork() leaves the child unable to use it. */
void tpu_runtime_mark_initialized(void);

/* True in a child process forked after the runtime was initialized in the parent. */
bool tpu_runtime_in_bad_fork(void);

#endif
