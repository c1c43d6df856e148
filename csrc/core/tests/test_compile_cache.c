/* The compile cache (graph/tpu_compile_cache.h): hits for equal structures with other scalars and
 * buffers, misses for other structures, failed compiles, LRU eviction, entries that outlive their
 * eviction while held, clear, stats, concurrent lookups, and misses counted and explained by
 * reason (recompiles of one skeleton against first compiles). */
#include <pthread.h>
#include <string.h>

#include "graph/tpu_compile_cache.h"
#include "tpu_test_graph.h"

static int plans_alive;

static void destroy_plan(void *plan) {
  free(plan);
  __atomic_sub_fetch(&plans_alive, 1, __ATOMIC_RELAXED);
}

/* A "plan" recording the element count of the graph's first output. */
static tpu_status compile(const tpu_graph *g, void *ctx, void **plan, void (**destroy)(void *)) {
  if (ctx)
    return tpu_error(TPU_ERR_VALUE, "compile failed on purpose");
  int64_t *p = malloc(sizeof *p);
  *p = tpu_tensor_numel(&g->nodes[0].call->tensors[2]);
  *plan = p;
  *destroy = destroy_plan;
  __atomic_add_fetch(&plans_alive, 1, __ATOMIC_RELAXED);
  return TPU_OK;
}

static float mem[4][64];

/* One add of n elements over the arrays of instance `inst`, with alpha. */
static tpu_graph *one_add(int inst, int64_t n, double alpha) {
  tpu_tensor t[3] = {vec1(mem[inst], TPU_FLOAT32, n), vec1(mem[inst + 1], TPU_FLOAT32, n),
                     vec1(mem[inst + 2], TPU_FLOAT32, n)};
  tpu_graph *g = tpu_graph_new(0);
  CHECK_OK_OR(tpu_graph_add(g, mk_call(TPU_OP_ADD, TPU_FLOAT32, t, 2, alpha), 0), g);
  return g;
}

static void test_hits_and_misses(void) {
  tpu_compile_cache *c;
  CHECK_OK(tpu_compile_cache_create(8, &c));
  tpu_graph *g1 = one_add(0, 16, 1.0), *g2 = one_add(1, 16, 0.5), *g3 = one_add(0, 32, 1.0);
  tpu_compile_entry *e1, *e2, *e3;
  CHECK_OK(tpu_compile_cache_lookup(c, g1, compile, NULL, &e1));
  CHECK_OK(tpu_compile_cache_lookup(c, g2, compile, NULL, &e2));
  CHECK_OK(tpu_compile_cache_lookup(c, g3, compile, NULL, &e3));
  CHECK(e1 == e2 && e1 != e3);
  CHECK(*(int64_t *)tpu_compile_entry_plan(e1) == 16);
  CHECK(*(int64_t *)tpu_compile_entry_plan(e3) == 32);
  tpu_compile_cache_stats s;
  tpu_compile_cache_get_stats(c, &s);
  CHECK(s.hits == 1 && s.misses == 2 && s.compiles == 2 && s.entries == 2 && s.capacity == 8);
  /* A failed compile inserts nothing. */
  tpu_graph *g4 = one_add(0, 48, 1.0);
  tpu_compile_entry *e4;
  CHECK(tpu_compile_cache_lookup(c, g4, compile, (void *)1, &e4) == TPU_ERR_VALUE);
  tpu_compile_cache_get_stats(c, &s);
  CHECK(s.misses == 3 && s.compiles == 2 && s.entries == 2);
  tpu_compile_entry_release(e1);
  tpu_compile_entry_release(e2);
  tpu_compile_entry_release(e3);
  tpu_compile_cache_reset_stats(c);
  tpu_compile_cache_get_stats(c, &s);
  CHECK(s.hits == 0 && s.misses == 0 && s.entries == 2);
  tpu_compile_cache_clear(c);
  tpu_compile_cache_get_stats(c, &s);
  CHECK(s.entries == 0 && plans_alive == 0);
  tpu_compile_cache_destroy(c);
  tpu_graph_free(g1);
  tpu_graph_free(g2);
  tpu_graph_free(g3);
  tpu_graph_free(g4);
}

