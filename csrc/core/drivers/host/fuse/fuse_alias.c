/* Which outputs of a plan's step may be written into the memory of a buffer the step reads for
 * the last time (tpu_fuse_plan_can_alias): the memory plan's in-place reuse. It is safe when every
 * read of the donor sees each element before the output's element at the same place is written:
 * both views cover their whole buffers in one dense layout of one dtype, and the kernel reads
 * element i (or the whole row holding it) before it writes element i. */
#include "drivers/host/fuse/fuse_internal.h"

static bool same_layout(const tpu_tensor *a, const tpu_tensor *b) {
  return a->dtype == b->dtype && tpu_tensor_numel(a) == tpu_tensor_numel(b) &&
         tpu_tensor_covers_buffer(a) && tpu_tensor_covers_buffer(b);
}

/* Whether a single kernel of `op` reads its input `in` in place of its output safely. Elementwise
 * loops read element i before writing it; softmax rows are read whole before they are written;
 * log_softmax_backward writes exp(y) over its output before it reads the gradient, so only y. */
static bool kernel_allows(tpu_op_id op, int in) {
  switch (op) {
  case TPU_OP_SOFTMAX:
  case TPU_OP_LOG_SOFTMAX:
    return in == 0;
  case TPU_OP_SOFTMAX_BACKWARD:
    return in <= 1;
  case TPU_OP_LOG_SOFTMAX_BACKWARD:
    return in == 1;
  default:
    return tpu_ew_op_of(op) != NULL;
  }
}

/* The position of graph node n in group `grp`, or -1. */
static int group_index(const fz_group *grp, int n) {
  for (int j = 0; j < grp->n_nodes; j++)
    if (grp->nodes[j].node == n)
      return j;
  return -1;
}

bool tpu_fuse_plan_can_alias(const tpu_fuse_plan *p, const tpu_graph *g, int step, int node,
                             int out, const tpu_buffer *donor) {
  const fz_step *st = &p->steps[step];
  const tpu_op_call *writer = g->nodes[node].call;
  const tpu_tensor *o = &writer->tensors[writer->n_inputs + out];
  if (!tpu_tensor_covers_buffer(o))
    return false;
  bool read = false;
  for (int m = st->first; m < st->first + st->count; m++) {
    const tpu_op_call *c = g->nodes[m].call;
    for (int i = 0; i < c->n_inputs + c->n_outputs; i++) {
      if (c->tensors[i].buf != donor)
        continue;
      if (i >= c->n_inputs || !same_layout(&c->tensors[i], o))
        return false;
      bool safe;
      if (st->gemm && (m == st->first || node == st->first))
        safe = false; /* a GEMM reads whole rows and columns of its operands */
      else if (st->group) /* tile by tile, node by node: the reader must run before the writer */
        safe = group_index(st->group, m) <= group_index(st->group, node);
      else if (st->cross_entropy) /* the row kernel reads y before it writes the row */
        safe = m == node && i == 1;
      else
        safe = kernel_allows(c->op, i);
      if (!safe)
        return false;
      read = true;
    }
  }
  return read;
}
