#include "graph/tpu_graph.h"

#include <stdlib.h>
#include <string.h>

tpu_graph *tpu_graph_new(uint64_t flags) {
  tpu_graph *g = calloc(1, sizeof *g);
  if (g) {
    g->flags = flags;
    g->holds_refs = true;
  }
  return g;
}

void tpu_graph_free(tpu_graph *g) {
  if (!g)
    return;
  for (int n = 0; n < g->n_nodes; n++) {
    tpu_op_call_free(g->nodes[n].call);
    free(g->nodes[n].refs);
  }
  if (g->holds_refs)
    for (int s = 0; s < g->n_slots; s++)
      if (!g->slots[s].host)
        tpu_buffer_release((tpu_buffer *)g->slots[s].key);
  free(g->nodes);
  free(g->slots);
  free(g->slot_table);
  free(g);
}

static uint64_t hash_key(const void *key) {
  uint64_t h = (uint64_t)(uintptr_t)key * 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 29);
}

/* The index of the slot with `key`, or -1. */
static int find_slot(const tpu_graph *g, const void *key) {
  if (!g->table_size)
    return -1;
  unsigned mask = (unsigned)g->table_size - 1;
  for (unsigned i = (unsigned)hash_key(key) & mask;; i = (i + 1) & mask) {
    int32_t e = g->slot_table[i];
    if (!e)
      return -1;
    if (g->slots[e - 1].key == key)
      return e - 1;
  }
}

static void table_insert(tpu_graph *g, int slot) {
  unsigned mask = (unsigned)g->table_size - 1;
  unsigned i = (unsigned)hash_key(g->slots[slot].key) & mask;
  while (g->slot_table[i])
    i = (i + 1) & mask;
  g->slot_table[i] = slot + 1;
}

/* Room for one more node and for `n_tensors` more slots, so that adding a node, which takes a
 * new slot at most for each of its tensors, cannot fail halfway. */
static bool reserve(tpu_graph *g, int n_tensors) {
  if (g->n_nodes == g->cap_nodes) {
    int cap = g->cap_nodes ? 2 * g->cap_nodes : 16;
    tpu_graph_node *nodes = realloc(g->nodes, (size_t)cap * sizeof *nodes);
    if (!nodes)
      return false;
    g->nodes = nodes, g->cap_nodes = cap;
  }
  int want = g->n_slots + n_tensors;
  if (want > g->cap_slots) {
    int cap = g->cap_slots ? g->cap_slots : 16;
    while (cap < want)
      cap *= 2;
    tpu_graph_slot *slots = realloc(g->slots, (size_t)cap * sizeof *slots);
    if (!slots)
      return false;
    g->slots = slots, g->cap_slots = cap;
  }
  if (2 * want > g->table_size) {
    int size = g->table_size ? g->table_size : 32;
    while (size < 2 * want)
      size *= 2;
    int32_t *table = calloc((size_t)size, sizeof *table);
    if (!table)
      return false;
    free(g->slot_table);
    g->slot_table = table, g->table_size = size;
    for (int s = 0; s < g->n_slots; s++)
      table_insert(g, s);
  }
  return true;
}

/* Appends a slot for `key`, in the room reserve() made. */
static int add_slot(tpu_graph *g, const void *key, bool host) {
  int s = g->n_slots++;
  g->slots[s] = (tpu_graph_slot){.key = key, .host = host, .latest_node = TPU_GRAPH_EXTERNAL};
  table_insert(g, s);
  if (!host && g->holds_refs)
    tpu_buffer_retain((tpu_buffer *)key);
  return s;
}

/* A scalar operand held in the call itself (tpu_op_set_scalar_input): it has no slot. */
static bool is_call_scalar(const tpu_op_call *call, const tpu_tensor *t) {
  const char *p = t->host, *lo = (const char *)call->scalars;
  return !t->buf && p >= lo && p < lo + sizeof call->scalars;
}

