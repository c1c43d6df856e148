#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "device/tpu_device.h"
#include "device/tpu_stream.h"
#include "mem/tpu_allocator.h"
#include "tpu_test.h"
#include "tpu_test_alloc.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define ALL TPU_POOL_ALL
#define SMALL TPU_POOL_SMALL
#define LARGE TPU_POOL_LARGE

static tpu_mem_stats stats(void) {
  tpu_mem_stats s;
  tpu_mem_get_stats(0, &s);
  return s;
}

/* Every test starts from an empty chip with fresh counters. */
static void fresh(void) {
  CHECK_OK(tpu_mem_empty_cache(0));
  tpu_mem_reset_accumulated(0);
  tpu_mem_reset_peak(0);
  tpu_mem_stats s = stats();
  CHECK(s.reserved_bytes[ALL].current == 0 && s.allocation[ALL].current == 0);
}

static void *alloc_on(int stream, size_t nbytes) {
  void *p = NULL;
  CHECK_OK_OR(tpu_mem_alloc(0, stream, nbytes, &p), NULL);
  return p;
}

static void test_alignment_uniqueness_device_of(void) {
  fresh();
  const size_t sizes[] = {1, 100, 512, 513, 4096, 100 * KiB, MiB, MiB + 1, 3 * MiB, 12 * MiB};
  enum { N = sizeof sizes / sizeof sizes[0] };
  void *p[N];
  for (int i = 0; i < N; i++) {
    p[i] = alloc_on(0, sizes[i]);
    CHECK(p[i] && (uintptr_t)p[i] % 512 == 0);
    memset(p[i], i, sizes[i]); /* the memory is there */
    CHECK(tpu_mem_device_of(p[i]) == 0 && tpu_mem_device_of((char *)p[i] + sizes[i] - 1) == 0);
    for (int j = 0; j < i; j++)
      CHECK(p[i] != p[j]);
  }
  void *other = NULL;
  CHECK_OK(tpu_mem_alloc(1, 0, 1000, &other));
  CHECK(tpu_mem_device_of(other) == 1);
  int local;
  CHECK(tpu_mem_device_of(&local) == -1 && tpu_mem_device_of(NULL) == -1);
  for (int i = 0; i < N; i++)
    tpu_mem_free(p[i]);
  tpu_mem_free(other);
  CHECK_OK(tpu_mem_empty_cache(1));
}

static void test_stats_arithmetic(void) {
  fresh();
  void *a = alloc_on(0, 1000);
  tpu_mem_stats s = stats();
  CHECK(s.allocation[ALL].current == 1 && s.allocation[SMALL].current == 1);
  CHECK(s.allocation[LARGE].current == 0);
  CHECK(s.allocated_bytes[ALL].current == 1024 && s.requested_bytes[ALL].current == 1000);
  CHECK(s.reserved_bytes[ALL].current == (int64_t)(2 * MiB) && s.segment[SMALL].current == 1);
  CHECK(s.inactive_split[ALL].current == 1);
  CHECK(s.inactive_split_bytes[ALL].current == (int64_t)(2 * MiB - 1024));
  CHECK(s.active[ALL].current == 1 && s.active_bytes[ALL].current == 1024);
  CHECK(s.num_device_alloc == 1 && s.max_split_size == -1);

  void *b = alloc_on(0, 1000);
  CHECK((char *)b == (char *)a + 1024); /* split from the same segment */
  tpu_mem_free(a);
  s = stats();
  CHECK(s.allocated_bytes[ALL].current == 1024 && s.allocated_bytes[ALL].peak == 2048);
  CHECK(s.inactive_split[ALL].current == 2); /* a's hole and the tail */
  CHECK(s.inactive_split_bytes[ALL].current == (int64_t)(2 * MiB - 1024));
  tpu_mem_free(b); /* merges with both neighbours: one free segment */
  s = stats();
  CHECK(s.allocation[ALL].current == 0 && s.allocation[ALL].allocated == 2);
  CHECK(s.allocation[ALL].freed == 2);
  CHECK(s.allocated_bytes[ALL].allocated == 2048 && s.allocated_bytes[ALL].freed == 2048);
  CHECK(s.requested_bytes[ALL].current == 0 && s.active[ALL].current == 0);
  CHECK(s.inactive_split[ALL].current == 0 && s.inactive_split_bytes[ALL].current == 0);
  CHECK(s.reserved_bytes[ALL].current == (int64_t)(2 * MiB)); /* cached */

  void *big = alloc_on(0, 11 * MiB); /* its own 12 MiB segment; a 1 MiB tail is not split off */
  void *mid = alloc_on(0, 5 * MiB);  /* a shared 20 MiB segment, split */
  s = stats();
  CHECK(s.reserved_bytes[LARGE].current == (int64_t)(32 * MiB));
  CHECK(s.reserved_bytes[ALL].current == (int64_t)(34 * MiB));
  CHECK(s.segment[ALL].current == 3 && s.segment[LARGE].current == 2);
  CHECK(s.allocated_bytes[LARGE].current == (int64_t)(17 * MiB));
  CHECK(s.requested_bytes[LARGE].current == (int64_t)(16 * MiB));
  CHECK(s.inactive_split_bytes[LARGE].current == (int64_t)(15 * MiB));
  tpu_mem_free(mid);
  tpu_mem_free(big);

  tpu_mem_reset_peak(0);
  s = stats();
  CHECK(s.allocated_bytes[ALL].peak == 0 && s.reserved_bytes[ALL].peak == (int64_t)(34 * MiB));
  tpu_mem_reset_accumulated(0);
  s = stats();
  CHECK(s.allocation[ALL].allocated == 0 && s.allocation[ALL].freed == 0);
  CHECK(s.num_device_alloc == 0 && s.reserved_bytes[ALL].current == (int64_t)(34 * MiB));
  CHECK_OK(tpu_mem_empty_cache(0));
  s = stats();
  CHECK(s.reserved_bytes[ALL].current == 0 && s.segment[ALL].current == 0);
  CHECK(s.num_device_free == 3 && s.num_sync_all_streams == 1);
}

