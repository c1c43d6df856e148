/* The compile cache (docs/ARCHITECTURE.md): a thread-safe map from a graph's structure (tpu_graph_hash,
 * confirmed by tpu_graph_equal, so a lookup is exact) to a compiled plan, an opaque pointer with
 * its destroy function. The structure includes the graph's flags word, so every global flag that
 * changes results is part of the key; scalars and RNG offsets are not, they are arguments.
 *
 * Policy: at most `capacity` entries; inserting one more evicts the least recently used entry.
 * Lookups hand out a reference to the entry, so an entry evicted or cleared while a caller still
 * runs its plan is destroyed only when that caller releases it.
 *
 * Time: planning time is what every lookup costs (hashing, probing, equality, inserting); compile
 * time is what the compile callbacks of misses cost. Both in microseconds. */
#ifndef TPU_COMPILE_CACHE_H
#define TPU_COMPILE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "graph/tpu_graph.h"
#include "graph/tpu_graph_diff.h"

/* Entries of the process-wide cache: far more distinct graphs than a training loop makes. */
#define TPU_COMPILE_CACHE_CAPACITY 1024

typedef struct tpu_compile_cache tpu_compile_cache;
typedef struct tpu_compile_entry tpu_compile_entry;

/* Compiles `graph` into a plan: on success stores it in *plan and its destructor in *destroy. */
typedef tpu_status (*tpu_compile_fn)(const tpu_graph *graph, void *ctx, void **plan,
                                     void (**destroy)(void *plan));

/* misses = first_compiles + the recompiles by reason: a miss whose skeleton the cache holds is a
 * recompile (graph/tpu_graph_diff.h), explained against the most recently used such entry and
 * printed on stderr when TORCH_TPU_LOG lists "recompiles". */
typedef struct tpu_compile_cache_stats {
  uint64_t hits, misses, compiles, evictions;
  uint64_t first_compiles, recompiles[TPU_RECOMPILE_REASONS];
  uint64_t plan_us, compile_us;
  uint64_t entries, capacity;
} tpu_compile_cache_stats;

/* A cache of at most `capacity` (>= 1) entries; TPU_ERR_OUT_OF_MEMORY or TPU_ERR_VALUE. */
tpu_status tpu_compile_cache_create(size_t capacity, tpu_compile_cache **out);

/* Destroys the cache; entries still referenced by callers live on until released. */
void tpu_compile_cache_destroy(tpu_compile_cache *cache);

/* The process-wide cache every mode shares, created on first use with TPU_COMPILE_CACHE_CAPACITY
 * entries; NULL when out of host memory (the next call tries again). */
tpu_compile_cache *tpu_compile_cache_global(void);

/* Finds the entry for `graph`'s structure, or compiles it with compile(graph, ctx) and inserts it.
 * On success *out holds a reference the caller must release with tpu_compile_entry_release.
 * A failed compile inserts nothing and returns its status. Concurrent misses on one structure may
 * both compile; one plan is kept and the other destroyed. */
tpu_status tpu_compile_cache_lookup(tpu_compile_cache *cache, const tpu_graph *graph,
                                    tpu_compile_fn compile, void *ctx, tpu_compile_entry **out);

/* The entry's plan. */
void *tpu_compile_entry_plan(const tpu_compile_entry *entry);

/* Drops a reference from tpu_compile_cache_lookup. */
void tpu_compile_entry_release(tpu_compile_entry *entry);

/* Removes every entry (each destroyed once no caller holds it). Stats other than entries stay. */
void tpu_compile_cache_clear(tpu_compile_cache *cache);

/* Copies the counters. */
void tpu_compile_cache_get_stats(tpu_compile_cache *cache, tpu_compile_cache_stats *stats);

/* Zeroes hits, misses, compiles, evictions and the times. */
void tpu_compile_cache_reset_stats(tpu_compile_cache *cache);

#endif
