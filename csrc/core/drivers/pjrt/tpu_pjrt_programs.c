#include "drivers/pjrt/tpu_pjrt_programs.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tpu_env.h"
#include "drivers/pjrt/tpu_pjrt_cache.h"
#include "drivers/pjrt/tpu_pjrt_disk_cache.h"
#include "drivers/pjrt/tpu_pjrt_storage.h"

/* A run's description: words, on the stack until they outgrow it. */
typedef struct description {
  uint64_t *w;
  size_t n, cap;
  bool failed; /* out of host memory */
  uint64_t local[1024];
} description;

static void put(description *d, uint64_t v) {
  if (d->failed)
    return;
  if (d->n == d->cap) {
    uint64_t *w = d->w == d->local ? malloc(2 * d->cap * sizeof *w)
                                   : realloc(d->w, 2 * d->cap * sizeof *w);
    if (!w) {
      d->failed = true;
      return;
    }
    if (d->w == d->local)
      memcpy(w, d->local, d->n * sizeof *w);
    d->w = w;
    d->cap *= 2;
  }
  d->w[d->n++] = v;
}

static void put_dims(description *d, const int64_t *v, int n) {
  for (int i = 0; i < n; i++)
    put(d, (uint64_t)v[i]);
}

/* The scalar slot of `call` that host view t reads (a scalar operand, tpu_op_set_scalar_input), or
 * -1. Its value is an argument of the module, bound at run time. */
static int scalar_input_slot(const tpu_op_call *call, const tpu_tensor *t) {
  /* Compared as integers: a host view usually points into another object. */
  uintptr_t p = (uintptr_t)t->host + (uintptr_t)t->offset, base = (uintptr_t)call->scalars;
  if (t->buf || p < base || p >= base + sizeof call->scalars)
    return -1;
  return (int)((p - base) / sizeof(tpu_scalar));
}

static bool is_dropped(const tpu_buffer *b, tpu_buffer *const *dropped, int n_dropped) {
  for (int i = 0; i < n_dropped; i++)
    if (dropped[i] == b)
      return true;
  return false;
}

/* Describes the run (see the header). *runtime[c] receives the scalar slots of call c that host
 * operands read. False when the run has more storages than a module takes (it cannot lower). */
static bool describe(const tpu_op_call *const *calls, int n, tpu_buffer *const *dropped,
                     int n_dropped, description *d, unsigned *runtime) {
  tpu_buffer *seen[TPU_HLO_MAX_ARGS];
  int n_seen = 0;
  put(d, (uint64_t)n);
  for (int c = 0; c < n; c++) {
    const tpu_op_call *call = calls[c];
    runtime[c] = 0;
    put(d, (uint64_t)call->op | (uint64_t)call->compute << 16 | (uint64_t)call->n_inputs << 32 |
               (uint64_t)call->n_outputs << 48);
    for (int i = 0; i < call->n_inputs + call->n_outputs; i++) {
      const tpu_tensor *t = &call->tensors[i];
      uint64_t head = (uint64_t)t->dtype | (uint64_t)t->ndim << 8;
      if (!t->buf) { /* the lowering reads a host view's sizes only: it binds the elements */
        int slot = scalar_input_slot(call, t);
        if (slot >= 0)
          runtime[c] |= 1u << slot;
        put(d, head | (uint64_t)(slot + 1) << 16);
        put_dims(d, t->sizes, t->ndim);
        continue;
      }
      int s = 0;
      while (s < n_seen && seen[s] != t->buf)
        s++;
      put(d, head | 1u << 15 | (uint64_t)s << 16);
      if (s == n_seen) { /* first use: what the module's argument for it is */
        if (n_seen == TPU_HLO_MAX_ARGS)
          return false;
        seen[n_seen++] = t->buf;
        put(d, (uint64_t)tpu_buffer_nbytes(t->buf) << 1 | is_dropped(t->buf, dropped, n_dropped));
      }
      put_dims(d, t->sizes, t->ndim);
      put_dims(d, t->strides, t->ndim);
      put(d, (uint64_t)t->offset);
    }
  }
  return true;
}

typedef struct entry {
  struct entry *next;
  uint64_t hash; /* of the description */
  size_t n_words;
  uint64_t *words;
  unsigned *runtime;  /* per call, the scalar slots bound at run time */
  tpu_scalar *scalars; /* per call, TPU_OP_MAX_SCALARS values: the others must match */
  uint64_t text_hash;
  size_t text_len;
  tpu_pjrt_program *program; /* its text freed */
  const tpu_pjrt_executable *exe;
} entry;

