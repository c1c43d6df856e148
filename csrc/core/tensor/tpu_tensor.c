#include "tensor/tpu_tensor.h"

void *tpu_tensor_data(const tpu_tensor *t) {
  return (char *)(t->buf ? tpu_buffer_memory(t->buf) : t->host) + t->offset;
}

int64_t tpu_tensor_numel(const tpu_tensor *t) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; d++)
    n *= t->sizes[d];
  return n;
}

bool tpu_tensor_same_sizes(const tpu_tensor *a, const tpu_tensor *b) {
  if (a->ndim != b->ndim)
    return false;
  for (int d = 0; d < a->ndim; d++)
    if (a->sizes[d] != b->sizes[d])
      return false;
  return true;
}

bool tpu_tensor_is_contiguous(const tpu_tensor *t) {
  int64_t expected = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    if (t->sizes[d] == 1)
      continue;
    if (t->strides[d] != expected)
      return false;
    expected *= t->sizes[d];
  }
  return true;
}

bool tpu_tensor_covers_buffer(const tpu_tensor *t) {
  return t->buf && t->offset == 0 && tpu_tensor_is_contiguous(t) &&
         (size_t)tpu_tensor_numel(t) * tpu_dtype_size(t->dtype) == tpu_buffer_nbytes(t->buf);
}

tpu_status tpu_tensor_check(const tpu_tensor *t) {
  if ((unsigned)t->dtype >= TPU_DTYPE_COUNT)
    return tpu_error(TPU_ERR_TYPE, "invalid dtype %d", (int)t->dtype);
  if (t->ndim < 0 || t->ndim > TPU_MAX_DIMS)
    return tpu_error(TPU_ERR_VALUE, "tensors on tpu support at most %d dimensions, got %d",
                     TPU_MAX_DIMS, t->ndim);
  int64_t lo = 0, hi = 0; /* element offsets of the lowest and highest element */
  for (int d = 0; d < t->ndim; d++) {
    if (t->sizes[d] < 0)
      return tpu_error(TPU_ERR_VALUE, "negative size %lld in dimension %d",
                       (long long)t->sizes[d], d);
    if (t->sizes[d] == 0)
      return TPU_OK; /* no element is ever touched */
    __int128 extent = (__int128)(t->sizes[d] - 1) * t->strides[d];
    if (extent > INT64_MAX / 2 || extent < -(INT64_MAX / 2))
      return tpu_error(TPU_ERR_VALUE, "view extent overflows in dimension %d", d);
    if (extent < 0)
      lo += (int64_t)extent;
    else
      hi += (int64_t)extent;
  }
  if (!t->buf)
    return t->host ? TPU_OK : tpu_error(TPU_ERR_VALUE, "tensor has neither buffer nor host memory");
  int64_t item = (int64_t)tpu_dtype_size(t->dtype);
  __int128 first = (__int128)t->offset + (__int128)lo * item;
  __int128 end = (__int128)t->offset + ((__int128)hi + 1) * item;
  if (first < 0 || end > (__int128)tpu_buffer_nbytes(t->buf))
    return tpu_error(TPU_ERR_VALUE,
                     "view of %lld bytes at offset %lld reaches outside its buffer of %zu bytes",
                     (long long)(end - first), (long long)first, tpu_buffer_nbytes(t->buf));
  return TPU_OK;
}
