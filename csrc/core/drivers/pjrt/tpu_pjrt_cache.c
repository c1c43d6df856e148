#include "drivers/pjrt/tpu_pjrt_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/pjrt/tpu_pjrt_disk_cache.h"
#include "drivers/pjrt/tpu_pjrt_map_budget.h"
#include "device/tpu_stream.h"

typedef struct entry {
  struct entry *next;
  uint64_t hash;
  size_t len;
  char *text;
  tpu_pjrt_executable *exe;
} entry;

#define BUCKETS 4096

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static entry *buckets[BUCKETS];
static tpu_executable_stats stats; /* guarded by mu */

/* The executable of `text`: from disk, else compiled (and written to disk). */
static tpu_status make_executable(const tpu_pjrt_client *client, const char *text, size_t len,
                                  uint64_t h, tpu_pjrt_executable **out) {
  tpu_status budget = tpu_pjrt_map_budget_check();
  if (budget != TPU_OK)
    return budget;
  double start = tpu_now_us();
  tpu_pjrt_disk_cache_load(client, text, len, h, out);
  if (*out) {
    stats.disk_loads++;
    stats.load_us += (uint64_t)(tpu_now_us() - start);
    return TPU_OK;
  }
  start = tpu_now_us();
  tpu_status st = tpu_pjrt_executable_compile(client, text, len, out);
  if (st != TPU_OK)
    return st;
  stats.compiles++;
  stats.compile_us += (uint64_t)(tpu_now_us() - start);
  if (tpu_pjrt_disk_cache_store(*out, text, len, h))
    stats.disk_stores++;
  return TPU_OK;
}

tpu_status tpu_pjrt_cache_get(const tpu_pjrt_client *client, const char *text, size_t len,
                              const tpu_pjrt_executable **out) {
  uint64_t h = tpu_pjrt_hash(TPU_PJRT_HASH_SEED, text, len);
  /* Compiles happen under the lock: two threads asking for one module compile it once. */
  pthread_mutex_lock(&mu);
  entry **bucket = &buckets[h % BUCKETS];
  for (entry *e = *bucket; e; e = e->next) {
    if (e->hash == h && e->len == len && memcmp(e->text, text, len) == 0) {
      *out = e->exe;
      pthread_mutex_unlock(&mu);
      return TPU_OK;
    }
  }
  entry *e = calloc(1, sizeof *e);
  char *copy = malloc(len + 1);
  tpu_status st = e && copy ? TPU_OK
                            : tpu_error(TPU_ERR_OUT_OF_MEMORY, "out of host memory for an executable");
  if (st == TPU_OK)
    st = make_executable(client, text, len, h, &e->exe);
  if (st != TPU_OK) {
    free(copy);
    free(e);
    pthread_mutex_unlock(&mu);
    return st;
  }
  memcpy(copy, text, len);
  copy[len] = '\0';
  e->text = copy;
  e->len = len;
  e->hash = h;
  e->next = *bucket;
  *bucket = e;
  *out = e->exe;
  pthread_mutex_unlock(&mu);
  return TPU_OK;
}

void tpu_pjrt_cache_stats(tpu_executable_stats *out) {
  pthread_mutex_lock(&mu);
  *out = stats;
  pthread_mutex_unlock(&mu);
}

void tpu_pjrt_cache_reset_stats(void) {
  pthread_mutex_lock(&mu);
  memset(&stats, 0, sizeof stats);
  pthread_mutex_unlock(&mu);
}
