#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mem/tpu_heap.h"
#include "tpu_test.h"

#define MiB ((size_t)1 << 20)

static void test_create_bad_size(void) {
  tpu_heap *h = NULL;
  CHECK(tpu_heap_create(0, true, &h) == TPU_ERR_VALUE);
  CHECK(tpu_heap_create(SIZE_MAX, true, &h) == TPU_ERR_VALUE);
  CHECK(h == NULL);
}

static void test_alignment_and_contains(void) {
  tpu_heap *h;
  CHECK_OK(tpu_heap_create(16 * MiB, true, &h));
  void *a = tpu_heap_alloc(h, 1, 64);
  void *b = tpu_heap_alloc(h, 100, 4096);
  void *c = tpu_heap_alloc(h, 10, 1); /* below 64: still 64-aligned */
  void *d = tpu_heap_alloc(h, MiB, 2 * MiB);
  CHECK(a && b && c && d);
  CHECK((uintptr_t)a % 64 == 0);
  CHECK((uintptr_t)b % 4096 == 0);
  CHECK((uintptr_t)c % 64 == 0);
  CHECK((uintptr_t)d % (2 * MiB) == 0);
  CHECK(tpu_heap_contains(h, a) && tpu_heap_contains(h, (char *)d + MiB - 1));
  int local;
  CHECK(!tpu_heap_contains(h, &local) && !tpu_heap_contains(h, NULL));
  memset(b, 0x5a, 100); /* accessible */
  CHECK(tpu_heap_used(h) == 64 + 128 + 64 + MiB);
  tpu_heap_free(h, a);
  tpu_heap_free(h, b);
  tpu_heap_free(h, c);
  tpu_heap_free(h, d);
  CHECK(tpu_heap_used(h) == 0);
  tpu_heap_destroy(h);
}

static void test_bad_requests(void) {
  tpu_heap *h;
  CHECK_OK(tpu_heap_create(MiB, true, &h));
  CHECK(tpu_heap_alloc(h, 64, 96) == NULL);       /* not a power of two */
  CHECK(tpu_heap_alloc(h, 2 * MiB, 64) == NULL);  /* larger than the heap */
  CHECK(tpu_heap_alloc(h, 64, 4 * MiB) == NULL);  /* alignment larger than the heap */
  CHECK(tpu_heap_alloc(NULL, 64, 64) == NULL);
  void *p = tpu_heap_alloc(h, 64, 64);
  int local;
  tpu_heap_free(h, &local);          /* not from this heap: ignored */
  tpu_heap_free(h, (char *)p + 64);  /* not a block start: ignored */
  tpu_heap_free(h, NULL);
  CHECK(tpu_heap_used(h) == 64);
  tpu_heap_free(h, p);
  tpu_heap_free(h, p); /* double free: ignored */
  CHECK(tpu_heap_used(h) == 0);
  tpu_heap_destroy(h);
  tpu_heap_destroy(NULL);
}

/* Filling the heap in small pieces and freeing them in a scattered order must leave one free
 * range again: only coalescing makes the whole-heap allocation succeed. */
static void test_coalescing(void) {
  enum { N = 256 };
  tpu_heap *h;
  CHECK_OK(tpu_heap_create(N * 4096, true, &h));
  void *blocks[N];
  for (int i = 0; i < N; i++)
    blocks[i] = tpu_heap_alloc(h, 4096, 64);
  CHECK(blocks[N - 1] != NULL);
  CHECK(tpu_heap_alloc(h, 64, 64) == NULL); /* full */
  for (int i = 0; i < N; i += 2)
    tpu_heap_free(h, blocks[i]);
  for (int i = N - 1; i > 0; i -= 2)
    tpu_heap_free(h, blocks[i]);
  CHECK(tpu_heap_used(h) == 0);
  void *all = tpu_heap_alloc(h, N * 4096, 64);
  CHECK(all == blocks[0]);
  tpu_heap_free(h, all);
  tpu_heap_destroy(h);
}

