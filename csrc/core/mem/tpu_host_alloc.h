/* Pinned host memory: page-aligned blocks from a reserved host range, cached by size. A block that
 * an asynchronous copy still reads or writes is not reused until that stream has completed the
 * work queued at the time of the free. Thread-safe. */
#ifndef TPU_HOST_ALLOC_H
#define TPU_HOST_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/tpu_status.h"

typedef struct tpu_host_stats {
  int64_t allocations;       /* blocks handed out now */
  int64_t allocated_bytes;   /* bytes handed out now */
  int64_t reserved_bytes;    /* bytes held, cached included */
  int64_t peak_allocated_bytes;
  int64_t num_host_alloc;    /* fresh blocks taken from the range */
  int64_t num_host_free;     /* blocks returned to the range */
} tpu_host_stats;

/* Allocates pinned memory; NULL-free and unique even for 0 bytes. */
tpu_status tpu_host_alloc(size_t nbytes, void **out);

/* Frees a block from tpu_host_alloc. NULL is ignored. */
void tpu_host_free(void *ptr);

/* Records that the work queued so far on (device, stream) uses the block containing `ptr`; returns
 * false when `ptr` is not pinned memory or the stream does not exist. */
bool tpu_host_record_use(const void *ptr, int device, int stream);

/* True when `ptr` points into a live pinned block. */
bool tpu_host_is_pinned(const void *ptr);

/* Returns cached blocks whose uses have completed to the OS. */
void tpu_host_empty_cache(void);

/* Statistics of the pinned allocator. */
void tpu_host_get_stats(tpu_host_stats *out);

/* Resets the peak to the current value. */
void tpu_host_reset_peak(void);

#endif
