#include "exec/tpu_fused.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/tpu_env.h"
#include "drivers/tpu_driver.h"
#include "device/tpu_device.h"
#include "exec/tpu_remat.h"
#include "exec/tpu_submit.h"
#include "graph/tpu_compile_cache.h"
#include "graph/tpu_graph.h"

/* One stream's fused-mode state, created on first use and kept for the process, like streams. */
typedef struct fused_state {
  pthread_mutex_t mu;
  tpu_stream *stream;
  tpu_graph *graph; /* the open graph, NULL when empty */
  tpu_remat_list remat; /* results of the last forward graph, computed again when read */
  atomic_int mode;  /* the stream's own tpu_eager_mode */
  atomic_int cap;   /* nodes after which the open graph is cut; 0: TPU_FUSED_MAX_NODES */
} fused_state;

static pthread_mutex_t states_mu = PTHREAD_MUTEX_INITIALIZER;
static fused_state *_Atomic states[TPU_MAX_DEVICES][TPU_MAX_STREAMS];
static atomic_int default_mode = TPU_EAGER_UNSET; /* UNSET: not read from the environment yet */
static atomic_uint_least64_t cut_counts[TPU_CUT_COUNT];
static atomic_uint_least64_t cut_nodes;

static const char *const reason_names[TPU_CUT_COUNT] = {
    [TPU_CUT_SYNC] = "sync",
    [TPU_CUT_HOST_READ] = "host_read",
    [TPU_CUT_MATERIALIZE] = "materialize",
    [TPU_CUT_EVENT] = "event",
    [TPU_CUT_QUERY] = "query",
    [TPU_CUT_WAIT_STREAM] = "wait_stream",
    [TPU_CUT_FALLBACK] = "fallback",
    [TPU_CUT_UNDEFERRABLE] = "undeferrable",
    [TPU_CUT_GRAPH_CAP] = "graph_cap",
    [TPU_CUT_MODE_SWITCH] = "mode_switch",
    [TPU_CUT_BACKWARD_START] = "backward_start",
    [TPU_CUT_BACKWARD] = "backward",
    [TPU_CUT_COMPILED] = "compiled",
};

static const char *const mode_names[] = {"debug", "strict", "fused"};

const char *tpu_cut_reason_name(tpu_cut_reason r) {
  return (unsigned)r < TPU_CUT_COUNT ? reason_names[r] : "invalid";
}

const char *tpu_eager_mode_name(tpu_eager_mode m) {
  return m >= TPU_EAGER_DEBUG && m <= TPU_EAGER_FUSED ? mode_names[m] : "unset";
}

tpu_eager_mode tpu_eager_mode_parse(const char *text) {
  for (int m = TPU_EAGER_DEBUG; text && m <= TPU_EAGER_FUSED; m++)
    if (strcasecmp(text, mode_names[m]) == 0)
      return (tpu_eager_mode)m;
  return TPU_EAGER_UNSET;
}

static tpu_eager_mode mode_from_env(void) {
  tpu_eager_mode m = tpu_eager_mode_parse(tpu_env_get("TORCH_TPU_EAGER_MODE"));
  if (m != TPU_EAGER_UNSET)
    return m;
  if (tpu_env_flag("TORCH_TPU_DEFER_AND_FUSE", false))
    return TPU_EAGER_FUSED;
  return tpu_launch_blocking() ? TPU_EAGER_DEBUG : TPU_EAGER_STRICT;
}

tpu_eager_mode tpu_default_eager_mode(void) {
  int m = atomic_load(&default_mode);
  if (m == TPU_EAGER_UNSET) {
    tpu_eager_mode env = mode_from_env();
    int expected = TPU_EAGER_UNSET;
    if (atomic_compare_exchange_strong(&default_mode, &expected, env))
      tpu_set_launch_blocking(env == TPU_EAGER_DEBUG);
    m = atomic_load(&default_mode);
  }
  return (tpu_eager_mode)m;
}

