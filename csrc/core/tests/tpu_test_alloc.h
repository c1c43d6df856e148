/* Helpers shared by the allocator tests (test_allocator.c, test_host_alloc.c): a stream held busy
 * until the test opens a gate, so memory freed on it stays deferred, and a stress run over several
 * threads. */
#ifndef TPU_TEST_ALLOC_H
#define TPU_TEST_ALLOC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "device/tpu_stream.h"
#include "tpu_test.h"

/* Work that blocks its stream until the test opens the gate. */
static atomic_bool gate_open;

static tpu_status wait_gate(void *ctx) {
  (void)ctx;
  while (!atomic_load(&gate_open)) {
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
  return TPU_OK;
}

/* A new stream of device 0 (its index in *index) whose queue waits at a closed gate. */
static inline tpu_stream *blocked_stream(int *index) {
  CHECK_OK_OR(tpu_stream_create(0, 0, index), NULL);
  tpu_stream *s = tpu_stream_get(0, *index);
  atomic_store(&gate_open, false);
  CHECK_OK_OR(tpu_stream_submit(s, "wait_gate", wait_gate, NULL, NULL), NULL);
  return s;
}

/* Opens the gate and waits until `s` has run everything queued. */
static inline void open_gate(tpu_stream *s) {
  atomic_store(&gate_open, true);
  CHECK_OK(tpu_stream_synchronize(s));
}

enum { STRESS_THREADS = 4 };

/* Runs `thread` on STRESS_THREADS threads at once, each given its index (0, 1, ...) as its
 * argument, and returns the sum of what they return: their counts of failed checks. */
static inline intptr_t run_stress_threads(void *(*thread)(void *)) {
  pthread_t threads[STRESS_THREADS];
  for (intptr_t t = 0; t < STRESS_THREADS; t++)
    pthread_create(&threads[t], NULL, thread, (void *)t);
  intptr_t bad = 0;
  for (int t = 0; t < STRESS_THREADS; t++) {
    void *r;
    pthread_join(threads[t], &r);
    bad += (intptr_t)r;
  }
  return bad;
}

#endif
