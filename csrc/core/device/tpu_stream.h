/* In-order streams, one worker thread each (started on first use), like CUDA streams. Work is a
 * function run on the worker; its error is recorded against the stream, naming the work, and
 * returned by the next synchronization, after which the stream is usable again. With launch
 * blocking on, submitted work runs on the calling thread after the stream drains, and its error
 * returns at once. Thread-safe: several producers may submit to one stream. */
#ifndef TPU_STREAM_H
#define TPU_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "base/tpu_status.h"

/* Streams per chip; index 0 is the default stream. */
#define TPU_MAX_STREAMS 64

/* Bound of a stream's queue: producers wait when it is full. */
#define TPU_STREAM_QUEUE_LEN 1024

typedef struct tpu_stream tpu_stream;

/* Work run on the worker; a non-OK status (with tpu_error's message) is recorded as the stream's
 * error. */
typedef tpu_status (*tpu_work_run_fn)(void *ctx);

/* Called once after the work ran (or was dropped), on the thread that ran it: frees `ctx`. */
typedef void (*tpu_work_done_fn)(void *ctx);

/* Stream `index` of `device`, made on first use; NULL when either is out of range, or when out of
 * host memory to make it. */
tpu_stream *tpu_stream_get(int device, int index);

/* Picks a stream for torch.tpu.Stream(): a fresh index while any are left, then round-robin over
 * the non-default ones, as CUDA's stream pool does. Priority is recorded, not scheduled. */
tpu_status tpu_stream_create(int device, int priority, int *index_out);

/* Device and index of a stream. */
int tpu_stream_device(const tpu_stream *stream);
int tpu_stream_index(const tpu_stream *stream);

/* Priority given when the stream was created (0 for the default stream). */
int tpu_stream_priority(const tpu_stream *stream);

/* Submits work named `name` (a static string). Takes ownership of ctx: `done` runs in every case,
 * also when submission fails. Under launch blocking the work runs here and its status returns. */
tpu_status tpu_stream_submit(tpu_stream *stream, const char *name, tpu_work_run_fn run,
                             tpu_work_done_fn done, void *ctx);

/* Runs `run` then `done` on the calling thread as the stream's next work, when the stream has
 * nothing queued or running and launch blocking is off: a tiny op costs less than the hand-off to
 * the worker. An error is recorded for the next synchronize, as the worker would. Returns false,
 * having run nothing, when the stream is busy. */
bool tpu_stream_run_if_idle(tpu_stream *stream, const char *name, tpu_work_run_fn run,
                            tpu_work_done_fn done, void *ctx);

/* Sequence number of the last work submitted (0 before any). */
uint64_t tpu_stream_submitted(const tpu_stream *stream);

/* Sequence number up to which all work has completed. */
uint64_t tpu_stream_completed(const tpu_stream *stream);

/* Blocks until the stream has completed work `seq`. Does not report errors. */
void tpu_stream_wait_for(tpu_stream *stream, uint64_t seq);

/* Makes later work on `waiter` wait until `other` completes its work `seq` (wait_stream, events). */
tpu_status tpu_stream_wait_other(tpu_stream *waiter, tpu_stream *other, uint64_t seq);

/* Blocks until all submitted work has run, and the chip has finished what an asynchronous driver
 * still runs (tpu_device_drain); returns the first error recorded since the last report (and
 * clears it), with a message naming the work that failed. */
tpu_status tpu_stream_synchronize(tpu_stream *stream);

/* True when all submitted work has completed, on the chip too. */
bool tpu_stream_query(const tpu_stream *stream);

/* Synchronizes every started stream of `device`; returns the first error among them. */
tpu_status tpu_device_synchronize(int device);

/* Turns launch blocking on or off for the calling process (initially TORCH_TPU_LAUNCH_BLOCKING). */
void tpu_set_launch_blocking(bool on);

/* Launch blocking for the calling thread alone: 1 or 0 override the process setting, -1 (the
 * initial value) follows it; so debug mode on one thread leaves the others asynchronous. */
void tpu_set_thread_launch_blocking(int on);
int tpu_thread_launch_blocking(void);

/* Whether work submitted from the calling thread runs inline: its override, else the process's. */
bool tpu_launch_blocking(void);

/* Microseconds since an arbitrary fixed point (CLOCK_MONOTONIC). */
double tpu_now_us(void);

#endif
