/* The structural hash and equality of graphs (tpu_graph.h): both walk the same fields, so equal
 * structures always hash equal; and the skeleton hash, which walks a subset of them. */
#include <string.h>

#include "graph/tpu_graph.h"

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v * 0x9e3779b97f4a7c15ull;
  h = (h << 27) | (h >> 37);
  return h * 0xbf58476d1ce4e5b9ull + 0x94d049bb133111ebull;
}

static uint64_t hash_tensor(uint64_t h, const tpu_tensor *t, const tpu_graph_ref *r) {
  h = mix(h, (uint64_t)t->dtype | (uint64_t)(uint32_t)t->ndim << 8 | (uint64_t)r->needed << 40);
  h = mix(h, (uint64_t)(uint32_t)r->slot | (uint64_t)(uint32_t)r->node << 32);
  h = mix(h, (uint64_t)(uint32_t)r->index);
  h = mix(h, (uint64_t)t->offset);
  for (int d = 0; d < t->ndim; d++)
    h = mix(mix(h, (uint64_t)t->sizes[d]), (uint64_t)t->strides[d]);
  return h;
}

uint64_t tpu_graph_hash(const tpu_graph *g) {
  uint64_t h = mix(mix(0, g->flags), (uint64_t)g->n_nodes);
  for (int s = 0; s < g->n_slots; s++)
    h = mix(h, g->slots[s].host);
  for (int n = 0; n < g->n_nodes; n++) {
    const tpu_graph_node *node = &g->nodes[n];
    const tpu_op_call *c = node->call;
    h = mix(h, (uint64_t)c->op | (uint64_t)c->compute << 16 | (uint64_t)node->attr_scalars << 24 |
                   (uint64_t)(uint16_t)c->n_inputs << 32 | (uint64_t)(uint16_t)c->n_outputs << 48);
    for (int k = 0; k < TPU_OP_MAX_SCALARS; k++)
      if (node->attr_scalars & (1u << k))
        h = mix(h, c->scalars[k].u);
    for (int i = 0; i < c->n_inputs + c->n_outputs; i++)
      h = hash_tensor(h, &c->tensors[i], &node->refs[i]);
  }
  return h;
}

uint64_t tpu_graph_skeleton_hash(const tpu_graph *g) {
  uint64_t h = mix(mix(mix(0, g->flags), (uint64_t)g->n_nodes), (uint64_t)g->n_slots);
  for (int n = 0; n < g->n_nodes; n++) {
    const tpu_graph_node *node = &g->nodes[n];
    const tpu_op_call *c = node->call;
    h = mix(h, (uint64_t)c->op | (uint64_t)node->attr_scalars << 24 |
                   (uint64_t)(uint16_t)c->n_inputs << 32 | (uint64_t)(uint16_t)c->n_outputs << 48);
    for (int i = 0; i < c->n_inputs + c->n_outputs; i++) {
      const tpu_graph_ref *r = &node->refs[i];
      h = mix(h, (uint64_t)(uint32_t)r->slot | (uint64_t)(uint32_t)r->node << 32);
      h = mix(h, (uint64_t)(uint32_t)r->index | (uint64_t)r->needed << 32);
    }
  }
  return h;
}

static bool same_tensor(const tpu_tensor *a, const tpu_tensor *b) {
  if (a->dtype != b->dtype || a->ndim != b->ndim || a->offset != b->offset)
    return false;
  size_t dims = (size_t)a->ndim * sizeof a->sizes[0];
  return !memcmp(a->sizes, b->sizes, dims) && !memcmp(a->strides, b->strides, dims);
}

static bool same_ref(const tpu_graph_ref *a, const tpu_graph_ref *b) {
  return a->slot == b->slot && a->node == b->node && a->index == b->index &&
         a->needed == b->needed;
}

static bool same_node(const tpu_graph_node *a, const tpu_graph_node *b) {
  const tpu_op_call *x = a->call, *y = b->call;
  if (x->op != y->op || x->compute != y->compute || x->n_inputs != y->n_inputs ||
      x->n_outputs != y->n_outputs || a->attr_scalars != b->attr_scalars)
    return false;
  for (int k = 0; k < TPU_OP_MAX_SCALARS; k++)
    if ((a->attr_scalars & (1u << k)) && x->scalars[k].u != y->scalars[k].u)
      return false;
  for (int i = 0; i < x->n_inputs + x->n_outputs; i++)
    if (!same_ref(&a->refs[i], &b->refs[i]) || !same_tensor(&x->tensors[i], &y->tensors[i]))
      return false;
  return true;
}

bool tpu_graph_equal(const tpu_graph *a, const tpu_graph *b) {
  if (a->flags != b->flags || a->n_nodes != b->n_nodes || a->n_slots != b->n_slots)
    return false;
  for (int s = 0; s < a->n_slots; s++)
    if (a->slots[s].host != b->slots[s].host)
      return false;
  for (int n = 0; n < a->n_nodes; n++)
    if (!same_node(&a->nodes[n], &b->nodes[n]))
      return false;
  return true;
}
