#include "mem/tpu_reserve.h"

#include "device/tpu_address_space.h"

tpu_status tpu_reserve_heap(size_t bytes, size_t min, bool accessible, tpu_heap **out) {
  if (bytes < min)
    bytes = min;
  tpu_status st = tpu_heap_create(bytes, accessible, out);
  while (st != TPU_OK && bytes / 2 >= min && bytes / 2 > 0) {
    bytes /= 2;
    st = tpu_heap_create(bytes, accessible, out);
  }
  return st;
}