/* Best fit takes the smallest hole that is large enough, not the first. */
static void test_best_fit(void) {
  tpu_heap *h;
  CHECK_OK(tpu_heap_create(MiB, true, &h));
  void *big_hole = tpu_heap_alloc(h, 8192, 64);
  void *sep1 = tpu_heap_alloc(h, 64, 64);
  void *small_hole = tpu_heap_alloc(h, 1024, 64);
  void *sep2 = tpu_heap_alloc(h, 64, 64);
  tpu_heap_free(h, big_hole);
  tpu_heap_free(h, small_hole);
  CHECK(tpu_heap_alloc(h, 1000, 64) == small_hole);
  CHECK(tpu_heap_alloc(h, 4096, 64) == big_hole); /* split from the front of the 8 KiB hole */
  tpu_heap_free(h, sep1);
  tpu_heap_free(h, sep2);
  tpu_heap_destroy(h);
}

/* Random allocations never overlap: each block is filled with its own tag and checked on free. */
static void test_random_no_overlap(void) {
  enum { SLOTS = 128, ROUNDS = 20000 };
  tpu_heap *h;
  CHECK_OK(tpu_heap_create(8 * MiB, true, &h));
  unsigned char *ptr[SLOTS] = {0};
  size_t len[SLOTS] = {0};
  unsigned seed = 12345;
  int bad = 0;
  for (int r = 0; r < ROUNDS; r++) {
    seed = seed * 1103515245u + 12345u;
    int i = (int)(seed >> 8) % SLOTS;
    if (ptr[i]) {
      for (size_t k = 0; k < len[i]; k++)
        bad += ptr[i][k] != (unsigned char)i;
      tpu_heap_free(h, ptr[i]);
      ptr[i] = NULL;
    } else {
      len[i] = 1 + (seed >> 12) % 20000;
      size_t align = (size_t)64 << ((seed >> 4) % 6);
      ptr[i] = tpu_heap_alloc(h, len[i], align);
      if (ptr[i]) {
        bad += (uintptr_t)ptr[i] % align != 0;
        memset(ptr[i], i, len[i]);
      }
    }
  }
  CHECK(bad == 0);
  for (int i = 0; i < SLOTS; i++)
    tpu_heap_free(h, ptr[i]);
  CHECK(tpu_heap_used(h) == 0);
  tpu_heap_destroy(h);
}

static void test_discard_zeroes_pages(void) {
  tpu_heap *h;
  CHECK_OK(tpu_heap_create(4 * MiB, true, &h));
  unsigned char *p = tpu_heap_alloc(h, MiB, 4096);
  memset(p, 0xab, MiB);
  tpu_heap_discard(h, p + 100, MiB - 100); /* the partial first page keeps its contents */
  CHECK(p[0] == 0xab && p[4095] == 0xab);
  CHECK(p[4096] == 0 && p[MiB - 1] == 0);
  tpu_heap_discard(h, p, 0);
  int local;
  tpu_heap_discard(h, &local, 4096); /* outside: ignored */
  tpu_heap_free(h, p);
  tpu_heap_destroy(h);
}

static void exit_on_fault(int sig) {
  (void)sig;
  _exit(42);
}

/* Without `accessible`, the range is an identity space: touching it faults. */
static void test_inaccessible_faults(void) {
  tpu_heap *h;
  CHECK_OK(tpu_heap_create(MiB, false, &h));
  volatile char *p = tpu_heap_alloc(h, 64, 64);
  CHECK(p != NULL && tpu_heap_contains(h, (const void *)p));
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGSEGV, exit_on_fault); /* quietly, also under ASan */
    p[0] = 1;
    _exit(0);
  }
  int status;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 42);
  tpu_heap_free(h, (void *)p);
  tpu_heap_destroy(h);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_create_bad_size);
  RUN_TEST(test_alignment_and_contains);
  RUN_TEST(test_bad_requests);
  RUN_TEST(test_coalescing);
  RUN_TEST(test_best_fit);
  RUN_TEST(test_random_no_overlap);
  RUN_TEST(test_discard_zeroes_pages);
  RUN_TEST(test_inaccessible_faults);
  TEST_MAIN_END();
}