static void test_reuse_and_merge(void) {
  fresh();
  void *a = alloc_on(0, 2000);
  tpu_mem_free(a);
  CHECK(alloc_on(0, 2000) == a); /* from the cache */
  void *b = alloc_on(0, 2048), *c = alloc_on(0, 2048);
  CHECK((char *)b == (char *)a + 2048 && (char *)c == (char *)b + 2048);
  tpu_mem_free(b);
  tpu_mem_free(a);
  CHECK(alloc_on(0, 4096) == a); /* a and b merged: the best fit is the 4 KiB hole */
  CHECK(stats().num_device_alloc == 1);
  tpu_mem_free(a);
  tpu_mem_free(c);
}

static void test_zero_bytes(void) {
  fresh();
  void *a = alloc_on(0, 0), *b = alloc_on(0, 0);
  CHECK(a && b && a != b);
  tpu_mem_stats s = stats();
  CHECK(s.allocated_bytes[ALL].current == 1024 && s.requested_bytes[ALL].current == 0);
  tpu_mem_free(a);
  tpu_mem_free(b);
}

static void test_bad_input(void) {
  void *p = (void *)1;
  CHECK(tpu_mem_alloc(2, 0, 16, &p) == TPU_ERR_RUNTIME && p == NULL);
  CHECK(strstr(tpu_last_error(), "invalid device ordinal") != NULL);
  CHECK(tpu_mem_alloc(0, TPU_MAX_STREAMS, 16, &p) == TPU_ERR_VALUE);
  CHECK(tpu_mem_alloc(0, -1, 16, &p) == TPU_ERR_VALUE);
  CHECK(tpu_mem_alloc(0, 0, 16, NULL) == TPU_ERR_VALUE);
  CHECK(tpu_mem_empty_cache(7) == TPU_ERR_RUNTIME);
  int local;
  tpu_mem_free(NULL);
  tpu_mem_free(&local); /* not tpu memory: ignored */
  tpu_mem_record_stream(&local, 1);
  void *a = alloc_on(0, 100);
  tpu_mem_free((char *)a + 64); /* not a block start: ignored */
  tpu_mem_free(a);
  tpu_mem_free(a); /* double free: ignored */
  CHECK(stats().allocation[ALL].current == 0);
  tpu_mem_stats s;
  tpu_mem_get_stats(9, &s);
  CHECK(s.reserved_bytes[ALL].current == 0 && s.max_split_size == -1);
  size_t free_bytes = 1, total = 1;
  tpu_mem_info(9, &free_bytes, &total);
  CHECK(free_bytes == 0 && total == 0);
}

