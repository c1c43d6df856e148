#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device/tpu_stream.h"
#include "mem/tpu_host_alloc.h"
#include "tpu_test.h"
#include "tpu_test_alloc.h"

static tpu_host_stats stats(void) {
  tpu_host_stats s;
  tpu_host_get_stats(&s);
  return s;
}

static void *host_alloc(size_t nbytes) {
  void *p = NULL;
  CHECK_OK_OR(tpu_host_alloc(nbytes, &p), NULL);
  return p;
}

static void test_alloc_pinned_and_reuse(void) {
  long page = sysconf(_SC_PAGESIZE);
  char *p = host_alloc(100);
  CHECK(p && (uintptr_t)p % (uintptr_t)page == 0);
  memset(p, 1, 100);
  CHECK(tpu_host_is_pinned(p) && tpu_host_is_pinned(p + 50)); /* views point inside blocks */
  CHECK(tpu_host_is_pinned(p + page - 1));
  int local;
  CHECK(!tpu_host_is_pinned(&local) && !tpu_host_is_pinned(NULL));
  tpu_host_stats s = stats();
  CHECK(s.allocations == 1 && s.allocated_bytes == page && s.reserved_bytes == page);
  CHECK(s.num_host_alloc == 1);
  tpu_host_free(p);
  CHECK(!tpu_host_is_pinned(p) && !tpu_host_is_pinned(p + 50));
  CHECK(host_alloc(200) == p); /* same size class, from the cache */
  CHECK(stats().num_host_alloc == 1);
  tpu_host_free(p);
}

static void test_size_classes_and_stats(void) {
  char *a = host_alloc(5000), *b = host_alloc(70000);
  tpu_host_stats s = stats();
  CHECK(s.allocated_bytes == 8192 + 131072 && s.allocations == 2);
  CHECK(s.peak_allocated_bytes >= s.allocated_bytes);
  CHECK(tpu_host_is_pinned(a + 8191) && tpu_host_is_pinned(b + 131071));
  tpu_host_free(a);
  tpu_host_free(b);
  s = stats();
  CHECK(s.allocations == 0 && s.allocated_bytes == 0 && s.peak_allocated_bytes >= 139264);
  tpu_host_reset_peak();
  CHECK(stats().peak_allocated_bytes == 0);
  tpu_host_empty_cache();
  s = stats();
  CHECK(s.reserved_bytes == 0 && s.num_host_free == s.num_host_alloc);
}

static void test_zero_bytes_and_bad_input(void) {
  void *a = host_alloc(0), *b = host_alloc(0);
  CHECK(a && b && a != b);
  CHECK(tpu_host_alloc(16, NULL) == TPU_ERR_VALUE);
  void *p = (void *)1;
  CHECK(tpu_host_alloc(SIZE_MAX, &p) == TPU_ERR_OUT_OF_MEMORY && p == NULL);
  int local;
  tpu_host_free(NULL);
  tpu_host_free(&local);         /* not pinned: ignored */
  tpu_host_free((char *)a + 8);  /* not a block start: ignored */
  CHECK(stats().allocations == 2);
  CHECK(!tpu_host_record_use(&local, 0, 0));
  CHECK(!tpu_host_record_use(a, 5, 0));  /* no such device */
  CHECK(!tpu_host_record_use(a, 0, 99)); /* no such stream */
  tpu_host_free(a);
  tpu_host_free(b);
  tpu_host_free(a); /* double free: ignored */
  CHECK(stats().allocations == 0);
}

static void test_record_use_deferral(void) {
  int side;
  tpu_stream *s = blocked_stream(&side);
  char *q = host_alloc(1000);
  CHECK(tpu_host_record_use(q + 10, 0, side)); /* an async copy reads an interior view */
  CHECK(tpu_host_record_use(q, 0, side));      /* the same stream again: one use */
  tpu_host_free(q);
  char *r = host_alloc(1000);
  CHECK(r != q); /* q's copy is still queued */
  tpu_host_empty_cache();
  CHECK(stats().reserved_bytes == 2 * 4096); /* r, and q whose use is pending */
  open_gate(s);
  tpu_host_free(r);
  char *x = host_alloc(1000), *y = host_alloc(1000);
  CHECK((x == q && y == r) || (x == r && y == q));
  tpu_host_free(x);
  tpu_host_free(y);
  tpu_host_empty_cache();
  CHECK(stats().reserved_bytes == 0);
}

enum { ITERS = 3000, LIVE = 8 };

static void *stress_thread(void *arg) {
  int id = (int)(intptr_t)arg;
  unsigned char *ptr[LIVE] = {0};
  size_t len[LIVE] = {0};
  unsigned seed = 99u * (unsigned)(id + 1);
  intptr_t bad = 0;
  for (int it = 0; it < ITERS; it++) {
    seed = seed * 1103515245u + 12345u;
    int i = (int)(seed >> 8) % LIVE;
    if (ptr[i]) {
      for (size_t k = 0; k < len[i]; k += 97)
        bad += ptr[i][k] != (unsigned char)(id * LIVE + i);
      bad += !tpu_host_is_pinned(ptr[i] + len[i] - 1);
      tpu_host_free(ptr[i]);
      ptr[i] = NULL;
    } else {
      len[i] = 1 + (seed >> 12) % 300000;
      void *p = NULL;
      bad += tpu_host_alloc(len[i], &p) != TPU_OK;
      ptr[i] = p;
      if (p)
        memset(p, id * LIVE + i, len[i]);
    }
  }
  for (int i = 0; i < LIVE; i++)
    tpu_host_free(ptr[i]);
  return (void *)bad;
}

static void test_threads(void) {
  CHECK(run_stress_threads(stress_thread) == 0);
  CHECK(stats().allocations == 0 && stats().allocated_bytes == 0);
  tpu_host_empty_cache();
  CHECK(stats().reserved_bytes == 0);
}

/* Pinned memory is plain host memory: a forked child may keep using the allocator. */
static void test_fork(void) {
  void *a = host_alloc(100);
  pid_t pid = fork();
  if (pid == 0) {
    void *b = NULL;
    bool ok = tpu_host_alloc(100, &b) == TPU_OK && b != a && tpu_host_is_pinned(a);
    tpu_host_free(b);
    _exit(ok ? 0 : 1);
  }
  int status;
  CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  tpu_host_free(a);
  tpu_host_empty_cache();
}

int main(void) {
  TEST_MAIN_BEGIN();
  setenv("TORCH_TPU_DEVICE_MEMORY", "64MiB", 1);
  RUN_TEST(test_alloc_pinned_and_reuse);
  RUN_TEST(test_size_classes_and_stats);
  RUN_TEST(test_zero_bytes_and_bad_input);
  RUN_TEST(test_record_use_deferral);
  RUN_TEST(test_threads);
  RUN_TEST(test_fork);
  TEST_MAIN_END();
}
