/* The host driver, the embedded default (TORCH_TPU_DRIVER=host): simulated TPU chips whose memory
 * is host memory under a per-chip capacity, whose kernels are C loops and a BLAS split over one
 * thread pool (engine/), and whose graphs the fused planner cuts into fused steps (fuse/). Its
 * chips: TORCH_TPU_NUM_DEVICES of them (default 1), each of TORCH_TPU_DEVICE_MEMORY bytes (default
 * min(16 GiB, as a TPU v5e chip, and half the machine's RAM shared among the chips)). */
#ifndef TPU_HOST_DRIVER_H
#define TPU_HOST_DRIVER_H

#include "drivers/host/kernels/kernels.h"
#include "drivers/host/host.h"
#include "drivers/tpu_driver.h"
#include "graph/tpu_graph.h"
#include "mem/tpu_heap.h"
#include "ops/tpu_op.h"

/* The host driver's interface table. */
const tpu_driver_i *tpu_host_driver(void);

/* The kernel of `op` (every op has one), or NULL for an invalid id. */
tpu_kernel_fn tpu_host_kernel(tpu_op_id op);

#endif
