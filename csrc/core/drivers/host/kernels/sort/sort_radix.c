/* The stable integer sort of sort items (kernels/sort/sort.h): insertion sort for short rows, a
 * least-significant-digit radix sort by bytes for the others. */
#include <string.h>

#include "drivers/host/kernels/sort/sort.h"

/* Rows up to this long sort by insertion: fewer moves than the radix sort's histograms cost. */
#define SORT_INSERTION_MAX 48

/* Moves each item left past the items with larger keys only, so equal keys keep their order. */
static void insertion_sort(tpu_sort_item *items, int64_t n) {
  for (int64_t i = 1; i < n; i++) {
    tpu_sort_item item = items[i];
    int64_t j = i;
    for (; j > 0 && items[j - 1].key > item.key; j--)
      items[j] = items[j - 1];
    items[j] = item;
  }
}

tpu_sort_item *tpu_sort_items(tpu_sort_item *items, tpu_sort_item *scratch, int64_t n,
                              int key_bytes) {
  if (n <= SORT_INSERTION_MAX) {
    insertion_sort(items, n);
    return items;
  }
  /* One read counts every byte position's digits; each pass then scatters by one byte, in
   * order of significance, and is stable, so later passes keep the order earlier ones made among
   * equal digits. A byte all keys share moves nothing and is skipped. */
  int64_t counts[8][256];
  memset(counts, 0, (size_t)key_bytes * sizeof counts[0]);
  for (int64_t i = 0; i < n; i++)
    for (int b = 0; b < key_bytes; b++)
      counts[b][(items[i].key >> (8 * b)) & 0xff]++;
  tpu_sort_item *src = items, *dst = scratch;
  for (int b = 0; b < key_bytes; b++) {
    const int shift = 8 * b;
    if (counts[b][(src[0].key >> shift) & 0xff] == n)
      continue;
    int64_t start[256], at = 0;
    for (int d = 0; d < 256; d++) {
      start[d] = at;
      at += counts[b][d];
    }
    for (int64_t i = 0; i < n; i++)
      dst[start[(src[i].key >> shift) & 0xff]++] = src[i];
    tpu_sort_item *t = src;
    src = dst;
    dst = t;
  }
  return src;
}
