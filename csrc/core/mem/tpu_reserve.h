/* The runtime's large reservations of address space and their sizes: each chip's arena, twice its
 * capacity (mem/tpu_allocator.h); each chip's range of pending-buffer identities
 * (tensor/tpu_buffer.h); the pinned host range (mem/tpu_host_alloc.h). A reservation costs nothing
 * until its pages are touched, so without a limit each is generous. Under a limit on the process's
 * address space (RLIMIT_AS: `ulimit -v` on shared clusters, small containers) they must fit in
 * what the process has left and leave half of it to the rest of the process (CPU tensors,
 * threads, libraries): the chips' capacities shrink to fit when the chips are read
 * (exec/tpu_device.h), so the capacity torch.tpu.get_device_properties reports is one the arena
 * can hold. */
#ifndef TPU_RESERVE_H
#define TPU_RESERVE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/tpu_status.h"
#include "mem/tpu_heap.h"

/* Bytes of address space the process can still map: RLIMIT_AS's soft limit minus what the process
 * maps now; SIZE_MAX without a limit. */
size_t tpu_address_space_left(void);

/* Fits the capacities (bytes, in place) of the `count` chips to the address space left, so that
 * every reservation above fits in half of it, and sizes the pending and host ranges to match.
 * Called once, when the chips are read. */
void tpu_reserve_plan(int count, size_t *capacities);

/* The planned size of a chip's pending range (as many bytes as its capacity under a limit: what
 * strict mode would hold in memory at once) and of the pinned host range. */
size_t tpu_reserve_pending_bytes(int device);
size_t tpu_reserve_host_bytes(void);

/* Reserves a heap (mem/tpu_heap.h) of `bytes` (at least `min`) or, when the address space is
 * short, the largest of bytes/2, bytes/4, ... not below `min` that can be had.
 * TPU_ERR_OUT_OF_MEMORY when none can. */
tpu_status tpu_reserve_heap(size_t bytes, size_t min, bool accessible, tpu_heap **out);

#endif
