/* Device buffers of a PJRT client: dense arrays copied from and to host memory, and between the
 * client's devices. The copies from and to the host are synchronous: each waits for the plugin's
 * completion event. */
#ifndef TPU_PJRT_BUFFER_H
#define TPU_PJRT_BUFFER_H

#include <stddef.h>
#include <stdint.h>

#include "base/tpu_dtype.h"
#include "base/tpu_status.h"
#include "drivers/pjrt/tpu_pjrt_client.h"

/* Copies the dense row-major array `data` (dtype, dims[0..ndim)) to a new buffer on the client's
 * device `device` (an index into client->devices); `data` may be reused once this returns. */
tpu_status tpu_pjrt_buffer_from_host(const tpu_pjrt_client *client, size_t device, tpu_dtype dtype,
                                     const int64_t *dims, size_t ndim, const void *data,
                                     PJRT_Buffer **out);

/* Copies `buffer` into `dst`, row-major and dense; `size` must be the buffer's size in bytes. */
tpu_status tpu_pjrt_buffer_to_host(const tpu_pjrt_client *client, PJRT_Buffer *buffer, void *dst,
                                   size_t size);

/* Copies `buffer` to the client's device `device` (another than its own) without the host: a new
 * buffer the caller destroys, which executions on that device may read at once (the plugin orders
 * them after the copy). */
tpu_status tpu_pjrt_buffer_to_device(const tpu_pjrt_client *client, PJRT_Buffer *buffer,
                                     size_t device, PJRT_Buffer **out);

/* Frees `buffer` (NULL is fine) and returns the plugin's error, if any. */
tpu_status tpu_pjrt_buffer_destroy(const tpu_pjrt_client *client, PJRT_Buffer *buffer);

#endif
