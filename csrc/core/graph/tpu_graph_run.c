#include <stdio.h>

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

tpu_status tpu_graph_run_nodes(const tpu_graph *g, tpu_status (*run)(const tpu_op_call *)) {
  for (int n = 0; n < g->n_nodes; n++) {
    const tpu_op_call *c = g->nodes[n].call;
    const char *poison = tpu_graph_poisoned_input(g, n, n + 1);
    if (poison) {
      tpu_graph_poison_outputs(g, n, n + 1, tpu_op_name(c->op), poison);
      continue;
    }
    tpu_status st = TPU_OK;
    for (int o = c->n_inputs; o < c->n_inputs + c->n_outputs && st == TPU_OK; o++)
      if (c->tensors[o].buf && !tpu_buffer_is_live(c->tensors[o].buf) &&
          !tpu_buffer_memory(c->tensors[o].buf))
        st = tpu_buffer_materialize(c->tensors[o].buf);
    if (st == TPU_OK)
      st = run(c);
    if (st != TPU_OK) {
      /* Copied: poisoning may overwrite the thread's error text. */
      char message[4096];
      snprintf(message, sizeof message, "%s", tpu_last_error());
      const char *op = tpu_op_name(c->op);
      tpu_graph_poison_outputs(g, n, g->n_nodes, op, message);
      return tpu_error(st, "'%s' failed: %s", op, message);
    }
  }
  return TPU_OK;
}
