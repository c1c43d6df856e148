/* The PJRT driver's outstanding executions (drivers/pjrt/tpu_pjrt_inflight.h), against a fake
 * PJRT_Api whose events the test completes by hand: a launch returns before its execution
 * completes and the device is busy until then; an error of an execution nobody waited for comes
 * back once, from the device's next wait; a launch that waits gets its own error, which no later
 * wait repeats; an event ready before registration, or one whose registration fails, still
 * reports; the busy time covers launch to completion; a device with TPU_PJRT_INFLIGHT outstanding
 * holds the next launch until the oldest completes. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "device/tpu_stream.h"
#include "drivers/pjrt/tpu_pjrt_inflight.h"
#include "tpu_test.h"

/* A fake error: the header's PJRT_Error first, so a pointer to one is a pointer to the other. */
typedef struct fake_error {
  PJRT_Error base;
  PJRT_Error_Code code;
  const char *message;
} fake_error;

static const fake_error *fake(const PJRT_Error *error) { return (const fake_error *)error; }

/* A fake event: completed by fire(); its callback, once registered, runs then. */
struct PJRT_Event {
  PJRT_Event_OnReadyCallback callback;
  void *arg;
  bool ready;
  PJRT_Error *error;
  pthread_mutex_t mu;
};

static fake_error refused = {{NULL}, PJRT_Error_Code_UNAVAILABLE, "cannot watch that event"};
static bool refuse_next;

static void error_destroy(PJRT_Error_Destroy_Args *args) {
  (void)args; /* the fake's errors are static */
}

static void error_message(PJRT_Error_Message_Args *args) {
  args->message = fake(args->error)->message;
  args->message_size = strlen(fake(args->error)->message);
}

static PJRT_Error *error_code(PJRT_Error_GetCode_Args *args) {
  args->code = fake(args->error)->code;
  return NULL;
}

static atomic_int destroyed;

static PJRT_Error *event_destroy(PJRT_Event_Destroy_Args *args) {
  atomic_fetch_add(&destroyed, 1);
  pthread_mutex_destroy(&args->event->mu);
  return NULL;
}

static PJRT_Error *event_on_ready(PJRT_Event_OnReady_Args *args) {
  if (refuse_next) {
    refuse_next = false;
    return &refused.base;
  }
  PJRT_Event *e = args->event;
  pthread_mutex_lock(&e->mu);
  bool ready = e->ready;
  e->callback = args->callback;
  e->arg = args->user_arg;
  pthread_mutex_unlock(&e->mu);
  if (ready)
    args->callback(e->error, args->user_arg);
  return NULL;
}

static PJRT_Api fake_api;

static void event_init(PJRT_Event *e) {
  memset(e, 0, sizeof *e);
  pthread_mutex_init(&e->mu, NULL);
}

/* Completes the event (with `error`, or none). */
static void fire(PJRT_Event *e, PJRT_Error *error) {
  pthread_mutex_lock(&e->mu);
  e->ready = true;
  e->error = error;
  PJRT_Event_OnReadyCallback callback = e->callback;
  void *arg = e->arg;
  pthread_mutex_unlock(&e->mu);
  if (callback)
    callback(error, arg);
}

