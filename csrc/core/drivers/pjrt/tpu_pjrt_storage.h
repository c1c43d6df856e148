/* Storages on an immutable-buffer device. PJRT buffers cannot change, while a PyTorch storage is
 * mutable and aliased by views, so each storage is one 1-D uint8 PJRT buffer of its size, named by
 * the address range the core's allocator gave it (an inaccessible arena: the addresses only name
 * buffers). Reading a view lowers to a slice and bitcast of that buffer; writing one makes the
 * storage's next buffer, which replaces the old one here. A storage nothing has written yet reads
 * as zeros. Thread-safe. */
#ifndef TPU_PJRT_STORAGE_H
#define TPU_PJRT_STORAGE_H

#include <stddef.h>

#include "base/tpu_status.h"
#include "drivers/pjrt/tpu_pjrt_client.h"

/* The storage's current buffer, made of zeros when it has none (or one of another size, left by a
 * storage that held the address before). The caller lends it to one execution and must not
 * destroy it; tpu_pjrt_storage_set may replace it afterwards. */
tpu_status tpu_pjrt_storage_get(const tpu_pjrt_client *client, size_t device, const void *base,
                                size_t nbytes, PJRT_Buffer **out);

/* Makes `buffer` (nbytes of uint8, owned from now on) the storage's contents, destroying the one it
 * replaces and any record that overlaps [base, base + nbytes): the allocator has given that range
 * to this storage, so what was there is dead. Out of host memory, the buffer is destroyed and the
 * storage has no contents (an error is returned). */
tpu_status tpu_pjrt_storage_set(const tpu_pjrt_client *client, const void *base, size_t nbytes,
                          PJRT_Buffer *buffer);

/* Destroys the buffers of every storage inside [ptr, ptr + bytes): the range holds none any more. */
void tpu_pjrt_storage_discard(const tpu_pjrt_client *client, const void *ptr, size_t bytes);

#endif
