#include "device/tpu_stream.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/tpu_env.h"
#include "device/tpu_device.h"

/* How long an idle worker polls before it sleeps, and how long a waiter polls before it blocks:
 * a wake-up through the kernel costs tens of microseconds, more than most tiny ops. Polling yields
 * the core on every turn: the stream's worker and the pool's helpers are as many threads as cores,
 * so a polling waiter would otherwise keep a helper that a kernel waits for off its core. */
#define TPU_SPIN_US 50.0

typedef struct work_item {
  const char *name;
  tpu_work_run_fn run;
  tpu_work_done_fn done;
  void *ctx;
  uint64_t seq;
} work_item;

struct tpu_stream {
  int device;
  int index;
  int priority;
  pthread_mutex_t mu;
  pthread_cond_t not_empty; /* worker waits for work */
  pthread_cond_t not_full;  /* producers wait for room */
  pthread_cond_t progress;  /* waiters for completion */
  work_item ring[TPU_STREAM_QUEUE_LEN];
  uint64_t head; /* items taken by the worker */
  uint64_t tail; /* items submitted */
  atomic_uint_least64_t submitted;
  atomic_uint_least64_t completed;
  bool worker_started;
  bool worker_sleeping;
  tpu_status error;
  char error_message[4096];
};

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static tpu_stream *_Atomic registry[TPU_MAX_DEVICES][TPU_MAX_STREAMS];
static int next_index[TPU_MAX_DEVICES];
static int next_pooled[TPU_MAX_DEVICES];
static atomic_int launch_blocking = -1; /* -1: not read from the environment yet */

double tpu_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* -1: the thread follows the process setting (launch_blocking). */
static _Thread_local signed char thread_launch_blocking = -1;

void tpu_set_thread_launch_blocking(int on) {
  thread_launch_blocking = (signed char)(on < 0 ? -1 : on > 0);
}

int tpu_thread_launch_blocking(void) { return thread_launch_blocking; }

bool tpu_launch_blocking(void) {
  if (thread_launch_blocking >= 0)
    return thread_launch_blocking == 1;
  int v = atomic_load(&launch_blocking);
  if (v < 0) {
    v = tpu_env_flag("TORCH_TPU_LAUNCH_BLOCKING", false);
    int expected = -1;
    atomic_compare_exchange_strong(&launch_blocking, &expected, v);
    v = atomic_load(&launch_blocking);
  }
  return v == 1;
}

void tpu_set_launch_blocking(bool on) { atomic_store(&launch_blocking, on ? 1 : 0); }

static tpu_stream *stream_new(int device, int index, int priority) {
  tpu_stream *s = calloc(1, sizeof *s);
  if (!s)
    return NULL;
  s->device = device;
  s->index = index;
  s->priority = priority;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->not_empty, NULL);
  pthread_cond_init(&s->not_full, NULL);
  pthread_cond_init(&s->progress, NULL);
  return s;
}

/* Streams live for the whole process: queued work may reference them until exit, and tearing
 * workers down in static destructors races with interpreter shutdown. */
static tpu_stream *stream_lookup(int device, int index, bool create, int priority) {
  tpu_stream *s = atomic_load(&registry[device][index]);
  if (s || !create)
    return s;
  pthread_mutex_lock(&registry_mu);
  s = atomic_load(&registry[device][index]);
  if (!s) {
    s = stream_new(device, index, priority);
    atomic_store(&registry[device][index], s);
  }
  pthread_mutex_unlock(&registry_mu);
  return s;
}

tpu_stream *tpu_stream_get(int device, int index) {
  if (tpu_device_check(device) != TPU_OK || index < 0 || index >= TPU_MAX_STREAMS)
    return NULL;
  return stream_lookup(device, index, true, 0);
}

tpu_status tpu_stream_create(int device, int priority, int *index_out) {
  tpu_status st = tpu_device_check(device);
  if (st != TPU_OK)
    return st;
  pthread_mutex_lock(&registry_mu);
  int index;
  if (next_index[device] == 0)
    next_index[device] = 1;
  if (next_index[device] < TPU_MAX_STREAMS) {
    index = next_index[device]++;
  } else {
    index = 1 + next_pooled[device]++ % (TPU_MAX_STREAMS - 1);
  }
  pthread_mutex_unlock(&registry_mu);
  if (!stream_lookup(device, index, true, priority))
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate a stream");
  *index_out = index;
  return TPU_OK;
}

