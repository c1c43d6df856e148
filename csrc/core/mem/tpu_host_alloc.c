#include "mem/tpu_host_alloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "device/tpu_address_space.h"
#include "device/tpu_stream.h"
#include "mem/tpu_heap.h"
#include "mem/tpu_reserve.h"
#include "mem/tpu_treap.h"

/* The range is address space only (MAP_NORESERVE): pages are committed when touched and discarded
 * on empty_cache. mem/tpu_reserve.h sizes it: 64 GiB, less under an address-space limit, but not
 * below HOST_MIN_RANGE. The largest block is half the unlimited range, which also keeps its
 * power-of-two size class representable. */
#define HOST_MIN_RANGE ((size_t)64 << 20)
#define HOST_MAX_BLOCK ((size_t)32 << 30)

#define HOST_CLASSES 64 /* one free list per power of two */

typedef struct host_use {
  int device, stream;
  uint64_t seq; /* the stream's submitted work when the use was recorded */
} host_use;

typedef struct host_block {
  tpu_treap_node node; /* live blocks, keyed (0, addr) */
  struct host_block *next_cached;
  uintptr_t addr;
  size_t size;
  host_use *uses;
  int num_uses, cap_uses;
} host_block;

static struct {
  pthread_mutex_t lock;
  tpu_heap *heap;
  size_t page;
  tpu_treap_node *live;
  host_block *cached[HOST_CLASSES];
  tpu_host_stats stats;
} host = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* A forked child must not inherit the lock held by a thread that does not exist in it. */
static void atfork_prepare(void) { pthread_mutex_lock(&host.lock); }
static void atfork_release(void) { pthread_mutex_unlock(&host.lock); }

static void host_init(void) {
  long page = sysconf(_SC_PAGESIZE);
  host.page = page > 0 ? (size_t)page : 4096;
  pthread_atfork(atfork_prepare, atfork_release, atfork_release);
}

static void host_lock(void) {
  pthread_once(&atfork_once, host_init);
  pthread_mutex_lock(&host.lock);
}

static void host_unlock(void) { pthread_mutex_unlock(&host.lock); }

static int size_class(size_t size) {
  int c = 0;
  while (((size_t)1 << c) < size)
    c++;
  return c;
}

static host_block *live_containing(const void *ptr) {
  host_block *b = (host_block *)tpu_treap_floor(host.live, 0, (uintptr_t)ptr);
  return b && (uintptr_t)ptr - b->addr < b->size ? b : NULL;
}

static bool uses_done(const host_block *b) {
  for (int i = 0; i < b->num_uses; i++) {
    tpu_stream *s = tpu_stream_get(b->uses[i].device, b->uses[i].stream);
    if (s && tpu_stream_completed(s) < b->uses[i].seq)
      return false;
  }
  return true;
}

/* The first cached block of the class that no queued copy still reads or writes. */
static host_block *take_cached(int cls) {
  for (host_block **link = &host.cached[cls]; *link; link = &(*link)->next_cached) {
    host_block *b = *link;
    if (uses_done(b)) {
      *link = b->next_cached;
      return b;
    }
  }
  return NULL;
}

static host_block *take_fresh(size_t size) {
  void *p = tpu_heap_alloc(host.heap, size, host.page);
  if (!p)
    return NULL;
  host_block *b = calloc(1, sizeof *b);
  if (!b) {
    tpu_heap_free(host.heap, p);
    return NULL;
  }
  b->addr = (uintptr_t)p;
  b->size = size;
  host.stats.num_host_alloc++;
  host.stats.reserved_bytes += (int64_t)size;
  return b;
}

static void release_cached(void) {
  for (int c = 0; c < HOST_CLASSES; c++) {
    for (host_block **link = &host.cached[c]; *link;) {
      host_block *b = *link;
      if (!uses_done(b)) {
        link = &b->next_cached;
        continue;
      }
      *link = b->next_cached;
      tpu_heap_discard(host.heap, (void *)b->addr, b->size);
      tpu_heap_free(host.heap, (void *)b->addr);
      host.stats.num_host_free++;
      host.stats.reserved_bytes -= (int64_t)b->size;
      free(b->uses);
      free(b);
    }
  }
}

