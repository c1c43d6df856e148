#include "mem/tpu_allocator.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/tpu_driver.h"
#include "device/tpu_device.h"
#include "device/tpu_stream.h"
#include "mem/tpu_heap.h"
#include "mem/tpu_treap.h"

/* The sizes of c10/cuda/CUDACachingAllocator.cpp, so that memory_stats() reads as on CUDA. */
#define MIN_BLOCK ((size_t)512)            /* every block is a multiple of this */
#define SMALL_SIZE ((size_t)1 << 20)       /* requests up to this come from the small pool */
#define SMALL_SEGMENT ((size_t)2 << 20)    /* segment size of the small pool */
#define LARGE_SEGMENT ((size_t)20 << 20)   /* segment shared by large requests below MIN_LARGE */
#define MIN_LARGE ((size_t)10 << 20)       /* from here a request gets a segment of its own */
#define ROUND_LARGE ((size_t)2 << 20)      /* granularity of segments */

typedef enum block_state {
  BLOCK_FREE,      /* cached in its stream's pool */
  BLOCK_ALLOCATED, /* handed out */
  BLOCK_DEFERRED,  /* freed, but other streams (record_stream) may still use it */
} block_state;

/* A block is a piece of a segment; all pieces of a segment belong to the segment's stream. */
typedef struct mem_block {
  tpu_treap_node node; /* FREE: in its pool keyed (size, addr); else in `active` keyed (0, addr) */
  struct mem_block *prev, *next; /* neighbours in the segment */
  struct mem_block *deferred_next;
  uintptr_t addr;
  size_t size, requested;
  int stream;
  int pool;           /* TPU_POOL_SMALL or TPU_POOL_LARGE */
  block_state state;
  uint64_t used_by;   /* other streams given to record_stream, one bit each */
  uint64_t *wait_seq; /* DEFERRED: per bit of used_by, the work that stream must complete */
  uint64_t free_seq;  /* own stream's submitted work when freed: the segment may still be read
                         until then, so it is not given back to the arena before */
} mem_block;

typedef struct mem_device {
  pthread_mutex_t lock;
  tpu_heap *_Atomic arena; /* written once under the lock, read without it by device_of */
  tpu_treap_node *pools[TPU_MAX_STREAMS][2];
  tpu_treap_node *active;
  mem_block *deferred;
  tpu_mem_stats stats;
} mem_device;

static mem_device devices[TPU_MAX_DEVICES];
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* A forked child must not inherit a lock held by a thread that does not exist in it. */
static void atfork_prepare(void) {
  for (int d = 0; d < TPU_MAX_DEVICES; d++)
    pthread_mutex_lock(&devices[d].lock);
}

static void atfork_release(void) {
  for (int d = TPU_MAX_DEVICES - 1; d >= 0; d--)
    pthread_mutex_unlock(&devices[d].lock);
}

static void mem_init(void) {
  for (int d = 0; d < TPU_MAX_DEVICES; d++) {
    pthread_mutex_init(&devices[d].lock, NULL);
    devices[d].stats.max_split_size = -1; /* CUDA's value when blocks of any size may split */
  }
  pthread_atfork(atfork_prepare, atfork_release, atfork_release);
}

static bool device_valid(int device) { return device >= 0 && device < tpu_device_count(); }

static mem_device *device_get(int device) {
  pthread_once(&init_once, mem_init);
  return &devices[device];
}

static size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

static size_t round_size(size_t n) { return n < MIN_BLOCK ? MIN_BLOCK : align_up(n, MIN_BLOCK); }

static size_t segment_size(size_t size) {
  if (size <= SMALL_SIZE)
    return SMALL_SEGMENT;
  return size < MIN_LARGE ? LARGE_SEGMENT : align_up(size, ROUND_LARGE);
}

/* CUDA's increase/decrease, applied to the aggregate and to the block's pool. */
static void stat_inc(tpu_mem_stat *s, int pool, int64_t n) {
  for (int i = 0; i < 2; i++) {
    tpu_mem_stat *t = &s[i ? pool : TPU_POOL_ALL];
    t->current += n;
    t->allocated += n;
    if (t->current > t->peak)
      t->peak = t->current;
  }
}

