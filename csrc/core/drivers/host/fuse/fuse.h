/* The host driver's planner and executor for graphs (graph/tpu_graph.h).
 *
 * Planning cuts the graph, in order, into steps. A fused step is a maximal run (up to 32 nodes) of
 * consecutive elementwise nodes (ops of the elementwise engine with a loop for their compute dtype,
 * 1-4 inputs, 1-2 outputs) over one element count N, whose outputs are dense and whose inputs are
 * dense with N elements, single elements (scalars), or dense with a shape that is a suffix of the
 * output's (a bias, read periodically). Any other node (an input broadcast along inner dimensions
 * or strided, another op family, a view of an earlier result the group cannot read tile by tile, a
 * partial overlap between the group's reads and writes of one buffer) ends the group and runs as a
 * single kernel through tpu_host_kernel, as does a group of one node. A sum (or mean) to one
 * element of a value of the group, right after it (float32/float64 throughout), joins the group as
 * its reduction: each tile of the value is summed as it is computed (float lanes into a double per
 * chunk, chunks added in order), so the value itself is stored only if something else needs it. One
 * pattern of two nodes is a step of its own: nll_loss_backward followed by the log_softmax_backward
 * that alone reads its result (cross-entropy's backward) runs as one row kernel, so the mostly-zero
 * gradient of the log-probabilities never exists. A GEMM (the matmul family, float32 or float64,
 * dense output) followed by a fusable chain over its output's element count that reads the output,
 * in the one view the GEMM writes, and writes none of the GEMM's operands is a step too: the chain
 * is the GEMM's epilogue (an activation, a residual add, the activation's backward after the input
 * gradient) and runs on each row block of the output right after the GEMM writes it, on the same
 * thread, or on whole rows once every block is written when the GEMM splits its columns over the
 * threads (pieces of rows run slower). The GEMM's tiles and results are those of the GEMM alone.
 * Fused mode first reorders a cut graph (tpu_fuse_reorder) so that chains of elementwise nodes
 * recorded interleaved become consecutive runs, each right after the GEMM it reads when nothing in
 * between stops that.
 *
 * A fused step runs tile by tile (TPU_FUSE_TILE elements) with tiles split over the thread pool:
 * for each tile every node's inner loop (the engine's own tpu_ew_loop) runs on tile pointers, with
 * the engine's conversions (float16/bfloat16 loaded to float, each node's result rounded to its
 * dtype), so results are bit-identical to running the nodes one by one. A node's output is written
 * to memory only when it is needed (tpu_graph_ref.needed) or read outside its group; otherwise it
 * lives in per-thread tile scratch and its buffer never gets memory. A node whose outputs are all
 * unneeded and never read is not run at all.
 *
 * A plan depends only on the graph's structure, so one plan serves every graph equal to the one it
 * was made from (the compile cache's contract); running reads buffers and scalars from the graph
 * it is given. */
#ifndef TPU_HOST_FUSE_H
#define TPU_HOST_FUSE_H

#include "drivers/host/host.h"
#include "drivers/tpu_driver.h"
#include "graph/tpu_graph.h"

/* Elements per tile: small enough that the tiles of a short chain's operands and intermediates
 * together stay in a 32 KiB L1, which larger tiles overflow. */
#define TPU_FUSE_TILE 512

typedef struct tpu_fuse_plan tpu_fuse_plan;

/* Reorders *graph (tpu_graph_permute, replacing *graph) so that each dependency chain of fusable
 * nodes becomes consecutive and the planner fuses it, e.g. the per-parameter updates a foreach
 * optimizer records interleaved across parameters. The order depends on the structure alone and
 * keeps every read/write hazard on a slot in order; *graph stays as it is when no node moves.
 * TPU_ERR_OUT_OF_MEMORY (*graph unchanged) when host memory runs out. */
tpu_status tpu_fuse_reorder(tpu_graph **graph);

/* Whether node n can be part of a fused group at all (ignoring its neighbours): an elementwise op
 * over dense views, a pure function of its inputs that fused mode may also compute again. */
bool tpu_fuse_eligible(const tpu_graph *graph, int n);

/* Plans `graph`; TPU_ERR_OUT_OF_MEMORY when host memory runs out. */
tpu_status tpu_fuse_plan_create(const tpu_graph *graph, tpu_fuse_plan **out);

/* Frees a plan (a void * so it can be a compile cache entry's destructor). */
void tpu_fuse_plan_destroy(void *plan);

/* Runs `graph` with `plan` (made from a graph of equal structure) on the calling thread, helped by
 * the thread pool. Device inputs must have memory (be live, or keep the address of memory a
 * memory plan gave back after their last use); output buffers that are written and have none get
 * memory (tpu_buffer_materialize) first. As for launched ops (ops/tpu_op.h), a step with a
 * poisoned input poisons its outputs and the run goes on; a failing step poisons the outputs of
 * every node from it on and its error is returned, prefixed with the failing op's name. */
tpu_status tpu_fuse_run(const tpu_fuse_plan *plan, const tpu_graph *graph);

/* Number of steps of a plan and, for step i, its first node, its node count and whether it is
 * fused; for tests and the graph dump. */
int tpu_fuse_plan_steps(const tpu_fuse_plan *plan);
void tpu_fuse_plan_step(const tpu_fuse_plan *plan, int i, int *first, int *count, bool *fused);

/* True when output `out` of node `node` (in step `step`) may be written into the memory of
 * `donor`, a buffer the step reads and nothing reads after it: every read of it in the step sees
 * each element before the output's element at the same place is written. Buffer states (liveness,
 * last use) are the caller's to check. */
bool tpu_fuse_plan_can_alias(const tpu_fuse_plan *plan, const tpu_graph *graph, int step,
                             int node, int out, const tpu_buffer *donor);

/* True when output `out` of node `node` is written to memory by the plan. */
bool tpu_fuse_plan_stores(const tpu_fuse_plan *plan, int node, int out);

/* What tpu_fuse_run ran since start or reset (drivers/tpu_driver.h's tpu_graph_run_stats): steps
 * (dead or poisoned ones skipped), fused steps among them, the nodes those fused steps covered
 * (e.g. to see an optimizer step fuse), and the fused steps that were a GEMM with its epilogue. */
void tpu_fuse_get_stats(tpu_graph_run_stats *stats);
void tpu_fuse_reset_stats(void);

#endif
