/* The fused planner: cuts a graph into steps (fuse.h) from its structure alone. */
#include <stdlib.h>
#include <string.h>

#include "drivers/host/kernels/kernels.h"
#include "drivers/host/fuse/fuse_internal.h"
#include "drivers/host/host_driver.h"

static bool is_real(tpu_dtype d) { return d <= TPU_FLOAT64; }

/* Sizes without leading 1s: views with equal squeezed shapes, both dense, map element i to i. */
static bool same_elements(const tpu_tensor *a, const tpu_tensor *b) {
  int da = 0, db = 0;
  while (da < a->ndim && a->sizes[da] == 1)
    da++;
  while (db < b->ndim && b->sizes[db] == 1)
    db++;
  if (a->ndim - da != b->ndim - db)
    return false;
  return !memcmp(a->sizes + da, b->sizes + db, (size_t)(a->ndim - da) * sizeof a->sizes[0]);
}

static bool dense_like(const tpu_tensor *t, const tpu_tensor *out0) {
  return tpu_tensor_is_contiguous(t) && same_elements(t, out0);
}

/* A dense input whose shape (without leading 1s) is a suffix of the output's, such as a bias:
 * element i of the output reads element i % numel of the input. */
static bool periodic(const tpu_tensor *t, const tpu_tensor *out0) {
  int d = 0;
  while (d < t->ndim && t->sizes[d] == 1)
    d++;
  int k = t->ndim - d;
  if (!tpu_tensor_is_contiguous(t) || k > out0->ndim)
    return false;
  return !memcmp(t->sizes + d, out0->sizes + out0->ndim - k, (size_t)k * sizeof t->sizes[0]);
}

bool tpu_fuse_eligible(const tpu_graph *g, int n) {
  const tpu_op_call *c = g->nodes[n].call;
  const tpu_ew_op *op = tpu_ew_op_of(c->op);
  if (!op || !is_real(c->compute) || !op->loops[tpu_ew_loop_dtype(c->compute)] ||
      c->n_inputs < 1 || c->n_inputs > TPU_EW_MAX_INPUTS || c->n_outputs < 1 ||
      c->n_outputs > TPU_EW_MAX_OUTPUTS)
    return false;
  const tpu_tensor *out0 = &c->tensors[c->n_inputs];
  if (tpu_tensor_numel(out0) == 0)
    return false;
  for (int i = 0; i < c->n_inputs + c->n_outputs; i++) {
    const tpu_tensor *t = &c->tensors[i];
    bool output = i >= c->n_inputs;
    if (!is_real(t->dtype))
      return false;
    if (output ? !dense_like(t, out0) : tpu_tensor_numel(t) != 1 && !periodic(t, out0))
      return false;
  }
  return true;
}

/* The views of memory a group reads or writes, by slot: a group may only touch one view of each
 * slot, the same bytes element for element, or a tile could write what another tile still has to
 * read (an int16 view and a float32 view of one offset and count cover different bytes). */
typedef struct view_set {
  int n, cap;
  struct view { int32_t slot; int64_t offset, numel, elsize; } *v;
} view_set;

/* Adds a view; false when the slot is already seen with another view (or out of memory). */
static bool add_view(view_set *s, int32_t slot, const tpu_tensor *t) {
  int64_t numel = tpu_tensor_numel(t), elsize = (int64_t)tpu_dtype_size(t->dtype);
  for (int i = 0; i < s->n; i++)
    if (s->v[i].slot == slot)
      return s->v[i].offset == t->offset && s->v[i].numel == numel && s->v[i].elsize == elsize;
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 16;
    struct view *v = realloc(s->v, (size_t)cap * sizeof *v);
    if (!v)
      return false;
    s->v = v, s->cap = cap;
  }
  s->v[s->n++] = (struct view){slot, t->offset, numel, elsize};
  return true;
}

/* Whether node n joins the group of nodes [first, n): every input from the group reads exactly
 * its producer's output view, and the memory views stay consistent (recorded in `views`). */