void tpu_set_default_eager_mode(tpu_eager_mode mode) {
  atomic_store(&default_mode, mode);
  tpu_set_launch_blocking(mode == TPU_EAGER_DEBUG);
}

static _Thread_local tpu_eager_mode thread_mode = TPU_EAGER_UNSET;

tpu_eager_mode tpu_thread_eager_mode(void) { return thread_mode; }

void tpu_set_thread_eager_mode(tpu_eager_mode mode) {
  thread_mode = mode;
  tpu_set_thread_launch_blocking(mode == TPU_EAGER_UNSET ? -1 : mode == TPU_EAGER_DEBUG);
}

tpu_eager_mode tpu_eager_mode_for(tpu_stream *s) {
  tpu_eager_mode mode = thread_mode;
  if (mode == TPU_EAGER_UNSET && s)
    mode = tpu_stream_eager_mode(s);
  return mode == TPU_EAGER_UNSET ? tpu_default_eager_mode() : mode;
}

static fused_state *state_of(tpu_stream *s) {
  int device = tpu_stream_device(s), index = tpu_stream_index(s);
  fused_state *st = atomic_load(&states[device][index]);
  if (st)
    return st;
  pthread_mutex_lock(&states_mu);
  st = atomic_load(&states[device][index]);
  if (!st) {
    st = calloc(1, sizeof *st);
    if (st) {
      pthread_mutex_init(&st->mu, NULL);
      st->stream = s;
      atomic_init(&st->mode, TPU_EAGER_UNSET);
      atomic_init(&st->cap, 0);
      atomic_store(&states[device][index], st);
    }
  }
  pthread_mutex_unlock(&states_mu);
  return st;
}

void tpu_stream_set_eager_mode(tpu_stream *s, tpu_eager_mode mode) {
  fused_state *st = state_of(s);
  if (st)
    atomic_store(&st->mode, mode);
}

void tpu_fused_set_graph_cap(tpu_stream *s, int cap) {
  fused_state *st = state_of(s);
  if (st)
    atomic_store(&st->cap, cap > 0 ? cap : 0);
}

tpu_eager_mode tpu_stream_eager_mode(tpu_stream *s) {
  fused_state *st = state_of(s);
  return st ? (tpu_eager_mode)atomic_load(&st->mode) : TPU_EAGER_UNSET;
}

/* A graph may hold device buffers and host memory the call owns (a scalar operand, a staged
 * copy); other host memory belongs to the caller only until the call returns. An empty view (an
 * absent optional operand, such as a norm without weights) touches no memory. */
static bool deferrable(const tpu_op_call *call) {
  const char *begin = (const char *)call, *end = (const char *)&call->tensors[0];
  for (int i = 0; i < call->n_inputs + call->n_outputs; i++) {
    const char *host = call->tensors[i].host;
    if (host && !call->cleanup && (host < begin || host >= end) &&
        tpu_tensor_numel(&call->tensors[i]) > 0)
      return false;
  }
  return true;
}

static tpu_status flush_state(fused_state *st, tpu_cut_reason reason);

static tpu_status materialize_graph(void *ctx) {
  return flush_state(ctx, TPU_CUT_MATERIALIZE);
}

/* Inputs must exist before the graph runs: a pending buffer of another graph is cut out of it, an
 * unwritten one (torch.empty) gets memory. */
static tpu_status prepare_buffers(fused_state *st, const tpu_op_call *call) {
  for (int i = 0; i < call->n_inputs + call->n_outputs; i++) {
    tpu_buffer *b = call->tensors[i].buf;
    if (!b || tpu_buffer_is_live(b))
      continue;
    void *owner = tpu_buffer_materializer_ctx(b);
    if (owner == st || (i >= call->n_inputs && !owner))
      continue;
    tpu_status status = tpu_buffer_materialize(b);
    if (status != TPU_OK)
      return status;
  }
  return TPU_OK;
}

/* Appends `call` to the open graph (made if there is none); the stream's lock is held. Each tensor
 * of a node holds a pending reader on its buffer, so memory of tensors that die stays until the
 * graph has run (tpu_buffer_reader_done); its pending outputs belong to this graph. */
