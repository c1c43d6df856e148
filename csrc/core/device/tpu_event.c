#include "device/tpu_event.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "device/tpu_device.h"

struct tpu_event {
  atomic_int refs; /* the owner and each queued time stamp */
  bool timing;
  tpu_stream *_Atomic stream;
  atomic_uint_least64_t seq;
  atomic_uint generation; /* which recording a queued time stamp belongs to */
  _Atomic double time_us;
  atomic_bool stamped;
};

typedef struct stamp_ctx {
  tpu_event *event;
  unsigned generation;
  int device;
} stamp_ctx;

tpu_status tpu_event_create(bool timing, tpu_event **out) {
  tpu_event *e = calloc(1, sizeof *e);
  if (!e)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate an event");
  atomic_init(&e->refs, 1);
  e->timing = timing;
  *out = e;
  return TPU_OK;
}

static void event_unref(tpu_event *e) {
  if (atomic_fetch_sub(&e->refs, 1) == 1)
    free(e);
}

void tpu_event_destroy(tpu_event *e) {
  if (e)
    event_unref(e);
}

/* The time stamp is taken once the chip has finished the work before it, also when the driver
 * runs that work asynchronously. */
static tpu_status run_stamp(void *arg) {
  stamp_ctx *c = arg;
  tpu_status st = tpu_device_drain(c->device);
  if (atomic_load(&c->event->generation) == c->generation) {
    atomic_store(&c->event->time_us, tpu_now_us());
    atomic_store(&c->event->stamped, true);
  }
  return st;
}

static void done_stamp(void *arg) {
  stamp_ctx *c = arg;
  event_unref(c->event);
  free(c);
}

tpu_status tpu_event_record(tpu_event *e, tpu_stream *stream) {
  unsigned generation = atomic_fetch_add(&e->generation, 1) + 1;
  atomic_store(&e->stamped, false);
  if (!e->timing) {
    atomic_store(&e->seq, tpu_stream_submitted(stream));
    atomic_store(&e->stream, stream);
    return TPU_OK;
  }
  stamp_ctx *c = malloc(sizeof *c);
  if (!c)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate an event record");
  *c = (stamp_ctx){.event = e, .generation = generation, .device = tpu_stream_device(stream)};
  atomic_fetch_add(&e->refs, 1);
  /* The stamp is ordered after all work submitted so far; its own sequence number marks the event.
   * Submitters of the same stream may interleave, so read the number under no assumption beyond
   * "at least the stamp": waiting for it also waits for everything before. */
  tpu_status st = tpu_stream_submit(stream, "event_record", run_stamp, done_stamp, c);
  atomic_store(&e->seq, tpu_stream_submitted(stream));
  atomic_store(&e->stream, stream);
  return st;
}

bool tpu_event_query(const tpu_event *e) {
  tpu_stream *s = atomic_load(&e->stream);
  return !s || (tpu_stream_completed(s) >= atomic_load(&e->seq) &&
                tpu_device_drained(tpu_stream_device(s)));
}

tpu_status tpu_event_synchronize(tpu_event *e) {
  tpu_stream *s = atomic_load(&e->stream);
  if (!s)
    return TPU_OK;
  tpu_stream_wait_for(s, atomic_load(&e->seq));
  return tpu_device_drain(tpu_stream_device(s));
}

tpu_status tpu_event_block(tpu_event *e, tpu_stream *stream) {
  tpu_stream *s = atomic_load(&e->stream);
  return s ? tpu_stream_wait_other(stream, s, atomic_load(&e->seq)) : TPU_OK;
}

tpu_status tpu_event_elapsed_ms(const tpu_event *start, const tpu_event *end, double *ms) {
  if (!start->timing || !end->timing)
    return tpu_error(TPU_ERR_RUNTIME,
                     "Both events must be created with argument 'enable_timing=True'.");
  if (!atomic_load(&start->stream) || !atomic_load(&end->stream))
    return tpu_error(TPU_ERR_RUNTIME, "Both events must be recorded before calculating elapsed time.");
  if (!tpu_event_query(start) || !tpu_event_query(end) || !atomic_load(&start->stamped) ||
      !atomic_load(&end->stamped))
    return tpu_error(TPU_ERR_RUNTIME,
                     "Both events must be completed before calculating elapsed time.");
  *ms = (atomic_load(&end->time_us) - atomic_load(&start->time_us)) / 1000.0;
  return TPU_OK;
}

int tpu_event_device(const tpu_event *e) {
  tpu_stream *s = atomic_load(&e->stream);
  return s ? tpu_stream_device(s) : -1;
}
