/* Events mark a point in a stream: record, query, synchronize, make another stream wait, and time
 * the work between two of them, as torch.cuda.Event does. */
#ifndef TPU_EVENT_H
#define TPU_EVENT_H

#include <stdbool.h>

#include "base/tpu_status.h"
#include "device/tpu_stream.h"

typedef struct tpu_event tpu_event;

/* A new, unrecorded event. With `timing`, recording also captures when the stream reached it. */
tpu_status tpu_event_create(bool timing, tpu_event **out);

/* Destroys an event; safe while a recording of it is still queued. */
void tpu_event_destroy(tpu_event *event);

/* Captures the work submitted to `stream` so far (re-recording replaces the previous point). */
tpu_status tpu_event_record(tpu_event *event, tpu_stream *stream);

/* True when the captured work has completed, or when the event was never recorded. */
bool tpu_event_query(const tpu_event *event);

/* Blocks until the captured work has completed; on a chip whose driver runs work asynchronously,
 * until all work launched on it has, and then returns that work's first error
 * (tpu_device_drain). */
tpu_status tpu_event_synchronize(tpu_event *event);

/* Makes later work on `stream` wait for the event's captured work. */
tpu_status tpu_event_block(tpu_event *event, tpu_stream *stream);

/* Milliseconds between two completed timing events; an error if either was not recorded with
 * timing or has not completed. */
tpu_status tpu_event_elapsed_ms(const tpu_event *start, const tpu_event *end, double *ms);

/* The device of the stream the event was last recorded on, or -1. */
int tpu_event_device(const tpu_event *event);

#endif