static void test_per_stream_pools(void) {
  fresh();
  void *a = alloc_on(0, 4096);
  tpu_mem_free(a);
  void *b = alloc_on(1, 4096); /* stream 0's cached block is not stream 1's */
  CHECK(b != a);
  tpu_mem_free(b);
  CHECK(alloc_on(0, 4096) == a);
  CHECK(alloc_on(1, 4096) == b);
  CHECK(stats().segment[ALL].current == 2);
  tpu_mem_free(a);
  tpu_mem_free(b);
}

static void test_record_stream_deferral(void) {
  fresh();
  int side;
  tpu_stream *s = blocked_stream(&side);
  void *p = alloc_on(0, MiB);
  tpu_mem_record_stream(p, side);
  tpu_mem_record_stream(p, 0); /* the allocation stream itself: nothing to wait for */
  tpu_mem_free(p);
  tpu_mem_stats st = stats();
  CHECK(st.allocation[ALL].current == 0 && st.active[ALL].current == 1); /* waiting */
  void *q = alloc_on(0, MiB), *r = alloc_on(0, MiB);
  CHECK(q != p && r != p);
  open_gate(s);
  CHECK(alloc_on(0, MiB) == p); /* checked lazily on allocation */
  tpu_mem_free(p);

  /* A recorded stream that has already finished its work does not delay the free. */
  tpu_mem_record_stream(q, side);
  tpu_mem_free(q);
  CHECK(stats().active[ALL].current == 1);
  tpu_mem_free(r);
}

static void test_oom_and_recovery(void) {
  fresh();
  void *a = alloc_on(0, 30 * MiB), *b = alloc_on(0, 30 * MiB);
  void *p = (void *)1;
  CHECK(tpu_mem_alloc(0, 0, 8 * MiB, &p) == TPU_ERR_OUT_OF_MEMORY && p == NULL);
  const char *head = "TPU out of memory. Tried to allocate 20.00 MiB. TPU 0 has a total capacity of "
                     "64.00 MiB of which 4.00 MiB is free. Of the allocated memory 60.00 MiB is "
                     "allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated.\n"
                     "TPU memory summary, device ID 0";
  CHECK(strncmp(tpu_last_error(), head, strlen(head)) == 0);
  tpu_mem_stats s = stats();
  CHECK(s.num_ooms == 1 && s.num_alloc_retries == 1 && s.num_sync_all_streams == 1);
  CHECK(tpu_mem_alloc(0, 0, SIZE_MAX, &p) == TPU_ERR_OUT_OF_MEMORY);
  CHECK(strstr(tpu_last_error(), "GiB. TPU 0 has a total capacity of 64.00 MiB") != NULL);

  tpu_mem_free(a); /* recovery: the freed segment serves the request */
  void *c = alloc_on(0, 8 * MiB);
  CHECK(c == a);
  tpu_mem_free(c);
  tpu_mem_free(b);

  /* Segments cached for stream 0 are released to make room for stream 1. */
  tpu_mem_reset_accumulated(0);
  void *big = alloc_on(1, 40 * MiB);
  s = stats();
  CHECK(s.num_alloc_retries == 1 && s.num_sync_all_streams == 0 && s.num_ooms == 0);
  CHECK(s.reserved_bytes[ALL].current == (int64_t)(40 * MiB));
  tpu_mem_free(big);
}

