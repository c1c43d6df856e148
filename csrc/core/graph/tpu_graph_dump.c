/* Text and Graphviz dumps of a graph (tpu_graph.h). */
#include <stdio.h>
#include <stdlib.h>

#include "graph/tpu_graph.h"

/* The value a ref names: "n3.0" (output 0 of node 3), "ext:s2" (slot 2 before the graph),
 * "scalar" (held in the call) or "fresh". */
static void print_value(FILE *f, const tpu_graph_ref *r) {
  if (r->node >= 0)
    fprintf(f, "n%d.%d", r->node, r->index);
  else if (r->node == TPU_GRAPH_EXTERNAL)
    fprintf(f, "ext:s%d", r->slot);
  else
    fputs(r->node == TPU_GRAPH_NO_SLOT ? "scalar" : "fresh", f);
}

static void print_view(FILE *f, const tpu_tensor *t) {
  fputs(" [", f);
  for (int d = 0; d < t->ndim; d++)
    fprintf(f, d ? ", %lld" : "%lld", (long long)t->sizes[d]);
  fprintf(f, "] %s", tpu_dtype_name(t->dtype));
  if (!tpu_tensor_is_contiguous(t)) {
    fputs(" strides [", f);
    for (int d = 0; d < t->ndim; d++)
      fprintf(f, d ? ", %lld" : "%lld", (long long)t->strides[d]);
    fputc(']', f);
  }
  if (t->offset)
    fprintf(f, " +%lldB", (long long)t->offset);
}

static void dump_text(FILE *f, const tpu_graph *g) {
  fprintf(f, "graph: %d nodes, %d slots, flags 0x%llx\n", g->n_nodes, g->n_slots,
          (unsigned long long)g->flags);
  for (int n = 0; n < g->n_nodes; n++) {
    const tpu_op_call *c = g->nodes[n].call;
    const tpu_graph_ref *refs = g->nodes[n].refs;
    fprintf(f, "n%d = %s(", n, tpu_op_name(c->op));
    for (int i = 0; i < c->n_inputs; i++) {
      fputs(i ? ", " : "", f);
      print_value(f, &refs[i]);
      print_view(f, &c->tensors[i]);
    }
    fprintf(f, ") compute %s ->", tpu_dtype_name(c->compute));
    for (int o = c->n_inputs; o < c->n_inputs + c->n_outputs; o++) {
      fprintf(f, " s%d", refs[o].slot);
      print_view(f, &c->tensors[o]);
      if (refs[o].node != TPU_GRAPH_FRESH) {
        fputs(" overwrites ", f);
        print_value(f, &refs[o]);
      }
      fputs(refs[o].needed ? " needed" : " unneeded", f);
    }
    fputc('\n', f);
  }
}

static void dump_dot(FILE *f, const tpu_graph *g) {
  fputs("digraph tpu_graph {\n  node [shape=box];\n", f);
  for (int s = 0; s < g->n_slots; s++)
    fprintf(f, "  s%d [shape=ellipse, label=\"s%d%s\"];\n", s, s,
            g->slots[s].host ? " (host)" : "");
  for (int n = 0; n < g->n_nodes; n++) {
    const tpu_op_call *c = g->nodes[n].call;
    const tpu_graph_ref *refs = g->nodes[n].refs;
    fprintf(f, "  n%d [label=\"n%d %s\"];\n", n, n, tpu_op_name(c->op));
    for (int i = 0; i < c->n_inputs; i++) {
      if (refs[i].node >= 0)
        fprintf(f, "  n%d -> n%d [label=\"%d\"];\n", refs[i].node, n, i);
      else if (refs[i].node == TPU_GRAPH_EXTERNAL)
        fprintf(f, "  s%d -> n%d [label=\"%d\"];\n", refs[i].slot, n, i);
    }
    for (int o = c->n_inputs; o < c->n_inputs + c->n_outputs; o++)
      if (refs[o].needed)
        fprintf(f, "  n%d -> s%d [style=dashed];\n", n, refs[o].slot);
  }
  fputs("}\n", f);
}

char *tpu_graph_dump(const tpu_graph *g, bool dot) {
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  if (!f)
    return NULL;
  if (dot)
    dump_dot(f, g);
  else
    dump_text(f, g);
  if (fclose(f) != 0) {
    free(text);
    return NULL;
  }
  return text;
}
