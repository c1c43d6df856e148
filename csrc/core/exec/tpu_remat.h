/* Rematerialization in fused mode: a result the backward pass will read that is cheap to compute
 * again is not kept in memory between the forward and the backward graph.
 *
 * At the backward_start cut the forward graph holds results that autograd saved for the backward,
 * e.g. relu(batch_norm(conv(x))), which both relu's and the next conv's backward read. Such a
 * result is recomputable when it comes from an op the driver calls cheap (graph_recomputable) or a
 * batch_norm's normalized output, through at most TPU_REMAT_MAX_NODES such nodes, from values that
 * are kept in memory anyway and that the graph does not overwrite afterwards (a batch_norm's input,
 * its saved statistics, its weight and bias). tpu_remat_extract takes such results out of the
 * forward graph: there the result's buffer is replaced by a fresh one that dies with the graph (so
 * it is kept only while the forward's own readers need it), and a recipe (copies of its nodes, a
 * batch_norm becoming BATCH_NORM_APPLY from the saved statistics) will write the original buffer
 * later. The stream's fused state adds a recipe to its open graph right before the first node that
 * reads the result or writes any buffer the recipe reads, or at the next cut, so the result gets
 * memory next to its backward readers. The values are bit-identical: the same kernels compute them
 * from the same inputs. */
#ifndef TPU_REMAT_H
#define TPU_REMAT_H

#include <stdint.h>

#include "graph/tpu_graph.h"

/* Nodes one recipe may hold at most. */
#define TPU_REMAT_MAX_NODES 8
/* Smaller results are kept: computing them again would cost more than their memory is worth. */
#define TPU_REMAT_MIN_BYTES (64 << 10)

typedef struct tpu_remat {
  tpu_buffer *target; /* the result the recipe writes */
  size_t bytes;       /* its size */
  int n_calls;
  tpu_op_call *calls[TPU_REMAT_MAX_NODES]; /* in order; the last writes target */
  int n_held;
  tpu_buffer **held; /* one reference and one pending reader per tensor of the calls */
} tpu_remat;

typedef struct tpu_remat_list {
  int n, cap;
  tpu_remat **items; /* in the order their results appeared */
} tpu_remat_list;

/* Takes the recomputable results of `graph` (see the header comment) out of it and appends their
 * recipes to `list`. TPU_ERR_OUT_OF_MEMORY when host memory runs out: the graph and the list then
 * hold what was done so far, which is consistent. */
tpu_status tpu_remat_extract(tpu_graph *graph, tpu_remat_list *list);

/* Index of a recipe in `list` that writes `buffer` (any_use: or reads it), or -1. */
int tpu_remat_find(const tpu_remat_list *list, const tpu_buffer *buffer, bool any_use);

/* Removes recipe i from the list and returns it: the caller adds calls[0..n_calls) to a graph in
 * order (taking each out of the recipe, NULL in its place) and then frees the recipe. */
tpu_remat *tpu_remat_take(tpu_remat_list *list, int i);

/* Frees a recipe: its calls not taken, its references and pending readers. */
void tpu_remat_free(tpu_remat *recipe);

/* Frees the recipes whose result died (its storage released) and that no other recipe reads. */
void tpu_remat_prune(tpu_remat_list *list);

/* Results computed again (recipes taken) and their bytes since start or reset; for fused_stats. */
void tpu_remat_count(const tpu_remat *recipe);
void tpu_remat_get_stats(uint64_t *values, uint64_t *bytes);
void tpu_remat_reset_stats(void);

#endif
