#include "graph/tpu_graph.h"

void tpu_graph_poison_outputs(const tpu_graph *g, int first, int end, const char *op,
                              const char *message) {
  for (int n = first; n < end; n++) {
    const tpu_op_call *c = g->nodes[n].call;
    for (int o = c->n_inputs; o < c->n_inputs + c->n_outputs; o++)
      if (c->tensors[o].buf)
        tpu_buffer_poison(c->tensors[o].buf, op, message);
  }
}

const char *tpu_graph_poisoned_input(const tpu_graph *g, int first, int end) {
  for (int n = first; n < end; n++) {
    const tpu_op_call *c = g->nodes[n].call;
    for (int i = 0; i < c->n_inputs; i++) {
      const char *poison = c->tensors[i].buf ? tpu_buffer_poison_message(c->tensors[i].buf) : NULL;
      if (poison)
        return poison;
    }
  }
  return NULL;
}