static bool joins(const tpu_graph *g, int first, int n, view_set *views) {
  const tpu_op_call *c = g->nodes[n].call;
  const tpu_graph_ref *refs = g->nodes[n].refs;
  for (int i = 0; i < c->n_inputs + c->n_outputs; i++) {
    const tpu_tensor *t = &c->tensors[i];
    const tpu_graph_ref *r = &refs[i];
    if (r->slot < 0)
      continue;
    if (i < c->n_inputs && r->node >= first) {
      const tpu_op_call *p = g->nodes[r->node].call;
      const tpu_tensor *src = &p->tensors[p->n_inputs + r->index];
      if (t->dtype != src->dtype || t->offset != src->offset ||
          tpu_tensor_numel(t) != tpu_tensor_numel(src))
        return false;
      continue;
    }
    if (!add_view(views, r->slot, t))
      return false;
  }
  return true;
}

/* How an operand of dtype `actual` reaches the loop's dtype `want` (outputs: the way back), as the
 * engine converts it: through the compute dtype unless the op keeps a scalar's precision. */
static fz_cast plan_cast(tpu_dtype actual, tpu_dtype want, tpu_dtype compute, bool output,
                         bool keep) {
  fz_cast c = {.from = output ? want : actual, .to = output ? actual : want};
  c.mid = c.from;
  bool through = compute != want && want != TPU_BOOL && actual != compute && !keep;
  if (!through && actual == want)
    return c;
  if (through) {
    c.mid = compute;
    c.to_mid = tpu_cast_loop(c.from, compute);
  }
  c.to_end = tpu_cast_loop(c.mid, c.to);
  return c;
}

int64_t tpu_fuse_out_numel(const tpu_graph *g, int n) {
  const tpu_op_call *c = g->nodes[n].call;
  return tpu_tensor_numel(&c->tensors[c->n_inputs]);
}

static bool dense_2d(const tpu_tensor *t, tpu_dtype dtype) {
  return t->dtype == dtype && t->ndim == 2 && t->offset == 0 && tpu_tensor_is_contiguous(t);
}

bool tpu_fuse_cross_entropy_pair(const tpu_graph *g, int n) {
  if (n + 1 >= g->n_nodes || g->nodes[n].call->op != TPU_OP_NLL_LOSS_BACKWARD ||
      g->nodes[n + 1].call->op != TPU_OP_LOG_SOFTMAX_BACKWARD)
    return false;
  const tpu_op_call *nll = g->nodes[n].call, *lsm = g->nodes[n + 1].call;
  const tpu_graph_ref *grad = &g->nodes[n + 1].refs[0];
  const tpu_tensor *g3 = &nll->tensors[nll->n_inputs], *y = &lsm->tensors[1];
  tpu_dtype dt = y->dtype;
  if (grad->node != n || grad->index != 0 || g->nodes[n].refs[nll->n_inputs].needed ||
      (dt != TPU_FLOAT32 && dt != TPU_FLOAT64) || lsm->scalars[0].i != 1 ||
      !dense_2d(&lsm->tensors[0], dt) || !dense_2d(y, dt) || !dense_2d(&lsm->tensors[2], dt) ||
      g3->ndim != 3 || g3->sizes[2] != 1 || g3->dtype != dt)
    return false;
  for (int d = 0; d < 2; d++)
    if (y->sizes[d] != g3->sizes[d] || lsm->tensors[0].sizes[d] != g3->sizes[d] ||
        lsm->tensors[2].sizes[d] != g3->sizes[d])
      return false;
  /* Nothing else may read the gradient the pair never writes. */
  for (int m = n + 2; m < g->n_nodes; m++) {
    const tpu_op_call *c = g->nodes[m].call;
    for (int i = 0; i < c->n_inputs + c->n_outputs; i++)
      if (g->nodes[m].refs[i].node == n)
        return false;
  }
  return true;
}

/* Whether node first + count sums every element of a value of the group [first, first + count)
 * (sum or mean to one element, float32 or float64 throughout): the group then reduces the value
 * tile by tile and never stores it unless something else needs it. */
static bool reduces_group(const tpu_graph *g, int first, int count) {
  int r = first + count;
  if (r >= g->n_nodes)
    return false;
  const tpu_op_call *c = g->nodes[r].call;
  const tpu_graph_ref *ref = &g->nodes[r].refs[0];
  if (c->op != TPU_OP_SUM || c->n_inputs != 1 || c->n_outputs != 1 || ref->node < first ||
      ref->node >= r)
    return false;
  const tpu_op_call *p = g->nodes[ref->node].call;
  const tpu_tensor *src = &p->tensors[p->n_inputs + ref->index], *in = &c->tensors[0];
  tpu_dtype dt = in->dtype;
  return (dt == TPU_FLOAT32 || dt == TPU_FLOAT64) && c->compute == dt &&
         c->tensors[1].dtype == dt && src->dtype == dt && in->offset == src->offset &&
         tpu_tensor_is_contiguous(in) && tpu_tensor_numel(in) == tpu_fuse_out_numel(g, first) &&
         tpu_tensor_numel(&c->tensors[1]) == 1;
}

