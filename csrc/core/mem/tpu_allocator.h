/* The caching allocator of each chip, modelled on PyTorch's CUDA caching allocator: segments are
 * carved from the chip's reserved address range, split into blocks, and cached after free. The sum
 * of segments (reserved bytes) never exceeds the chip's capacity. Freed blocks are reusable at once
 * by later work on the stream that allocated them (a stream runs in order); a block used by other
 * streams waits until those streams have completed the work queued before the free.
 * Thread-safe. */
#ifndef TPU_ALLOCATOR_H
#define TPU_ALLOCATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/tpu_status.h"

/* Pools of a stat array, as in c10::CachingAllocator::StatType. */
enum { TPU_POOL_ALL = 0, TPU_POOL_SMALL = 1, TPU_POOL_LARGE = 2, TPU_POOL_COUNT = 3 };

typedef struct tpu_mem_stat {
  int64_t current, peak, allocated, freed;
} tpu_mem_stat;

/* Mirrors c10::CachingDeviceAllocator::DeviceStats so memory_stats() has CUDA's keys. */
typedef struct tpu_mem_stats {
  tpu_mem_stat allocation[TPU_POOL_COUNT];
  tpu_mem_stat segment[TPU_POOL_COUNT];
  tpu_mem_stat active[TPU_POOL_COUNT];
  tpu_mem_stat inactive_split[TPU_POOL_COUNT];
  tpu_mem_stat allocated_bytes[TPU_POOL_COUNT];
  tpu_mem_stat reserved_bytes[TPU_POOL_COUNT];
  tpu_mem_stat active_bytes[TPU_POOL_COUNT];
  tpu_mem_stat inactive_split_bytes[TPU_POOL_COUNT];
  tpu_mem_stat requested_bytes[TPU_POOL_COUNT];
  int64_t num_alloc_retries;
  int64_t num_ooms;
  tpu_mem_stat oversize_allocations;
  tpu_mem_stat oversize_segments;
  int64_t num_sync_all_streams;
  int64_t num_device_alloc;
  int64_t num_device_free;
  int64_t max_split_size;
} tpu_mem_stats;

/* Allocates `nbytes` (0 is allowed and returns a unique non-NULL block) on `device` for use on
 * stream index `stream`. On exhaustion it releases cached segments and retries, then synchronizes
 * the chip's streams and retries; if that fails it returns TPU_ERR_OUT_OF_MEMORY with a CUDA-style
 * message that ends in a memory summary. An asynchronous error surfaced by that synchronization is
 * returned instead. Since it may synchronize, never call it from work running on a stream. */
tpu_status tpu_mem_alloc(int device, int stream, size_t nbytes, void **out);

/* Frees a block from tpu_mem_alloc (stream-ordered, see above). NULL is ignored. */
void tpu_mem_free(void *ptr);

/* Records that stream `stream` of the block's device uses the block, so a later free waits for the
 * work queued on that stream so far (torch.Tensor.record_stream). */
void tpu_mem_record_stream(void *ptr, int stream);

/* Whether `ptr` lies in a chip's arena that the host may read and write (a driver whose kernels
 * run on the host's memory). */
bool tpu_mem_host_accessible(const void *ptr);

/* Device index of the chip whose arena contains `ptr`, or -1. */
int tpu_mem_device_of(const void *ptr);

/* Synchronizes the chip's streams and returns every cached, fully free segment to the OS; returns
 * the first asynchronous error that synchronization surfaced, after releasing. */
tpu_status tpu_mem_empty_cache(int device);

/* Copies the chip's statistics into *out. */
void tpu_mem_get_stats(int device, tpu_mem_stats *out);

/* Resets the peak fields to the current values. */
void tpu_mem_reset_peak(int device);

/* Resets the allocated/freed counters and the event counts. */
void tpu_mem_reset_accumulated(int device);

/* Free and total bytes of the chip: total is the capacity, free is capacity minus reserved. */
void tpu_mem_info(int device, size_t *free_bytes, size_t *total_bytes);

/* Writes a human-readable table of the chip's memory (like torch.cuda.memory_summary's head) into
 * buf, truncated to len bytes. */
void tpu_mem_summary(int device, char *buf, size_t len);

#endif
