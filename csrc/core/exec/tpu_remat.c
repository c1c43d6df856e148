#include "exec/tpu_remat.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/tpu_driver.h"

static atomic_uint_least64_t recomputed_values, recomputed_bytes;

/* Whether output k of node n is still in memory, unchanged, after the graph: stored (its storage
 * is alive) and overwritten by no later node. */
static bool kept_output(const tpu_graph *g, int n, int k) {
  const tpu_op_call *c = g->nodes[n].call;
  const tpu_tensor *t = &c->tensors[c->n_inputs + k];
  const tpu_graph_slot *s = &g->slots[g->nodes[n].refs[c->n_inputs + k].slot];
  return t->buf && tpu_buffer_storage_alive(t->buf) && s->latest_node == n &&
         s->latest_index == k;
}

/* Whether input i of node n reads a value that is still in memory after the graph: external
 * contents the graph never writes, or a kept output. A scalar held in the call, or an absent
 * (empty host) view, is always available. */
static bool kept_input(const tpu_graph *g, int n, int i) {
  const tpu_graph_ref *r = &g->nodes[n].refs[i];
  const tpu_tensor *t = &g->nodes[n].call->tensors[i];
  if (r->node == TPU_GRAPH_NO_SLOT || (!t->buf && tpu_tensor_numel(t) == 0))
    return true;
  if (!t->buf)
    return false;
  if (r->node >= 0)
    return kept_output(g, r->node, r->index);
  return r->node == TPU_GRAPH_EXTERNAL && g->slots[r->slot].latest_node == TPU_GRAPH_EXTERNAL;
}

static bool fresh_output(const tpu_graph *g, int n) {
  const tpu_op_call *c = g->nodes[n].call;
  return c->tensors[c->n_inputs].buf && g->nodes[n].refs[c->n_inputs].node == TPU_GRAPH_FRESH;
}

/* A batch_norm whose normalized output (output 0) BATCH_NORM_APPLY can compute again: its input,
 * weight and bias and its saved statistics (outputs 1 and 2, as the kernel stores them) stay. */
static bool batch_norm_recomputable(const tpu_graph *g, int n) {
  const tpu_op_call *c = g->nodes[n].call;
  if (c->op != TPU_OP_BATCH_NORM || !fresh_output(g, n))
    return false;
  tpu_dtype stats = c->tensors[0].dtype == TPU_FLOAT64 ? TPU_FLOAT64 : TPU_FLOAT32;
  for (int i = 0; i < 3; i++)
    if (!kept_input(g, n, i))
      return false;
  for (int k = 1; k <= 2; k++)
    if (!kept_output(g, n, k) || c->tensors[c->n_inputs + k].dtype != stats)
      return false;
  return true;
}

/* Per node, whether its output 0 can be computed again from kept values (1) or not (-1), in graph
 * order so that producers are decided first. */
static void classify(const tpu_graph *g, int8_t *rec) {
  const tpu_driver_i *drv = tpu_driver();
  for (int n = 0; n < g->n_nodes; n++) {
    const tpu_op_call *c = g->nodes[n].call;
    bool ok = !c->cleanup;
    if (ok && c->op == TPU_OP_BATCH_NORM) {
      rec[n] = batch_norm_recomputable(g, n) ? 1 : -1;
      continue;
    }
    ok = ok && c->n_outputs == 1 && fresh_output(g, n) && drv->graph_recomputable &&
         drv->graph_recomputable(g, n);
    for (int i = 0; ok && i < c->n_inputs; i++) {
      const tpu_graph_ref *r = &g->nodes[n].refs[i];
      ok = kept_input(g, n, i) || (r->node >= 0 && r->index == 0 && rec[r->node] > 0);
    }
    rec[n] = ok ? 1 : -1;
  }
}

/* Marks in `in` the nodes the recipe of node n runs: n and the producers of inputs that are not
 * kept, recursively. Returns the count, or more than TPU_REMAT_MAX_NODES when too many. */
static int collect(const tpu_graph *g, int n, bool *in, int count) {
  if (in[n] || count > TPU_REMAT_MAX_NODES)
    return count;
  in[n] = true;
  count++;
  const tpu_op_call *c = g->nodes[n].call;
  int inputs = c->op == TPU_OP_BATCH_NORM ? 0 : c->n_inputs;
  for (int i = 0; i < inputs; i++)
    if (!kept_input(g, n, i))
      count = collect(g, g->nodes[n].refs[i].node, in, count);
  return count;
}

