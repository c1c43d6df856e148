#include "ops/tpu_op.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

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

void tpu_op_count_native(tpu_op_id op) {
  if ((unsigned)op < TPU_OP_COUNT)
    atomic_fetch_add(&native_counts[op], 1);
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

void tpu_op_call_free(tpu_op_call *call) {
  if (!call)
    return;
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
