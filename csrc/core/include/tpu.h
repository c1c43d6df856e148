/* The core's public API: the one header whatever runs the core (the PyTorch binding) includes.
 * Each header below is one concept and documents its functions; docs/ARCHITECTURE.md draws the
 * layers. C linkage for C++ callers. */
#ifndef TPU_H
#define TPU_H

#ifdef __cplusplus
extern "C" {
#endif

#include "base/tpu_env.h"
#include "device/tpu_device.h"
#include "device/tpu_event.h"
#include "device/tpu_stream.h"
#include "dist/tpu_comm.h"
#include "drivers/tpu_driver.h"
#include "drivers/tpu_drivers.h"
#include "exec/tpu_fused.h"
#include "exec/tpu_submit.h"
#include "graph/tpu_compile_cache.h"
#include "mem/tpu_allocator.h"
#include "mem/tpu_host_alloc.h"
#include "ops/tpu_op.h"
#include "ops/tpu_op_debug.h"
#include "ops/tpu_op_fallback.h"
#include "ops/tpu_op_trace.h"
#include "ops/tpu_tape.h"
#include "tensor/tpu_buffer.h"
#include "tensor/tpu_tensor.h"

#ifdef __cplusplus
}
#endif

#endif
