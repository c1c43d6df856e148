/* Ordering rows for the sort family's kernel (ops/tpu_ops_sort.h; private to the host driver).
 *
 * A row's elements become items: an unsigned key per element, whose order as an integer is the
 * contract's order of the elements (ties where the contract has ties), and the element's position.
 * Sorting the items stably by key then gives the contract's order with its ties in input order,
 * whatever the dtype, from one integer sort: a least-significant-digit radix sort over the bytes
 * the keys use (insertion sort for short rows). Keys use the dtype's width (tpu_dtype_size
 * bytes) and are XORed with `flip`: the width's mask reverses the order (descending), 0 keeps it.
 * For a short prefix of a long row (topk) only the elements whose key's most significant byte can
 * be in the prefix need loading, found from a count of those bytes; a prefix of a few items is
 * selected in one pass instead. */
#ifndef TPU_HOST_KERNELS_SORT_H
#define TPU_HOST_KERNELS_SORT_H

#include <stdint.h>
#include <string.h>

#include "base/tpu_dtype.h"

typedef struct tpu_sort_item {
  uint64_t key;
  int64_t index;
} tpu_sort_item;

/* The elements of a row of n, `step` bytes apart from `row`, whose key's most significant byte is
 * at most `top` (0xff: every element), loaded in order as items {key, position}; returns how
 * many. items has room for n. */
typedef int64_t (*tpu_sort_load_fn)(tpu_sort_item *items, const char *row, int64_t n,
                                    int64_t step, uint64_t flip, uint64_t top);

/* Adds the row's keys' most significant bytes to counts[256]. */
typedef void (*tpu_sort_count_fn)(int64_t *counts, const char *row, int64_t n, int64_t step,
                                  uint64_t flip);

/* The row's first k items in sort order (ties in input order), 1 <= k <= TPU_SORT_SELECT_MAX,
 * into best[0..k), from one pass over the row: what a stable sort's prefix would hold. */
typedef void (*tpu_sort_select_fn)(tpu_sort_item *best, const char *row, int64_t n, int64_t step,
                                   uint64_t flip, int64_t k);

/* The largest k tpu_sort_select_fn takes: each kept item costs a shift of up to k. */
#define TPU_SORT_SELECT_MAX 64

typedef struct tpu_sort_keys {
  tpu_sort_load_fn load;
  tpu_sort_count_fn count;
  tpu_sort_select_fn select;
} tpu_sort_keys;

/* The element at p of an integer or bool dtype, widened to int64 (p need not be aligned). */
static inline int64_t tpu_sort_load_int(const char *p, tpu_dtype dt) {
  switch (dt) {
  case TPU_BOOL:
  case TPU_UINT8: return *(const uint8_t *)p;
  case TPU_INT8: return *(const int8_t *)p;
  case TPU_INT16: {
    int16_t v;
    memcpy(&v, p, sizeof v);
    return v;
  }
  case TPU_INT32: {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
  }
  default: {
    int64_t v;
    memcpy(&v, p, sizeof v);
    return v;
  }
  }
}

/* The keys of `dtype`: bool, the integers through int64 and the floating dtypes; else NULL. */
const tpu_sort_keys *tpu_sort_keys_of(tpu_dtype dtype);

/* Sorts items[0..n) stably by key, where keys use their low `key_bytes` bytes (1 to 8); scratch
 * has room for n items. Returns whichever of the two arrays holds the sorted items. */
tpu_sort_item *tpu_sort_items(tpu_sort_item *items, tpu_sort_item *scratch, int64_t n,
                              int key_bytes);

#endif