/* BATCH_NORM_APPLY for batch_norm call `bn`: X, W, B, its saved mean and invstd -> its Y. */
static tpu_op_call *apply_call(const tpu_op_call *bn) {
  tpu_op_call *c = tpu_op_call_new(TPU_OP_BATCH_NORM_APPLY, 5, 1);
  if (!c)
    return NULL;
  const int from[6] = {0, 1, 2, 4, 5, 3};
  for (int i = 0; i < 6; i++)
    c->tensors[i] = bn->tensors[from[i]];
  return c;
}

/* A fresh pending buffer like `like` whose storage is gone: an intermediate only its graph reads.
 * The caller holds the one reference left. */
static tpu_buffer *scratch_like(const tpu_buffer *like) {
  tpu_buffer *b;
  if (tpu_buffer_create_pending(tpu_buffer_device(like), tpu_buffer_stream(like),
                                tpu_buffer_nbytes(like), &b) != TPU_OK)
    return NULL;
  tpu_buffer_retain(b);
  tpu_buffer_release_storage(b);
  return b;
}

/* Takes one reference and one pending reader on every buffer of the recipe's calls. */
static bool hold_buffers(tpu_remat *r) {
  int n = 0;
  for (int k = 0; k < r->n_calls; k++)
    n += r->calls[k]->n_inputs + r->calls[k]->n_outputs;
  r->held = malloc((size_t)n * sizeof *r->held);
  if (!r->held)
    return false;
  for (int k = 0; k < r->n_calls; k++) {
    const tpu_op_call *c = r->calls[k];
    for (int i = 0; i < c->n_inputs + c->n_outputs; i++) {
      tpu_buffer *b = c->tensors[i].buf;
      if (b) {
        tpu_buffer_retain(b);
        tpu_buffer_add_reader(b);
        r->held[r->n_held++] = b;
      }
    }
  }
  return true;
}

/* The recipe of node `target` over the nodes marked in `in` (graph order); NULL when out of
 * memory. Intermediates get scratch buffers; the last call writes the target's own buffer. */
static tpu_remat *make_recipe(const tpu_graph *g, int target, const bool *in) {
  tpu_remat *r = calloc(1, sizeof *r);
  tpu_buffer **scratch = calloc((size_t)g->n_nodes, sizeof *scratch);
  bool ok = r && scratch;
  for (int n = 0; ok && n <= target; n++) {
    if (!in[n])
      continue;
    const tpu_op_call *src = g->nodes[n].call;
    tpu_op_call *c = src->op == TPU_OP_BATCH_NORM ? apply_call(src) : tpu_op_call_clone(src);
    ok = c != NULL;
    if (!ok)
      break;
    r->calls[r->n_calls++] = c;
    for (int i = 0; i < c->n_inputs; i++) {
      const tpu_graph_ref *ref = &g->nodes[n].refs[i];
      if (src->op != TPU_OP_BATCH_NORM && ref->node >= 0 && in[ref->node])
        c->tensors[i].buf = scratch[ref->node];
    }
    tpu_tensor *out = &c->tensors[c->n_inputs];
    if (n != target) {
      ok = (scratch[n] = scratch_like(out->buf)) != NULL;
      out->buf = scratch[n];
    }
  }
  ok = ok && hold_buffers(r);
  for (int n = 0; scratch && n < g->n_nodes; n++)
    if (scratch[n])
      tpu_buffer_release(scratch[n]);
  free(scratch);
  if (!ok) {
    tpu_remat_free(r);
    return NULL;
  }
  const tpu_op_call *last = g->nodes[target].call;
  r->target = last->tensors[last->n_inputs].buf;
  r->bytes = tpu_buffer_nbytes(r->target);
  tpu_buffer_retain(r->target);
  return r;
}

/* Whether output 0 of node n is worth taking out: a recomputable result the caller still holds,
 * large enough, written nowhere else in the graph. */
static bool candidate(const tpu_graph *g, int n, const int8_t *rec) {
  const tpu_op_call *c = g->nodes[n].call;
  const tpu_buffer *b = c->tensors[c->n_inputs].buf;
  return rec[n] > 0 && kept_output(g, n, 0) && !tpu_buffer_is_live(b) &&
         tpu_buffer_nbytes(b) >= TPU_REMAT_MIN_BYTES;
}

static bool list_push(tpu_remat_list *list, tpu_remat *r) {
  if (list->n == list->cap) {
    int cap = list->cap ? 2 * list->cap : 16;
    tpu_remat **items = realloc(list->items, (size_t)cap * sizeof *items);
    if (!items)
      return false;
    list->items = items, list->cap = cap;
  }
  list->items[list->n++] = r;
  return true;
}