int tpu_stream_device(const tpu_stream *s) { return s->device; }
int tpu_stream_index(const tpu_stream *s) { return s->index; }
int tpu_stream_priority(const tpu_stream *s) { return s->priority; }

uint64_t tpu_stream_submitted(const tpu_stream *s) { return atomic_load(&s->submitted); }
uint64_t tpu_stream_completed(const tpu_stream *s) { return atomic_load(&s->completed); }

static void record_error(tpu_stream *s, const char *name, tpu_status st, const char *message) {
  pthread_mutex_lock(&s->mu);
  if (s->error == TPU_OK) {
    /* Reported away from the op, like CUDA's asynchronous errors: a RuntimeError naming the op,
     * except running out of memory, which keeps its kind. */
    s->error = st == TPU_ERR_OUT_OF_MEMORY ? st : TPU_ERR_RUNTIME;
    snprintf(s->error_message, sizeof s->error_message,
             "an asynchronous error occurred in tpu op '%s': %s", name, message);
  }
  pthread_mutex_unlock(&s->mu);
}

static void *worker_main(void *arg) {
  tpu_stream *s = arg;
  /* What runs here is asynchronous work, whatever the process setting says (debug checks apply
   * to work run inline only). */
  tpu_set_thread_launch_blocking(0);
  /* Named, so profilers and debuggers tell it from the thread that started it (often
   * autograd's, whose name it would inherit). */
  char name[16];
  snprintf(name, sizeof name, "tpu%u-stream%u", (unsigned)s->device % 100u, (unsigned)s->index % 1000u);
  pthread_setname_np(pthread_self(), name);
  for (;;) {
    double spin_until = tpu_now_us() + TPU_SPIN_US;
    while (atomic_load(&s->submitted) == atomic_load(&s->completed) && tpu_now_us() < spin_until)
      sched_yield();
    pthread_mutex_lock(&s->mu);
    while (s->head == s->tail) {
      s->worker_sleeping = true;
      pthread_cond_wait(&s->not_empty, &s->mu);
      s->worker_sleeping = false;
    }
    work_item item = s->ring[s->head % TPU_STREAM_QUEUE_LEN];
    pthread_mutex_unlock(&s->mu);
    /* The previous work may be running inline on its producer's thread. */
    tpu_stream_wait_for(s, item.seq - 1);

    tpu_status st = item.run ? item.run(item.ctx) : TPU_OK;
    if (st != TPU_OK)
      record_error(s, item.name, st, tpu_last_error());
    if (item.done)
      item.done(item.ctx);

    pthread_mutex_lock(&s->mu);
    s->head++;
    atomic_store(&s->completed, item.seq);
    pthread_cond_broadcast(&s->progress);
    pthread_cond_signal(&s->not_full);
    pthread_mutex_unlock(&s->mu);
  }
  return NULL;
}

static tpu_status start_worker(tpu_stream *s) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  int rc = pthread_create(&thread, &attr, worker_main, s);
  pthread_attr_destroy(&attr);
  if (rc != 0)
    return tpu_error(TPU_ERR_RUNTIME, "cannot start the worker thread of tpu stream %d", s->index);
  s->worker_started = true;
  return TPU_OK;
}

void tpu_stream_wait_for(tpu_stream *s, uint64_t seq) {
  if (atomic_load(&s->completed) >= seq)
    return;
  double spin_until = tpu_now_us() + TPU_SPIN_US;
  while (tpu_now_us() < spin_until) {
    if (atomic_load(&s->completed) >= seq)
      return;
    sched_yield();
  }
  pthread_mutex_lock(&s->mu);
  while (atomic_load(&s->completed) < seq)
    pthread_cond_wait(&s->progress, &s->mu);
  pthread_mutex_unlock(&s->mu);
}

static tpu_status run_inline(tpu_stream *s, tpu_work_run_fn run, tpu_work_done_fn done,
                             void *ctx) {
  tpu_stream_wait_for(s, atomic_load(&s->submitted));
  tpu_status st = run ? run(ctx) : TPU_OK;
  if (st != TPU_OK) {
    /* Keep the message: `done` may free what tpu_last_error points into. */
    char message[4096];
    snprintf(message, sizeof message, "%s", tpu_last_error());
    if (done)
      done(ctx);
    return tpu_error(st, "%s", message);
  }
  if (done)
    done(ctx);
  return TPU_OK;
}