static tpu_status add_node(fused_state *st, tpu_op_call *call) {
  if (!st->graph && !(st->graph = tpu_graph_new(0))) {
    tpu_op_call_free(call);
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate a fused graph");
  }
  tpu_status status = tpu_graph_add(st->graph, call, tpu_op_attr_scalars(call->op));
  for (int i = 0; status == TPU_OK && i < call->n_inputs + call->n_outputs; i++) {
    tpu_buffer *b = call->tensors[i].buf;
    if (!b)
      continue;
    tpu_buffer_add_reader(b);
    if (i >= call->n_inputs && !tpu_buffer_is_live(b))
      tpu_buffer_set_materializer(b, materialize_graph, st);
  }
  return status;
}

/* Adds recipe i (exec/tpu_remat.h) to the open graph, after the recipes of the results it reads.
 * A recipe that cannot be added whole (out of host memory) poisons its result: the value is lost,
 * and what reads it gets the error (tpu_buffer_check_poison) instead of memory nothing wrote. */
static tpu_status emit_recipe(fused_state *st, int i) {
  tpu_remat *r = tpu_remat_take(&st->remat, i);
  tpu_remat_count(r);
  const char *name = tpu_op_name(r->calls[r->n_calls - 1]->op);
  tpu_status status = TPU_OK;
  for (int k = 0; status == TPU_OK && k < r->n_calls; k++) {
    const tpu_op_call *c = r->calls[k];
    for (int j, t = 0; status == TPU_OK && t < c->n_inputs; t++)
      if (c->tensors[t].buf && (j = tpu_remat_find(&st->remat, c->tensors[t].buf, false)) >= 0)
        status = emit_recipe(st, j);
    if (status == TPU_OK) {
      status = add_node(st, r->calls[k]);
      r->calls[k] = NULL;
    }
  }
  if (status != TPU_OK)
    tpu_buffer_poison(r->target, name, tpu_last_error());
  tpu_remat_free(r);
  return status;
}

/* Before `call` joins the graph: the recipes of the results it reads, and of those reading a
 * buffer it writes. */
static tpu_status emit_for(fused_state *st, const tpu_op_call *call) {
  tpu_status status = TPU_OK;
  for (int i = 0; st->remat.n && status == TPU_OK && i < call->n_inputs + call->n_outputs; i++) {
    int j;
    while (status == TPU_OK && call->tensors[i].buf &&
           (j = tpu_remat_find(&st->remat, call->tensors[i].buf, i >= call->n_inputs)) >= 0)
      status = emit_recipe(st, j);
  }
  return status;
}

/* Every recipe whose result is still referenced, before a cut. One that cannot be added poisons
 * its result (emit_recipe); the others still go in, and the cut goes on. */
static void emit_all(fused_state *st) {
  tpu_remat_prune(&st->remat);
  while (st->remat.n)
    emit_recipe(st, 0);
}

tpu_status tpu_fused_add(tpu_stream *s, tpu_op_call *call) {
  if (!call)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate an op call");
  fused_state *st = state_of(s);
  /* Without a pending range (an address-space limit) fused mode is off: calls launch, as in
   * strict mode. */
  if (!st || !deferrable(call) || !tpu_buffer_pending_supported(tpu_stream_device(s))) {
    tpu_status status = st ? flush_state(st, TPU_CUT_UNDEFERRABLE) : TPU_OK;
    if (status != TPU_OK) {
      tpu_op_call_free(call);
      return status;
    }
    return tpu_submit_launch(s, call);
  }
  tpu_status status = tpu_submit_accept(tpu_stream_device(s), call);
  if (status == TPU_OK)
    status = prepare_buffers(st, call);
  if (status != TPU_OK) {
    tpu_op_call_free(call);
    return status;
  }
  pthread_mutex_lock(&st->mu);
  status = emit_for(st, call);
  if (status == TPU_OK)
    status = add_node(st, call);
  else
    tpu_op_call_free(call);
  int n_nodes = st->graph ? st->graph->n_nodes : 0;
  pthread_mutex_unlock(&st->mu);
  if (status != TPU_OK)
    return status;
  int cap = atomic_load(&st->cap);
  return n_nodes >= (cap ? cap : TPU_FUSED_MAX_NODES) ? flush_state(st, TPU_CUT_GRAPH_CAP) : TPU_OK;
}

