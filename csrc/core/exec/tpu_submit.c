#include "exec/tpu_submit.h"

#include <stdatomic.h>

#include "device/tpu_device.h"
#include "ops/tpu_op_debug.h"
#include "ops/tpu_op_fallback.h"

static _Atomic(tpu_submit_observer) observer;

void tpu_submit_set_observer(tpu_submit_observer fn) { atomic_store(&observer, fn); }

static void observe(tpu_stream *stream, const tpu_op_call *call, bool sync) {
  tpu_submit_observer fn = atomic_load(&observer);
  if (fn)
    fn(stream, call, sync);
}

static int n_tensors(const tpu_op_call *call) { return call->n_inputs + call->n_outputs; }

tpu_status tpu_submit_accept(int device, tpu_op_call *call) {
  if ((unsigned)call->op >= TPU_OP_COUNT)
    return tpu_error(TPU_ERR_VALUE, "invalid op id %d", (int)call->op);
  tpu_status st = tpu_op_route(call);
  for (int i = 0; st == TPU_OK && i < n_tensors(call); i++) {
    const tpu_tensor *t = &call->tensors[i];
    st = tpu_tensor_check(t);
    /* A copy reads its source on another chip: a copy between chips (tpu_submit.h). */
    bool foreign_source = call->op == TPU_OP_COPY && i < call->n_inputs;
    if (st == TPU_OK && t->buf && tpu_buffer_device(t->buf) != device && !foreign_source)
      st = tpu_error(TPU_ERR_RUNTIME,
                     "Expected all tensors to be on the same device, but found at least two "
                     "devices, tpu:%d and tpu:%d!",
                     device, tpu_buffer_device(t->buf));
  }
  if (st == TPU_OK)
    tpu_op_count_native(call->op);
  return st;
}

/* Runs on the stream's worker (or inline under launch blocking). */
static tpu_status run_call(void *arg) {
  tpu_op_call *call = arg;
  const char *name = tpu_op_name(call->op);
  for (int i = 0; i < call->n_inputs; i++) {
    tpu_buffer *b = call->tensors[i].buf;
    const char *poison = b ? tpu_buffer_poison_message(b) : NULL;
    if (poison) {
      /* The failure was reported when it happened; pass the invalid contents on, quietly. Host
       * memory cannot carry the poison: a copy there fails with it instead of leaving the memory
       * as it was, unwritten. */
      bool host_output = false;
      for (int o = call->n_inputs; o < n_tensors(call); o++) {
        if (call->tensors[o].buf)
          tpu_buffer_poison(call->tensors[o].buf, name, poison);
        else
          host_output = true;
      }
      return host_output ? tpu_error(TPU_ERR_RUNTIME, "%s", poison) : TPU_OK;
    }
  }
  tpu_op_debug debug;
  bool debugging = tpu_op_debug_begin(call, &debug);
  tpu_status st = tpu_op_run(call);
  if (st != TPU_OK)
    for (int o = call->n_inputs; o < n_tensors(call); o++)
      if (call->tensors[o].buf)
        tpu_buffer_poison(call->tensors[o].buf, name, tpu_last_error());
  /* After the poisoning: a failed NaN check leaves the outputs readable. */
  return debugging ? tpu_op_debug_end(call, &debug, st) : st;
}

static void done_call(void *arg) {
  tpu_op_call *call = arg;
  for (int i = 0; i < n_tensors(call); i++)
    if (call->tensors[i].buf)
      tpu_buffer_release(call->tensors[i].buf);
  tpu_op_call_free(call);
}

/* Elements over all tensors below which an op runs on the launching thread when its stream is
 * idle: handing it to the worker costs more than such a kernel (a few microseconds). */
#define TPU_TINY_OP_ELEMENTS 16384

static bool is_tiny(const tpu_op_call *call) {
  int64_t total = 0;
  for (int i = 0; i < n_tensors(call); i++) {
    total += tpu_tensor_numel(&call->tensors[i]);
    if (total > TPU_TINY_OP_ELEMENTS)
      return false;
  }
  return true;
}