bool tpu_fuse_gemm_head(const tpu_graph *g, int n) {
  const tpu_op_call *c = g->nodes[n].call;
  if (tpu_host_kernel(c->op) != tpu_kernel_gemm || c->n_outputs != 1)
    return false;
  const tpu_tensor *a = &c->tensors[0], *out = &c->tensors[c->n_inputs];
  double work = (double)tpu_tensor_numel(out) * (double)a->sizes[a->ndim - 1];
  return (out->dtype == TPU_FLOAT32 || out->dtype == TPU_FLOAT64) &&
         tpu_tensor_is_contiguous(out) && work >= FZ_EPILOGUE_MIN_WORK;
}

/* The length of the chain of fusable nodes from `start` that joins the group beginning at node
 * `first` (first <= start; `views` holds what the group already touches). */
static int chain_from(const tpu_graph *g, int first, int start, view_set *views) {
  if (!tpu_fuse_eligible(g, start) || !joins(g, first, start, views))
    return 0;
  int count = 1;
  while (start + count < g->n_nodes && start + count - first < FZ_MAX_GROUP &&
         tpu_fuse_eligible(g, start + count) &&
         tpu_fuse_out_numel(g, start + count) == tpu_fuse_out_numel(g, start) &&
         joins(g, first, start + count, views))
    count++;
  return count;
}

/* True when node n writes a slot that GEMM node `gemm` reads: the GEMM reads its operands across
 * the whole job, so an epilogue writing them would change what later blocks read. */
static bool writes_operand(const tpu_graph *g, int gemm, int n) {
  const tpu_op_call *c = g->nodes[n].call, *mm = g->nodes[gemm].call;
  for (int o = c->n_inputs; o < c->n_inputs + c->n_outputs; o++)
    for (int i = 0; i < mm->n_inputs; i++)
      if (g->nodes[n].refs[o].slot >= 0 && g->nodes[n].refs[o].slot == g->nodes[gemm].refs[i].slot)
        return true;
  return false;
}

/* The epilogue of GEMM node n: how many of the fusable nodes right after it run on each block of
 * its output as the GEMM writes it (0: none). They must read the output as it is written (one
 * dense view of its element count), leave the GEMM's operands alone, and read the output at all. */
static int gemm_epilogue(const tpu_graph *g, int n) {
  if (!tpu_fuse_gemm_head(g, n) || n + 1 >= g->n_nodes ||
      tpu_fuse_out_numel(g, n + 1) != tpu_fuse_out_numel(g, n))
    return 0;
  const tpu_op_call *mm = g->nodes[n].call;
  view_set views = {0};
  int count = add_view(&views, g->nodes[n].refs[mm->n_inputs].slot, &mm->tensors[mm->n_inputs])
                  ? chain_from(g, n, n + 1, &views)
                  : 0;
  free(views.v);
  for (int k = 0; k < count; k++)
    if (writes_operand(g, n, n + 1 + k))
      count = k;
  bool reads = false;
  for (int m = n + 1; m < n + 1 + count; m++)
    for (int i = 0; i < g->nodes[m].call->n_inputs; i++)
      reads |= g->nodes[m].refs[i].node == n;
  return reads ? count : 0;
}

/* Cuts the nodes into steps: a GEMM with its epilogue, maximal fusable runs (with a sum of one
 * of their values), the cross-entropy pair, everything else one node per step. */
static int partition(const tpu_graph *g, fz_step *steps) {
  int n_steps = 0;
  for (int i = 0; i < g->n_nodes;) {
    if (tpu_fuse_cross_entropy_pair(g, i)) {
      steps[n_steps++] = (fz_step){.first = i, .count = 2, .cross_entropy = true};
      i += 2;
      continue;
    }
    int epilogue = gemm_epilogue(g, i);
    if (epilogue) {
      steps[n_steps++] = (fz_step){.first = i, .count = 1 + epilogue, .gemm = true};
      i += 1 + epilogue;
      continue;
    }
    view_set views = {0};
    int count = chain_from(g, i, i, &views);
    free(views.v);
    bool chain = count > 0;
    count += !chain;
    bool reduce = chain && reduces_group(g, i, count);
    steps[n_steps++] = (fz_step){.first = i, .count = count + reduce, .reduce = reduce};
    i += count + reduce;
  }
  return n_steps;
}

