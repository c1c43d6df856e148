/* A range of reserved virtual addresses carved into 64-byte-aligned blocks: best fit, with free
 * neighbours coalesced. The device arena and the identities of pending buffers both use it.
 * Not thread-safe: callers hold their own lock. */
#ifndef TPU_HEAP_H
#define TPU_HEAP_H

#include <stdbool.h>
#include <stddef.h>

#include "base/tpu_status.h"

typedef struct tpu_heap tpu_heap;

/* Reserves `size` bytes of address space. With `accessible` the pages are readable and writable
 * (committed by the kernel on first touch, MAP_NORESERVE); without, any access faults. */
tpu_status tpu_heap_create(size_t size, bool accessible, tpu_heap **out);

/* Unmaps the range and frees the heap. */
void tpu_heap_destroy(tpu_heap *heap);

/* A block of at least `size` bytes (0 counts as 1: blocks are unique) aligned to `align` (a power
 * of two; below 64 means 64), or NULL when no free range fits or `align` is not a power of two. */
void *tpu_heap_alloc(tpu_heap *heap, size_t size, size_t align);

/* Returns a block from tpu_heap_alloc; anything else (an interior pointer, a double free) is
 * ignored. */
void tpu_heap_free(tpu_heap *heap, void *ptr);

/* Gives the physical pages of [ptr, ptr+size) back to the OS; the range stays reserved. */
void tpu_heap_discard(tpu_heap *heap, void *ptr, size_t size);

/* Whether the host may read and write the heap's pages (tpu_heap_create's `accessible`). */
bool tpu_heap_accessible(const tpu_heap *heap);

/* True when `ptr` lies inside the reserved range. */
bool tpu_heap_contains(const tpu_heap *heap, const void *ptr);

/* Bytes currently handed out. */
size_t tpu_heap_used(const tpu_heap *heap);

#endif