/* In the graph, the result's buffer becomes a scratch buffer that dies with the graph, with the
 * pending readers the graph's nodes hold on it. */
static bool detach(tpu_graph *g, tpu_buffer *target) {
  tpu_buffer *b = scratch_like(target);
  if (!b)
    return false;
  tpu_graph_replace_buffer(g, target, b);
  tpu_buffer_release(b);
  for (int n = 0; n < g->n_nodes; n++) {
    const tpu_op_call *c = g->nodes[n].call;
    for (int i = 0; i < c->n_inputs + c->n_outputs; i++)
      if (c->tensors[i].buf == b) {
        tpu_buffer_add_reader(b);
        tpu_buffer_reader_done(target);
      }
  }
  return true;
}

tpu_status tpu_remat_extract(tpu_graph *g, tpu_remat_list *list) {
  int8_t *rec = calloc((size_t)g->n_nodes + 1, sizeof *rec);
  bool *in = calloc((size_t)g->n_nodes + 1, sizeof *in);
  int first = list->n;
  bool ok = rec && in;
  if (ok)
    classify(g, rec);
  for (int n = 0; ok && n < g->n_nodes; n++) {
    if (!candidate(g, n, rec))
      continue;
    memset(in, 0, (size_t)g->n_nodes * sizeof *in);
    if (collect(g, n, in, 0) > TPU_REMAT_MAX_NODES)
      continue;
    tpu_remat *r = make_recipe(g, n, in);
    ok = r && list_push(list, r);
    if (r && !ok)
      tpu_remat_free(r);
  }
  /* Detached only once every recipe is made: a recipe reads other results by their own buffers.
   * The recipes of results left in the graph (out of memory) are dropped. */
  int detached = first;
  while (ok && detached < list->n && (ok = detach(g, list->items[detached]->target)))
    detached++;
  while (list->n > detached)
    tpu_remat_free(tpu_remat_take(list, list->n - 1));
  free(rec);
  free(in);
  return ok ? TPU_OK : tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot plan recomputed results");
}

int tpu_remat_find(const tpu_remat_list *list, const tpu_buffer *b, bool any_use) {
  for (int i = 0; i < list->n; i++) {
    const tpu_remat *r = list->items[i];
    if (r->target == b)
      return i;
    for (int k = 0; any_use && k < r->n_held; k++)
      if (r->held[k] == b)
        return i;
  }
  return -1;
}

tpu_remat *tpu_remat_take(tpu_remat_list *list, int i) {
  tpu_remat *r = list->items[i];
  memmove(&list->items[i], &list->items[i + 1], (size_t)(list->n - i - 1) * sizeof *list->items);
  list->n--;
  return r;
}

void tpu_remat_free(tpu_remat *r) {
  if (!r)
    return;
  for (int k = 0; k < r->n_calls; k++)
    tpu_op_call_free(r->calls[k]);
  for (int k = 0; k < r->n_held; k++) {
    tpu_buffer_reader_done(r->held[k]);
    tpu_buffer_release(r->held[k]);
  }
  if (r->target)
    tpu_buffer_release(r->target);
  free(r->held);
  free(r);
}

/* Whether another recipe of the list reads recipe i's result. */
static bool read_by_other(const tpu_remat_list *list, int i) {
  for (int j = 0; j < list->n; j++)
    for (int k = 0; j != i && k < list->items[j]->n_held; k++)
      if (list->items[j]->held[k] == list->items[i]->target)
        return true;
  return false;
}

void tpu_remat_prune(tpu_remat_list *list) {
  for (int i = list->n - 1; i >= 0; i--)
    if (!tpu_buffer_storage_alive(list->items[i]->target) && !read_by_other(list, i)) {
      tpu_remat_free(tpu_remat_take(list, i));
      i = list->n; /* what it read may now be unread too */
    }
}

void tpu_remat_count(const tpu_remat *r) {
  atomic_fetch_add(&recomputed_values, 1);
  atomic_fetch_add(&recomputed_bytes, (uint64_t)r->bytes);
}

void tpu_remat_get_stats(uint64_t *values, uint64_t *bytes) {
  *values = atomic_load(&recomputed_values);
  *bytes = atomic_load(&recomputed_bytes);
}

void tpu_remat_reset_stats(void) {
  atomic_store(&recomputed_values, 0);
  atomic_store(&recomputed_bytes, 0);
}
