/* The thread pool: every element is visited once, chunk boundaries depend only on the size, grain
 * and thread count, nested calls run serially, and the thread count can change. */
#include <stdatomic.h>
#include <stdlib.h>

#include "drivers/host/engine/engine_pool.h"
#include "tpu_test.h"

enum { N = 1000003 };
static atomic_int visits[N];

typedef struct record {
  int64_t begin[64], end[64];
  atomic_int calls;
} record;

static void mark(int64_t begin, int64_t end, int chunk, void *ctx) {
  record *r = ctx;
  r->begin[chunk] = begin;
  r->end[chunk] = end;
  atomic_fetch_add(&r->calls, 1);
  for (int64_t i = begin; i < end; i++)
    atomic_fetch_add(&visits[i], 1);
}

static void test_covers_every_element_once(void) {
  for (int threads = 1; threads <= 4; threads++) {
    tpu_pool_set_threads(threads);
    for (int64_t i = 0; i < N; i++)
      atomic_store(&visits[i], 0);
    record r = {0};
    tpu_parallel_for(N, 1000, mark, &r);
    int chunks = tpu_parallel_chunks(N, 1000);
    CHECK(chunks == threads);
    CHECK(atomic_load(&r.calls) == chunks);
    int once = 1;
    for (int64_t i = 0; i < N; i++)
      once &= atomic_load(&visits[i]) == 1;
    CHECK(once);
    for (int c = 0; c < chunks; c++) { /* fixed boundaries */
      CHECK(r.begin[c] == (int64_t)N * c / chunks);
      CHECK(r.end[c] == (int64_t)N * (c + 1) / chunks);
    }
  }
}

static void test_small_ranges_stay_serial(void) {
  tpu_pool_set_threads(4);
  CHECK(tpu_parallel_chunks(10, 1000) == 1);
  CHECK(tpu_parallel_chunks(0, 1000) == 1);
  CHECK(tpu_parallel_chunks(2500, 1000) == 2);
  record r = {0};
  tpu_parallel_for(0, 1, mark, &r);
  CHECK(atomic_load(&r.calls) == 0);
}

static void nested(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  record inner = {0};
  tpu_parallel_for(end - begin, 1, mark, &inner); /* runs serially on this thread */
  atomic_fetch_add(&((record *)ctx)->calls, atomic_load(&inner.calls));
}

static void test_nested_calls(void) {
  tpu_pool_set_threads(2);
  for (int64_t i = 0; i < 100; i++)
    atomic_store(&visits[i], 0);
  record r = {0};
  tpu_parallel_for(100000, 10, nested, &r);
  CHECK(atomic_load(&r.calls) == 4); /* two outer chunks, each cut into two */
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_covers_every_element_once);
  RUN_TEST(test_small_ranges_stay_serial);
  RUN_TEST(test_nested_calls);
  TEST_MAIN_END();
}
