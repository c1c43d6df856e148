#include "drivers/pjrt/tpu_pjrt_inflight.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "device/tpu_stream.h"
#include "drivers/pjrt/tpu_pjrt_error.h"

typedef struct queue queue;

typedef struct slot {
  queue *q;
  PJRT_Event *event;
  double launch_us, end_us;
  bool done;   /* the event reported */
  bool waited; /* its launcher waits for it and takes its error */
  tpu_status status;
  char *message; /* malloc'd with the error, or NULL */
} slot;

/* A device's outstanding executions, oldest at head, in slots[seq % TPU_PJRT_INFLIGHT]. */
struct queue {
  pthread_mutex_t mu;
  pthread_cond_t changed; /* an execution reported, or a slot came free */
  const PJRT_Api *api;
  slot slots[TPU_PJRT_INFLIGHT];
  uint64_t head, tail;
  double last_end; /* the latest completion accounted, for the busy-time union */
  tpu_status error;
  char *error_message;
};

static queue queues[TPU_MAX_DEVICES];
static pthread_once_t queues_once = PTHREAD_ONCE_INIT;
static atomic_uint_least64_t busy_ns;

static void queues_init(void) {
  for (int d = 0; d < TPU_MAX_DEVICES; d++) {
    pthread_mutex_init(&queues[d].mu, NULL);
    pthread_cond_init(&queues[d].changed, NULL);
  }
}

static queue *queue_of(size_t device) {
  pthread_once(&queues_once, queues_init);
  return &queues[device < TPU_MAX_DEVICES ? device : 0];
}

/* The completion callback, on a plugin thread (or inline when the event was ready). */
static void on_ready(PJRT_Error *error, void *arg) {
  slot *s = arg;
  queue *q = s->q;
  tpu_status st = TPU_OK;
  char *message = NULL;
  if (error) {
    st = tpu_pjrt_status(q->api, error, "PJRT_LoadedExecutable_Execute");
    message = strdup(tpu_last_error());
  }
  double end = tpu_now_us();
  pthread_mutex_lock(&q->mu);
  s->end_us = end;
  s->status = st;
  s->message = message;
  s->done = true;
  pthread_cond_broadcast(&q->changed);
  pthread_mutex_unlock(&q->mu);
}

/* With q->mu held: retires the completed executions at the head, in launch order, accounting
 * their busy time and keeping the first error nobody waited for. */
static void reap(queue *q) {
  uint64_t before = q->head;
  while (q->head != q->tail) {
    slot *s = &q->slots[q->head % TPU_PJRT_INFLIGHT];
    if (!s->done || s->waited)
      break;
    double start = s->launch_us > q->last_end ? s->launch_us : q->last_end;
    if (s->end_us > start)
      atomic_fetch_add(&busy_ns, (uint64_t)((s->end_us - start) * 1000.0));
    if (s->end_us > q->last_end)
      q->last_end = s->end_us;
    if (s->status != TPU_OK && q->error == TPU_OK) {
      q->error = s->status;
      q->error_message = s->message;
      s->message = NULL;
    }
    free(s->message);
    PJRT_Event_Destroy_Args destroy = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE,
                                       .event = s->event};
    if (s->event)
      tpu_pjrt_error_drop(q->api, q->api->PJRT_Event_Destroy(&destroy));
    q->head++;
  }
  if (q->head != before)
    pthread_cond_broadcast(&q->changed);
}

/* Sets the thread's error from a status and a message the caller owns, and frees the message. */
static tpu_status fail_with(tpu_status st, char *message) {
  if (st != TPU_OK)
    tpu_error(st, "%s", message ? message : "a PJRT execution failed");
  free(message);
  return st;
}

tpu_status tpu_pjrt_inflight_add(const PJRT_Api *api, size_t device, PJRT_Event *done,
                                 double launch_us, bool wait) {
  queue *q = queue_of(device);
  pthread_mutex_lock(&q->mu);
  q->api = api;
  reap(q);
  while (q->tail - q->head == TPU_PJRT_INFLIGHT) {
    pthread_cond_wait(&q->changed, &q->mu);
    reap(q);
  }
  slot *s = &q->slots[q->tail++ % TPU_PJRT_INFLIGHT];
  *s = (slot){.q = q, .event = done, .launch_us = launch_us, .waited = wait};
  pthread_mutex_unlock(&q->mu);
  /* Outside the lock: the callback takes it, and runs inline when the event is ready. */
  if (done) {
    PJRT_Event_OnReady_Args ready = {.struct_size = PJRT_Event_OnReady_Args_STRUCT_SIZE,
                                     .event = done,
                                     .callback = on_ready,
                                     .user_arg = s};
    PJRT_Error *failed = api->PJRT_Event_OnReady(&ready);
    if (failed) /* never called back: report the registration's error in its place */
      on_ready(failed, s);
  } else {
    on_ready(NULL, s);
  }
  if (!wait)
    return TPU_OK;
  pthread_mutex_lock(&q->mu);
  while (!s->done)
    pthread_cond_wait(&q->changed, &q->mu);
  tpu_status st = s->status;
  char *message = s->message;
  s->status = TPU_OK;
  s->message = NULL;
  s->waited = false;
  reap(q);
  pthread_mutex_unlock(&q->mu);
  return fail_with(st, message);
}

tpu_status tpu_pjrt_inflight_wait(size_t device) {
  queue *q = queue_of(device);
  pthread_mutex_lock(&q->mu);
  for (reap(q); q->head != q->tail; reap(q))
    pthread_cond_wait(&q->changed, &q->mu);
  tpu_status st = q->error;
  char *message = q->error_message;
  q->error = TPU_OK;
  q->error_message = NULL;
  pthread_mutex_unlock(&q->mu);
  return fail_with(st, message);
}

bool tpu_pjrt_inflight_idle(size_t device) {
  queue *q = queue_of(device);
  pthread_mutex_lock(&q->mu);
  reap(q);
  bool idle = q->head == q->tail;
  pthread_mutex_unlock(&q->mu);
  return idle;
}

uint64_t tpu_pjrt_inflight_busy_us(void) { return atomic_load(&busy_ns) / 1000; }

void tpu_pjrt_inflight_reset_busy(void) { atomic_store(&busy_ns, 0); }