static fake_error oom = {{NULL}, PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of device memory (fake)"};
static fake_error broken = {{NULL}, PJRT_Error_Code_INTERNAL, "the chip fell over (fake)"};

static void test_completion_and_errors_nobody_waited_for(void) {
  PJRT_Event a, b;
  event_init(&a);
  event_init(&b);
  tpu_pjrt_inflight_reset_busy();
  CHECK_OK(tpu_pjrt_inflight_add(&fake_api, 0, &a, tpu_now_us(), false));
  CHECK_OK(tpu_pjrt_inflight_add(&fake_api, 0, &b, tpu_now_us(), false));
  CHECK(!tpu_pjrt_inflight_idle(0));
  CHECK(tpu_pjrt_inflight_idle(1)); /* another device is not held up */
  usleep(3000);
  fire(&b, &oom.base); /* completes out of order: the device stays busy until a completes */
  CHECK(!tpu_pjrt_inflight_idle(0));
  fire(&a, NULL);
  CHECK(tpu_pjrt_inflight_idle(0));
  CHECK(tpu_pjrt_inflight_wait(0) == TPU_ERR_OUT_OF_MEMORY);
  CHECK(strstr(tpu_last_error(), "out of device memory (fake)") != NULL);
  CHECK(tpu_pjrt_inflight_wait(0) == TPU_OK); /* reported once */
  CHECK(tpu_pjrt_inflight_busy_us() >= 3000);
}

typedef struct waiting_launch {
  PJRT_Event event;
  tpu_status status;
  char message[256];
  atomic_bool returned;
} waiting_launch;

static void *launch_and_wait(void *arg) {
  waiting_launch *w = arg;
  w->status = tpu_pjrt_inflight_add(&fake_api, 2, &w->event, tpu_now_us(), true);
  snprintf(w->message, sizeof w->message, "%s", tpu_last_error());
  atomic_store(&w->returned, true);
  return NULL;
}

static void test_a_waiting_launch_takes_its_own_error(void) {
  waiting_launch w = {0};
  event_init(&w.event);
  pthread_t thread;
  if (pthread_create(&thread, NULL, launch_and_wait, &w) != 0) {
    CHECK(!"a thread to launch from");
    return;
  }
  usleep(2000);
  CHECK(!atomic_load(&w.returned));
  fire(&w.event, &broken.base);
  pthread_join(thread, NULL);
  CHECK(w.status == TPU_ERR_RUNTIME && strstr(w.message, "the chip fell over") != NULL);
  CHECK(tpu_pjrt_inflight_wait(2) == TPU_OK);
}

static void test_ready_events_and_refused_registrations_report(void) {
  PJRT_Event ready, refused_event;
  event_init(&ready);
  event_init(&refused_event);
  fire(&ready, NULL); /* ready before it is registered: the callback runs inline */
  CHECK_OK(tpu_pjrt_inflight_add(&fake_api, 3, &ready, tpu_now_us(), false));
  CHECK(tpu_pjrt_inflight_idle(3));
  refuse_next = true;
  CHECK_OK(tpu_pjrt_inflight_add(&fake_api, 3, &refused_event, tpu_now_us(), false));
  CHECK(tpu_pjrt_inflight_idle(3));
  CHECK(tpu_pjrt_inflight_wait(3) == TPU_ERR_RUNTIME);
  CHECK(strstr(tpu_last_error(), "cannot watch that event") != NULL);
  CHECK_OK(tpu_pjrt_inflight_add(&fake_api, 3, NULL, tpu_now_us(), true)); /* no event: done */
}

static PJRT_Event held[TPU_PJRT_INFLIGHT];

static void *launch_one_more(void *arg) {
  waiting_launch *w = arg;
  w->status = tpu_pjrt_inflight_add(&fake_api, 4, &w->event, tpu_now_us(), false);
  atomic_store(&w->returned, true);
  return NULL;
}

static void test_a_full_device_holds_the_next_launch(void) {
  for (int i = 0; i < TPU_PJRT_INFLIGHT; i++) {
    event_init(&held[i]);
    CHECK_OK(tpu_pjrt_inflight_add(&fake_api, 4, &held[i], tpu_now_us(), false));
  }
  waiting_launch w = {0};
  event_init(&w.event);
  pthread_t thread;
  if (pthread_create(&thread, NULL, launch_one_more, &w) != 0) {
    CHECK(!"a thread to launch from");
    return;
  }
  usleep(2000);
  CHECK(!atomic_load(&w.returned));
  fire(&held[1], NULL); /* not the oldest: still full */
  usleep(2000);
  CHECK(!atomic_load(&w.returned));
  fire(&held[0], NULL);
  pthread_join(thread, NULL);
  CHECK(w.status == TPU_OK);
  for (int i = 2; i < TPU_PJRT_INFLIGHT; i++)
    fire(&held[i], NULL);
  fire(&w.event, NULL);
  CHECK(tpu_pjrt_inflight_wait(4) == TPU_OK);
}

int main(void) {
  fake_api.struct_size = PJRT_Api_STRUCT_SIZE;
  fake_api.PJRT_Error_Destroy = error_destroy;
  fake_api.PJRT_Error_Message = error_message;
  fake_api.PJRT_Error_GetCode = error_code;
  fake_api.PJRT_Event_Destroy = event_destroy;
  fake_api.PJRT_Event_OnReady = event_on_ready;
  test_completion_and_errors_nobody_waited_for();
  test_a_waiting_launch_takes_its_own_error();
  test_ready_events_and_refused_registrations_report();
  test_a_full_device_holds_the_next_launch();
  /* Every event handed over was destroyed once retired (the one refused included). */
  CHECK(atomic_load(&destroyed) == 2 + 1 + 2 + TPU_PJRT_INFLIGHT + 1);
  return tpu_test_failures ? 1 : 0;
}
