/* Private to the fused planner (fuse_plan.c) and executor (fuse_run.c): the plan. */
#ifndef TPU_HOST_FUSE_INTERNAL_H
#define TPU_HOST_FUSE_INTERNAL_H

#include "drivers/host/engine/engine_elementwise.h"
#include "drivers/host/fuse/fuse.h"
#include "drivers/host/engine/engine_iter.h"

/* Where a loop input comes from. */
enum {
  FZ_MEM,   /* memory: a dense view of N elements (an external or earlier step's result) */
  FZ_CONST, /* memory: one element repeated over the tile (a scalar operand) */
  FZ_PERIODIC, /* memory: `period` dense elements repeated along the output (a bias) */
  FZ_VAL,   /* an earlier node of the group: its value's tile */
};

/* A conversion from one dtype to another, optionally through a middle dtype (the engine rounds to
 * the compute dtype on the way, engine_elementwise.h). `to_end` NULL: no conversion at all. */
typedef struct fz_cast {
  tpu_dtype from, mid, to;
  tpu_loop_fn to_mid; /* from -> mid, or NULL when going straight */
  tpu_loop_fn to_end; /* (mid or from) -> to */
} fz_cast;

/* One operand of a node's loop, in loop order (outputs first). */
typedef struct fz_operand {
  uint8_t src;    /* inputs: FZ_* */
  int16_t tensor; /* index in call->tensors */
  int16_t val;    /* FZ_VAL inputs: the value read; outputs: the value defined */
  int16_t konst;  /* FZ_CONST: index of its per-thread buffer */
  int64_t period; /* FZ_PERIODIC: elements of the input */
  fz_cast cast;   /* inputs: tensor dtype -> loop; outputs: loop -> tensor dtype */
} fz_operand;

typedef struct fz_node {
  int node; /* index in the graph */
  tpu_ew_loop loop;
  int n_in, n_out;
  fz_operand ops[TPU_EW_MAX_OPERANDS];
} fz_node;

/* A node output defined inside a group. */
typedef struct fz_value {
  tpu_dtype dtype;
  int node, out;
  bool store; /* written to memory; else only in tile scratch */
} fz_value;

typedef struct fz_group {
  int64_t numel;
  int n_nodes, n_values, n_consts;
  fz_node *nodes;
  fz_value *values;
  int reduce_node;  /* graph index of a SUM over every element of a value, or -1 */
  int reduce_val;   /* the value it sums, tile by tile as the group computes it */
  bool reduce_mean; /* divide by the element count (mean) */
} fz_group;

typedef struct fz_step {
  int first, count;
  bool skip;          /* a dead node: nothing reads or needs its outputs */
  bool cross_entropy; /* nll_loss_backward then log_softmax_backward as one row kernel */
  bool reduce;        /* a group whose last node sums one of its values (fz_group.reduce_node) */
  bool gemm;          /* node `first` is a GEMM and the group (the rest) its epilogue */
  fz_group *group;    /* NULL: a single kernel (or the cross-entropy pair) */
} fz_step;

struct tpu_fuse_plan {
  int n_steps;
  fz_step *steps;
  int *out_base; /* per node: index of its output 0 in stores */
  bool *stores;  /* per node output: written to memory */
};

/* Nodes per group at most: beyond it a chain continues in the next group (one more round trip to
 * memory), which keeps each thread's tile scratch bounded. */
#define FZ_MAX_GROUP 32

/* The element count of node n's output 0 (a group's nodes all have the same). */
int64_t tpu_fuse_out_numel(const tpu_graph *graph, int n);

/* Multiply-adds (output elements times K) below which a GEMM takes no epilogue: for a small GEMM
 * the group's setup costs more than running the chain as a separate step. */
#define FZ_EPILOGUE_MIN_WORK (1 << 20)

/* True when node n is a GEMM (the matmul family's kernel) of float32 or float64, of at least
 * FZ_EPILOGUE_MIN_WORK, whose output is dense, so that its element i is element i of the
 * [batch, M, N] job: an epilogue can follow it. */
bool tpu_fuse_gemm_head(const tpu_graph *graph, int n);

/* True when nodes n and n + 1 are nll_loss_backward and the log_softmax_backward that alone reads
 * its result, in the dense float layout the fused row kernel handles. */
bool tpu_fuse_cross_entropy_pair(const tpu_graph *graph, int n);

#endif
