/* The PJRT driver: the chips of a PJRT plugin (XLA's CPU and GPU plugins, libtpu) behind the
 * driver interface (drivers/tpu_driver.h), selected with TORCH_TPU_DRIVER=pjrt and the plugin's
 * path in TORCH_TPU_PJRT_PLUGIN. Storages are PJRT buffers (drivers/pjrt/tpu_pjrt_storage.h); each
 * op call it lowers (drivers/pjrt/tpu_pjrt_lower.h) runs as one cached executable, and the core's
 * counted fallback runs the others on the host. */
#ifndef TPU_PJRT_DRIVER_H
#define TPU_PJRT_DRIVER_H

#include "drivers/tpu_driver.h"
#include "graph/tpu_graph.h"
#include "mem/tpu_heap.h"
#include "ops/tpu_op.h"

/* The driver's table. */
const tpu_driver_i *tpu_pjrt_driver(void);

#endif