/* Opens the gate once the allocator has given up on its cache, i.e. while it synchronizes. */
static void *open_gate_on_retry(void *arg) {
  (void)arg;
  while (stats().num_alloc_retries == 0) {
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
  atomic_store(&gate_open, true);
  return NULL;
}

/* A block held back by record_stream is flushed by the synchronization on the OOM path. */
static void test_oom_synchronizes(void) {
  fresh();
  int side;
  tpu_stream *s = blocked_stream(&side);
  void *a = alloc_on(0, 60 * MiB);
  tpu_mem_record_stream(a, side);
  tpu_mem_free(a);
  pthread_t opener;
  pthread_create(&opener, NULL, open_gate_on_retry, NULL);
  void *b = alloc_on(0, 60 * MiB);
  pthread_join(opener, NULL);
  CHECK(b == a);
  tpu_mem_stats st = stats();
  CHECK(st.num_alloc_retries == 1 && st.num_sync_all_streams == 1 && st.num_ooms == 0);
  open_gate(s);
  tpu_mem_free(b);
}

static void test_info_and_summary(void) {
  fresh();
  void *a = alloc_on(0, 3 * MiB);
  size_t free_bytes, total;
  tpu_mem_info(0, &free_bytes, &total);
  CHECK(total == 64 * MiB && free_bytes == 44 * MiB);
  char buf[2048];
  tpu_mem_summary(0, buf, sizeof buf);
  CHECK(strstr(buf, "TPU memory summary, device ID 0") == buf);
  CHECK(strstr(buf, "| Allocated memory      |   3072 KiB |") != NULL);
  CHECK(strstr(buf, "| TPU reserved memory   |  20480 KiB |") != NULL);
  CHECK(strstr(buf, "| Allocations           |       1    |") != NULL);
  char tiny[16];
  tpu_mem_summary(0, tiny, sizeof tiny); /* truncated, terminated */
  CHECK(strlen(tiny) == sizeof tiny - 1);
  tpu_mem_free(a);
}

enum { ITERS = 3000, LIVE = 8 };

static void *stress_thread(void *arg) {
  int id = (int)(intptr_t)arg;
  unsigned char *ptr[LIVE] = {0};
  size_t len[LIVE] = {0};
  unsigned seed = 777u * (unsigned)(id + 1);
  intptr_t bad = 0;
  for (int it = 0; it < ITERS; it++) {
    seed = seed * 1103515245u + 12345u;
    int i = (int)(seed >> 8) % LIVE;
    if (ptr[i]) {
      for (size_t k = 0; k < len[i]; k += 61)
        bad += ptr[i][k] != (unsigned char)(id * LIVE + i);
      tpu_mem_free(ptr[i]);
      ptr[i] = NULL;
    } else {
      len[i] = (seed >> 4) % 16 == 0 ? MiB + (seed >> 12) % (2 * MiB) : 1 + (seed >> 12) % 70000;
      void *p = NULL;
      tpu_status st = tpu_mem_alloc(0, id, len[i], &p);
      bad += st != TPU_OK && st != TPU_ERR_OUT_OF_MEMORY; /* fragmentation may legitimately OOM */
      ptr[i] = p;
      if (p)
        memset(p, id * LIVE + i, len[i]);
    }
  }
  for (int i = 0; i < LIVE; i++)
    tpu_mem_free(ptr[i]);
  return (void *)bad;
}

static void test_threads(void) {
  fresh();
  CHECK(run_stress_threads(stress_thread) == 0);
  tpu_mem_stats s = stats();
  CHECK(s.allocation[ALL].current == 0 && s.allocated_bytes[ALL].current == 0);
  CHECK(s.active_bytes[ALL].current == 0 && s.requested_bytes[ALL].current == 0);
  CHECK(s.reserved_bytes[ALL].peak <= (int64_t)(64 * MiB));
  CHECK_OK(tpu_mem_empty_cache(0));
  CHECK(stats().reserved_bytes[ALL].current == 0);
}

/* A child forked after initialization finds a consistent allocator it may free into, and a
 * clear error if it tries to allocate. */
static void test_fork(void) {
  void *a = alloc_on(0, 100);
  pid_t pid = fork();
  if (pid == 0) {
    tpu_mem_free(a);
    void *p;
    tpu_status st = tpu_mem_alloc(0, 0, 100, &p);
    _exit(st == TPU_ERR_BAD_FORK && stats().allocation[ALL].current == 0 ? 0 : 1);
  }
  int status;
  CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK(stats().allocation[ALL].current == 1);
  tpu_mem_free(a);
}

int main(void) {
  TEST_MAIN_BEGIN();
  setenv("TORCH_TPU_DEVICE_MEMORY", "64MiB", 1);
  setenv("TORCH_TPU_NUM_DEVICES", "2", 1);
  RUN_TEST(test_alignment_uniqueness_device_of);
  RUN_TEST(test_stats_arithmetic);
  RUN_TEST(test_reuse_and_merge);
  RUN_TEST(test_zero_bytes);
  RUN_TEST(test_bad_input);
  RUN_TEST(test_per_stream_pools);
  RUN_TEST(test_record_stream_deferral);
  RUN_TEST(test_oom_and_recovery);
  RUN_TEST(test_oom_synchronizes);
  RUN_TEST(test_info_and_summary);
  RUN_TEST(test_threads);
  RUN_TEST(test_fork);
  CHECK_OK_OR(tpu_mem_empty_cache(0), 1);
  TEST_MAIN_END();
}
