/* Why a graph missed the compile cache (graph/tpu_compile_cache.h): two graphs with one skeleton
 * (tpu_graph_skeleton_hash: the same ops, connected the same way, under the same flags) are one
 * program seen with other tensors, so a miss whose skeleton the cache already holds is a recompile, and the first
 * difference between the two graphs, in node order, names its cause. */
#ifndef TPU_GRAPH_DIFF_H
#define TPU_GRAPH_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "graph/tpu_graph.h"

/* What differs first; the names are those torch.tpu.compile_cache_stats() reports. */
typedef enum tpu_recompile_reason {
  TPU_RECOMPILE_SHAPE,     /* a tensor's sizes or number of dimensions */
  TPU_RECOMPILE_DTYPE,     /* a tensor's dtype, or a node's compute dtype */
  TPU_RECOMPILE_LAYOUT,    /* a tensor's strides or offset (same sizes) */
  TPU_RECOMPILE_ATTRIBUTE, /* a scalar marked as an attribute (a dimension, a mode, geometry) */
  TPU_RECOMPILE_PLACEMENT, /* a buffer moved between host and device memory */
  TPU_RECOMPILE_REASONS
} tpu_recompile_reason;

/* The reason's name: "shape", "dtype", "layout", "attribute" or "placement". */
const char *tpu_recompile_reason_name(tpu_recompile_reason reason);

/* The first difference of `now` from `before`, two graphs with one skeleton that are not equal,
 * written to buf as one line naming the node, its op, the tensor and the dimension, e.g.
 * "node 2 (mm) input 0: sizes [8, 17] -> [8, 18] (dimension 1)". */
tpu_recompile_reason tpu_graph_diff(const tpu_graph *before, const tpu_graph *now, char *buf,
                                    size_t len);

#endif