/* Queues an accepted `call` on `stream`; it runs on the launching thread instead when the stream
 * is idle and the op is tiny, or `waited_for` (the caller waits for it anyway: the hand-off to the
 * worker would only add its wake-up). */
static tpu_status enqueue(tpu_stream *stream, tpu_op_call *call, bool waited_for) {
  tpu_status st = TPU_OK;
  for (int i = 0; st == TPU_OK && i < n_tensors(call); i++)
    if (call->tensors[i].buf)
      st = tpu_buffer_materialize(call->tensors[i].buf);
  if (st != TPU_OK) {
    tpu_op_call_free(call);
    return st;
  }
  for (int i = 0; i < n_tensors(call); i++)
    if (call->tensors[i].buf)
      tpu_buffer_retain(call->tensors[i].buf);
  const char *name = tpu_op_name(call->op);
  if ((waited_for || is_tiny(call)) &&
      tpu_stream_run_if_idle(stream, name, run_call, done_call, call))
    return TPU_OK;
  return tpu_stream_submit(stream, name, run_call, done_call, call);
}

static tpu_status launch(tpu_stream *stream, tpu_op_call *call, bool waited_for) {
  tpu_status st = tpu_submit_accept(tpu_stream_device(stream), call);
  if (st != TPU_OK) {
    tpu_op_call_free(call);
    return st;
  }
  return enqueue(stream, call, waited_for);
}

tpu_status tpu_submit_launch(tpu_stream *stream, tpu_op_call *call) {
  if (!call)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate an op call");
  return launch(stream, call, false);
}

/* Debug mode is launch blocking for the submission, whatever the thread's own setting (autograd's
 * device thread follows the stream's mode); the setting is restored after. */
static int block_for(tpu_eager_mode mode) {
  int saved = tpu_thread_launch_blocking();
  tpu_set_thread_launch_blocking(mode == TPU_EAGER_DEBUG);
  return saved;
}

tpu_status tpu_submit(tpu_stream *stream, tpu_op_call *call) {
  if (!call)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate an op call");
  observe(stream, call, false);
  tpu_eager_mode mode = tpu_eager_mode_for(stream);
  int saved = block_for(mode);
  tpu_status st = TPU_OK;
  if (mode == TPU_EAGER_FUSED) {
    st = tpu_fused_add(stream, call);
  } else {
    if (tpu_fused_pending_nodes(stream) > 0)
      st = tpu_fused_flush(stream, TPU_CUT_MODE_SWITCH);
    if (st == TPU_OK)
      st = launch(stream, call, false);
    else
      tpu_op_call_free(call);
  }
  tpu_set_thread_launch_blocking(saved);
  return st;
}

tpu_status tpu_submit_sync(tpu_stream *stream, tpu_op_call *call) {
  if (!call)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate an op call");
  observe(stream, call, true);
  int saved = block_for(tpu_eager_mode_for(stream));
  /* Pending inputs too: a fused graph that could not be cut poisons its outputs before any has
   * memory (exec/tpu_fused.h). */
  tpu_status st = tpu_fused_flush(stream, TPU_CUT_HOST_READ);
  if (st == TPU_OK)
    st = tpu_stream_synchronize(stream);
  for (int i = 0; st == TPU_OK && i < call->n_inputs; i++)
    if (call->tensors[i].buf)
      st = tpu_buffer_check_poison(call->tensors[i].buf);
  if (st == TPU_OK) {
    st = launch(stream, call, true);
    tpu_status sync = tpu_stream_synchronize(stream);
    st = st != TPU_OK ? st : sync;
  } else {
    tpu_op_call_free(call);
  }
  tpu_set_thread_launch_blocking(saved);
  return st;
}

bool tpu_submit_blocks(tpu_stream *stream) {
  return tpu_eager_mode_for(stream) == TPU_EAGER_DEBUG;
}

tpu_status tpu_submit_buffer(tpu_stream *stream, size_t nbytes, tpu_buffer **out) {
  int device = tpu_stream_device(stream), index = tpu_stream_index(stream);
  if (tpu_eager_mode_for(stream) == TPU_EAGER_FUSED)
    return tpu_buffer_create_pending(device, index, nbytes, out);
  return tpu_buffer_create(device, index, nbytes, out);
}
