/* Recompile reasons (tpu_graph_diff.h): the first difference between two graphs of one skeleton
 * (tpu_graph_skeleton_hash), which can only lie in what the skeleton leaves out. */
#include "graph/tpu_graph_diff.h"

#include <stdio.h>

static const char *const reason_names[TPU_RECOMPILE_REASONS] = {
    [TPU_RECOMPILE_SHAPE] = "shape",         [TPU_RECOMPILE_DTYPE] = "dtype",
    [TPU_RECOMPILE_LAYOUT] = "layout",       [TPU_RECOMPILE_ATTRIBUTE] = "attribute",
    [TPU_RECOMPILE_PLACEMENT] = "placement",
};

const char *tpu_recompile_reason_name(tpu_recompile_reason reason) {
  return (unsigned)reason < TPU_RECOMPILE_REASONS ? reason_names[reason] : "unknown";
}

/* "[a, b, c]" of n values into buf. */
static void dims_text(const int64_t *v, int n, char *buf, size_t len) {
  size_t at = 0;
  at += (size_t)snprintf(buf, len, "[");
  for (int d = 0; d < n && at < len; d++)
    at += (size_t)snprintf(buf + at, len - at, d ? ", %lld" : "%lld", (long long)v[d]);
  if (at < len)
    snprintf(buf + at, len - at, "]");
}

/* The first dimension where a and b differ (n values each), or -1. */
static int first_difference(const int64_t *a, const int64_t *b, int n) {
  for (int d = 0; d < n; d++)
    if (a[d] != b[d])
      return d;
  return -1;
}

/* The difference of tensor i of node n, or -1 when the two views are the same. */
static int tensor_diff(int n, const tpu_op_call *x, const tpu_op_call *y, int i, char *buf,
                       size_t len) {
  const tpu_tensor *a = &x->tensors[i], *b = &y->tensors[i];
  char what[64], before[160], after[160];
  snprintf(what, sizeof what, "node %d (%s) %s %d", n, tpu_op_name(y->op),
           i < y->n_inputs ? "input" : "output", i < y->n_inputs ? i : i - y->n_inputs);
  if (a->dtype != b->dtype) {
    snprintf(buf, len, "%s: dtype %s -> %s", what, tpu_dtype_name(a->dtype),
             tpu_dtype_name(b->dtype));
    return TPU_RECOMPILE_DTYPE;
  }
  if (a->ndim != b->ndim || first_difference(a->sizes, b->sizes, a->ndim) >= 0) {
    dims_text(a->sizes, a->ndim, before, sizeof before);
    dims_text(b->sizes, b->ndim, after, sizeof after);
    int d = a->ndim == b->ndim ? first_difference(a->sizes, b->sizes, a->ndim) : -1;
    if (d >= 0)
      snprintf(buf, len, "%s: sizes %s -> %s (dimension %d)", what, before, after, d);
    else
      snprintf(buf, len, "%s: sizes %s -> %s (%d dimensions, then %d)", what, before, after,
               a->ndim, b->ndim);
    return TPU_RECOMPILE_SHAPE;
  }
  if (a->offset != b->offset || first_difference(a->strides, b->strides, a->ndim) >= 0) {
    dims_text(a->strides, a->ndim, before, sizeof before);
    dims_text(b->strides, b->ndim, after, sizeof after);
    snprintf(buf, len, "%s: strides %s -> %s, offset %lld -> %lld", what, before, after,
             (long long)a->offset, (long long)b->offset);
    return TPU_RECOMPILE_LAYOUT;
  }
  return -1;
}

tpu_recompile_reason tpu_graph_diff(const tpu_graph *before, const tpu_graph *now, char *buf,
                                    size_t len) {
  int nodes = before->n_nodes < now->n_nodes ? before->n_nodes : now->n_nodes;
  for (int n = 0; n < nodes; n++) {
    const tpu_op_call *x = before->nodes[n].call, *y = now->nodes[n].call;
    if (x->compute != y->compute) {
      snprintf(buf, len, "node %d (%s): compute dtype %s -> %s", n, tpu_op_name(y->op),
               tpu_dtype_name(x->compute), tpu_dtype_name(y->compute));
      return TPU_RECOMPILE_DTYPE;
    }
    int tensors = x->n_inputs + x->n_outputs;
    for (int i = 0; i < tensors && i < y->n_inputs + y->n_outputs; i++) {
      int r = tensor_diff(n, x, y, i, buf, len);
      if (r >= 0)
        return (tpu_recompile_reason)r;
    }
    uint8_t attrs = now->nodes[n].attr_scalars;
    for (int k = 0; k < TPU_OP_MAX_SCALARS; k++)
      if ((attrs & (1u << k)) && x->scalars[k].u != y->scalars[k].u) {
        snprintf(buf, len, "node %d (%s): attribute scalar %d 0x%llx -> 0x%llx", n,
                 tpu_op_name(y->op), k, (unsigned long long)x->scalars[k].u,
                 (unsigned long long)y->scalars[k].u);
        return TPU_RECOMPILE_ATTRIBUTE;
      }
  }
  for (int s = 0; s < before->n_slots && s < now->n_slots; s++)
    if (before->slots[s].host != now->slots[s].host) {
      snprintf(buf, len, "buffer %d: %s memory -> %s memory", s,
               before->slots[s].host ? "host" : "device", now->slots[s].host ? "host" : "device");
      return TPU_RECOMPILE_PLACEMENT;
    }
  snprintf(buf, len, "no difference found");
  return TPU_RECOMPILE_ATTRIBUTE;
}
