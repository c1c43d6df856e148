/* Streams and events: ordering, asynchrony, errors surfacing at synchronization, cross-stream
 * waits, timing, launch blocking, and tiny work run inline on an idle stream. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/tpu_event.h"
#include "device/tpu_stream.h"
#include "tpu_test.h"

typedef struct counter_ctx {
  atomic_int *log;
  atomic_int *next;
  int expected;
} counter_ctx;

static tpu_status run_in_order(void *arg) {
  counter_ctx *c = arg;
  int slot = atomic_fetch_add(c->next, 1);
  atomic_store(&c->log[slot], c->expected);
  return TPU_OK;
}

static void test_in_order(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  CHECK(s != NULL);
  enum { N = 3000 }; /* more than the queue holds, so producers wait for room */
  static atomic_int log[N];
  atomic_int next = 0;
  for (int i = 0; i < N; i++) {
    counter_ctx *c = malloc(sizeof *c);
    *c = (counter_ctx){.log = log, .next = &next, .expected = i};
    CHECK_OK(tpu_stream_submit(s, "in_order", run_in_order, free, c));
  }
  CHECK_OK(tpu_stream_synchronize(s));
  CHECK(tpu_stream_query(s));
  int ordered = 1;
  for (int i = 0; i < N; i++)
    ordered &= atomic_load(&log[i]) == i;
  CHECK(ordered);
  CHECK(tpu_stream_completed(s) == tpu_stream_submitted(s));
}

static atomic_int gate;

static tpu_status run_gated(void *arg) {
  (void)arg;
  while (!atomic_load(&gate))
    usleep(100);
  return TPU_OK;
}

static void test_async_and_query(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  atomic_store(&gate, 0);
  CHECK_OK(tpu_stream_submit(s, "gated", run_gated, NULL, NULL));
  CHECK(!tpu_stream_query(s)); /* submit returned before the work ran */
  atomic_store(&gate, 1);
  CHECK_OK(tpu_stream_synchronize(s));
  CHECK(tpu_stream_query(s));
}

static tpu_status run_failing(void *arg) {
  (void)arg;
  return tpu_error(TPU_ERR_INDEX, "index 7 is out of bounds");
}

static void test_async_error(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  CHECK_OK(tpu_stream_submit(s, "index_select", run_failing, NULL, NULL));
  tpu_status st = tpu_stream_synchronize(s);
  CHECK(st == TPU_ERR_RUNTIME);
  CHECK(strstr(tpu_last_error(), "index_select") != NULL);
  CHECK(strstr(tpu_last_error(), "out of bounds") != NULL);
  CHECK_OK(tpu_stream_synchronize(s)); /* reported once; the stream stays usable */
  CHECK_OK(tpu_stream_submit(s, "in_order", NULL, NULL, NULL));
  CHECK_OK(tpu_device_synchronize(0));
}

static void test_streams_and_events(void) {
  int a_index, b_index;
  CHECK_OK(tpu_stream_create(0, 0, &a_index));
  CHECK_OK(tpu_stream_create(0, -1, &b_index));
  CHECK(a_index != b_index && a_index > 0);
  tpu_stream *a = tpu_stream_get(0, a_index), *b = tpu_stream_get(0, b_index);
  CHECK(tpu_stream_priority(b) == -1);

  tpu_event *start, *stop;
  CHECK_OK(tpu_event_create(true, &start));
  CHECK_OK(tpu_event_create(true, &stop));
  CHECK(tpu_event_query(stop)); /* never recorded */
  atomic_store(&gate, 0);
  CHECK_OK(tpu_event_record(start, a));
  CHECK_OK(tpu_stream_submit(a, "gated", run_gated, NULL, NULL));
  CHECK_OK(tpu_event_record(stop, a));
  CHECK(!tpu_event_query(stop));
  double ms;
  CHECK(tpu_event_elapsed_ms(start, stop, &ms) != TPU_OK); /* not completed yet */

  /* b waits for a's event: work on b cannot finish before the gate opens. */
  CHECK_OK(tpu_event_block(stop, b));
  CHECK_OK(tpu_stream_submit(b, "in_order", NULL, NULL, NULL));
  usleep(2000);
  CHECK(!tpu_stream_query(b));
  usleep(3000);
  atomic_store(&gate, 1);
  CHECK_OK(tpu_event_synchronize(stop));
  CHECK(tpu_event_query(stop));
  CHECK_OK(tpu_stream_synchronize(b));
  CHECK_OK(tpu_event_elapsed_ms(start, stop, &ms));
  CHECK(ms >= 0.0);
  CHECK(tpu_event_device(stop) == 0);

  tpu_event *plain;
  CHECK_OK(tpu_event_create(false, &plain));
  CHECK_OK(tpu_event_record(plain, a));
  CHECK(tpu_event_elapsed_ms(plain, stop, &ms) != TPU_OK);
  tpu_event_destroy(plain);
  tpu_event_destroy(start);
  tpu_event_destroy(stop);
}

static void test_launch_blocking(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  tpu_set_launch_blocking(true);
  tpu_status st = tpu_stream_submit(s, "index_select", run_failing, NULL, NULL);
  CHECK(st == TPU_ERR_INDEX); /* raised at the op */
  CHECK(strstr(tpu_last_error(), "out of bounds") != NULL);
  CHECK_OK(tpu_stream_synchronize(s));
  tpu_set_launch_blocking(false);
}

static pthread_t ran_on;

static tpu_status run_record_thread(void *arg);