#define BUCKETS 4096
/* Entries of one description, which differ in constant scalars or in the element types of the
 * storages they read: a run whose call keeps a changing value in a scalar slot the module does
 * not read would otherwise add entries without end. */
#define MAX_VARIANTS 16

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static entry *buckets[BUCKETS];
static atomic_uint_least64_t lowerings, hits, unkeyed;
static atomic_int verify = -1; /* -1 until read from the environment */

static bool scalars_match(const entry *e, const tpu_op_call *const *calls, int n) {
  for (int c = 0; c < n; c++)
    for (int k = 0; k < TPU_OP_MAX_SCALARS; k++)
      if (!(e->runtime[c] >> k & 1u) &&
          e->scalars[c * TPU_OP_MAX_SCALARS + k].u != calls[c]->scalars[k].u)
        return false;
  return true;
}

/* Whether the storages the program reads hold what they held when it was lowered: each argument a
 * buffer of its element type, each storage read as zeros still no buffer. Storages the module
 * only writes may hold anything. */
static bool storages_match(const tpu_pjrt_program *p, const tpu_op_call *const *calls) {
  for (int i = 0; i < p->n_args + p->n_zeros; i++) {
    const tpu_pjrt_slot *a = i < p->n_args ? &p->args[i] : &p->zeros[i - p->n_args];
    if (a->source != TPU_PJRT_STORAGE)
      continue;
    const tpu_buffer *b = calls[a->call]->tensors[a->index].buf;
    tpu_dtype elem;
    bool has = tpu_pjrt_storage_elem(tpu_buffer_memory(b), tpu_buffer_nbytes(b), &elem);
    if (has != (i < p->n_args) || (has && elem != a->dtype))
      return false;
  }
  return true;
}

/* The entry for the run, or NULL; *variants: entries of its description. Called under mu. */
static entry *find(const description *d, uint64_t h, const tpu_op_call *const *calls, int n,
                   int *variants) {
  *variants = 0;
  for (entry *e = buckets[h % BUCKETS]; e; e = e->next) {
    if (e->hash != h || e->n_words != d->n || memcmp(e->words, d->w, d->n * sizeof *d->w) != 0)
      continue;
    if (scalars_match(e, calls, n) && storages_match(e->program, calls))
      return e;
    ++*variants;
  }
  return NULL;
}

static bool same_slots(const tpu_pjrt_slot *a, const tpu_pjrt_slot *b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i].source != b[i].source || a[i].call != b[i].call || a[i].index != b[i].index ||
        a[i].dtype != b[i].dtype)
      return false;
  return true;
}

/* Whether two programs bind, compute and check alike (texts compared by hash and length). */
static bool same_program(const tpu_pjrt_program *a, uint64_t a_hash, size_t a_len,
                         const tpu_pjrt_program *b) {
  if (a_len != b->len || a_hash != tpu_pjrt_hash(TPU_PJRT_HASH_SEED, b->text, b->len) ||
      a->n_args != b->n_args || a->n_results != b->n_results ||
      a->n_messages != b->n_messages || a->n_zeros != b->n_zeros ||
      !same_slots(a->args, b->args, a->n_args) ||
      !same_slots(a->results, b->results, a->n_results) ||
      !same_slots(a->zeros, b->zeros, a->n_zeros))
    return false;
  for (int i = 0; i < a->n_messages; i++)
    if (a->message_call[i] != b->message_call[i] || a->message_status[i] != b->message_status[i] ||
        strcmp(a->messages[i], b->messages[i]) != 0)
      return false;
  return true;
}

static tpu_status lower(const tpu_op_call *const *calls, int n, tpu_buffer *const *dropped,
                        int n_dropped, tpu_pjrt_program **out) {
  atomic_fetch_add(&lowerings, 1);
  return tpu_pjrt_lower(calls, n, dropped, n_dropped, out);
}

/* Whether p's module holds no value of the run's runtime scalars: the run lowered again with each
 * changed (copies of the calls, host operands of scalars re-aimed at the copies) gives p again. */
