#include "drivers/pjrt/tpu_pjrt_storage.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/pjrt/tpu_pjrt_buffer.h"

typedef struct record {
  uintptr_t base;
  size_t nbytes;
  PJRT_Buffer *buffer;
  tpu_dtype elem;
} record;

/* Disjoint records sorted by base: few enough (one per live storage) for a sorted array. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static record *records;
static size_t n_records, cap_records;

/* The index of the first record whose end lies after `addr`. */
static size_t first_ending_after(uintptr_t addr) {
  size_t lo = 0, hi = n_records;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (records[mid].base + records[mid].nbytes <= addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* With mu held: destroys the records overlapping [lo, hi) and returns where they were. */
static size_t drop_overlapping(const tpu_pjrt_client *client, uintptr_t lo, uintptr_t hi) {
  size_t first = first_ending_after(lo), end = first;
  while (end < n_records && records[end].base < hi) {
    tpu_pjrt_buffer_destroy(client, records[end].buffer);
    end++;
  }
  if (end > first) /* records is NULL until the first insert */
    memmove(records + first, records + end, (n_records - end) * sizeof *records);
  n_records -= end - first;
  return first;
}

/* With mu held: the record for exactly [base, base + nbytes), or NULL. */
static record *find(uintptr_t base, size_t nbytes) {
  size_t i = first_ending_after(base);
  return i < n_records && records[i].base == base && records[i].nbytes == nbytes ? &records[i]
                                                                                 : NULL;
}

/* With mu held: inserts at `at` (the position drop_overlapping left); false when out of memory. */
static bool insert(size_t at, uintptr_t base, size_t nbytes, PJRT_Buffer *buffer,
                   tpu_dtype elem) {
  if (n_records == cap_records) {
    size_t cap = cap_records ? 2 * cap_records : 64;
    record *grown = realloc(records, cap * sizeof *records);
    if (!grown)
      return false;
    records = grown;
    cap_records = cap;
  }
  memmove(records + at + 1, records + at, (n_records - at) * sizeof *records);
  records[at] = (record){base, nbytes, buffer, elem};
  n_records++;
  return true;
}

bool tpu_pjrt_storage_elem(const void *base, size_t nbytes, tpu_dtype *elem) {
  pthread_mutex_lock(&mu);
  record *r = find((uintptr_t)base, nbytes);
  *elem = r ? r->elem : TPU_UINT8;
  pthread_mutex_unlock(&mu);
  return r != NULL;
}

tpu_status tpu_pjrt_storage_get(const tpu_pjrt_client *client, size_t device, const void *base,
                                size_t nbytes, PJRT_Buffer **out, tpu_dtype *elem) {
  uintptr_t addr = (uintptr_t)base;
  *elem = TPU_UINT8;
  pthread_mutex_lock(&mu);
  record *r = find(addr, nbytes);
  if (r) {
    *out = r->buffer;
    *elem = r->elem;
    pthread_mutex_unlock(&mu);
    return TPU_OK;
  }
  pthread_mutex_unlock(&mu);
  /* Uninitialized memory: zeros, made outside the lock (a transfer). */
  void *zeros = calloc(nbytes ? nbytes : 1, 1);
  if (!zeros)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "out of host memory for %zu zero bytes", nbytes);
  int64_t dims[1] = {(int64_t)nbytes};
  PJRT_Buffer *buffer;
  tpu_status st = tpu_pjrt_buffer_from_host(client, device, TPU_UINT8, dims, 1, zeros, &buffer);
  free(zeros);
  if (st != TPU_OK)
    return st;
  st = tpu_pjrt_storage_set(client, base, nbytes, TPU_UINT8, buffer);
  *out = st == TPU_OK ? buffer : NULL;
  return st;
}

tpu_status tpu_pjrt_storage_set(const tpu_pjrt_client *client, const void *base, size_t nbytes,
                                tpu_dtype elem, PJRT_Buffer *buffer) {
  uintptr_t addr = (uintptr_t)base;
  pthread_mutex_lock(&mu);
  size_t at = drop_overlapping(client, addr, addr + (nbytes ? nbytes : 1));
  bool kept = insert(at, addr, nbytes, buffer, elem);
  pthread_mutex_unlock(&mu);
  if (kept)
    return TPU_OK;
  tpu_pjrt_buffer_destroy(client, buffer);
  return tpu_error(TPU_ERR_OUT_OF_MEMORY, "out of host memory for a storage record");
}

void tpu_pjrt_storage_discard(const tpu_pjrt_client *client, const void *ptr, size_t bytes) {
  uintptr_t addr = (uintptr_t)ptr;
  pthread_mutex_lock(&mu);
  drop_overlapping(client, addr, addr + bytes);
  pthread_mutex_unlock(&mu);
}