static void mark_needed(tpu_graph *g) {
  for (int n = 0; n < g->n_nodes; n++) {
    const tpu_op_call *c = g->nodes[n].call;
    for (int k = 0; k < c->n_outputs; k++) {
      const tpu_tensor *t = &c->tensors[c->n_inputs + k];
      tpu_graph_set_needed(g, n, k, !t->buf || tpu_buffer_storage_alive(t->buf));
      const tpu_graph_ref *prev = &g->nodes[n].refs[c->n_inputs + k];
      /* Writing every byte of the buffer kills the version it overwrites, unless a node in
       * between reads it. */
      if (prev->node >= 0 && tpu_tensor_covers_buffer(t))
        tpu_graph_set_needed(g, prev->node, prev->index, false);
    }
  }
}

typedef struct flushed {
  tpu_graph *graph;
  tpu_compile_entry *entry;
  bool ran;
} flushed;

static tpu_status run_flushed(void *arg) {
  flushed *f = arg;
  f->ran = true;
  return tpu_driver()->graph_run(tpu_compile_entry_plan(f->entry), f->graph);
}

/* The outputs of a cut graph that will not run: nothing will write them, so each is poisoned with
 * `message` (a read raises it, tpu_buffer_check_poison) rather than left to be read as memory
 * nothing wrote. */
static void poison_outputs(const tpu_graph *g, const char *message) {
  for (int n = 0; n < g->n_nodes; n++) {
    const tpu_op_call *c = g->nodes[n].call;
    for (int k = 0; k < c->n_outputs; k++)
      if (c->tensors[c->n_inputs + k].buf)
        tpu_buffer_poison(c->tensors[c->n_inputs + k].buf, tpu_op_name(c->op), message);
  }
}

/* The compile cache's compile callback: the driver's graph_compile (ctx is the driver). */
static tpu_status compile_graph(const tpu_graph *g, void *ctx, void **plan,
                                void (**destroy)(void *plan)) {
  const tpu_driver_i *d = ctx;
  *destroy = d->graph_free;
  return d->graph_compile(g, plan);
}

/* Drops what node `n` holds on its buffers (tpu_fused_add): the last holder of a buffer whose
 * tensors died gives its memory back. */
static void release_node(const tpu_graph *g, int n) {
  const tpu_op_call *c = g->nodes[n].call;
  for (int i = 0; i < c->n_inputs + c->n_outputs; i++)
    if (c->tensors[i].buf)
      tpu_buffer_reader_done(c->tensors[i].buf);
}

/* Releases nodes [from, n_nodes), then frees the graph. */
static void free_cut_graph(tpu_graph *g, int from) {
  for (int n = from; n < g->n_nodes; n++)
    release_node(g, n);
  tpu_graph_free(g);
}

/* After the run, or instead of it when the stream could not take it (tpu_stream_submit calls this
 * with its error set). */
static void done_flushed(void *arg) {
  flushed *f = arg;
  if (!f->ran)
    poison_outputs(f->graph, tpu_last_error());
  tpu_graph_free(f->graph);
  if (f->entry)
    tpu_compile_entry_release(f->entry);
  free(f);
}

/* Tensors of nodes [first, end) on buffer `b`: each holds one pending reader (tpu_fused_add). */
static int uses_in(const tpu_graph *g, int first, int end, const tpu_buffer *b) {
  int uses = 0;
  for (int n = first; n < end; n++) {
    const tpu_op_call *c = g->nodes[n].call;
    for (int i = 0; i < c->n_inputs + c->n_outputs; i++)
      uses += c->tensors[i].buf == b;
  }
  return uses;
}