static void stat_dec(tpu_mem_stat *s, int pool, int64_t n) {
  for (int i = 0; i < 2; i++) {
    tpu_mem_stat *t = &s[i ? pool : TPU_POOL_ALL];
    t->current -= n;
    t->freed += n;
  }
}

/* A stream that does not exist (as in a forked child) has neither pending nor completed work. */
static uint64_t stream_submitted(int device, int index) {
  tpu_stream *s = tpu_stream_get(device, index);
  return s ? tpu_stream_submitted(s) : 0;
}

static uint64_t stream_completed(int device, int index) {
  tpu_stream *s = tpu_stream_get(device, index);
  return s ? tpu_stream_completed(s) : 0;
}

static tpu_treap_node **pool_root(mem_device *dev, int stream, int pool) {
  return &dev->pools[stream][pool == TPU_POOL_SMALL ? 0 : 1];
}

static void pool_insert(mem_device *dev, mem_block *b) {
  b->node.k1 = b->size;
  b->node.k2 = b->addr;
  tpu_treap_insert(pool_root(dev, b->stream, b->pool), &b->node);
}

static void active_insert(mem_device *dev, mem_block *b) {
  b->node.k1 = 0;
  b->node.k2 = b->addr;
  tpu_treap_insert(&dev->active, &b->node);
}

static mem_block *active_find(mem_device *dev, const void *ptr) {
  mem_block *b = (mem_block *)tpu_treap_ceil(dev->active, 0, (uintptr_t)ptr);
  return b && b->addr == (uintptr_t)ptr ? b : NULL;
}

/* Best fit among the stream's cached blocks. */
static mem_block *pool_take(mem_device *dev, int stream, int pool, size_t size) {
  tpu_treap_node **root = pool_root(dev, stream, pool);
  mem_block *b = (mem_block *)tpu_treap_ceil(*root, size, 0);
  if (b)
    tpu_treap_remove(root, &b->node);
  return b;
}

/* A new segment, in no tree yet. A 20 MiB segment for a mid-sized request that would pass the
 * capacity falls back to the request rounded to 2 MiB: a simulated chip may be small. */
static mem_block *segment_new(mem_device *dev, int device, int stream, int pool, size_t size) {
  size_t sizes[2] = {segment_size(size), align_up(size, ROUND_LARGE)};
  size_t capacity = tpu_device_capacity(device);
  size_t reserved = (size_t)dev->stats.reserved_bytes[TPU_POOL_ALL].current;
  for (int i = 0; i < 2; i++) {
    size_t seg = sizes[i];
    if ((i && seg == sizes[0]) || seg > capacity || reserved > capacity - seg)
      continue;
    void *p = tpu_heap_alloc(dev->arena, seg, ROUND_LARGE);
    if (!p)
      continue;
    mem_block *b = calloc(1, sizeof *b);
    if (!b) {
      tpu_heap_free(dev->arena, p);
      return NULL;
    }
    *b = (mem_block){.addr = (uintptr_t)p, .size = seg, .stream = stream, .pool = pool};
    stat_inc(dev->stats.segment, pool, 1);
    stat_inc(dev->stats.reserved_bytes, pool, (int64_t)seg);
    dev->stats.num_device_alloc++;
    return b;
  }
  return NULL;
}

/* CUDA's should_split: a large block keeps its tail only when the tail could serve a large
 * request, so the large pool does not fill with slivers. */
static bool should_split(const mem_block *b, size_t size) {
  size_t rest = b->size - size;
  return b->pool == TPU_POOL_SMALL ? rest >= MIN_BLOCK : rest > SMALL_SIZE;
}

/* Hands out `b` (in no tree) for a request of `nbytes` rounded to `size`; CUDA's
 * alloc_found_block, inactive-split accounting included. */