static bool scalars_are_arguments(const tpu_op_call *const *calls, int n,
                                  tpu_buffer *const *dropped, int n_dropped,
                                  const unsigned *runtime, const tpu_pjrt_program *p) {
  tpu_op_call *copies[TPU_PJRT_MAX_RUN] = {0};
  bool ok = true;
  for (int c = 0; c < n && ok; c++) {
    size_t size = sizeof(tpu_op_call) +
                  (size_t)(calls[c]->n_inputs + calls[c]->n_outputs) * sizeof(tpu_tensor);
    copies[c] = malloc(size);
    ok = copies[c] != NULL;
    if (!ok)
      break;
    memcpy(copies[c], calls[c], size);
    for (int i = 0; i < calls[c]->n_inputs + calls[c]->n_outputs; i++) {
      int slot = scalar_input_slot(calls[c], &calls[c]->tensors[i]);
      if (slot >= 0) {
        copies[c]->tensors[i].host = &copies[c]->scalars[slot];
        copies[c]->tensors[i].offset = 0;
      }
    }
    for (int k = 0; k < TPU_OP_MAX_SCALARS; k++)
      if (runtime[c] >> k & 1u)
        copies[c]->scalars[k].u ^= 1u; /* a near value of either type */
  }
  tpu_pjrt_program *again = NULL;
  ok = ok && lower((const tpu_op_call *const *)copies, n, dropped, n_dropped, &again) == TPU_OK &&
       same_program(p, tpu_pjrt_hash(TPU_PJRT_HASH_SEED, p->text, p->len), p->len, again);
  tpu_pjrt_program_free(again);
  for (int c = 0; c < n; c++)
    free(copies[c]);
  return ok;
}

/* A kept entry for the lowered run p (its text freed), or NULL when out of host memory. */
static entry *make_entry(const description *d, uint64_t h, const tpu_op_call *const *calls, int n,
                         const unsigned *runtime, tpu_pjrt_program *p,
                         const tpu_pjrt_executable *exe) {
  entry *e = calloc(1, sizeof *e);
  if (e) {
    e->words = malloc(d->n * sizeof *e->words);
    e->runtime = malloc((size_t)n * sizeof *e->runtime);
    e->scalars = malloc((size_t)n * TPU_OP_MAX_SCALARS * sizeof *e->scalars);
  }
  if (!e || !e->words || !e->runtime || !e->scalars) {
    if (e) {
      free(e->words);
      free(e->runtime);
      free(e->scalars);
    }
    free(e);
    return NULL;
  }
  memcpy(e->words, d->w, d->n * sizeof *d->w);
  e->n_words = d->n;
  e->hash = h;
  memcpy(e->runtime, runtime, (size_t)n * sizeof *runtime);
  for (int c = 0; c < n; c++)
    memcpy(&e->scalars[c * TPU_OP_MAX_SCALARS], calls[c]->scalars, sizeof calls[c]->scalars);
  e->text_hash = tpu_pjrt_hash(TPU_PJRT_HASH_SEED, p->text, p->len);
  e->text_len = p->len;
  free(p->text);
  p->text = NULL;
  e->program = p;
  e->exe = exe;
  return e;
}

static tpu_status compile(const tpu_pjrt_client *client, const tpu_op_call *first,
                          const tpu_pjrt_program *p, const tpu_pjrt_executable **exe) {
  *exe = NULL;
  if (p->n_results == 0)
    return TPU_OK;
  tpu_status st = tpu_pjrt_cache_get(client, p->text, p->len, exe);
  if (st == TPU_OK)
    return st;
  char why[2048]; /* copied: tpu_error writes the slot it would read */
  snprintf(why, sizeof why, "%s", tpu_last_error());
  return tpu_error(st, "compiling tpu op '%s' for PJRT: %s", tpu_op_name(first->op), why);
}

static bool verifying(void) {
  int v = atomic_load(&verify);
  if (v < 0) {
    v = tpu_env_flag("TORCH_TPU_PJRT_VERIFY_PROGRAMS", false);
    atomic_store(&verify, v);
  }
  return v;
}

/* Verification: the found entry's program against the run lowered afresh. */
static tpu_status check_entry(const entry *e, const tpu_op_call *const *calls, int n,
                              tpu_buffer *const *dropped, int n_dropped) {
  tpu_pjrt_program *fresh;
  tpu_status st = lower(calls, n, dropped, n_dropped, &fresh);
  if (st == TPU_OK && !same_program(e->program, e->text_hash, e->text_len, fresh))
    st = tpu_error(TPU_ERR_RUNTIME, "the PJRT program kept for a run of '%s' differs from the run "
                   "lowered again: its description misses something the module depends on",
                   tpu_op_name(calls[0]->op));
  tpu_pjrt_program_free(fresh);
  return st;
}

