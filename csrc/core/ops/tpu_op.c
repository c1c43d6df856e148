#include "ops/tpu_op.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/tpu_driver.h"
#include "ops/tpu_op_debug.h"
#include "ops/tpu_op_fallback.h"

static const char *const op_names[TPU_OP_COUNT] = {
#define TPU_OP_NAME(id, name, attrs) [TPU_OP_##id] = name,
    TPU_OP_LIST(TPU_OP_NAME)
#undef TPU_OP_NAME
};

static const uint8_t op_attrs[TPU_OP_COUNT] = {
#define TPU_OP_ATTRS(id, name, attrs) [TPU_OP_##id] = attrs,
    TPU_OP_LIST(TPU_OP_ATTRS)
#undef TPU_OP_ATTRS
};

static atomic_uint_least64_t native_counts[TPU_OP_COUNT];
static atomic_uint_least64_t driver_fallback_counts[TPU_OP_COUNT];

const char *tpu_op_name(tpu_op_id op) {
  return (unsigned)op < TPU_OP_COUNT ? op_names[op] : "invalid";
}

uint8_t tpu_op_attr_scalars(tpu_op_id op) {
  return (unsigned)op < TPU_OP_COUNT ? op_attrs[op] : 0;
}

uint64_t tpu_op_native_count(tpu_op_id op) {
  return (unsigned)op < TPU_OP_COUNT ? atomic_load(&native_counts[op]) : 0;
}

tpu_op_call *tpu_op_call_new(tpu_op_id op, int n_inputs, int n_outputs) {
  if (n_inputs < 0 || n_outputs < 0)
    return NULL;
  tpu_op_call *call =
      calloc(1, sizeof *call + (size_t)(n_inputs + n_outputs) * sizeof(tpu_tensor));
  if (!call)
    return NULL;
  call->op = op;
  call->n_inputs = n_inputs;
  call->n_outputs = n_outputs;
  return call;
}

void tpu_op_set_scalar_input(tpu_op_call *call, int index, int slot, tpu_scalar value,
                             bool is_float) {
  call->scalars[slot] = value;
  tpu_tensor *t = &call->tensors[index];
  memset(t, 0, sizeof *t);
  t->host = &call->scalars[slot];
  t->dtype = is_float ? TPU_FLOAT64 : TPU_INT64;
}

static int n_tensors(const tpu_op_call *call) { return call->n_inputs + call->n_outputs; }

/* Drops what a deferred call holds on its inputs (it never ran, or it has just been launched and
 * the launch took its own references). */
static void release_deferred_inputs(tpu_op_call *call) {
  if (!call->deferred)
    return;
  call->deferred = false;
  for (int i = 0; i < call->n_inputs; i++) {
    tpu_buffer *b = call->tensors[i].buf;
    if (b) {
      tpu_buffer_reader_done(b);
      tpu_buffer_release(b);
    }
  }
}

void tpu_op_call_free(tpu_op_call *call) {
  if (!call)
    return;
  release_deferred_inputs(call);
  if (call->cleanup)
    call->cleanup(call->cleanup_ctx);
  free(call);
}

tpu_op_call *tpu_op_call_clone(const tpu_op_call *src) {
  tpu_op_call *c = tpu_op_call_new(src->op, src->n_inputs, src->n_outputs);
  if (!c)
    return NULL;
  c->compute = src->compute;
  memcpy(c->scalars, src->scalars, sizeof c->scalars);
  const char *lo = (const char *)src->scalars;
  for (int i = 0; i < n_tensors(src); i++) {
    c->tensors[i] = src->tensors[i];
    const char *p = src->tensors[i].host;
    if (!src->tensors[i].buf && p >= lo && p < lo + sizeof src->scalars)
      c->tensors[i].host = (char *)c->scalars + (p - lo);
  }
  return c;
}

bool tpu_op_supported(const tpu_op_call *call) { return tpu_op_runnable(call); }

static tpu_status check_call(int device, const tpu_op_call *call) {
  if ((unsigned)call->op >= TPU_OP_COUNT)
    return tpu_error(TPU_ERR_VALUE, "invalid op id %d", (int)call->op);
  const tpu_driver_i *driver = tpu_driver();
  if (!driver)
    return tpu_driver_error();
  if (!tpu_op_runnable(call))
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "tpu op '%s' is not supported by the %s driver for "
                     "these operands", tpu_op_name(call->op), driver->name);
  for (int i = 0; i < n_tensors(call); i++) {
    const tpu_tensor *t = &call->tensors[i];
    tpu_status st = tpu_tensor_check(t);
    if (st != TPU_OK)
      return st;
    if (t->buf && tpu_buffer_device(t->buf) != device)
      return tpu_error(TPU_ERR_RUNTIME,
                       "Expected all tensors to be on the same device, but found at least two "
                       "devices, tpu:%d and tpu:%d!",
                       device, tpu_buffer_device(t->buf));
  }
  return TPU_OK;
}