static mem_block *take_block(mem_device *dev, mem_block *b, size_t size, size_t nbytes) {
  tpu_mem_stats *st = &dev->stats;
  bool already_split = b->prev || b->next;
  mem_block *rest = should_split(b, size) ? malloc(sizeof *rest) : NULL;
  if (rest) {
    *rest = (mem_block){.prev = b, .next = b->next, .addr = b->addr + size, .size = b->size - size,
                        .stream = b->stream, .pool = b->pool, .free_seq = b->free_seq};
    if (b->next)
      b->next->prev = rest;
    b->next = rest;
    b->size = size;
    pool_insert(dev, rest);
    if (already_split) {
      stat_dec(st->inactive_split_bytes, b->pool, (int64_t)size);
    } else {
      stat_inc(st->inactive_split_bytes, b->pool, (int64_t)rest->size);
      stat_inc(st->inactive_split, b->pool, 1);
    }
  } else if (already_split) {
    stat_dec(st->inactive_split_bytes, b->pool, (int64_t)b->size);
    stat_dec(st->inactive_split, b->pool, 1);
  }
  b->state = BLOCK_ALLOCATED;
  b->requested = nbytes;
  b->used_by = 0;
  active_insert(dev, b);
  stat_inc(st->allocation, b->pool, 1);
  stat_inc(st->allocated_bytes, b->pool, (int64_t)b->size);
  stat_inc(st->active, b->pool, 1);
  stat_inc(st->active_bytes, b->pool, (int64_t)b->size);
  stat_inc(st->requested_bytes, b->pool, (int64_t)nbytes);
  return b;
}

/* Absorbs the free neighbour `c` of `b` (CUDA's try_merge_blocks); returns the bytes taken. */
static size_t merge_free(mem_device *dev, mem_block *b, mem_block *c) {
  if (!c || c->state != BLOCK_FREE)
    return 0;
  tpu_treap_remove(pool_root(dev, c->stream, c->pool), &c->node);
  if (c == b->prev) {
    b->addr = c->addr;
    b->prev = c->prev;
    if (c->prev)
      c->prev->next = b;
  } else {
    b->next = c->next;
    if (c->next)
      c->next->prev = b;
  }
  size_t taken = c->size;
  b->size += taken;
  if (c->free_seq > b->free_seq)
    b->free_seq = c->free_seq;
  free(c);
  return taken;
}

/* Returns a freed block whose other-stream uses are over to its stream's pool (CUDA's
 * free_block). */
static void free_block(mem_device *dev, mem_block *b) {
  tpu_mem_stats *st = &dev->stats;
  size_t size = b->size;
  int64_t split_blocks = 0, split_bytes = 0;
  tpu_treap_remove(&dev->active, &b->node);
  mem_block *neighbours[2] = {b->prev, b->next};
  for (int i = 0; i < 2; i++) {
    size_t taken = merge_free(dev, b, neighbours[i]);
    if (taken) {
      split_blocks--;
      split_bytes -= (int64_t)taken;
    }
  }
  b->state = BLOCK_FREE;
  b->used_by = 0;
  if (b->prev || b->next) {
    split_blocks++;
    split_bytes += (int64_t)b->size;
  }
  pool_insert(dev, b);
  if (split_blocks > 0)
    stat_inc(st->inactive_split, b->pool, split_blocks);
  else if (split_blocks < 0)
    stat_dec(st->inactive_split, b->pool, -split_blocks);
  if (split_bytes > 0)
    stat_inc(st->inactive_split_bytes, b->pool, split_bytes);
  else if (split_bytes < 0)
    stat_dec(st->inactive_split_bytes, b->pool, -split_bytes);
  stat_dec(st->active, b->pool, 1);
  stat_dec(st->active_bytes, b->pool, (int64_t)size);
  stat_dec(st->requested_bytes, b->pool, (int64_t)b->requested);
}

static bool waits_done(int device, const mem_block *b) {
  for (int s = 0, i = 0; s < TPU_MAX_STREAMS; s++)
    if ((b->used_by >> s & 1) && stream_completed(device, s) < b->wait_seq[i++])
      return false;
  return true;
}

