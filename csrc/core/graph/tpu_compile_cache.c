#include "graph/tpu_compile_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/tpu_env.h"

struct tpu_compile_entry {
  atomic_int refcount; /* the cache's (while listed) plus one per caller */
  uint64_t hash, skeleton;
  tpu_graph *key; /* structure-only clone */
  void *plan;
  void (*destroy)(void *);
  tpu_compile_entry *chain;      /* next in the bucket */
  tpu_compile_entry *newer, *older; /* LRU list */
};

struct tpu_compile_cache {
  pthread_mutex_t mu;
  size_t capacity, entries;
  size_t n_buckets; /* a power of two */
  tpu_compile_entry **buckets;
  tpu_compile_entry *newest, *oldest;
  tpu_compile_cache_stats stats;
};

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

tpu_status tpu_compile_cache_create(size_t capacity, tpu_compile_cache **out) {
  if (capacity < 1)
    return tpu_error(TPU_ERR_VALUE, "a compile cache needs a capacity of at least 1");
  tpu_compile_cache *c = calloc(1, sizeof *c);
  size_t n = 16;
  while (n < capacity && n < ((size_t)1 << 20))
    n *= 2;
  if (c)
    c->buckets = calloc(n, sizeof *c->buckets);
  if (!c || !c->buckets) {
    free(c);
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate a compile cache");
  }
  pthread_mutex_init(&c->mu, NULL);
  c->capacity = capacity;
  c->n_buckets = n;
  *out = c;
  return TPU_OK;
}

void tpu_compile_entry_release(tpu_compile_entry *e) {
  if (atomic_fetch_sub(&e->refcount, 1) != 1)
    return;
  if (e->destroy)
    e->destroy(e->plan);
  tpu_graph_free(e->key);
  free(e);
}

void *tpu_compile_entry_plan(const tpu_compile_entry *e) { return e->plan; }

/* Unlinks an entry from its bucket and the LRU list and drops the cache's reference. */
static void unlink_entry(tpu_compile_cache *c, tpu_compile_entry *e) {
  tpu_compile_entry **p = &c->buckets[e->hash & (c->n_buckets - 1)];
  while (*p != e)
    p = &(*p)->chain;
  *p = e->chain;
  if (e->newer)
    e->newer->older = e->older;
  else
    c->newest = e->older;
  if (e->older)
    e->older->newer = e->newer;
  else
    c->oldest = e->newer;
  c->entries--;
  tpu_compile_entry_release(e);
}

static void make_newest(tpu_compile_cache *c, tpu_compile_entry *e) {
  if (c->newest == e)
    return;
  if (e->newer || e->older || c->oldest == e) { /* listed: unlink from the LRU list first */
    if (e->newer)
      e->newer->older = e->older;
    if (e->older)
      e->older->newer = e->newer;
    else
      c->oldest = e->newer;
  }
  e->newer = NULL;
  e->older = c->newest;
  if (c->newest)
    c->newest->newer = e;
  c->newest = e;
  if (!c->oldest)
    c->oldest = e;
}

/* The listed entry for `graph`, with a caller reference, or NULL. Under the lock. */
static tpu_compile_entry *find(tpu_compile_cache *c, uint64_t hash, const tpu_graph *graph) {
  for (tpu_compile_entry *e = c->buckets[hash & (c->n_buckets - 1)]; e; e = e->chain)
    if (e->hash == hash && tpu_graph_equal(e->key, graph)) {
      make_newest(c, e);
      atomic_fetch_add(&e->refcount, 1);
      return e;
    }
  return NULL;
}

/* True when TORCH_TPU_LOG's comma list names `what`. */
static bool log_enabled(const char *what) {
  const char *v = tpu_env_get("TORCH_TPU_LOG");
  size_t n = strlen(what);
  for (const char *p = v; p && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && !strncmp(p, what, n))
      return true;
    p = end ? end + 1 : NULL;
  }
  return false;
}

/* Counts a miss as a first compile, or as a recompile of the most recently used entry with the
 * same skeleton, explained (and logged when asked). Under the lock. */
static void classify_miss(tpu_compile_cache *c, uint64_t skeleton, const tpu_graph *graph) {
  int same = 0;
  tpu_compile_entry *last = NULL;
  for (tpu_compile_entry *e = c->newest; e; e = e->older)
    if (e->skeleton == skeleton) {
      last = last ? last : e;
      same++;
    }
  if (!last) {
    c->stats.first_compiles++;
    return;
  }
  char why[512];
  tpu_recompile_reason r = tpu_graph_diff(last->key, graph, why, sizeof why);
  c->stats.recompiles[r]++;
  if (log_enabled("recompiles"))
    fprintf(stderr, "torch_tpu: recompile (%s) of a graph of %d ops, %d compiled before: %s\n",
            tpu_recompile_reason_name(r), graph->n_nodes, same, why);
}