/* Resolves tensor i of the node being added (index n) into refs[i]. */
static void resolve(tpu_graph *g, int n, const tpu_op_call *call, int i, tpu_graph_ref *ref) {
  const tpu_tensor *t = &call->tensors[i];
  if (is_call_scalar(call, t)) {
    *ref = (tpu_graph_ref){.slot = -1, .node = TPU_GRAPH_NO_SLOT};
    return;
  }
  const void *key = t->buf ? (const void *)t->buf : t->host;
  int s = find_slot(g, key);
  bool output = i >= call->n_inputs;
  bool fresh = false;
  if (s < 0) {
    fresh = output && t->buf && !tpu_buffer_is_live(t->buf);
    s = add_slot(g, key, !t->buf);
  }
  tpu_graph_slot *slot = &g->slots[s];
  *ref = (tpu_graph_ref){.slot = s,
                         .node = fresh ? TPU_GRAPH_FRESH : slot->latest_node,
                         .index = fresh ? 0 : slot->latest_index,
                         .needed = output};
  if (output) {
    slot->latest_node = n;
    slot->latest_index = i - call->n_inputs;
  }
}

tpu_status tpu_graph_add(tpu_graph *g, tpu_op_call *call, uint8_t attr_scalars) {
  if (!call)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate an op call");
  int n_tensors = call->n_inputs + call->n_outputs;
  tpu_graph_ref *refs = calloc((size_t)(n_tensors ? n_tensors : 1), sizeof *refs);
  if (!refs || !reserve(g, n_tensors)) {
    /* Nothing is added: the graph stays as it was. */
    free(refs);
    tpu_op_call_free(call);
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot grow the graph");
  }
  /* Inputs first: an in-place op's input reads the version its output then overwrites. */
  for (int i = 0; i < n_tensors; i++)
    resolve(g, g->n_nodes, call, i, &refs[i]);
  g->nodes[g->n_nodes++] = (tpu_graph_node){.call = call, .attr_scalars = attr_scalars,
                                            .refs = refs};
  return TPU_OK;
}

bool tpu_graph_replace_buffer(tpu_graph *g, tpu_buffer *from, tpu_buffer *to) {
  int s = find_slot(g, from);
  if (s < 0 || g->slots[s].host || find_slot(g, to) >= 0)
    return false;
  g->slots[s].key = to;
  memset(g->slot_table, 0, (size_t)g->table_size * sizeof *g->slot_table);
  for (int k = 0; k < g->n_slots; k++)
    table_insert(g, k);
  for (int n = 0; n < g->n_nodes; n++) {
    tpu_op_call *c = g->nodes[n].call;
    for (int i = 0; i < c->n_inputs + c->n_outputs; i++)
      if (c->tensors[i].buf == from)
        c->tensors[i].buf = to;
  }
  if (g->holds_refs) {
    tpu_buffer_retain(to);
    tpu_buffer_release(from);
  }
  return true;
}

void tpu_graph_set_needed(tpu_graph *g, int node, int out, bool needed) {
  tpu_graph_node *n = &g->nodes[node];
  n->refs[n->call->n_inputs + out].needed = needed;
}

tpu_graph *tpu_graph_clone_structure(const tpu_graph *g) {
  tpu_graph *c = tpu_graph_new(g->flags);
  if (!c)
    return NULL;
  c->holds_refs = false;
  c->nodes = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *c->nodes);
  c->slots = calloc((size_t)(g->n_slots ? g->n_slots : 1), sizeof *c->slots);
  if (!c->nodes || !c->slots) {
    tpu_graph_free(c);
    return NULL;
  }
  c->cap_nodes = g->n_nodes, c->cap_slots = g->n_slots, c->n_slots = g->n_slots;
  for (int s = 0; s < g->n_slots; s++)
    c->slots[s] = (tpu_graph_slot){.host = g->slots[s].host, .latest_node = TPU_GRAPH_EXTERNAL};
  for (int n = 0; n < g->n_nodes; n++) {
    const tpu_op_call *src = g->nodes[n].call;
    int n_tensors = src->n_inputs + src->n_outputs;
    tpu_op_call *call = tpu_op_call_new(src->op, src->n_inputs, src->n_outputs);
    tpu_graph_ref *refs = malloc((size_t)(n_tensors ? n_tensors : 1) * sizeof *refs);
    if (!call || !refs) {
      free(call);
      free(refs);
      tpu_graph_free(c);
      return NULL;
    }
    call->compute = src->compute;
    memcpy(call->scalars, src->scalars, sizeof call->scalars);
    for (int i = 0; i < n_tensors; i++) {
      call->tensors[i] = src->tensors[i];
      call->tensors[i].buf = NULL;
      call->tensors[i].host = NULL;
    }
    memcpy(refs, g->nodes[n].refs, (size_t)n_tensors * sizeof *refs);
    c->nodes[c->n_nodes++] =
        (tpu_graph_node){.call = call, .attr_scalars = g->nodes[n].attr_scalars, .refs = refs};
  }
  return c;
}