/* Checked lazily, on allocation: deferred blocks whose other streams have caught up. */
static void process_deferred(mem_device *dev, int device) {
  for (mem_block **link = &dev->deferred; *link;) {
    mem_block *b = *link;
    if (!waits_done(device, b)) {
      link = &b->deferred_next;
      continue;
    }
    *link = b->deferred_next;
    free(b->wait_seq);
    b->wait_seq = NULL;
    free_block(dev, b);
  }
}

/* Gives every cached, fully free segment back to the arena, once its stream has finished the work
 * queued before it was freed: a different stream may get the range next. */
static void release_cached(mem_device *dev, int device) {
  for (int s = 0; s < TPU_MAX_STREAMS; s++) {
    for (int p = 0; p < 2; p++) {
      tpu_treap_node **root = &dev->pools[s][p];
      if (!*root)
        continue;
      uint64_t done = stream_completed(device, s);
      for (tpu_treap_node *n = tpu_treap_ceil(*root, 0, 0), *next; n; n = next) {
        next = tpu_treap_ceil(*root, n->k1, n->k2 + 1);
        mem_block *b = (mem_block *)n;
        if (b->prev || b->next || b->free_seq > done)
          continue;
        tpu_treap_remove(root, n);
        const tpu_driver_i *driver = tpu_driver();
        if (driver->arena_discard)
          driver->arena_discard(device, dev->arena, (void *)b->addr, b->size);
        tpu_heap_free(dev->arena, (void *)b->addr);
        stat_dec(dev->stats.segment, b->pool, 1);
        stat_dec(dev->stats.reserved_bytes, b->pool, (int64_t)b->size);
        dev->stats.num_device_free++;
        free(b);
      }
    }
  }
}

/* CUDA's format_size. */
static void format_size(uint64_t size, char *buf, size_t len) {
  if (size <= 1024)
    snprintf(buf, len, "%" PRIu64 " bytes", size);
  else if (size <= (1ull << 20))
    snprintf(buf, len, "%.2f KiB", (double)size / 1024.0);
  else if (size <= (1ull << 30))
    snprintf(buf, len, "%.2f MiB", (double)size / 1048576.0);
  else
    snprintf(buf, len, "%.2f GiB", (double)size / 1073741824.0);
}

static void format_summary(const tpu_mem_stats *s, int device, char *buf, size_t len);

static tpu_status out_of_memory(mem_device *dev, int device, size_t alloc_size) {
  tpu_mem_stats *st = &dev->stats;
  st->num_ooms++;
  size_t capacity = tpu_device_capacity(device);
  uint64_t reserved = (uint64_t)st->reserved_bytes[TPU_POOL_ALL].current;
  uint64_t allocated = (uint64_t)st->allocated_bytes[TPU_POOL_ALL].current;
  char want[32], total[32], free_text[32], alloc_text[32], unalloc[32], summary[2048];
  format_size(alloc_size, want, sizeof want);
  format_size(capacity, total, sizeof total);
  format_size(capacity - reserved, free_text, sizeof free_text);
  format_size(allocated, alloc_text, sizeof alloc_text);
  format_size(reserved - allocated, unalloc, sizeof unalloc);
  format_summary(st, device, summary, sizeof summary);
  return tpu_error(TPU_ERR_OUT_OF_MEMORY,
                   "TPU out of memory. Tried to allocate %s. TPU %d has a total capacity of %s of "
                   "which %s is free. Of the allocated memory %s is allocated by PyTorch, and %s "
                   "is reserved by PyTorch but unallocated.\n%s",
                   want, device, total, free_text, alloc_text, unalloc, summary);
}