/* A miss: lowers and compiles the run, keeping it when its description can be trusted. */
static tpu_status add(const tpu_pjrt_client *client, const tpu_op_call *const *calls, int n,
                      tpu_buffer *const *dropped, int n_dropped, const description *d,
                      uint64_t h, unsigned *runtime, int variants, tpu_pjrt_compiled *out) {
  tpu_pjrt_program *p;
  tpu_status st = lower(calls, n, dropped, n_dropped, &p);
  if (st == TPU_OK)
    st = compile(client, calls[0], p, &out->exe);
  if (st != TPU_OK) {
    tpu_pjrt_program_free(p);
    return st;
  }
  for (int i = 0; i < p->n_args; i++)
    if (p->args[i].source == TPU_PJRT_SCALAR)
      runtime[p->args[i].call] |= 1u << p->args[i].index;
  entry *e = NULL;
  if (variants < MAX_VARIANTS &&
      scalars_are_arguments(calls, n, dropped, n_dropped, runtime, p))
    e = make_entry(d, h, calls, n, runtime, p, out->exe);
  if (!e) {
    atomic_fetch_add(&unkeyed, 1);
    out->program = out->owned = p;
    return TPU_OK;
  }
  pthread_mutex_lock(&mu);
  int now;
  entry *raced = find(d, h, calls, n, &now); /* another thread added it meanwhile */
  if (!raced) {
    e->next = buckets[h % BUCKETS];
    buckets[h % BUCKETS] = e;
  }
  pthread_mutex_unlock(&mu);
  if (raced) {
    tpu_pjrt_program_free(e->program);
    free(e->words);
    free(e->runtime);
    free(e->scalars);
    free(e);
    e = raced;
  }
  out->program = e->program;
  out->exe = e->exe;
  return TPU_OK;
}

tpu_status tpu_pjrt_programs_get(const tpu_pjrt_client *client, const tpu_op_call *const *calls,
                                 int n, tpu_buffer *const *dropped, int n_dropped,
                                 tpu_pjrt_compiled *out) {
  *out = (tpu_pjrt_compiled){0};
  description d = {.cap = sizeof d.local / sizeof d.local[0]};
  d.w = d.local;
  unsigned runtime[TPU_PJRT_MAX_RUN];
  tpu_status st = TPU_OK;
  if (n < 1 || n > TPU_PJRT_MAX_RUN || !describe(calls, n, dropped, n_dropped, &d, runtime)) {
    /* Nothing to key: lowering reports why it cannot. */
    tpu_pjrt_program *p;
    st = lower(calls, n, dropped, n_dropped, &p);
    if (st == TPU_OK)
      st = compile(client, calls[0], p, &out->exe);
    if (st == TPU_OK)
      out->program = out->owned = p;
    else
      tpu_pjrt_program_free(p);
  } else if (d.failed) {
    st = tpu_error(TPU_ERR_OUT_OF_MEMORY, "out of host memory to describe a PJRT run");
  } else {
    uint64_t h = tpu_pjrt_hash(TPU_PJRT_HASH_SEED, d.w, d.n * sizeof *d.w);
    int variants;
    pthread_mutex_lock(&mu);
    entry *e = find(&d, h, calls, n, &variants);
    pthread_mutex_unlock(&mu);
    if (e) {
      atomic_fetch_add(&hits, 1);
      out->program = e->program;
      out->exe = e->exe;
      if (verifying())
        st = check_entry(e, calls, n, dropped, n_dropped);
    } else {
      st = add(client, calls, n, dropped, n_dropped, &d, h, runtime, variants, out);
    }
  }
  if (d.w != d.local)
    free(d.w);
  return st;
}

void tpu_pjrt_compiled_release(tpu_pjrt_compiled *c) {
  tpu_pjrt_program_free(c->owned);
  *c = (tpu_pjrt_compiled){0};
}

void tpu_pjrt_programs_set_verify(bool on) { atomic_store(&verify, on); }

void tpu_pjrt_programs_stats(uint64_t *lowered, uint64_t *found, uint64_t *untrusted) {
  *lowered = atomic_load(&lowerings);
  *found = atomic_load(&hits);
  *untrusted = atomic_load(&unkeyed);
}

void tpu_pjrt_programs_reset_stats(void) {
  atomic_store(&lowerings, 0);
  atomic_store(&hits, 0);
  atomic_store(&unkeyed, 0);
}