/* One add of n elements of `dtype`, its first input read every `step` elements from `offset`. */
static tpu_graph *add_view(tpu_dtype dtype, int64_t n, int64_t step, int64_t offset) {
  tpu_tensor t[3] = {vec1(mem[0], dtype, n), vec1(mem[1], dtype, n), vec1(mem[2], dtype, n)};
  t[0].strides[0] = step;
  t[0].offset = offset;
  tpu_graph *g = tpu_graph_new(0);
  CHECK_OK_OR(tpu_graph_add(g, mk_call(TPU_OP_ADD, dtype, t, 2, 1.0), 0), g);
  return g;
}

static void test_recompile_reasons(void) {
  tpu_compile_cache *c;
  CHECK_OK(tpu_compile_cache_create(8, &c));
  /* The last graph adds twice: another skeleton, so a first compile. */
  tpu_graph *g[5] = {add_view(TPU_FLOAT32, 16, 1, 0), add_view(TPU_FLOAT32, 24, 1, 0),
                     add_view(TPU_INT32, 24, 1, 0), add_view(TPU_INT32, 24, 2, 0),
                     add_view(TPU_FLOAT32, 16, 1, 0)};
  tpu_tensor t[3] = {vec1(mem[2], TPU_FLOAT32, 16), vec1(mem[1], TPU_FLOAT32, 16),
                     vec1(mem[3], TPU_FLOAT32, 16)};
  CHECK_OK(tpu_graph_add(g[4], mk_call(TPU_OP_ADD, TPU_FLOAT32, t, 2, 1.0), 0));
  char why[256];
  CHECK(tpu_graph_skeleton_hash(g[0]) == tpu_graph_skeleton_hash(g[3]));
  CHECK(tpu_graph_skeleton_hash(g[0]) != tpu_graph_skeleton_hash(g[4]));
  CHECK(tpu_graph_diff(g[0], g[1], why, sizeof why) == TPU_RECOMPILE_SHAPE);
  CHECK(!strcmp(why, "node 0 (add) input 0: sizes [16] -> [24] (dimension 0)"));
  CHECK(tpu_graph_diff(g[1], g[2], why, sizeof why) == TPU_RECOMPILE_DTYPE);
  CHECK(!strcmp(why, "node 0 (add): compute dtype float32 -> int32"));
  CHECK(tpu_graph_diff(g[2], g[3], why, sizeof why) == TPU_RECOMPILE_LAYOUT);
  CHECK(!strcmp(why, "node 0 (add) input 0: strides [1] -> [2], offset 0 -> 0"));
  tpu_compile_entry *e;
  for (int i = 0; i < 5; i++) {
    CHECK_OK(tpu_compile_cache_lookup(c, g[i], compile, NULL, &e));
    tpu_compile_entry_release(e);
  }
  tpu_compile_cache_stats s;
  tpu_compile_cache_get_stats(c, &s);
  CHECK(s.misses == 5 && s.first_compiles == 2);
  CHECK(s.recompiles[TPU_RECOMPILE_SHAPE] == 1 && s.recompiles[TPU_RECOMPILE_DTYPE] == 1 &&
        s.recompiles[TPU_RECOMPILE_LAYOUT] == 1);
  tpu_compile_cache_destroy(c);
  for (int i = 0; i < 5; i++)
    tpu_graph_free(g[i]);
  CHECK(plans_alive == 0);
}