/* Allocation with the lock held; the lock is dropped while all streams synchronize. */
static tpu_status alloc_locked(mem_device *dev, int device, int stream, size_t nbytes,
                               mem_block **out) {
  if (nbytes > tpu_device_capacity(device))
    return out_of_memory(dev, device, nbytes);
  size_t size = round_size(nbytes);
  int pool = size <= SMALL_SIZE ? TPU_POOL_SMALL : TPU_POOL_LARGE;
  process_deferred(dev, device);
  mem_block *b = pool_take(dev, stream, pool, size);
  if (!b)
    b = segment_new(dev, device, stream, pool, size);
  if (!b) {
    /* Segments cached for other streams, or for the other pool, may make room. */
    dev->stats.num_alloc_retries++;
    release_cached(dev, device);
    b = segment_new(dev, device, stream, pool, size);
  }
  if (!b) {
    /* Completed work drops its buffer references (frees) and ends record_stream waits. */
    pthread_mutex_unlock(&dev->lock);
    tpu_status st = tpu_device_synchronize(device);
    pthread_mutex_lock(&dev->lock);
    dev->stats.num_sync_all_streams++;
    if (st != TPU_OK)
      return st; /* an asynchronous error surfaces at this synchronization, as on CUDA */
    process_deferred(dev, device);
    b = pool_take(dev, stream, pool, size);
    if (!b) {
      release_cached(dev, device);
      b = segment_new(dev, device, stream, pool, size);
    }
  }
  if (!b)
    return out_of_memory(dev, device, segment_size(size));
  *out = take_block(dev, b, size, nbytes);
  return TPU_OK;
}

tpu_status tpu_mem_alloc(int device, int stream, size_t nbytes, void **out) {
  if (!out)
    return tpu_error(TPU_ERR_VALUE, "tpu_mem_alloc: no output pointer");
  *out = NULL;
  tpu_status st = tpu_device_check(device);
  if (st != TPU_OK)
    return st;
  if (stream < 0 || stream >= TPU_MAX_STREAMS)
    return tpu_error(TPU_ERR_VALUE, "invalid stream index %d on tpu:%d", stream, device);
  mem_device *dev = device_get(device);
  pthread_mutex_lock(&dev->lock);
  if (!dev->arena) {
    /* Twice the capacity of address space, so that fragmentation of the range seldom stops what
     * the capacity allows; the capacity alone when the process has mapped so much since the
     * chips were read (mem/tpu_reserve.h) that twice no longer fits: the capacity stays one the
     * arena holds. */
    size_t capacity = tpu_device_capacity(device);
    const tpu_driver_i *driver = tpu_driver();
    tpu_heap *arena;
    st = driver->arena_create(device, 2 * capacity, &arena);
    if (st != TPU_OK)
      st = driver->arena_create(device, capacity, &arena);
    if (st == TPU_OK) {
      atomic_store(&dev->arena, arena);
      tpu_runtime_mark_initialized(); /* a child forked from here on would share this memory */
    }
  }
  mem_block *b = NULL;
  if (st == TPU_OK)
    st = alloc_locked(dev, device, stream, nbytes, &b);
  if (st == TPU_OK)
    *out = (void *)b->addr;
  pthread_mutex_unlock(&dev->lock);
  return st;
}

/* Frees with the lock held. A block another stream still uses waits on the deferred list. */
static void free_locked(mem_device *dev, int device, mem_block *b) {
  stat_dec(dev->stats.allocation, b->pool, 1);
  stat_dec(dev->stats.allocated_bytes, b->pool, (int64_t)b->size);
  b->free_seq = stream_submitted(device, b->stream);
  uint64_t seqs[TPU_MAX_STREAMS], pending = 0;
  int n = 0;
  for (int s = 0; s < TPU_MAX_STREAMS; s++) {
    if (!(b->used_by >> s & 1))
      continue;
    uint64_t seq = stream_submitted(device, s);
    if (stream_completed(device, s) < seq) {
      pending |= 1ull << s;
      seqs[n++] = seq;
    }
  }
  b->used_by = pending;
  if (!pending) {
    free_block(dev, b);
    return;
  }
  b->state = BLOCK_DEFERRED;
  b->wait_seq = malloc((size_t)n * sizeof *b->wait_seq);
  if (b->wait_seq) {
    memcpy(b->wait_seq, seqs, (size_t)n * sizeof *seqs);
    b->deferred_next = dev->deferred;
    dev->deferred = b;
    return;
  }
  /* No memory to remember the waits: wait now, slower but never wrong. */
  pthread_mutex_unlock(&dev->lock);
  for (int s = 0, i = 0; s < TPU_MAX_STREAMS; s++)
    if (pending >> s & 1)
      tpu_stream_wait_for(tpu_stream_get(device, s), seqs[i++]);
  pthread_mutex_lock(&dev->lock);
  free_block(dev, b);
}