/* Decides which outputs reach memory: all of a single kernel's; in a group, those needed or read
 * (or partly overwritten) by another step. Marks single nodes that nobody reads or needs dead. */
static bool plan_stores(const tpu_graph *g, tpu_fuse_plan *p, const int *step_of) {
  int total = p->out_base[g->n_nodes];
  bool *read_outside = calloc((size_t)total + 1, 1), *read_any = calloc((size_t)total + 1, 1);
  if (!read_outside || !read_any) {
    free(read_outside);
    free(read_any);
    return false;
  }
  for (int m = 0; m < g->n_nodes; m++) {
    const tpu_op_call *c = g->nodes[m].call;
    for (int i = 0; i < c->n_inputs + c->n_outputs; i++) {
      const tpu_graph_ref *r = &g->nodes[m].refs[i];
      if (r->node < 0)
        continue;
      int f = p->out_base[r->node] + r->index;
      read_any[f] = true;
      read_outside[f] |= step_of[m] != step_of[r->node];
    }
  }
  for (int s = 0; s < p->n_steps; s++) {
    fz_step *st = &p->steps[s];
    bool fused = st->count > 1, live = false;
    for (int n = st->first; n < st->first + st->count; n++)
      for (int k = 0; k < g->nodes[n].call->n_outputs; k++) {
        int f = p->out_base[n] + k;
        bool needed = g->nodes[n].refs[g->nodes[n].call->n_inputs + k].needed;
        /* The cross-entropy pair and a group's sum write their last output in any case, and a
         * GEMM its output (the epilogue reads it back from memory). */
        p->stores[f] = !fused || needed || read_outside[f] ||
                       ((st->cross_entropy || st->reduce) && n == st->first + st->count - 1) ||
                       (st->gemm && n == st->first);
        live |= needed || read_any[f];
      }
    st->skip = !fused && !live;
  }
  free(read_outside);
  free(read_any);
  return true;
}

/* Fills one loop operand of group node `fn` (graph node n). */
static void plan_operand(const tpu_graph *g, fz_group *grp, int first, fz_node *fn, int k,
                         const int *value_of, const tpu_fuse_plan *p) {
  const tpu_op_call *c = g->nodes[fn->node].call;
  const tpu_ew_op *op = tpu_ew_op_of(c->op);
  bool output = k < fn->n_out;
  int ti = output ? fn->n_in + k : k - fn->n_out;
  const tpu_tensor *t = &c->tensors[ti];
  const tpu_graph_ref *r = &g->nodes[fn->node].refs[ti];
  tpu_dtype want = op->bool_operands & TPU_EW_BOOL(k) ? TPU_BOOL : tpu_ew_loop_dtype(c->compute);
  bool keep = (op->flags & TPU_EW_OPMATH_SCALAR1) && k == fn->n_out + 1 &&
              tpu_tensor_numel(t) == 1;
  fz_operand *o = &fn->ops[k];
  o->tensor = (int16_t)ti;
  o->cast = plan_cast(t->dtype, want, c->compute, output, keep);
  if (output) {
    int v = grp->n_values++;
    grp->values[v] = (fz_value){.dtype = t->dtype, .node = fn->node, .out = k,
                                .store = p->stores[p->out_base[fn->node] + k]};
    o->val = (int16_t)v;
  } else if (r->node >= first) {
    o->src = FZ_VAL;
    o->val = (int16_t)value_of[p->out_base[r->node] + r->index];
  } else if (tpu_tensor_numel(t) == 1 && grp->numel != 1) {
    o->src = FZ_CONST;
    o->konst = (int16_t)grp->n_consts++;
  } else if (tpu_tensor_numel(t) != grp->numel) {
    o->src = FZ_PERIODIC;
    o->period = tpu_tensor_numel(t);
  } else {
    o->src = FZ_MEM;
  }
}

