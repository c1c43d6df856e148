/* Allocation failures at every allocation of the core and its drivers (built with
 * TPU_FAULT_INJECTION; tpu_test_fault.h fails the allocation it is told to). For each scenario
 * (fault_scenarios.h) a run without failures counts its allocations, then the scenario runs once
 * for each of them with that one failing. Every failing run must leave the runtime consistent:
 *  - the scenario gets TPU_OK or an error of a kind documented for running out of memory
 *    (fault_ops.h's acceptable()), and every buffer an accepted op wrote reads back the right
 *    value or fails with such an error (its contents poisoned), never a wrong value;
 *  - once the runtime has caught up (open graphs cut, streams synchronized, their errors taken),
 *    no device block and no pinned block the run made is still allocated, and no host memory
 *    leaked (LeakSanitizer checks after each scenario and at exit: run it under ASan);
 *  - the scenario then runs again without failures and gets the same results.
 * Warm runs share one process, where the runtime has started. The cold sweep forks a process
 * for each run, before the runtime starts, so the allocations of first use fail too: streams and
 * their threads, arenas, the compile cache, the host driver's pool.
 *
 * FAULT_SCENARIO=<name> FAULT_AT=<n> runs one case: the scenario with allocation n failing. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "drivers/host/host.h"
#include "drivers/tpu_driver.h"
#include "fault_scenarios.h"
#include "tpu_test_fault.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

typedef struct scenario {
  const char *name;
  tpu_status (*run)(results *r);
  results *results; /* in memory shared with forked processes */
} scenario;

/* The cold sweep's scenario: everything, from a runtime that has not started. */
static results *cold_results[3];

static tpu_status scenario_cold(results *r) {
  (void)r;
  tpu_status st = scenario_strict(cold_results[0]);
  STEP(st, scenario_fused(cold_results[1]));
  STEP(st, scenario_streams(cold_results[2]));
  STEP(st, scenario_allocators(NULL));
  return st;
}

static scenario scenarios[] = {
    {"strict", scenario_strict, NULL},     {"fused", scenario_fused, NULL},
    {"streams", scenario_streams, NULL},   {"debug", scenario_debug, NULL},
    {"allocators", scenario_allocators, NULL}, {"graph", scenario_graph, NULL},
    {"cold", scenario_cold, NULL},
};
enum { N_SCENARIOS = sizeof scenarios / sizeof scenarios[0], COLD = N_SCENARIOS - 1 };

/* Runs past the counted ones: a run may allocate a little more than the counting run did (a
 * launch runs inline or on the worker depending on timing). */
#define SLACK 8

/* Lets the runtime catch up after a run: every open graph cut, every stream synchronized. Their
 * errors belong to the run. */
static void settle(void) {
  tpu_fused_flush_device(-1, TPU_CUT_SYNC);
  tpu_device_synchronize(0);
}

static int64_t device_blocks(void) {
  tpu_mem_stats stats;
  tpu_mem_get_stats(0, &stats);
  return stats.allocation[TPU_POOL_ALL].current;
}

static int64_t pinned_blocks(void) {
  tpu_host_stats stats;
  tpu_host_get_stats(&stats);
  return stats.allocations;
}

/* One run of `sc` with allocation `target` failing (0: none), and the checks after it; returns the
 * allocations the run counted. */
