/* Reordering a graph so that chains of fusable nodes become consecutive (tpu_fuse_reorder).
 *
 * Sink clustering, from the last node back: the last unassigned node m starts a cluster; while it
 * is fusable, the cluster admits the largest unassigned node j < m that shares a slot with one of
 * its nodes, is fusable with m's element count, has no hazard (a slot both touch, at least one
 * writing it) with any unassigned node outside the cluster, and would not hold a dead temporary of
 * the graph alive until m (extends_temporary). Last, such a cluster admits under the same
 * conditions the GEMM below all its nodes whose output one of them reads, so that the GEMM comes
 * right before the chain that becomes its epilogue. The cluster is emitted in ascending
 * order after everything assigned later, so the order is the clusters in reverse discovery order.
 *
 * Why that order is legal, by induction over the scan. When a cluster is formed every node after m
 * is already assigned and will follow it, as it did; the unassigned nodes outside the cluster will
 * all precede it, and among themselves get a legal order by induction. The only pairs that change
 * order are a cluster node j and an unassigned outsider k with j < k < m, and j was admitted only
 * because no such k had a hazard with it; inside the cluster the original order stays.
 *
 * A node that is neither fusable nor a GEMM is never admitted: it forms a cluster alone, emitted
 * right after the cluster of the node before it unless a later cluster admitted that node. So two
 * consecutive nodes of which neither is fusable or a GEMM stay consecutive (the cross-entropy pair
 * of tpu_fuse_cross_entropy_pair).
 *
 * Cost: per slot, the nodes touching it in ascending order; since every node after m is assigned,
 * the largest unassigned node touching a slot (or writing it) only moves back, so a hazard check
 * costs the slots of j, and finding a candidate walks the cluster's slot lists. */
#include <stdlib.h>

#include "drivers/host/fuse/fuse_internal.h"

/* A node touching a slot, in the slot's list. */
typedef struct touch {
  int32_t node;
  bool writes;
} touch;

typedef struct order_state {
  const tpu_graph *g;
  touch *touches;     /* per slot lists, slot s from start[s], ascending */
  int *start;         /* n_slots + 1: bounds of each slot's room in touches */
  int *top_any;       /* per slot: one past the largest entry that may be unassigned */
  int *top_write;     /* the same over the slot's writers */
  int *seen;          /* per slot: the search that last walked it */
  int *last;          /* per slot: the largest node touching it */
  bool *assigned;     /* per node */
  bool *fusable;      /* per node */
} order_state;

static int n_tensors(const tpu_op_call *c) { return c->n_inputs + c->n_outputs; }

/* Fills the per slot lists: one entry per node and slot it touches, writes or-ed together. */
static void build_lists(order_state *s) {
  const tpu_graph *g = s->g;
  int *fill = s->top_any; /* scratch until the tops are set */
  for (int n = 0; n < g->n_nodes; n++) {
    const tpu_op_call *c = g->nodes[n].call;
    for (int t = 0; t < n_tensors(c); t++) {
      int32_t slot = g->nodes[n].refs[t].slot;
      if (slot >= 0 && (fill[slot] == 0 || s->touches[s->start[slot] + fill[slot] - 1].node != n))
        s->touches[s->start[slot] + fill[slot]++] = (touch){.node = n};
    }
    for (int t = c->n_inputs; t < n_tensors(c); t++) {
      int32_t slot = g->nodes[n].refs[t].slot;
      if (slot >= 0)
        s->touches[s->start[slot] + fill[slot] - 1].writes = true;
    }
  }
  for (int slot = 0; slot < g->n_slots; slot++) {
    s->last[slot] = fill[slot] ? s->touches[s->start[slot] + fill[slot] - 1].node : -1;
    s->top_any[slot] = s->top_write[slot] = s->start[slot] + fill[slot]; /* fill is top_any */
  }
}

/* True when moving j down to m would keep alive a buffer made in this graph by a node outside the
 * cluster, whose tensors died and which nothing at or after m reads: that memory would be held
 * from j to m instead of given back after j (a chain accumulating per-timestep results would hold
 * every timestep's). Buffers from before the graph, or kept by their tensors, are not made longer
 * lived by it in a way the plan could avoid. */
static bool extends_temporary(const order_state *s, int32_t j, int32_t m) {
  const tpu_graph_node *node = &s->g->nodes[j];
  for (int t = 0; t < node->call->n_inputs; t++) {
    const tpu_graph_ref *r = &node->refs[t];
    const tpu_tensor *x = &node->call->tensors[t];
    if (r->slot < 0 || r->node < 0 || s->assigned[r->node] || s->last[r->slot] >= m || !x->buf)
      continue;
    if (!tpu_buffer_storage_alive(x->buf))
      return true;
  }
  return false;
}

/* The largest unassigned node touching `slot` (writing it when `writes`), or -1. */
static int32_t top(order_state *s, int slot, bool writes) {
  int *end = writes ? &s->top_write[slot] : &s->top_any[slot];
  while (*end > s->start[slot]) {
    const touch *e = &s->touches[*end - 1];
    if (!s->assigned[e->node] && (e->writes || !writes))
      return e->node;
    (*end)--;
  }
  return -1;
}

/* True when an unassigned node after j shares a slot with j, one of the two writing it. */
static bool hazard(order_state *s, int32_t j) {
  const tpu_op_call *c = s->g->nodes[j].call;
  for (int t = 0; t < n_tensors(c); t++) {
    int32_t slot = s->g->nodes[j].refs[t].slot;
    if (slot >= 0 && top(s, slot, t < c->n_inputs) > j)
      return true;
  }
  return false;
}