static fz_group *plan_group(const tpu_graph *g, const fz_step *st, int *value_of,
                            const tpu_fuse_plan *p) {
  int n_values = p->out_base[st->first + st->count] - p->out_base[st->first];
  fz_group *grp = calloc(1, sizeof *grp);
  if (!grp)
    return NULL;
  grp->nodes = calloc((size_t)st->count, sizeof *grp->nodes);
  grp->values = calloc((size_t)n_values, sizeof *grp->values);
  if (!grp->nodes || !grp->values) {
    free(grp->nodes);
    free(grp->values);
    free(grp);
    return NULL;
  }
  int first = st->first + st->gemm; /* the GEMM's output is memory to its epilogue */
  grp->numel = tpu_fuse_out_numel(g, first);
  grp->n_nodes = st->count - st->reduce - st->gemm;
  for (int j = 0; j < grp->n_nodes; j++) {
    const tpu_op_call *c = g->nodes[first + j].call;
    fz_node *fn = &grp->nodes[j];
    fn->node = first + j;
    fn->loop = tpu_ew_op_of(c->op)->loops[tpu_ew_loop_dtype(c->compute)];
    fn->n_in = c->n_inputs;
    fn->n_out = c->n_outputs;
    for (int k = 0; k < fn->n_out + fn->n_in; k++) {
      if (k < fn->n_out)
        value_of[p->out_base[fn->node] + k] = grp->n_values;
      plan_operand(g, grp, first, fn, k, value_of, p);
    }
  }
  grp->reduce_node = -1;
  if (st->reduce) {
    const tpu_graph_node *r = &g->nodes[st->first + grp->n_nodes];
    grp->reduce_node = st->first + grp->n_nodes;
    grp->reduce_val = value_of[p->out_base[r->refs[0].node] + r->refs[0].index];
    grp->reduce_mean = r->call->scalars[0].i != 0;
  }
  return grp;
}

void tpu_fuse_plan_destroy(void *plan) {
  tpu_fuse_plan *p = plan;
  if (!p)
    return;
  for (int s = 0; p->steps && s < p->n_steps; s++)
    if (p->steps[s].group) {
      free(p->steps[s].group->nodes);
      free(p->steps[s].group->values);
      free(p->steps[s].group);
    }
  free(p->steps);
  free(p->out_base);
  free(p->stores);
  free(p);
}

tpu_status tpu_fuse_plan_create(const tpu_graph *g, tpu_fuse_plan **out) {
  tpu_fuse_plan *p = calloc(1, sizeof *p);
  int n = g->n_nodes;
  int *step_of = NULL, *value_of = NULL;
  bool ok = p && (p->steps = calloc((size_t)n + 1, sizeof *p->steps)) &&
            (p->out_base = calloc((size_t)n + 1, sizeof *p->out_base)) &&
            (step_of = calloc((size_t)n + 1, sizeof *step_of));
  for (int i = 0; ok && i < n; i++)
    p->out_base[i + 1] = p->out_base[i] + g->nodes[i].call->n_outputs;
  ok = ok && (p->stores = calloc((size_t)p->out_base[n] + 1, 1)) &&
       (value_of = calloc((size_t)p->out_base[n] + 1, sizeof *value_of));
  if (ok) {
    p->n_steps = partition(g, p->steps);
    for (int s = 0; s < p->n_steps; s++)
      for (int i = 0; i < p->steps[s].count; i++)
        step_of[p->steps[s].first + i] = s;
    ok = plan_stores(g, p, step_of);
  }
  for (int s = 0; ok && s < p->n_steps; s++)
    if (p->steps[s].count > 1 && !p->steps[s].cross_entropy)
      ok = (p->steps[s].group = plan_group(g, &p->steps[s], value_of, p)) != NULL;
  free(step_of);
  free(value_of);
  if (!ok) {
    tpu_fuse_plan_destroy(p);
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate a fused plan");
  }
  *out = p;
  return TPU_OK;
}

int tpu_fuse_plan_steps(const tpu_fuse_plan *p) { return p->n_steps; }

void tpu_fuse_plan_step(const tpu_fuse_plan *p, int i, int *first, int *count, bool *fused) {
  *first = p->steps[i].first;
  *count = p->steps[i].count;
  *fused = p->steps[i].group != NULL;
}

bool tpu_fuse_plan_stores(const tpu_fuse_plan *p, int node, int out) {
  return p->stores[p->out_base[node] + out];
}
