/* Reordering a graph's nodes (tpu_graph_permute, tpu_graph.h). Everything is remapped from the
 * structure alone: a version is named by its producer node, so a legal order only renames nodes;
 * slots are renumbered by first appearance so that equal graphs permuted alike stay equal. */
#include <stdlib.h>

#include "graph/tpu_graph.h"

/* new_slot[s] for every slot, numbered by first appearance in the new order. Every slot has a
 * node using it (tpu_graph_add adds a node whole or not at all); any other would follow in its old
 * order, so that the numbering stays a permutation and its buffer reference moves too. */
static void number_slots(const tpu_graph *g, const int *order, int32_t *new_slot) {
  int32_t next = 0;
  for (int s = 0; s < g->n_slots; s++)
    new_slot[s] = -1;
  for (int i = 0; i < g->n_nodes; i++) {
    const tpu_graph_node *node = &g->nodes[order[i]];
    for (int t = 0; t < node->call->n_inputs + node->call->n_outputs; t++) {
      int32_t s = node->refs[t].slot;
      if (s >= 0 && new_slot[s] < 0)
        new_slot[s] = next++;
    }
  }
  for (int s = 0; s < g->n_slots; s++)
    if (new_slot[s] < 0)
      new_slot[s] = next++;
}

static int32_t new_node(const int *position, int32_t node) {
  return node >= 0 ? position[node] : node;
}

/* position[order[i]] = i; false when `order` is not a permutation of 0..n-1. */
static bool invert(const int *order, int n, int *position) {
  for (int i = 0; i < n; i++)
    position[i] = -1;
  for (int i = 0; i < n; i++) {
    if (order[i] < 0 || order[i] >= n || position[order[i]] >= 0)
      return false;
    position[order[i]] = i;
  }
  return true;
}

tpu_status tpu_graph_permute(tpu_graph *g, const int *order, tpu_graph **out) {
  int n = g->n_nodes;
  int *position = malloc((size_t)(n ? n : 1) * sizeof *position);
  int32_t *new_slot = malloc((size_t)(g->n_slots ? g->n_slots : 1) * sizeof *new_slot);
  tpu_graph *c = tpu_graph_new(g->flags);
  if (c) {
    c->nodes = malloc((size_t)(n ? n : 1) * sizeof *c->nodes);
    c->slots = malloc((size_t)(g->n_slots ? g->n_slots : 1) * sizeof *c->slots);
  }
  tpu_status status = TPU_OK;
  if (!c || !c->nodes || !c->slots || !position || !new_slot)
    status = tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate a permuted graph");
  else if (!invert(order, n, position))
    status = tpu_error(TPU_ERR_VALUE, "the node order is not a permutation");
  if (status != TPU_OK) {
    tpu_graph_free(c);
    free(position);
    free(new_slot);
    return status;
  }
  number_slots(g, order, new_slot);
  /* From here nothing fails: the calls, refs, slots (with their buffer references) and the slot
   * table move to the new graph. The table's positions depend on keys only, so it stays valid
   * once its entries name the new slot numbers. */
  for (int i = 0; i < n; i++) {
    tpu_graph_node node = g->nodes[order[i]];
    for (int t = 0; t < node.call->n_inputs + node.call->n_outputs; t++) {
      tpu_graph_ref *r = &node.refs[t];
      if (r->slot >= 0)
        r->slot = new_slot[r->slot];
      r->node = new_node(position, r->node);
    }
    c->nodes[i] = node;
  }
  for (int s = 0; s < g->n_slots; s++) {
    tpu_graph_slot slot = g->slots[s];
    slot.latest_node = new_node(position, slot.latest_node);
    c->slots[new_slot[s]] = slot;
  }
  for (int i = 0; i < g->table_size; i++)
    if (g->slot_table[i])
      g->slot_table[i] = new_slot[g->slot_table[i] - 1] + 1;
  c->n_nodes = c->cap_nodes = n;
  c->n_slots = c->cap_slots = g->n_slots;
  c->slot_table = g->slot_table, c->table_size = g->table_size;
  c->holds_refs = g->holds_refs;
  free(g->nodes);
  free(g->slots);
  free(g);
  free(position);
  free(new_slot);
  *out = c;
  return TPU_OK;
}
