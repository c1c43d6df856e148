/* The IR every mode shares (docs/ARCHITECTURE.md): a graph is an ordered list of nodes, each an op call
 * (tpu_op_call: op id, scalars, compute dtype, tensors = inputs then outputs) plus its edges.
 *
 * Slots and versions. Every distinct buffer the graph touches (a device buffer, or host memory
 * keyed by its base pointer) is a slot, numbered in order of first appearance, so the numbering is
 * structural. A slot that first appears as an input, or as an output on a buffer that already has
 * memory or a producer, is external: its version 0 exists outside the graph. A slot that first
 * appears as an output on a fresh pending buffer is created by that node. Every output writes a
 * new version of its slot; an in-place or out= op is thus recorded functionally, as "output k of
 * node n is slot s, version after `prev`", where prev names the version it overwrites (the
 * external contents, an earlier node's output, or none for a fresh slot). Lowering to StableHLO's
 * value semantics reads this directly: each version is an SSA value, an output with a prev is a
 * functional op followed by a write-back (dynamic_update_slice of its view) into prev.
 *
 * Edges. Each input names the version it reads: the latest version of its slot when the node was
 * added, i.e. output k of an earlier node, or the external contents of the slot. The tensor itself
 * keeps the view (offset, sizes, strides, dtype), so a view of an earlier result is an edge plus a
 * view. A scalar operand kept in the call (tpu_op_set_scalar_input) has no slot.
 *
 * Structure. tpu_graph_hash and tpu_graph_equal look at the flags word, op ids, compute dtypes,
 * tensor dtypes/sizes/strides/byte offsets, slots, edges, prev versions, needed flags and the
 * scalars marked as attributes; never at other scalar values or addresses, which are runtime
 * arguments (a new learning rate or RNG offset must not recompile). */
#ifndef TPU_GRAPH_H
#define TPU_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/tpu_op.h"

/* tpu_graph_ref.node values that are not node indices. */
enum {
  TPU_GRAPH_EXTERNAL = -1, /* the slot's contents from before the graph */
  TPU_GRAPH_FRESH = -2,    /* output only: the slot is created here, it overwrites nothing */
  TPU_GRAPH_NO_SLOT = -3,  /* a scalar held in the call: no buffer, no version */
};

/* Where one tensor of a node lives and which version it reads (inputs) or overwrites (outputs). */
typedef struct tpu_graph_ref {
  int32_t slot;  /* slot index, or -1 for a scalar held in the call */
  int32_t node;  /* the version's producer node, or one of the TPU_GRAPH_* values above */
  int32_t index; /* output index within that node (0 when node is not a node index) */
  bool needed;   /* outputs: the caller still references this version (default true) */
} tpu_graph_ref;

typedef struct tpu_graph_node {
  tpu_op_call *call;    /* owned */
  uint8_t attr_scalars; /* bit k: call->scalars[k] is an attribute (part of the structure) */
  tpu_graph_ref *refs;  /* one per tensor of the call, inputs then outputs */
} tpu_graph_node;

typedef struct tpu_graph_slot {
  const void *key;      /* the tpu_buffer, or the host base pointer */
  bool host;            /* host memory (buf NULL) */
  int32_t latest_node;  /* the latest version's producer, or TPU_GRAPH_EXTERNAL */
  int32_t latest_index; /* its output index */
} tpu_graph_slot;

typedef struct tpu_graph {
  uint64_t flags; /* global flags that change results (matmul precision, determinism, autocast) */
  int n_nodes, cap_nodes;
  tpu_graph_node *nodes;
  int n_slots, cap_slots;
  tpu_graph_slot *slots;
  int32_t *slot_table; /* open addressing over slots by key: slot index + 1, 0 when empty */
  int table_size;      /* a power of two, at least twice n_slots */
  bool holds_refs;     /* false for structure-only clones: keys are not dereferenced */
} tpu_graph;

