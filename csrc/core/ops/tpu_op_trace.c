#include "ops/tpu_op_trace.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tpu_env_switch.h"

static tpu_env_switch printing = TPU_ENV_SWITCH("TORCH_TPU_OP_TRACE");

/* The records of the open collections; `depth` of them are open. */
static pthread_mutex_t store_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int depth;
static tpu_trace_record **store;
static size_t store_len, store_cap;

void tpu_set_op_trace(bool on) { tpu_env_switch_set(&printing, on); }

bool tpu_op_trace(void) { return tpu_env_switch_get(&printing); }

bool tpu_op_trace_active(void) {
  return atomic_load_explicit(&depth, memory_order_relaxed) > 0 || tpu_op_trace();
}

static size_t record_bytes(int n_tensors) {
  return sizeof(tpu_trace_record) + (size_t)n_tensors * sizeof(tpu_trace_tensor);
}

uint64_t tpu_op_trace_begin(void) {
  pthread_mutex_lock(&store_mu);
  atomic_fetch_add(&depth, 1);
  uint64_t mark = store_len;
  pthread_mutex_unlock(&store_mu);
  return mark;
}

void tpu_op_trace_free(tpu_trace_record **records, size_t count) {
  for (size_t i = 0; records && i < count; i++)
    free(records[i]);
  free(records);
}

tpu_status tpu_op_trace_end(uint64_t mark, tpu_trace_record ***out, size_t *count) {
  tpu_status st = TPU_OK;
  *out = NULL;
  *count = 0;
  pthread_mutex_lock(&store_mu);
  size_t begin = mark < store_len ? (size_t)mark : store_len;
  size_t n = store_len - begin;
  tpu_trace_record **copy = n ? calloc(n, sizeof *copy) : NULL;
  if (n && !copy)
    st = tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot copy the op trace");
  for (size_t i = 0; copy && i < n; i++) {
    const tpu_trace_record *r = store[begin + i];
    size_t bytes = record_bytes(r->n_inputs + r->n_outputs);
    copy[i] = malloc(bytes);
    if (!copy[i]) {
      tpu_op_trace_free(copy, i);
      copy = NULL;
      st = tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot copy the op trace");
      break;
    }
    memcpy(copy[i], r, bytes);
  }
  if (atomic_load(&depth) > 0 && atomic_fetch_sub(&depth, 1) == 1) {
    tpu_op_trace_free(store, store_len);
    store = NULL;
    store_len = store_cap = 0;
  }
  pthread_mutex_unlock(&store_mu);
  if (copy) {
    *out = copy;
    *count = n;
  }
  return st;
}

/* Keeps `r` while a collection is open; otherwise (or out of memory) frees it. */
static void store_record(tpu_trace_record *r) {
  pthread_mutex_lock(&store_mu);
  if (atomic_load(&depth) > 0 && store_len == store_cap) {
    size_t cap = store_cap ? 2 * store_cap : 256;
    tpu_trace_record **grown = realloc(store, cap * sizeof *grown);
    if (grown) {
      store = grown;
      store_cap = cap;
    }
  }
  if (atomic_load(&depth) > 0 && store_len < store_cap) {
    store[store_len++] = r;
    r = NULL;
  }
  pthread_mutex_unlock(&store_mu);
  free(r);
}

void tpu_op_trace_add(const tpu_op_call *call, double us, tpu_status status) {
  int n = call->n_inputs + call->n_outputs;
  tpu_trace_record *r = malloc(record_bytes(n));
  if (!r)
    return; /* the trace is best effort: an op is never failed for it */
  r->op = call->op;
  r->n_inputs = call->n_inputs;
  r->n_outputs = call->n_outputs;
  r->us = us;
  r->status = status;
  for (int i = 0; i < n; i++) {
    const tpu_tensor *t = &call->tensors[i];
    tpu_trace_tensor *rt = &r->tensors[i];
    rt->dtype = t->dtype;
    rt->host = t->buf == NULL;
    rt->ndim = t->ndim;
    memcpy(rt->sizes, t->sizes, (size_t)t->ndim * sizeof t->sizes[0]);
  }
  if (tpu_op_trace()) {
    char line[2048];
    tpu_op_trace_format(r, line, sizeof line - 1);
    /* One write per line, so lines of concurrent threads do not interleave. */
    strcat(line, "\n");
    fputs(line, stderr);
  }
  store_record(r);
}

/* Appends printf-style text to the string in buf, truncating to fit. */
static void append(char *buf, size_t size, const char *fmt, ...) {
  size_t len = strlen(buf);
  if (len + 1 >= size)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + len, size - len, fmt, ap);
  va_end(ap);
}

void tpu_format_shape(char *buf, size_t size, int ndim, const int64_t *sizes, const char *sep) {
  append(buf, size, "[");
  for (int d = 0; d < ndim; d++)
    append(buf, size, "%s%lld", d ? sep : "", (long long)sizes[d]);
  append(buf, size, "]");
}

static void append_tensors(char *buf, size_t size, const tpu_trace_tensor *ts, int n) {
  for (int i = 0; i < n; i++) {
    append(buf, size, "%s%s", i ? "," : "", tpu_dtype_name(ts[i].dtype));
    tpu_format_shape(buf, size, ts[i].ndim, ts[i].sizes, ",");
    if (ts[i].host)
      append(buf, size, "@cpu");
  }
}

void tpu_op_trace_format(const tpu_trace_record *r, char *buf, size_t size) {
  buf[0] = '\0';
  append(buf, size, "tpu_op_trace op=%s in=", tpu_op_name(r->op));
  append_tensors(buf, size, r->tensors, r->n_inputs);
  append(buf, size, " out=");
  append_tensors(buf, size, r->tensors + r->n_inputs, r->n_outputs);
  append(buf, size, " us=%.1f status=%s", r->us, r->status == TPU_OK ? "ok" : "error");
}