static bool worker_blocking;

static tpu_status run_record_blocking(void *arg) {
  (void)arg;
  worker_blocking = tpu_launch_blocking();
  return TPU_OK;
}

static void *submit_and_record(void *arg) {
  CHECK_OK_OR(tpu_stream_submit(arg, "on another thread", run_record_thread, NULL, NULL), NULL);
  CHECK_OK_OR(tpu_stream_synchronize(arg), NULL);
  return NULL;
}

/* A thread's override wins over the process setting, for that thread alone; work queued while
 * the process blocks runs on the worker, which never blocks. */
static void test_thread_launch_blocking(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  CHECK(tpu_thread_launch_blocking() == -1);
  tpu_set_thread_launch_blocking(1);
  CHECK(tpu_launch_blocking());
  CHECK(tpu_stream_submit(s, "index_select", run_failing, NULL, NULL) == TPU_ERR_INDEX);
  CHECK_OK(tpu_stream_synchronize(s));
  pthread_t other; /* no override there: the process setting (off) holds */
  CHECK(pthread_create(&other, NULL, submit_and_record, s) == 0);
  CHECK(pthread_join(other, NULL) == 0);
  CHECK(!pthread_equal(ran_on, other));

  tpu_set_launch_blocking(true);
  tpu_set_thread_launch_blocking(0);
  CHECK(!tpu_launch_blocking());
  CHECK_OK(tpu_stream_submit(s, "index_select", run_failing, NULL, NULL)); /* queued */
  CHECK(tpu_stream_synchronize(s) == TPU_ERR_RUNTIME); /* an asynchronous error */
  worker_blocking = true;
  CHECK_OK(tpu_stream_submit(s, "blocking?", run_record_blocking, NULL, NULL));
  CHECK_OK(tpu_stream_synchronize(s));
  CHECK(!worker_blocking);
  CHECK(pthread_create(&other, NULL, submit_and_record, s) == 0);
  CHECK(pthread_join(other, NULL) == 0);
  CHECK(pthread_equal(ran_on, other)); /* inline on the thread that follows the process */
  tpu_set_launch_blocking(false);
  tpu_set_thread_launch_blocking(-1);
  CHECK(tpu_thread_launch_blocking() == -1);
}

static tpu_status run_record_thread(void *arg) {
  (void)arg;
  ran_on = pthread_self();
  return TPU_OK;
}

/* Inline work that other threads' submissions must queue behind. */
static tpu_status run_inline_then_submit(void *arg) {
  counter_ctx *first = arg;
  tpu_stream *s = tpu_stream_get(0, 0);
  counter_ctx *second = malloc(sizeof *second);
  *second = (counter_ctx){.log = first->log, .next = first->next, .expected = 1};
  CHECK_OK_OR(tpu_stream_submit(s, "after", run_in_order, free, second), TPU_ERR_RUNTIME);
  usleep(2000); /* the worker holds the queued work until this inline work completes */
  return run_in_order(first);
}

static void test_run_if_idle(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  CHECK_OK(tpu_stream_synchronize(s));
  ran_on = (pthread_t)0;
  CHECK(tpu_stream_run_if_idle(s, "tiny", run_record_thread, NULL, NULL));
  CHECK(pthread_equal(ran_on, pthread_self()));
  CHECK(tpu_stream_query(s));

  atomic_store(&gate, 0);
  CHECK_OK(tpu_stream_submit(s, "gated", run_gated, NULL, NULL));
  CHECK(!tpu_stream_run_if_idle(s, "tiny", run_record_thread, NULL, NULL)); /* busy: refused */
  atomic_store(&gate, 1);
  CHECK_OK(tpu_stream_synchronize(s));

  static atomic_int log[2];
  atomic_int next = 0;
  counter_ctx first = {.log = log, .next = &next, .expected = 0};
  CHECK(tpu_stream_run_if_idle(s, "tiny", run_inline_then_submit, NULL, &first));
  CHECK_OK(tpu_stream_synchronize(s));
  CHECK(atomic_load(&log[0]) == 0 && atomic_load(&log[1]) == 1);

  /* An error in inline work surfaces at the next sync, as from the worker. */
  CHECK(tpu_stream_run_if_idle(s, "index_select", run_failing, NULL, NULL));
  CHECK(tpu_stream_synchronize(s) == TPU_ERR_RUNTIME);
  CHECK(strstr(tpu_last_error(), "index_select") != NULL);
  CHECK_OK(tpu_stream_synchronize(s));

  tpu_set_launch_blocking(true); /* debug mode keeps its own inline path, raising at the op */
  CHECK(!tpu_stream_run_if_idle(s, "tiny", run_record_thread, NULL, NULL));
  tpu_set_launch_blocking(false);
}

static void test_bad_arguments(void) {
  CHECK(tpu_stream_get(0, TPU_MAX_STREAMS) == NULL);
  CHECK(tpu_stream_get(99, 0) == NULL);
  int index;
  CHECK(tpu_stream_create(99, 0, &index) != TPU_OK);
  CHECK(tpu_device_synchronize(-1) != TPU_OK);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_in_order);
  RUN_TEST(test_async_and_query);
  RUN_TEST(test_async_error);
  RUN_TEST(test_streams_and_events);
  RUN_TEST(test_launch_blocking);
  RUN_TEST(test_thread_launch_blocking);
  RUN_TEST(test_run_if_idle);
  RUN_TEST(test_bad_arguments);
  TEST_MAIN_END();
}
