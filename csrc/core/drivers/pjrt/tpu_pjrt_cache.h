/* The executables of the PJRT driver, made once per module text (the text holds every shape,
 * dtype, view and attribute the module depends on, and no runtime scalar) and kept for the
 * process: loaded from the disk cache (tpu_pjrt_disk_cache.h), else compiled and written there.
 * Runs reach it only when their structure is new (tpu_pjrt_programs.h), so structures that lower
 * to one text share one executable. A new executable that would leave the process too few memory
 * mappings is refused (tpu_pjrt_map_budget.h). Thread-safe. */
#ifndef TPU_PJRT_CACHE_H
#define TPU_PJRT_CACHE_H

#include <stddef.h>

#include "drivers/pjrt/pjrt.h"
#include "drivers/pjrt/tpu_pjrt_executable.h"
#include "drivers/tpu_driver.h"
#include "graph/tpu_graph.h"
#include "mem/tpu_heap.h"
#include "ops/tpu_op.h"

/* The executable compiled from `text`, compiling it on first use. */
tpu_status tpu_pjrt_cache_get(const tpu_pjrt_client *client, const char *text, size_t len,
                              const tpu_pjrt_executable **out);

/* What the cache did since start or reset: compiles, disk loads and writes, time compiling and
 * loading. */
void tpu_pjrt_cache_stats(tpu_executable_stats *out);
void tpu_pjrt_cache_reset_stats(void);

#endif