/* In-place reuse: gives output `out` of node n, in step s = [first, end), the memory of a buffer
 * the step reads whose tensors died and that nothing after the step reads, when the driver says
 * the step allows it (graph_can_alias). */
static bool donate_to(const tpu_driver_i *drv, const void *plan, const tpu_graph *g, int s,
                      int first, int end, int n, int out, tpu_buffer *b) {
  if (!drv->graph_can_alias)
    return false;
  for (int m = first; m < end; m++) {
    const tpu_op_call *c = g->nodes[m].call;
    for (int i = 0; i < c->n_inputs; i++) {
      tpu_buffer *d = c->tensors[i].buf;
      if (d && d != b && tpu_buffer_is_live(d) && !tpu_buffer_storage_alive(d) &&
          tpu_buffer_nbytes(d) == tpu_buffer_nbytes(b) &&
          tpu_buffer_pending_readers(d) == uses_in(g, first, end, d) &&
          drv->graph_can_alias(plan, g, s, n, out, d) && tpu_buffer_donate(d, b))
        return true;
    }
  }
  return false;
}

/* Step i of a plan as nodes [*first, *first + *count): the driver's graph_step, else one node a
 * step. False past the last step. */
static bool plan_step(const tpu_driver_i *drv, const void *plan, const tpu_graph *g, int i,
                      int *first, int *count) {
  if (drv->graph_step)
    return drv->graph_step(plan, i, first, count);
  *first = i;
  *count = 1;
  return i < g->n_nodes;
}

/* The memory plan, made on the submitting thread in stream order before anything queued later
 * can ask for memory: walking the steps, each step's written outputs get memory, the memory of an
 * input read for the last time where the driver allows (donate_to), else new memory; then each
 * buffer the step used last whose tensors have died gives its memory back, to later steps and
 * later work. Steps run in order, so reuse inside the graph is as safe as reuse by later work; the
 * buffer keeps its address for the run (graph_run locates by it). *released counts the nodes
 * released so far. */
static tpu_status plan_memory(const tpu_driver_i *drv, const void *plan, const tpu_graph *g,
                              int *released) {
  int first, count;
  for (int s = 0; plan_step(drv, plan, g, s, &first, &count); s++) {
    for (int n = first; n < first + count; n++) {
      const tpu_op_call *c = g->nodes[n].call;
      for (int k = 0; k < c->n_outputs; k++) {
        tpu_buffer *b = c->tensors[c->n_inputs + k].buf;
        if (!b || (drv->graph_stores && !drv->graph_stores(plan, n, k)) ||
            tpu_buffer_is_live(b) || donate_to(drv, plan, g, s, first, first + count, n, k, b))
          continue;
        tpu_status st = tpu_buffer_materialize(b);
        if (st != TPU_OK)
          return st;
      }
    }
    for (; *released < first + count; (*released)++)
      release_node(g, *released);
  }
  return TPU_OK;
}

/* At the backward_start cut: the forward's results the backward reads again are computed again
 * there (exec/tpu_remat.h); they stay pending buffers of this stream's graphs. */
static void extract_recipes(fused_state *st, tpu_graph *g) {
  int first = st->remat.n;
  tpu_remat_extract(g, &st->remat);
  for (int i = first; i < st->remat.n; i++)
    tpu_buffer_set_materializer(st->remat.items[i]->target, materialize_graph, st);
}

/* A cut graph that cannot run (planning or memory failed with `status`): its outputs are poisoned,
 * its nodes from `released` on drop their buffers, and the error returns. */
static tpu_status drop_cut_graph(tpu_graph *g, int released, tpu_status status) {
  char message[1024];
  snprintf(message, sizeof message, "%s", tpu_last_error());
  poison_outputs(g, message);
  free_cut_graph(g, released);
  return tpu_error(status, "%s", message);
}

