/* The executables of the PJRT driver, compiled once per module text (the text holds every shape,
 * dtype, view and attribute the module depends on, and no runtime scalar) and kept for the
 * process. Thread-safe. */
#ifndef TPU_PJRT_CACHE_H
#define TPU_PJRT_CACHE_H

#include <stddef.h>

#include "drivers/pjrt/tpu_pjrt_executable.h"

/* The executable compiled from `text`, compiling it on first use. */
tpu_status tpu_pjrt_cache_get(const tpu_pjrt_client *client, const char *text, size_t len,
                              const tpu_pjrt_executable **out);

#endif
