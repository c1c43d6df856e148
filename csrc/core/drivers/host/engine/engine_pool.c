#include "drivers/host/engine/engine_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "device/tpu_stream.h"

/* The most threads the pool runs. */
#define TPU_POOL_MAX 256

/* How long helpers poll for the next job before they sleep: kernels come in bursts. Polling, and
 * waiting for the helpers' chunks, yield the core on every turn (see the stream's TPU_SPIN_US). */
#define TPU_POOL_SPIN_US 50.0

typedef struct job {
  tpu_chunk_fn fn;
  void *ctx;
  int64_t n;
  int chunks;
  atomic_int next;    /* next chunk to claim */
  atomic_int pending; /* chunks not finished */
} job;

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_wake = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t run_mu = PTHREAD_MUTEX_INITIALIZER; /* one parallel job at a time */
static atomic_int threads_wanted;                          /* 0: not set yet */
static int helpers_started;
static job *_Atomic current;
static atomic_uint_least64_t generation; /* bumped for every job, helpers wait for a new one */
static atomic_int helpers_inside; /* helpers that may hold a pointer to the current job */
static _Thread_local bool in_parallel;

int tpu_pool_threads(void) {
  int n = atomic_load(&threads_wanted);
  if (n <= 0) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    n = cpus > 0 ? (int)cpus : 1;
  }
  return n > TPU_POOL_MAX ? TPU_POOL_MAX : n;
}

void tpu_pool_set_threads(int threads) { atomic_store(&threads_wanted, threads < 1 ? 1 : threads); }

int tpu_parallel_chunks(int64_t n, int64_t grain) {
  if (grain < 1)
    grain = 1;
  int64_t by_grain = n / grain;
  int64_t chunks = tpu_pool_threads();
  if (by_grain < chunks)
    chunks = by_grain;
  return chunks < 1 ? 1 : (int)chunks;
}

/* Claims and runs chunks of `j` until none are left. */
static void run_chunks(job *j) {
  for (;;) {
    int c = atomic_fetch_add(&j->next, 1);
    if (c >= j->chunks)
      return;
    int64_t begin = j->n * c / j->chunks;
    int64_t end = j->n * (c + 1) / j->chunks;
    in_parallel = true;
    j->fn(begin, end, c, j->ctx);
    in_parallel = false;
    atomic_fetch_sub(&j->pending, 1);
  }
}

static void *helper_main(void *arg) {
  char name[16];
  snprintf(name, sizeof name, "tpu-pool%u", (unsigned)(uintptr_t)arg % 1000u);
  pthread_setname_np(pthread_self(), name); /* see the stream worker's */
  uint64_t seen = 0;
  for (;;) {
    double spin_until = tpu_now_us() + TPU_POOL_SPIN_US;
    while (atomic_load(&generation) == seen && tpu_now_us() < spin_until)
      sched_yield();
    pthread_mutex_lock(&pool_mu);
    while (atomic_load(&generation) == seen)
      pthread_cond_wait(&pool_wake, &pool_mu);
    seen = atomic_load(&generation);
    pthread_mutex_unlock(&pool_mu);
    /* Announce before looking: the caller waits for announced helpers before its job (on its
     * stack) goes away. */
    atomic_fetch_add(&helpers_inside, 1);
    job *j = atomic_load(&current);
    if (j)
      run_chunks(j);
    atomic_fetch_sub(&helpers_inside, 1);
  }
  return NULL;
}

/* Starts helpers up to threads - 1; called with run_mu held. Helpers live for the process. */
static void ensure_helpers(int threads) {
  while (helpers_started < threads - 1) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    int rc = pthread_create(&thread, &attr, helper_main, (void *)(intptr_t)(helpers_started + 1));
    pthread_attr_destroy(&attr);
    if (rc != 0)
      return; /* fewer helpers: the caller still runs every unclaimed chunk */
    helpers_started++;
  }
}

void tpu_parallel_for(int64_t n, int64_t grain, tpu_chunk_fn fn, void *ctx) {
  if (n <= 0)
    return;
  int chunks = tpu_parallel_chunks(n, grain);
  if (chunks == 1 || in_parallel) {
    /* Same boundaries as the parallel path, run in order here. */
    for (int c = 0; c < chunks; c++)
      fn(n * c / chunks, n * (c + 1) / chunks, c, ctx);
    return;
  }
  job j = {.fn = fn, .ctx = ctx, .n = n, .chunks = chunks};
  atomic_init(&j.next, 0);
  atomic_init(&j.pending, chunks);
  pthread_mutex_lock(&run_mu);
  ensure_helpers(tpu_pool_threads());
  pthread_mutex_lock(&pool_mu);
  atomic_store(&current, &j);
  atomic_fetch_add(&generation, 1);
  pthread_cond_broadcast(&pool_wake);
  pthread_mutex_unlock(&pool_mu);
  run_chunks(&j);
  while (atomic_load(&j.pending) > 0)
    sched_yield();
  atomic_store(&current, NULL);
  while (atomic_load(&helpers_inside) > 0)
    ;
  pthread_mutex_unlock(&run_mu);
}