static tpu_status flush_state(fused_state *st, tpu_cut_reason reason) {
  pthread_mutex_lock(&st->mu);
  emit_all(st);
  tpu_graph *g = st->graph;
  st->graph = NULL;
  if (g)
    for (int s = 0; s < g->n_slots; s++)
      if (!g->slots[s].host)
        tpu_buffer_set_materializer((tpu_buffer *)g->slots[s].key, NULL, NULL);
  /* Recomputing only saves memory: out of host memory, the graph keeps the results it could not
   * take out (tpu_remat_extract leaves both consistent) and runs all the same. */
  if (g && reason == TPU_CUT_BACKWARD_START)
    extract_recipes(st, g);
  pthread_mutex_unlock(&st->mu);
  if (!g)
    return TPU_OK;
  atomic_fetch_add(&cut_counts[reason], 1);
  atomic_fetch_add(&cut_nodes, (uint64_t)g->n_nodes);
  const tpu_driver_i *drv = tpu_driver(); /* a graph holds nodes, so a driver is in use */
  tpu_status status = drv->graph_optimize ? drv->graph_optimize(&g) : TPU_OK;
  mark_needed(g);
  tpu_compile_cache *cache = tpu_compile_cache_global();
  tpu_compile_entry *entry = NULL;
  if (status == TPU_OK)
    status = cache ? tpu_compile_cache_lookup(cache, g, compile_graph, (void *)drv, &entry)
                   : tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot create the compile cache");
  int released = 0;
  if (status == TPU_OK)
    status = plan_memory(drv, tpu_compile_entry_plan(entry), g, &released);
  flushed *f = status == TPU_OK ? calloc(1, sizeof *f) : NULL;
  if (status == TPU_OK && !f)
    status = tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate a fused graph's work");
  if (status != TPU_OK) {
    if (entry)
      tpu_compile_entry_release(entry);
    return drop_cut_graph(g, released, status);
  }
  *f = (flushed){.graph = g, .entry = entry};
  return tpu_stream_submit(st->stream, "fused graph", run_flushed, done_flushed, f);
}

tpu_status tpu_fused_flush(tpu_stream *s, tpu_cut_reason reason) {
  fused_state *st = state_of(s);
  return st ? flush_state(st, reason) : TPU_OK;
}

tpu_status tpu_fused_flush_device(int device, tpu_cut_reason reason) {
  tpu_status first = TPU_OK;
  for (int d = 0; d < TPU_MAX_DEVICES; d++) {
    if (device >= 0 && d != device)
      continue;
    for (int i = 0; i < TPU_MAX_STREAMS; i++) {
      fused_state *st = atomic_load(&states[d][i]);
      tpu_status status = st ? flush_state(st, reason) : TPU_OK;
      if (first == TPU_OK)
        first = status;
    }
  }
  return first;
}

int tpu_fused_pending_nodes(tpu_stream *s) {
  fused_state *st = state_of(s);
  if (!st)
    return 0;
  pthread_mutex_lock(&st->mu);
  int n = st->graph ? st->graph->n_nodes : 0;
  pthread_mutex_unlock(&st->mu);
  return n;
}

char *tpu_fused_dump(tpu_stream *s, bool dot) {
  fused_state *st = state_of(s);
  if (!st)
    return NULL;
  pthread_mutex_lock(&st->mu);
  char *text = st->graph ? tpu_graph_dump(st->graph, dot) : strdup("");
  pthread_mutex_unlock(&st->mu);
  return text;
}

void tpu_fused_get_stats(tpu_fused_stats *stats) {
  for (int r = 0; r < TPU_CUT_COUNT; r++)
    stats->cuts[r] = atomic_load(&cut_counts[r]);
  stats->nodes = atomic_load(&cut_nodes);
  tpu_remat_get_stats(&stats->recomputed, &stats->recomputed_bytes);
}

void tpu_fused_reset_stats(void) {
  for (int r = 0; r < TPU_CUT_COUNT; r++)
    atomic_store(&cut_counts[r], 0);
  atomic_store(&cut_nodes, 0);
  tpu_remat_reset_stats();
}