void tpu_mem_free(void *ptr) {
  int device = tpu_mem_device_of(ptr);
  if (device < 0)
    return;
  mem_device *dev = device_get(device);
  pthread_mutex_lock(&dev->lock);
  mem_block *b = active_find(dev, ptr);
  if (b && b->state == BLOCK_ALLOCATED)
    free_locked(dev, device, b);
  pthread_mutex_unlock(&dev->lock);
}

void tpu_mem_record_stream(void *ptr, int stream) {
  int device = tpu_mem_device_of(ptr);
  if (device < 0 || stream < 0 || stream >= TPU_MAX_STREAMS)
    return;
  mem_device *dev = device_get(device);
  pthread_mutex_lock(&dev->lock);
  mem_block *b = active_find(dev, ptr);
  if (b && b->state == BLOCK_ALLOCATED && b->stream != stream)
    b->used_by |= 1ull << stream;
  pthread_mutex_unlock(&dev->lock);
}

bool tpu_mem_host_accessible(const void *ptr) {
  int d = tpu_mem_device_of(ptr);
  return d >= 0 && tpu_heap_accessible(atomic_load(&devices[d].arena));
}

int tpu_mem_device_of(const void *ptr) {
  if (!ptr)
    return -1;
  for (int d = 0; d < TPU_MAX_DEVICES; d++) {
    tpu_heap *arena = atomic_load(&devices[d].arena);
    if (arena && tpu_heap_contains(arena, ptr))
      return d;
  }
  return -1;
}

tpu_status tpu_mem_empty_cache(int device) {
  tpu_status st = tpu_device_check(device);
  if (st != TPU_OK)
    return st;
  mem_device *dev = device_get(device);
  if (!atomic_load(&dev->arena))
    return TPU_OK; /* never used: nothing cached, and nothing to start */
  /* Queued work may still read blocks freed in stream order; their pages must outlive it. */
  st = tpu_device_synchronize(device);
  pthread_mutex_lock(&dev->lock);
  dev->stats.num_sync_all_streams++;
  process_deferred(dev, device);
  release_cached(dev, device);
  pthread_mutex_unlock(&dev->lock);
  return st;
}

void tpu_mem_get_stats(int device, tpu_mem_stats *out) {
  if (!out)
    return;
  memset(out, 0, sizeof *out);
  out->max_split_size = -1;
  if (!device_valid(device))
    return;
  mem_device *dev = device_get(device);
  pthread_mutex_lock(&dev->lock);
  *out = dev->stats;
  pthread_mutex_unlock(&dev->lock);
}

/* Every tpu_mem_stat of a tpu_mem_stats, for the resets. */
static void for_each_stat(tpu_mem_stats *s, void (*fn)(tpu_mem_stat *)) {
  tpu_mem_stat *arrays[] = {s->allocation,  s->segment,         s->active,
                            s->inactive_split, s->allocated_bytes, s->reserved_bytes,
                            s->active_bytes, s->inactive_split_bytes, s->requested_bytes};
  for (size_t a = 0; a < sizeof arrays / sizeof arrays[0]; a++)
    for (int p = 0; p < TPU_POOL_COUNT; p++)
      fn(&arrays[a][p]);
  fn(&s->oversize_allocations);
  fn(&s->oversize_segments);
}

static void reset_peak(tpu_mem_stat *s) { s->peak = s->current; }
static void reset_accumulated(tpu_mem_stat *s) { s->allocated = s->freed = 0; }

void tpu_mem_reset_peak(int device) {
  if (!device_valid(device))
    return;
  mem_device *dev = device_get(device);
  pthread_mutex_lock(&dev->lock);
  for_each_stat(&dev->stats, reset_peak);
  pthread_mutex_unlock(&dev->lock);
}

