/* Reservations of address space for the runtime's heaps, sized by device/tpu_address_space.h:
 * under an address-space limit a reservation shrinks rather than fails while it can. */
#ifndef TPU_RESERVE_H
#define TPU_RESERVE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/tpu_status.h"
#include "mem/tpu_heap.h"

/* Reserves a heap (mem/tpu_heap.h) of `bytes` (at least `min`) or, when the address space is
 * short, the largest of bytes/2, bytes/4, ... not below `min` that can be had.
 * TPU_ERR_OUT_OF_MEMORY when none can. */
tpu_status tpu_reserve_heap(size_t bytes, size_t min, bool accessible, tpu_heap **out);

#endif