tpu_status tpu_op_accept(int device, const tpu_op_call *call) {
  tpu_status st = check_call(device, call);
  if (st == TPU_OK)
    atomic_fetch_add(&native_counts[call->op], 1);
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

/* Queues `call` on `stream`; it runs on the launching thread instead when the stream is idle and
 * the op is tiny, or `waited_for` (the caller waits for it anyway: the hand-off to the worker
 * would only add its wake-up). */
static tpu_status submit(tpu_stream *stream, tpu_op_call *call, bool waited_for) {
  int device = tpu_stream_device(stream);
  tpu_status st = check_call(device, call);
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
  release_deferred_inputs(call);
  const char *name = tpu_op_name(call->op);
  if ((waited_for || is_tiny(call)) &&
      tpu_stream_run_if_idle(stream, name, run_call, done_call, call))
    return TPU_OK;
  return tpu_stream_submit(stream, name, run_call, done_call, call);
}

static tpu_status launch(tpu_stream *stream, tpu_op_call *call, bool waited_for) {
  if (!call)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate an op call");
  if (!call->deferred && (unsigned)call->op < TPU_OP_COUNT)
    atomic_fetch_add(&native_counts[call->op], 1);
  return submit(stream, call, waited_for);
}

tpu_status tpu_op_launch(tpu_stream *stream, tpu_op_call *call) {
  return launch(stream, call, false);
}

tpu_status tpu_op_launch_sync(tpu_stream *stream, tpu_op_call *call) {
  if (!call)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate an op call");
  /* Pending inputs too: a fused graph that could not be cut poisons its outputs before any has
   * memory (exec/tpu_fused.h). */
  tpu_status st = tpu_stream_synchronize(stream);
  for (int i = 0; st == TPU_OK && i < call->n_inputs; i++)
    if (call->tensors[i].buf)
      st = tpu_buffer_check_poison(call->tensors[i].buf);
  if (st != TPU_OK) {
    tpu_op_call_free(call);
    return st;
  }
  st = launch(stream, call, true);
  tpu_status sync = tpu_stream_synchronize(stream);
  return st != TPU_OK ? st : sync;
}

tpu_status tpu_op_defer(tpu_op_call *call) {
  if (!call)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate an op call");
  tpu_buffer *out = call->n_outputs == 1 ? call->tensors[call->n_inputs].buf : NULL;
  tpu_status st = TPU_OK;
  if (!out || tpu_buffer_is_live(out) || tpu_buffer_has_producer(out))
    st = tpu_error(TPU_ERR_VALUE, "a deferred op needs one output on a fresh pending buffer");
  if (st == TPU_OK)
    st = check_call(tpu_buffer_device(out), call);
  if (st != TPU_OK) {
    tpu_op_call_free(call);
    return st;
  }
  atomic_fetch_add(&native_counts[call->op], 1);
  for (int i = 0; i < call->n_inputs; i++)
    if (call->tensors[i].buf)
      tpu_buffer_retain(call->tensors[i].buf);
  call->deferred = true;
  tpu_buffer_set_producer(out, call);
  return TPU_OK;
}

/* Fallback counts are keyed by ATen operator name: a small open-addressing table, since the set
 * of names a program falls back on is small and lookups happen once per fallback call. */
#define FALLBACK_SLOTS 1024

typedef struct fallback_entry {
  char *name;
  uint64_t count;
} fallback_entry;

static pthread_mutex_t fallback_mu = PTHREAD_MUTEX_INITIALIZER;
static fallback_entry fallback_table[FALLBACK_SLOTS];

static uint64_t hash_name(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

void tpu_op_count_fallback(const char *op_name) {
  pthread_mutex_lock(&fallback_mu);
  uint64_t h = hash_name(op_name);
  for (int probe = 0; probe < FALLBACK_SLOTS; probe++) {
    fallback_entry *e = &fallback_table[(h + (uint64_t)probe) % FALLBACK_SLOTS];
    if (!e->name) {
      e->name = strdup(op_name);
      if (!e->name)
        break;
    }
    if (strcmp(e->name, op_name) == 0) {
      e->count++;
      break;
    }
  }
  pthread_mutex_unlock(&fallback_mu);
}

void tpu_op_fallback_counts(void (*visit)(const char *, uint64_t, void *), void *ctx) {
  pthread_mutex_lock(&fallback_mu);
  for (int i = 0; i < FALLBACK_SLOTS; i++)
    if (fallback_table[i].name && fallback_table[i].count)
      visit(fallback_table[i].name, fallback_table[i].count, ctx);
  pthread_mutex_unlock(&fallback_mu);
}

void tpu_op_count_driver_fallback(tpu_op_id op) {
  if ((unsigned)op < TPU_OP_COUNT)
    atomic_fetch_add(&driver_fallback_counts[op], 1);
}

uint64_t tpu_op_driver_fallback_count(tpu_op_id op) {
  return (unsigned)op < TPU_OP_COUNT ? atomic_load(&driver_fallback_counts[op]) : 0;
}

void tpu_op_reset_counts(void) {
  for (int i = 0; i < TPU_OP_COUNT; i++) {
    atomic_store(&native_counts[i], 0);
    atomic_store(&driver_fallback_counts[i], 0);
  }
  pthread_mutex_lock(&fallback_mu);
  for (int i = 0; i < FALLBACK_SLOTS; i++)
    fallback_table[i].count = 0;
  pthread_mutex_unlock(&fallback_mu);
}