void tpu_mem_reset_accumulated(int device) {
  if (!device_valid(device))
    return;
  mem_device *dev = device_get(device);
  pthread_mutex_lock(&dev->lock);
  tpu_mem_stats *s = &dev->stats;
  for_each_stat(s, reset_accumulated);
  s->num_alloc_retries = s->num_ooms = s->num_sync_all_streams = 0;
  s->num_device_alloc = s->num_device_free = 0;
  pthread_mutex_unlock(&dev->lock);
}

void tpu_mem_info(int device, size_t *free_bytes, size_t *total_bytes) {
  tpu_mem_stats s;
  tpu_mem_get_stats(device, &s);
  size_t total = device_valid(device) ? tpu_device_capacity(device) : 0;
  if (free_bytes)
    *free_bytes = total - (size_t)s.reserved_bytes[TPU_POOL_ALL].current;
  if (total_bytes)
    *total_bytes = total;
}

/* torch.cuda.memory_summary's _format_size and _format_count: at most four digits before a
 * larger unit takes over. */
static void format_cell(int64_t value, bool bytes, char *buf, size_t len) {
  static const char *const size_units[] = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
  static const char *const count_units[] = {" ", "K", "M"};
  int unit = 0, units = bytes ? 6 : 3;
  int64_t scale = bytes ? 1024 : 1000, limit = bytes ? 768 * 1024 : 750 * 1000;
  for (int64_t pref = value; unit + 1 < units && pref >= limit; pref /= scale, value /= scale)
    unit++;
  if (bytes)
    snprintf(buf, len, "%6" PRId64 " %s", value, size_units[unit]);
  else
    snprintf(buf, len, "%7" PRId64 " %s ", value, count_units[unit]);
}

static void format_summary(const tpu_mem_stats *s, int device, char *buf, size_t len) {
  static const struct {
    const char *name;
    size_t offset;
    bool bytes;
  } rows[] = {
      {"Allocated memory", offsetof(tpu_mem_stats, allocated_bytes), true},
      {"Active memory", offsetof(tpu_mem_stats, active_bytes), true},
      {"Requested memory", offsetof(tpu_mem_stats, requested_bytes), true},
      {"TPU reserved memory", offsetof(tpu_mem_stats, reserved_bytes), true},
      {"Non-releasable memory", offsetof(tpu_mem_stats, inactive_split_bytes), true},
      {"Allocations", offsetof(tpu_mem_stats, allocation), false},
      {"Active allocs", offsetof(tpu_mem_stats, active), false},
      {"TPU reserved segments", offsetof(tpu_mem_stats, segment), false},
      {"Non-releasable allocs", offsetof(tpu_mem_stats, inactive_split), false},
  };
  size_t used = 0;
  /* snprintf returns what it would have written; stop appending once the buffer is full. */
#define APPEND(...)                                                                                \
  do {                                                                                             \
    if (used < len) {                                                                              \
      int n_ = snprintf(buf + used, len - used, __VA_ARGS__);                                      \
      used = n_ < 0 ? len : used + (size_t)n_;                                                     \
    }                                                                                              \
  } while (0)
  APPEND("TPU memory summary, device ID %d | OOMs: %" PRId64 " | alloc retries: %" PRId64 "\n",
         device, s->num_ooms, s->num_alloc_retries);
  APPEND("| %-21s | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n", "Metric");
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    const tpu_mem_stat *stat = (const tpu_mem_stat *)((const char *)s + rows[r].offset);
    const int64_t values[4] = {stat->current, stat->peak, stat->allocated, stat->freed};
    char cells[4][32];
    for (int c = 0; c < 4; c++)
      format_cell(values[c], rows[r].bytes, cells[c], sizeof cells[c]);
    APPEND("| %-21s | %s | %s | %s | %s |\n", rows[r].name, cells[0], cells[1], cells[2],
           cells[3]);
  }
#undef APPEND
}

void tpu_mem_summary(int device, char *buf, size_t len) {
  if (!buf || len == 0)
    return;
  tpu_mem_stats s;
  tpu_mem_get_stats(device, &s);
  format_summary(&s, device, buf, len);
}
