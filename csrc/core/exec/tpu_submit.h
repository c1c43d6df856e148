/* The one way an op call reaches a chip. tpu_submit routes a call by the eager mode it runs in
 * (tpu_eager_mode_for: the calling thread's, else its stream's, else the process default):
 * debug launches it and returns its error (launch blocking), strict queues it on the stream, fused
 * records it in the stream's open graph (exec/tpu_fused.h), cutting the graph where a call cannot
 * wait. Each call is validated and asked for support once, here: the answer (the driver, or the
 * core's counted CPU fallback, ops/tpu_op_fallback.h) travels in the call. Whatever runs the core
 * (the PyTorch binding, the C tests) builds a call and submits it; it decides nothing. */
#ifndef TPU_SUBMIT_H
#define TPU_SUBMIT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/tpu_status.h"
#include "device/tpu_stream.h"
#include "exec/tpu_fused.h"
#include "ops/tpu_op.h"
#include "tensor/tpu_buffer.h"

/* Submits `call` to `stream`, taking ownership of it in every case; NULL is out of host memory.
 * Counts one native call of the op. A COPY may read a view on another chip, which nothing may
 * write until the copy has run (the caller synchronizes that chip first and waits for the copy:
 * tpu_submit_sync). An error found before the kernel runs (a call no driver supports:
 * TPU_ERR_NOT_IMPLEMENTED; other views on another chip) returns here; the kernel's own error
 * returns here in debug mode and otherwise at the next synchronization, poisoning the outputs. */
tpu_status tpu_submit(tpu_stream *stream, tpu_op_call *call);

/* Submits `call` and waits for it, for copies to the host and reads of scalars: cuts the stream's
 * open graph first, fails when an input is poisoned, returns the stream's first error. */
tpu_status tpu_submit_sync(tpu_stream *stream, tpu_op_call *call);

/* Validates `call` for `device` as tpu_submit does, records in it whether the driver or the
 * core's fallback runs it, and counts one native call, without running it: fused mode records
 * the call in a graph instead. */
tpu_status tpu_submit_accept(int device, tpu_op_call *call);

/* Queues an accepted call on `stream` as strict mode does (fused mode's calls that cannot wait). */
tpu_status tpu_submit_launch(tpu_stream *stream, tpu_op_call *call);

/* Whether work submitted to `stream` by the calling thread completes before tpu_submit returns,
 * its errors raised at the call (debug mode). */
bool tpu_submit_blocks(tpu_stream *stream);

/* The buffer behind a tensor made now for `stream`, of `nbytes`: pending in fused mode (memory
 * comes when its graph runs, if it is still alive then), live otherwise. */
tpu_status tpu_submit_buffer(tpu_stream *stream, size_t nbytes, tpu_buffer **out);

/* Told of every call before it is routed (sync: a tpu_submit_sync), on the submitting thread. */
typedef void (*tpu_submit_observer)(tpu_stream *stream, const tpu_op_call *call, bool sync);

/* Installs the process's observer (NULL: none): torch.compile's capture of calls for replay. */
void tpu_submit_set_observer(tpu_submit_observer observer);

#endif
