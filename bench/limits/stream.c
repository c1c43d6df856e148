/* STREAM-style copy (a = b) and triad (a = b + s*c) in double precision over arrays far larger than
 * the last-level cache, one thread per core. Bytes are counted the STREAM way (16 and 24 per
 * element: write-allocate traffic is not counted), so results compare with published STREAM runs.
 * Built at the baseline ISA; target_clones lets the loader pick AVX-512/AVX2 code by cpuid. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

enum { KIND_COPY = 0, KIND_TRIAD = 1 };

typedef struct {
  double *a, *b, *c;
  size_t lo, hi;
  int kind, reps, tid;
  pthread_barrier_t *bar;
  double *seconds; /* per repetition, written by thread 0 */
} job_t;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

__attribute__((target_clones("avx512f", "avx2", "default"), noinline)) static void
copy_kernel(double *restrict a, const double *restrict b, size_t lo, size_t hi) {
  for (size_t i = lo; i < hi; i++) a[i] = b[i];
}

__attribute__((target_clones("avx512f", "avx2", "default"), noinline)) static void
triad_kernel(double *restrict a, const double *restrict b, const double *restrict c, double s,
             size_t lo, size_t hi) {
  for (size_t i = lo; i < hi; i++) a[i] = b[i] + s * c[i];
}

static void *worker(void *arg) {
  job_t *j = arg;
  /* First touch by the thread that will stream the slice, as STREAM does with OpenMP. */
  for (size_t i = j->lo; i < j->hi; i++) {
    j->a[i] = 1.0;
    j->b[i] = 2.0;
    j->c[i] = 0.5;
  }
  for (int r = 0; r < j->reps; r++) {
    pthread_barrier_wait(j->bar);
    double t0 = now();
    if (j->kind == KIND_COPY)
      copy_kernel(j->a, j->b, j->lo, j->hi);
    else
      triad_kernel(j->a, j->b, j->c, 3.0, j->lo, j->hi);
    pthread_barrier_wait(j->bar);
    if (j->tid == 0) j->seconds[r] = now() - t0;
  }
  return NULL;
}

/* Returns 0 on success, -1 when memory or threads are unavailable, -2 when the result is wrong. */
int tpb_stream(int kind, size_t n, int threads, int reps, double *seconds) {
  if (threads < 1 || threads > 256 || reps < 1) return -1;
  size_t bytes = (n * sizeof(double) + 63) / 64 * 64;
  double *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes), *c = aligned_alloc(64, bytes);
  job_t jobs[256];
  pthread_t tids[256];
  pthread_barrier_t bar;
  int rc = 0, started = 0;
  if (!a || !b || !c || pthread_barrier_init(&bar, NULL, (unsigned)threads) != 0) {
    free(a), free(b), free(c);
    return -1;
  }
  for (int t = 0; t < threads; t++) {
    jobs[t] = (job_t){a, b, c, n * (size_t)t / (size_t)threads, n * (size_t)(t + 1) / (size_t)threads,
                      kind, reps, t, &bar, seconds};
  }
  for (int t = 1; t < threads; t++) {
    if (pthread_create(&tids[t], NULL, worker, &jobs[t]) != 0) {
      rc = -1; /* the barrier would never open: give up before the calling thread joins it */
      break;
    }
    started++;
  }
  if (rc == 0) worker(&jobs[0]);
  for (int t = 1; t <= started; t++) pthread_join(tids[t], NULL);
  if (rc == 0) {
    double want = kind == KIND_COPY ? 2.0 : 3.5;
    for (size_t i = 0; i < n; i += 4093)
      if (a[i] != want) rc = -2;
  }
  pthread_barrier_destroy(&bar);
  free(a), free(b), free(c);
  return rc;
}