tpu_status tpu_stream_submit(tpu_stream *s, const char *name, tpu_work_run_fn run,
                             tpu_work_done_fn done, void *ctx) {
  tpu_status st = tpu_device_check(s->device);
  if (st != TPU_OK) {
    if (done)
      done(ctx);
    return st;
  }
  tpu_runtime_mark_initialized();
  if (tpu_launch_blocking())
    return run_inline(s, run, done, ctx);

  pthread_mutex_lock(&s->mu);
  if (!s->worker_started && (st = start_worker(s)) != TPU_OK) {
    pthread_mutex_unlock(&s->mu);
    if (done)
      done(ctx);
    return st;
  }
  while (s->tail - s->head >= TPU_STREAM_QUEUE_LEN)
    pthread_cond_wait(&s->not_full, &s->mu);
  uint64_t seq = ++s->tail;
  s->ring[(seq - 1) % TPU_STREAM_QUEUE_LEN] =
      (work_item){.name = name, .run = run, .done = done, .ctx = ctx, .seq = seq};
  atomic_store(&s->submitted, seq);
  if (s->worker_sleeping)
    pthread_cond_signal(&s->not_empty);
  pthread_mutex_unlock(&s->mu);
  return TPU_OK;
}

/* Whether the worker has run everything submitted (the driver may still be running it). */
static bool worker_idle(const tpu_stream *s) {
  return atomic_load(&s->completed) >= atomic_load(&s->submitted);
}

bool tpu_stream_run_if_idle(tpu_stream *s, const char *name, tpu_work_run_fn run,
                            tpu_work_done_fn done, void *ctx) {
  if (tpu_launch_blocking() || !worker_idle(s))
    return false;
  pthread_mutex_lock(&s->mu);
  bool idle = s->head == s->tail && atomic_load(&s->completed) == s->tail;
  uint64_t seq = 0;
  if (idle) {
    /* Claim the next sequence number, taken off the ring at once so the worker skips it; work
     * submitted meanwhile waits for it in the worker. */
    seq = ++s->tail;
    s->head++;
    atomic_store(&s->submitted, seq);
  }
  pthread_mutex_unlock(&s->mu);
  if (!idle)
    return false;
  tpu_runtime_mark_initialized();
  tpu_status st = run(ctx);
  if (st != TPU_OK)
    record_error(s, name, st, tpu_last_error());
  if (done)
    done(ctx);
  pthread_mutex_lock(&s->mu);
  atomic_store(&s->completed, seq);
  pthread_cond_broadcast(&s->progress);
  pthread_mutex_unlock(&s->mu);
  return true;
}

typedef struct wait_ctx {
  tpu_stream *other;
  uint64_t seq;
} wait_ctx;

static tpu_status run_wait(void *arg) {
  wait_ctx *w = arg;
  tpu_stream_wait_for(w->other, w->seq);
  return TPU_OK;
}

tpu_status tpu_stream_wait_other(tpu_stream *waiter, tpu_stream *other, uint64_t seq) {
  if (waiter == other || atomic_load(&other->completed) >= seq)
    return TPU_OK;
  wait_ctx *w = malloc(sizeof *w);
  if (!w)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate a stream dependency");
  *w = (wait_ctx){.other = other, .seq = seq};
  return tpu_stream_submit(waiter, "wait_stream", run_wait, free, w);
}

tpu_status tpu_stream_synchronize(tpu_stream *s) {
  tpu_stream_wait_for(s, atomic_load(&s->submitted));
  tpu_status drained = tpu_device_drain(s->device);
  if (drained != TPU_OK)
    record_error(s, "device execution", drained, tpu_last_error());
  pthread_mutex_lock(&s->mu);
  tpu_status st = s->error;
  if (st != TPU_OK) {
    tpu_error(st, "%s", s->error_message);
    s->error = TPU_OK;
  }
  pthread_mutex_unlock(&s->mu);
  return st;
}

bool tpu_stream_query(const tpu_stream *s) {
  return worker_idle(s) && tpu_device_drained(s->device);
}

tpu_status tpu_device_synchronize(int device) {
  tpu_status st = tpu_device_check(device);
  if (st != TPU_OK)
    return st;
  tpu_status first = TPU_OK;
  char message[4096] = "";
  for (int i = 0; i < TPU_MAX_STREAMS; i++) {
    tpu_stream *s = stream_lookup(device, i, false, 0);
    if (!s)
      continue;
    st = tpu_stream_synchronize(s);
    if (st != TPU_OK && first == TPU_OK) {
      first = st;
      snprintf(message, sizeof message, "%s", tpu_last_error());
    }
  }
  return first == TPU_OK ? TPU_OK : tpu_error(first, "%s", message);
}
