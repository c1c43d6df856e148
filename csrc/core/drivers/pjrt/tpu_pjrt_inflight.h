/* Executions launched on a device and not yet known complete. PJRT runs executions
 * asynchronously and orders dependent ones by their buffers' definition events, so a launch need
 * not wait: its completion event is handed here, and reports through PJRT_Event_OnReady. An
 * execution nobody waits for keeps its error for the device's next synchronization
 * (tpu_pjrt_inflight_wait). At most TPU_PJRT_INFLIGHT executions per device are outstanding: a
 * launch beyond that first waits for the oldest, which bounds how far the host runs ahead and the
 * memory that buffers still being read hold. The device's busy time is the union of its
 * executions' launch-to-completion intervals. Thread-safe. */
#ifndef TPU_PJRT_INFLIGHT_H
#define TPU_PJRT_INFLIGHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/tpu_status.h"
#include "drivers/tpu_driver.h"
#include "pjrt/pjrt_c_api.h"

#define TPU_PJRT_INFLIGHT 64

/* Takes `done`, the completion event of an execution launched on `device` (< TPU_MAX_DEVICES) at
 * tpu_now_us() == launch_us. With `wait`, returns once it completed, with its error; otherwise
 * returns at once and its error goes to the device's next tpu_pjrt_inflight_wait. */
tpu_status tpu_pjrt_inflight_add(const PJRT_Api *api, size_t device, PJRT_Event *done,
                                 double launch_us, bool wait);

/* Waits until every execution launched on `device` has completed; returns the first error among
 * those nobody waited for, since the last call, and forgets it. */
tpu_status tpu_pjrt_inflight_wait(size_t device);

/* Whether no execution launched on `device` is outstanding. */
bool tpu_pjrt_inflight_idle(size_t device);

/* Microseconds the devices were busy (summed over devices) among completed executions, and a reset
 * of that count. */
uint64_t tpu_pjrt_inflight_busy_us(void);
void tpu_pjrt_inflight_reset_busy(void);

#endif