static void test_lru_eviction(void) {
  tpu_compile_cache *c;
  CHECK_OK(tpu_compile_cache_create(2, &c));
  tpu_graph *g[3] = {one_add(0, 8, 1), one_add(0, 16, 1), one_add(0, 24, 1)};
  tpu_compile_entry *e;
  CHECK_OK(tpu_compile_cache_lookup(c, g[0], compile, NULL, &e));
  tpu_compile_entry *held = e; /* held across its eviction */
  CHECK_OK(tpu_compile_cache_lookup(c, g[1], compile, NULL, &e));
  tpu_compile_entry_release(e);
  CHECK_OK(tpu_compile_cache_lookup(c, g[0], compile, NULL, &e)); /* g0 becomes the newest */
  tpu_compile_entry_release(e);
  CHECK_OK(tpu_compile_cache_lookup(c, g[2], compile, NULL, &e)); /* evicts g1, the oldest */
  tpu_compile_entry_release(e);
  tpu_compile_cache_stats s;
  tpu_compile_cache_get_stats(c, &s);
  CHECK(s.evictions == 1 && s.entries == 2 && s.hits == 1 && plans_alive == 2);
  CHECK_OK(tpu_compile_cache_lookup(c, g[0], compile, NULL, &e)); /* still cached */
  tpu_compile_entry_release(e);
  CHECK_OK(tpu_compile_cache_lookup(c, g[1], compile, NULL, &e)); /* recompiled: evicts g2 */
  tpu_compile_entry_release(e);
  tpu_compile_cache_get_stats(c, &s);
  CHECK(s.hits == 2 && s.compiles == 4 && s.evictions == 2);
  tpu_compile_cache_destroy(c);
  /* The held entry survives the cache itself until released. */
  CHECK(plans_alive == 1 && *(int64_t *)tpu_compile_entry_plan(held) == 8);
  tpu_compile_entry_release(held);
  CHECK(plans_alive == 0);
  for (int i = 0; i < 3; i++)
    tpu_graph_free(g[i]);
}

typedef struct worker_arg {
  tpu_compile_cache *cache;
  tpu_graph **graphs;
} worker_arg;

static void *worker(void *p) {
  worker_arg *a = p;
  for (int i = 0; i < 400; i++) {
    tpu_compile_entry *e;
    tpu_graph *g = a->graphs[i % 5];
    CHECK_OK_OR(tpu_compile_cache_lookup(a->cache, g, compile, NULL, &e), NULL);
    CHECK(*(int64_t *)tpu_compile_entry_plan(e) == tpu_tensor_numel(&g->nodes[0].call->tensors[2]));
    tpu_compile_entry_release(e);
  }
  return NULL;
}

static void test_concurrent_lookups(void) {
  tpu_compile_cache *c;
  CHECK_OK(tpu_compile_cache_create(3, &c)); /* fewer entries than graphs: evictions race too */
  tpu_graph *graphs[5];
  for (int i = 0; i < 5; i++)
    graphs[i] = one_add(0, 8 * (i + 1), 1);
  worker_arg arg = {c, graphs};
  pthread_t threads[4];
  for (int i = 0; i < 4; i++)
    pthread_create(&threads[i], NULL, worker, &arg);
  for (int i = 0; i < 4; i++)
    pthread_join(threads[i], NULL);
  tpu_compile_cache_stats s;
  tpu_compile_cache_get_stats(c, &s);
  CHECK(s.hits + s.misses == 1600 && s.entries <= 3 && s.compiles >= 5);
  tpu_compile_cache_destroy(c);
  CHECK(plans_alive == 0);
  for (int i = 0; i < 5; i++)
    tpu_graph_free(graphs[i]);
}

static void test_global_cache(void) {
  tpu_compile_cache *c = tpu_compile_cache_global();
  CHECK(c && c == tpu_compile_cache_global());
  tpu_compile_cache_stats s;
  tpu_compile_cache_get_stats(c, &s);
  CHECK(s.capacity == TPU_COMPILE_CACHE_CAPACITY);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_hits_and_misses);
  RUN_TEST(test_lru_eviction);
  RUN_TEST(test_recompile_reasons);
  RUN_TEST(test_concurrent_lookups);
  RUN_TEST(test_global_cache);
  TEST_MAIN_END();
}
