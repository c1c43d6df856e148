/* A view of memory as kernels see it: a buffer (or, for copies to and from the host, a host
 * pointer) plus byte offset, dtype, sizes and element strides. */
#ifndef TPU_TENSOR_H
#define TPU_TENSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "base/tpu_dtype.h"
#include "base/tpu_status.h"
#include "tensor/tpu_buffer.h"

/* The most dimensions a kernel accepts (TensorIterator's limit on CUDA). */
#define TPU_MAX_DIMS 25

typedef struct tpu_tensor {
  tpu_buffer *buf; /* device memory, or NULL for host memory */
  void *host;      /* base of host memory when buf is NULL */
  int64_t offset;  /* bytes from the base to element [0, ..., 0] */
  tpu_dtype dtype;
  int32_t ndim;
  int64_t sizes[TPU_MAX_DIMS];
  int64_t strides[TPU_MAX_DIMS]; /* in elements */
} tpu_tensor;

/* Address of element [0, ..., 0]; the buffer must be live. */
void *tpu_tensor_data(const tpu_tensor *t);

/* The host address of element [0, ..., 0] where the host may read and write it directly: host
 * memory, or a live buffer in an arena the host can access; NULL otherwise (a pending buffer, a
 * driver whose memory only its device reaches). */
void *tpu_tensor_host_address(const tpu_tensor *t);

/* Number of elements. */
int64_t tpu_tensor_numel(const tpu_tensor *t);

/* True when a and b have the same rank and sizes (their dtypes and strides may differ). */
bool tpu_tensor_same_sizes(const tpu_tensor *a, const tpu_tensor *b);

/* True when the elements are dense in row-major order. */
bool tpu_tensor_is_contiguous(const tpu_tensor *t);

/* True for a device view that is dense from offset 0 and covers every byte of its buffer. */
bool tpu_tensor_covers_buffer(const tpu_tensor *t);

/* Validates a view: dtype, ndim <= TPU_MAX_DIMS, non-negative sizes whose non-zero ones multiply
 * to at most INT64_MAX elements, and, unless it has no element, every element inside the buffer
 * (device views) or at a byte offset that fits in int64 (host views). Kernels
 * rely on it, so no view can reach memory outside its buffer and its counts and offsets never
 * overflow. */
tpu_status tpu_tensor_check(const tpu_tensor *t);

#endif
