#include "tensor/tpu_tensor.h"

#include "mem/tpu_allocator.h"

void *tpu_tensor_data(const tpu_tensor *t) {
  return (char *)(t->buf ? tpu_buffer_memory(t->buf) : t->host) + t->offset;
}

void *tpu_tensor_host_address(const tpu_tensor *t) {
  if (!t->buf)
    return (char *)t->host + t->offset;
  if (!tpu_buffer_is_live(t->buf) || !tpu_mem_host_accessible(tpu_buffer_memory(t->buf)))
    return NULL;
  return tpu_tensor_data(t);
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
  /* Every size first: a view without elements touches no memory whatever its strides, but a
   * negative size after a zero one is still invalid, and so is a count of elements past int64
   * (stride 0 repeats an element at no cost in memory): the product of the non-zero sizes bounds
   * every partial product tpu_tensor_numel and the kernels form. */
  bool empty = false;
  int64_t count = 1;
  for (int d = 0; d < t->ndim; d++) {
    if (t->sizes[d] < 0)
      return tpu_error(TPU_ERR_VALUE, "negative size %lld in dimension %d",
                       (long long)t->sizes[d], d);
    empty |= t->sizes[d] == 0;
    if (t->sizes[d] && __builtin_mul_overflow(count, t->sizes[d], &count))
      return tpu_error(TPU_ERR_VALUE, "a view of more than %lld elements", (long long)INT64_MAX);
  }
  if (empty)
    return TPU_OK;
  if (!t->buf && !t->host)
    return tpu_error(TPU_ERR_VALUE, "tensor has neither buffer nor host memory");
  /* Byte offsets, from element [0, ..., 0], of the lowest and highest byte of any element. One
   * dimension spanning 2^64 elements already reaches past any 64-bit offset; below that, sums
   * over TPU_MAX_DIMS dimensions stay far inside 128 bits. */
  const __int128 limit = (__int128)1 << 64;
  __int128 item = (__int128)tpu_dtype_size(t->dtype), lo = 0, hi = item - 1;
  for (int d = 0; d < t->ndim; d++) {
    __int128 extent = (__int128)(t->sizes[d] - 1) * t->strides[d];
    if (extent >= limit || extent <= -limit)
      return tpu_error(TPU_ERR_VALUE, "view extent overflows in dimension %d", d);
    *(extent < 0 ? &lo : &hi) += extent * item;
  }
  __int128 first = t->offset + lo, last = t->offset + hi;
  if (!t->buf) /* kernels add these offsets to the host pointer */
    return first >= INT64_MIN && last <= INT64_MAX
               ? TPU_OK
               : tpu_error(TPU_ERR_VALUE, "host view reaches past 64-bit byte offsets");
  if (first < 0 || last >= (__int128)tpu_buffer_nbytes(t->buf))
    return tpu_error(TPU_ERR_VALUE,
                     "view of %lld bytes at offset %lld reaches outside its buffer of %zu bytes",
                     (long long)(last + 1 - first), (long long)first, tpu_buffer_nbytes(t->buf));
  return TPU_OK;
}
