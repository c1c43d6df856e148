/* Storages on an immutable-buffer device. PJRT buffers cannot change, while a PyTorch storage is
 * mutable and aliased by views, so each storage is one 1-D PJRT buffer holding its bytes, named by
 * the address range the core's allocator gave it (an inaccessible arena: the addresses only name
 * buffers). The buffer's element type is the dtype that last wrote the whole storage (uint8 for
 * bool, and for a storage nothing has written yet, which reads as zeros), so views of that dtype
 * read and write it without a bitcast (drivers/pjrt/tpu_pjrt_view.h). Writing a view makes the
 * storage's next buffer, which replaces the old one here. Thread-safe. */
#ifndef TPU_PJRT_STORAGE_H
#define TPU_PJRT_STORAGE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/tpu_dtype.h"
#include "base/tpu_status.h"
#include "drivers/pjrt/tpu_pjrt_client.h"

/* Whether the storage has a buffer (something wrote it), and *elem, that buffer's element type. */
bool tpu_pjrt_storage_elem(const void *base, size_t nbytes, tpu_dtype *elem);

/* The storage's current buffer and its element type, made of uint8 zeros when it has none (or one
 * of another size, left by a storage that held the address before). The caller lends it to one
 * execution and must not destroy it; tpu_pjrt_storage_set may replace it afterwards. */
tpu_status tpu_pjrt_storage_get(const tpu_pjrt_client *client, size_t device, const void *base,
                                size_t nbytes, PJRT_Buffer **out, tpu_dtype *elem);

/* Makes `buffer` (nbytes as a 1-D array of `elem`, owned from now on) the storage's contents,
 * destroying the one it replaces and any record that overlaps [base, base + nbytes): the allocator
 * has given that range to this storage, so what was there is dead. Out of host memory, the buffer
 * is destroyed and the storage has no contents (an error is returned). */
tpu_status tpu_pjrt_storage_set(const tpu_pjrt_client *client, const void *base, size_t nbytes,
                                tpu_dtype elem, PJRT_Buffer *buffer);

/* Destroys the buffers of every storage inside [ptr, ptr + bytes): the range holds none any more. */
void tpu_pjrt_storage_discard(const tpu_pjrt_client *client, const void *ptr, size_t bytes);

#endif