static long run_case(const scenario *sc, long target) {
  int failures = tpu_test_failures;
  int64_t blocks = device_blocks(), pinned = pinned_blocks();
  fault_arm(target);
  tpu_status st = sc->run(sc->results);
  long count = fault_disarm();
  char message[1024];
  snprintf(message, sizeof message, "%s", tpu_last_error());
  settle();
  if (st != TPU_OK && !atomic_load(&fault_fired))
    FAIL_CASE("failed without an allocation failure: %s: %s\n", tpu_status_name(st), message);
  else if (st != TPU_OK && !acceptable(st, message))
    FAIL_CASE("unexpected error: %s: %s\n", tpu_status_name(st), message);
  if (device_blocks() != blocks || pinned_blocks() != pinned)
    FAIL_CASE("still allocated: %lld device blocks (%lld before), %lld pinned (%lld before)\n",
              (long long)device_blocks(), (long long)blocks, (long long)pinned_blocks(),
              (long long)pinned);
  if (target) {
    tpu_status again = sc->run(sc->results);
    settle();
    if (again != TPU_OK)
      FAIL_CASE("the run after it failed: %s: %s\n", tpu_status_name(again), tpu_last_error());
  }
  if (tpu_test_failures != failures)
    fprintf(stderr,
            "  in scenario %s, allocation %ld failing (FAULT_SCENARIO=%s FAULT_AT=%ld), which "
            "returned %s: %s\n",
            sc->name, target, sc->name, target, tpu_status_name(st), message);
  return count;
}

/* After a scenario's runs: host memory no longer reachable is a leak of one of them. */
static void check_leaks(const scenario *sc) {
#if defined(__SANITIZE_ADDRESS__)
  if (__lsan_do_recoverable_leak_check())
    FAIL_CASE("scenario %s leaked host memory (the report above)\n", sc->name);
#else
  (void)sc;
#endif
}

/* The cold run of allocation `target` in a fresh process; returns its count of allocations. */
static long run_cold(long target, long *count_out) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    *count_out = run_case(&scenarios[COLD], target);
    exit(tpu_test_failures ? 1 : 0); /* exit, not _exit: LeakSanitizer checks at exit */
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0)
    FAIL_CASE("cold run with allocation %ld failing: the process failed (status %d)\n", target,
              status);
  return *count_out;
}

static void sweep_cold(long *shared_count) {
  long count = run_cold(0, shared_count);
  for (long n = 1; n <= count + SLACK; n++)
    run_cold(n, shared_count);
  printf("cold: %ld allocations, each failed once in a fresh process\n", count);
}

static void sweep(const scenario *sc) {
  run_case(sc, 0); /* the first use of what the scenario needs */
  long count = run_case(sc, 0);
  for (long n = 1; n <= count + SLACK; n++)
    run_case(sc, n);
  check_leaks(sc);
  printf("%s: %ld allocations, each failed once\n", sc->name, count);
}

/* Memory that forked processes write and the program reads: results and the cold count. */
static void *shared_memory(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    perror("mmap");
    exit(1);
  }
  return p;
}

int main(void) {
  TEST_MAIN_BEGIN();
  /* Two pool threads, as CI has: fewer allocations whose order depends on timing. */
  tpu_host_set_threads_fn set_threads = (tpu_host_set_threads_fn)tpu_driver_proc(TPU_HOST_SET_THREADS);
  if (set_threads)
    set_threads(2);
  for (int i = 0; i < COLD; i++)
    scenarios[i].results = shared_memory(sizeof(results));
  for (int i = 0; i < 3; i++)
    cold_results[i] = scenarios[i].results;
  long *cold_count = shared_memory(sizeof *cold_count);
  const char *only = getenv("FAULT_SCENARIO"), *at = getenv("FAULT_AT");
  if (only) {
    /* One case: a counting run (making the golden results) first, unless it is the cold one. */
    for (int i = 0; i < N_SCENARIOS; i++) {
      if (strcmp(scenarios[i].name, only) != 0)
        continue;
      if (i == COLD) {
        run_cold(0, cold_count);
        run_cold(at ? atol(at) : 0, cold_count);
      } else {
        run_case(&scenarios[i], 0);
        run_case(&scenarios[i], at ? atol(at) : 0);
      }
    }
    TEST_MAIN_END();
  }
  /* Cold first: a process forked once the runtime has started could not use it. */
  sweep_cold(cold_count);
  for (int i = 0; i < COLD; i++)
    sweep(&scenarios[i]);
  TEST_MAIN_END();
}
