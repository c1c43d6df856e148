/* How the runtime's large reservations of address space are sized: each chip's arena, twice its
 * capacity (mem/tpu_allocator.h); each chip's range of pending-buffer identities
 * (tensor/tpu_buffer.h); the pinned host range (mem/tpu_host_alloc.h). A reservation costs nothing
 * until its pages are touched, so without a limit each is generous. Under a limit on the process's
 * address space (RLIMIT_AS: `ulimit -v` on shared clusters, small containers) they must fit in
 * what the process has left and leave half of it to the rest of the process (CPU tensors,
 * threads, libraries): the chips' capacities shrink to fit when the chips are read
 * (device/tpu_device.h), so the capacity torch.tpu.get_device_properties reports is one the arena
 * can hold. mem/tpu_reserve.h makes the reservations. */
#ifndef TPU_ADDRESS_SPACE_H
#define TPU_ADDRESS_SPACE_H

#include <stddef.h>

/* Bytes of address space the process maps now (the first field of /proc/self/statm). */
size_t tpu_address_space_mapped(void);

/* Bytes of address space the process can still map: RLIMIT_AS's soft limit minus what the process
 * maps now; SIZE_MAX without a limit. */
size_t tpu_address_space_left(void);

/* Fits the capacities (bytes, in place) of the `count` chips to the address space left, so that
 * every reservation above fits in half of it, and sizes the pending and host ranges to match.
 * Called once, when the chips are read. */
void tpu_address_space_plan(int count, size_t *capacities);

/* The planned size of a chip's pending range (as many bytes as its capacity under a limit: what
 * strict mode would hold in memory at once) and of the pinned host range. */
size_t tpu_address_space_pending_bytes(int device);
size_t tpu_address_space_host_bytes(void);

#endif