/* An empty graph with the given flags word; NULL when out of host memory. */
tpu_graph *tpu_graph_new(uint64_t flags);

/* Frees the graph, its calls (running their cleanup) and its references on buffers. */
void tpu_graph_free(tpu_graph *graph);

/* Appends `call` (not launched, not deferred) as the next node, taking ownership of it in every
 * case; bit k of attr_scalars marks call->scalars[k] as an attribute that changes the structure
 * (e.g. a reduction's dimension), every other scalar is a runtime argument. Resolves each input to
 * the latest version of its slot, records each output as a new version (see the header comment),
 * and retains each new device buffer. TPU_ERR_OUT_OF_MEMORY when host memory runs out: the node is
 * then not added and the graph is unchanged. */
tpu_status tpu_graph_add(tpu_graph *graph, tpu_op_call *call, uint8_t attr_scalars);

/* Marks output `out` of node `node` as still referenced from outside the graph (needed) or not;
 * an unneeded version that no later node reads never has to reach memory. */
void tpu_graph_set_needed(tpu_graph *graph, int node, int out, bool needed);

/* Puts buffer `to` (not in the graph yet) in the place of `from`: the slot of `from` keeps its
 * number and versions and takes `to` as its key, and every tensor on `from` now views `to`. The
 * structure is unchanged; the graph's reference moves from `from` to `to`. False when `from` is not
 * in the graph or `to` already is (nothing changes). */
bool tpu_graph_replace_buffer(tpu_graph *graph, tpu_buffer *from, tpu_buffer *to);

/* The structural hash (see the header comment): equal structures hash equal. */
uint64_t tpu_graph_hash(const tpu_graph *graph);

/* True when the two graphs have the same structure: an exact check behind the hash. */
bool tpu_graph_equal(const tpu_graph *a, const tpu_graph *b);

/* A hash of the graph's skeleton: what tpu_graph_hash covers less the tensors' dtypes, sizes,
 * strides and offsets, compute dtypes, attribute values and slot placement. Graphs that differ
 * only there are one program with other tensors (graph/tpu_graph_diff.h names the difference). */
uint64_t tpu_graph_skeleton_hash(const tpu_graph *graph);

/* The graph with its nodes in `order` (order[i]: the old index of new node i), slots renumbered by
 * first appearance, refs and latest versions renamed to the new node indices; structural only, so
 * equal graphs permuted alike stay equal. `order` must be legal (every two nodes touching one slot,
 * at least one writing it, keep their relative order; not checked), else the refs no longer name
 * the versions the nodes read. On success *out takes over graph's calls and buffer references and
 * `graph` is freed; on failure (TPU_ERR_OUT_OF_MEMORY, TPU_ERR_VALUE for an order that is not a
 * permutation) `graph` is unchanged. */
tpu_status tpu_graph_permute(tpu_graph *graph, const int *order, tpu_graph **out);

/* A copy of the structure only (calls with no buffer or host pointers, slots without references),
 * to serve as a cache key that outlives the graph's buffers: for hash and equality, not for adding
 * nodes. NULL when out of host memory. */
tpu_graph *tpu_graph_clone_structure(const tpu_graph *graph);

/* The graph as text, one line per node ("n1 = add(n0.0 [64] float32, ext:s3 ...) -> s4 ..."), or
 * as Graphviz dot when `dot`: for dumps of the pending graph. A malloc'd string the caller frees;
 * NULL when out of host memory. */
char *tpu_graph_dump(const tpu_graph *graph, bool dot);

/* The first poisoned device input of nodes [first, end), or NULL: such nodes pass the poison on
 * to their outputs instead of running (tensor/tpu_buffer.h). */
const char *tpu_graph_poisoned_input(const tpu_graph *graph, int first, int end);

/* Poisons the device outputs of nodes [first, end) with `op`'s failure `message`. */
void tpu_graph_poison_outputs(const tpu_graph *graph, int first, int end, const char *op,
                              const char *message);


#endif