/* The node the cluster admits next, or -1: see the header comment. */
static int32_t next_member(order_state *s, const int32_t *cluster, int size, int search) {
  int64_t numel = tpu_fuse_out_numel(s->g, cluster[0]);
  int32_t best = -1;
  for (int i = 0; i < size; i++) {
    const tpu_graph_node *node = &s->g->nodes[cluster[i]];
    for (int t = 0; t < n_tensors(node->call); t++) {
      int32_t slot = node->refs[t].slot;
      if (slot < 0 || s->seen[slot] == search)
        continue;
      s->seen[slot] = search;
      for (int e = s->top_any[slot] - 1; e >= s->start[slot]; e--) {
        int32_t j = s->touches[e].node;
        if (j <= best)
          break;
        if (!s->assigned[j] && s->fusable[j] && tpu_fuse_out_numel(s->g, j) == numel &&
            !hazard(s, j) && !extends_temporary(s, j, cluster[0])) {
          best = j;
          break;
        }
      }
    }
  }
  return best;
}

/* The GEMM a chain cluster takes as its head, or -1: the largest unassigned GEMM below every
 * member whose output a member reads, over the cluster's element count, that can move down to
 * the cluster (the planner then runs the chain as its epilogue). */
static int32_t gemm_member(order_state *s, const int32_t *cluster, int size) {
  int64_t numel = tpu_fuse_out_numel(s->g, cluster[0]);
  int32_t best = -1;
  for (int i = 0; i < size; i++) {
    const tpu_graph_node *node = &s->g->nodes[cluster[i]];
    for (int t = 0; t < node->call->n_inputs; t++) {
      int32_t j = node->refs[t].node;
      if (j > best && j < cluster[size - 1] && !s->assigned[j] && tpu_fuse_gemm_head(s->g, j) &&
          tpu_fuse_out_numel(s->g, j) == numel && !hazard(s, j) &&
          !extends_temporary(s, j, cluster[0]))
        best = j;
    }
  }
  return best;
}

/* Fills order[] from the back, one cluster at a time. */
static void sink_clusters(order_state *s, int *order) {
  int n = s->g->n_nodes, end = n, search = 0;
  int32_t cluster[FZ_MAX_GROUP];
  for (int m = n - 1; m >= 0; m--) {
    if (s->assigned[m])
      continue;
    int size = 1;
    cluster[0] = m;
    s->assigned[m] = true;
    while (s->fusable[m] && size < FZ_MAX_GROUP) {
      int32_t j = next_member(s, cluster, size, ++search);
      if (j < 0)
        break;
      s->assigned[j] = true;
      /* Keep the cluster sorted descending: its emission order is ascending. */
      int at = size++;
      for (; at > 0 && cluster[at - 1] < j; at--)
        cluster[at] = cluster[at - 1];
      cluster[at] = j;
    }
    int32_t head = s->fusable[m] && size < FZ_MAX_GROUP ? gemm_member(s, cluster, size) : -1;
    if (head >= 0) {
      s->assigned[head] = true;
      cluster[size++] = head;
    }
    for (int i = 0; i < size; i++)
      order[end - 1 - i] = cluster[i];
    end -= size;
  }
}

static void free_state(order_state *s) {
  free(s->touches);
  free(s->start);
  free(s->top_any);
  free(s->top_write);
  free(s->seen);
  free(s->last);
  free(s->assigned);
  free(s->fusable);
}

/* Allocates the state and counts the list lengths into start[]; false when out of memory. */
static bool init_state(order_state *s, const tpu_graph *g) {
  size_t slots = (size_t)g->n_slots + 1, nodes = (size_t)g->n_nodes + 1, entries = 1;
  for (int n = 0; n < g->n_nodes; n++)
    entries += (size_t)n_tensors(g->nodes[n].call);
  *s = (order_state){.g = g,
                     .touches = calloc(entries, sizeof *s->touches),
                     .start = calloc(slots + 1, sizeof *s->start),
                     .top_any = calloc(slots, sizeof *s->top_any),
                     .top_write = calloc(slots, sizeof *s->top_write),
                     .seen = calloc(slots, sizeof *s->seen),
                     .last = calloc(slots, sizeof *s->last),
                     .assigned = calloc(nodes, sizeof *s->assigned),
                     .fusable = calloc(nodes, sizeof *s->fusable)};
  if (!s->touches || !s->start || !s->top_any || !s->top_write || !s->seen || !s->last ||
      !s->assigned || !s->fusable)
    return false;
  /* Upper bounds of the list lengths (a node touching a slot twice counts twice). */
  for (int n = 0; n < g->n_nodes; n++) {
    const tpu_graph_node *node = &g->nodes[n];
    s->fusable[n] = tpu_fuse_eligible(g, n);
    for (int t = 0; t < n_tensors(node->call); t++)
      if (node->refs[t].slot >= 0)
        s->start[node->refs[t].slot + 1]++;
  }
  for (int slot = 0; slot < g->n_slots; slot++)
    s->start[slot + 1] += s->start[slot];
  return true;
}

tpu_status tpu_fuse_reorder(tpu_graph **graph) {
  tpu_graph *g = *graph;
  order_state s = {0};
  int *order = malloc((size_t)(g->n_nodes ? g->n_nodes : 1) * sizeof *order);
  if (!order || !init_state(&s, g)) {
    free(order);
    free_state(&s);
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate a fused graph's order");
  }
  build_lists(&s);
  sink_clusters(&s, order);
  free_state(&s);
  bool identity = true;
  for (int i = 0; identity && i < g->n_nodes; i++)
    identity = order[i] == i;
  tpu_status status = identity ? TPU_OK : tpu_graph_permute(g, order, graph);
  free(order);
  return status;
}