tpu_status tpu_host_alloc(size_t nbytes, void **out) {
  if (!out)
    return tpu_error(TPU_ERR_VALUE, "tpu_host_alloc: no output pointer");
  *out = NULL;
  if (nbytes > HOST_MAX_BLOCK)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of pinned memory", nbytes);
  size_t range = tpu_address_space_host_bytes();
  host_lock();
  tpu_status st = TPU_OK;
  if (!host.heap)
    st = tpu_reserve_heap(range, HOST_MIN_RANGE, true, &host.heap);
  host_block *b = NULL;
  if (st == TPU_OK) {
    size_t size = nbytes < host.page ? host.page : (size_t)1 << size_class(nbytes);
    int cls = size_class(size);
    b = take_cached(cls);
    if (!b)
      b = take_fresh(size);
    if (!b) {
      release_cached();
      b = take_fresh(size);
    }
    if (!b)
      st = tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of pinned memory", nbytes);
  }
  if (b) {
    b->num_uses = 0;
    b->node.k1 = 0;
    b->node.k2 = b->addr;
    tpu_treap_insert(&host.live, &b->node);
    host.stats.allocations++;
    host.stats.allocated_bytes += (int64_t)b->size;
    if (host.stats.allocated_bytes > host.stats.peak_allocated_bytes)
      host.stats.peak_allocated_bytes = host.stats.allocated_bytes;
    *out = (void *)b->addr;
  }
  host_unlock();
  return st;
}

void tpu_host_free(void *ptr) {
  if (!ptr)
    return;
  host_lock();
  host_block *b = live_containing(ptr);
  if (b && b->addr == (uintptr_t)ptr) {
    tpu_treap_remove(&host.live, &b->node);
    host.stats.allocations--;
    host.stats.allocated_bytes -= (int64_t)b->size;
    int cls = size_class(b->size);
    b->next_cached = host.cached[cls];
    host.cached[cls] = b;
  }
  host_unlock();
}

/* Keeps one use per stream: the latest submitted work covers all earlier work on it. */
bool tpu_host_record_use(const void *ptr, int device, int stream) {
  tpu_stream *s = tpu_stream_get(device, stream);
  if (!s || !ptr)
    return false;
  host_lock();
  host_block *b = live_containing(ptr);
  if (!b) {
    host_unlock();
    return false;
  }
  uint64_t seq = tpu_stream_submitted(s);
  int i = 0;
  while (i < b->num_uses && (b->uses[i].device != device || b->uses[i].stream != stream))
    i++;
  if (i == b->num_uses && i == b->cap_uses) {
    int cap = b->cap_uses ? 2 * b->cap_uses : 2;
    host_use *grown = realloc(b->uses, (size_t)cap * sizeof *grown);
    if (!grown) {
      /* No memory to remember the use: wait for the work now, slower but never wrong. */
      host_unlock();
      tpu_stream_wait_for(s, seq);
      return true;
    }
    b->uses = grown;
    b->cap_uses = cap;
  }
  if (i == b->num_uses)
    b->uses[b->num_uses++] = (host_use){.device = device, .stream = stream, .seq = seq};
  else if (seq > b->uses[i].seq)
    b->uses[i].seq = seq;
  host_unlock();
  return true;
}

bool tpu_host_is_pinned(const void *ptr) {
  host_lock();
  bool pinned = ptr && live_containing(ptr);
  host_unlock();
  return pinned;
}

void tpu_host_empty_cache(void) {
  host_lock();
  release_cached();
  host_unlock();
}

void tpu_host_get_stats(tpu_host_stats *out) {
  if (!out)
    return;
  host_lock();
  *out = host.stats;
  host_unlock();
}

void tpu_host_reset_peak(void) {
  host_lock();
  host.stats.peak_allocated_bytes = host.stats.allocated_bytes;
  host_unlock();
}