/* Lists a new entry (refcount 2: the cache's and the caller's), evicting the oldest if full. */
static void insert(tpu_compile_cache *c, tpu_compile_entry *e) {
  while (c->entries >= c->capacity && c->oldest) {
    unlink_entry(c, c->oldest);
    c->stats.evictions++;
  }
  tpu_compile_entry **bucket = &c->buckets[e->hash & (c->n_buckets - 1)];
  e->chain = *bucket;
  *bucket = e;
  make_newest(c, e);
  c->entries++;
}

tpu_status tpu_compile_cache_lookup(tpu_compile_cache *c, const tpu_graph *graph,
                                    tpu_compile_fn compile, void *ctx, tpu_compile_entry **out) {
  uint64_t t0 = now_us();
  uint64_t hash = tpu_graph_hash(graph);
  pthread_mutex_lock(&c->mu);
  tpu_compile_entry *e = find(c, hash, graph);
  uint64_t skeleton = 0;
  if (e) {
    c->stats.hits++;
  } else {
    c->stats.misses++;
    skeleton = tpu_graph_skeleton_hash(graph);
    classify_miss(c, skeleton, graph);
  }
  c->stats.plan_us += now_us() - t0;
  pthread_mutex_unlock(&c->mu);
  if (e) {
    *out = e;
    return TPU_OK;
  }
  /* Compile outside the lock: other structures keep hitting meanwhile. */
  e = calloc(1, sizeof *e);
  tpu_graph *key = e ? tpu_graph_clone_structure(graph) : NULL;
  if (!key) {
    free(e);
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate a compile cache entry");
  }
  uint64_t t1 = now_us();
  tpu_status st = compile(graph, ctx, &e->plan, &e->destroy);
  uint64_t t2 = now_us();
  if (st != TPU_OK) {
    tpu_graph_free(key);
    free(e);
    return st;
  }
  atomic_init(&e->refcount, 2);
  e->hash = hash;
  e->skeleton = skeleton;
  e->key = key;
  pthread_mutex_lock(&c->mu);
  c->stats.compiles++;
  c->stats.compile_us += t2 - t1;
  tpu_compile_entry *raced = find(c, hash, graph);
  if (raced) {
    atomic_store(&e->refcount, 1);
  } else {
    insert(c, e);
  }
  c->stats.plan_us += now_us() - t2;
  pthread_mutex_unlock(&c->mu);
  if (raced) {
    tpu_compile_entry_release(e);
    e = raced;
  }
  *out = e;
  return TPU_OK;
}

void tpu_compile_cache_clear(tpu_compile_cache *c) {
  pthread_mutex_lock(&c->mu);
  while (c->oldest)
    unlink_entry(c, c->oldest);
  pthread_mutex_unlock(&c->mu);
}

void tpu_compile_cache_destroy(tpu_compile_cache *c) {
  if (!c)
    return;
  tpu_compile_cache_clear(c);
  pthread_mutex_destroy(&c->mu);
  free(c->buckets);
  free(c);
}

void tpu_compile_cache_get_stats(tpu_compile_cache *c, tpu_compile_cache_stats *stats) {
  pthread_mutex_lock(&c->mu);
  *stats = c->stats;
  stats->entries = c->entries;
  stats->capacity = c->capacity;
  pthread_mutex_unlock(&c->mu);
}

void tpu_compile_cache_reset_stats(tpu_compile_cache *c) {
  pthread_mutex_lock(&c->mu);
  c->stats = (tpu_compile_cache_stats){0};
  pthread_mutex_unlock(&c->mu);
}

/* Made on first use under global_mu; read without it once made. Not a pthread_once: a creation
 * that runs out of memory must be tried again by the next use, not leave fused mode without a
 * cache for the rest of the process. */
static pthread_mutex_t global_mu = PTHREAD_MUTEX_INITIALIZER;
static tpu_compile_cache *_Atomic global_cache;

tpu_compile_cache *tpu_compile_cache_global(void) {
  tpu_compile_cache *c = atomic_load(&global_cache);
  if (c)
    return c;
  pthread_mutex_lock(&global_mu);
  c = atomic_load(&global_cache);
  if (!c && tpu_compile_cache_create(TPU_COMPILE_CACHE_CAPACITY, &c) == TPU_OK)
    atomic_store(&global_cache, c);
  pthread_mutex_unlock(&global_mu);
  return c;
}
