/* The fused executor: runs a plan's steps in order, fused groups tile by tile (fuse.h). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/kernels/matmul/matmul.h"
#include "drivers/host/fuse/fuse_internal.h"
#include "drivers/host/host_driver.h"
#include "drivers/host/engine/engine_pool.h"

/* Bytes from one tile buffer to the next: a tile of the widest real dtype, plus three cache lines
 * so that buffers do not all start at the same offset modulo 4 KiB (loads would wait on unrelated
 * stores: 4K aliasing). */
#define TILE_BYTES ((size_t)TPU_FUSE_TILE * 8 + 192)

static atomic_uint_least64_t run_steps, run_fused_steps, run_fused_nodes, run_gemm_epilogues;

/* Per-thread buffers of a chunk: one per value kept in scratch, one per loop operand for
 * conversions, one for a conversion's middle dtype, one per scalar operand. */
typedef struct chunk_layout {
  size_t values, conv, mid, consts, bytes;
} chunk_layout;

typedef struct group_run {
  const fz_group *grp;
  const tpu_graph *graph;
  tpu_ew_ctx *ctx;  /* per group node */
  char **mem;       /* per group node and tensor: element 0 of a memory operand, or NULL */
  char **val_mem;   /* per value: element 0 in memory when stored */
  char *scratch;    /* chunk_layout.bytes per chunk */
  int *failed;      /* per group node: its loop met an integer division by zero */
  double *partial;  /* per chunk: the sum of the reduced value over the chunk's tiles */
  char *reduce_out; /* the sum's output element */
  int64_t rows, cols; /* a GEMM step: the GEMM's output matrices are [rows, cols] */
  chunk_layout lay;
} group_run;

static void apply_cast(const fz_cast *c, char *dst, const char *src, int64_t n, char *mid) {
  if (c->to_mid) {
    char *d[2] = {mid, (char *)src};
    int64_t s[2] = {(int64_t)tpu_dtype_size(c->mid), (int64_t)tpu_dtype_size(c->from)};
    c->to_mid(d, s, n, NULL);
    src = mid;
  }
  char *d[2] = {dst, (char *)src};
  int64_t s[2] = {(int64_t)tpu_dtype_size(c->to), (int64_t)tpu_dtype_size(c->mid)};
  c->to_end(d, s, n, NULL);
}

/* Converts each scalar operand once and repeats it over its buffer. */
static void fill_consts(const group_run *r, char *base) {
  for (int j = 0; j < r->grp->n_nodes; j++) {
    const fz_node *fn = &r->grp->nodes[j];
    for (int k = fn->n_out; k < fn->n_out + fn->n_in; k++) {
      const fz_operand *o = &fn->ops[k];
      if (o->src != FZ_CONST)
        continue;
      char *buf = base + r->lay.consts + (size_t)o->konst * TILE_BYTES;
      const char *src = r->mem[j * TPU_EW_MAX_OPERANDS + o->tensor];
      size_t size = tpu_dtype_size(o->cast.to);
      if (o->cast.to_end)
        apply_cast(&o->cast, buf, src, 1, base + r->lay.mid);
      else
        memcpy(buf, src, size);
      for (int64_t i = 1; i < TPU_FUSE_TILE; i++)
        memcpy(buf + (size_t)i * size, buf, size);
    }
  }
}

/* Gathers output elements [begin, begin + n) of a periodic input (element i reads i % period)
 * into `dst`, converted to the loop's dtype. */
static void gather_periodic(const fz_operand *o, char *dst, const char *src, int64_t begin,
                            int64_t n, char *mid) {
  size_t in_size = tpu_dtype_size(o->cast.from), out_size = tpu_dtype_size(o->cast.to);
  for (int64_t done = 0; done < n;) {
    int64_t at = (begin + done) % o->period;
    int64_t m = o->period - at < n - done ? o->period - at : n - done;
    if (o->cast.to_end)
      apply_cast(&o->cast, dst + (size_t)done * out_size, src + (size_t)at * in_size, m, mid);
    else
      memcpy(dst + (size_t)done * out_size, src + (size_t)at * in_size, (size_t)m * in_size);
    done += m;
  }
}

/* Runs node j of the group on the tile [begin, begin + n). */
static void run_node(const group_run *r, int j, char *base, int64_t begin, int64_t n) {
  const fz_node *fn = &r->grp->nodes[j];
  char *ptr[TPU_EW_MAX_OPERANDS];
  char *mid = base + r->lay.mid;
  for (int k = 0; k < fn->n_out + fn->n_in; k++) {
    const fz_operand *o = &fn->ops[k];
    char *conv = base + r->lay.conv + (size_t)k * TILE_BYTES;
    bool output = k < fn->n_out;
    char *at;
    if (output || o->src == FZ_VAL) {
      const fz_value *v = &r->grp->values[o->val];
      at = v->store ? r->val_mem[o->val] + begin * (int64_t)tpu_dtype_size(v->dtype)
                    : base + r->lay.values + (size_t)o->val * TILE_BYTES;
    } else if (o->src == FZ_CONST) {
      ptr[k] = base + r->lay.consts + (size_t)o->konst * TILE_BYTES;
      continue;
    } else if (o->src == FZ_PERIODIC) {
      const char *src = r->mem[j * TPU_EW_MAX_OPERANDS + o->tensor];
      int64_t at = begin % o->period;
      if (!o->cast.to_end && at + n <= o->period) { /* no wrap in this tile: read in place */
        ptr[k] = (char *)src + at * (int64_t)tpu_dtype_size(o->cast.from);
      } else {
        gather_periodic(o, conv, src, begin, n, mid);
        ptr[k] = conv;
      }
      continue;
    } else {
      at = r->mem[j * TPU_EW_MAX_OPERANDS + o->tensor] +
           begin * (int64_t)tpu_dtype_size(o->cast.from);
    }
    ptr[k] = o->cast.to_end ? conv : at;
    if (!output && o->cast.to_end)
      apply_cast(&o->cast, conv, at, n, mid);
  }
  fn->loop(ptr, n, &r->ctx[j]);
  for (int k = 0; k < fn->n_out; k++) {
    const fz_operand *o = &fn->ops[k];
    if (!o->cast.to_end)
      continue;
    const fz_value *v = &r->grp->values[o->val];
    char *at = v->store ? r->val_mem[o->val] + begin * (int64_t)tpu_dtype_size(v->dtype)
                        : base + r->lay.values + (size_t)o->val * TILE_BYTES;
    apply_cast(&o->cast, at, ptr[k], n, mid);
  }
}

/* The sum of n elements of a float32 or float64 value: float32 in 16 float lanes (vectorized)
 * added into a double, as the sum kernel accumulates. */
static double tile_sum(tpu_dtype dtype, const char *at, int64_t n) {
  double sum = 0;
  int64_t i = 0;
  if (dtype == TPU_FLOAT64) {
    for (const double *x = (const double *)at; i < n; i++)
      sum += x[i];
    return sum;
  }
  const float *x = (const float *)at;
  float lanes[16] = {0};
  for (; i + 16 <= n; i += 16)
    for (int l = 0; l < 16; l++)
      lanes[l] += x[i + l];
  for (int l = 0; l < 16; l++)
    sum += lanes[l];
  for (; i < n; i++)
    sum += x[i];
  return sum;
}

/* Runs every node of the group on elements [begin, end), a tile at a time. */
static void run_range(const group_run *r, char *base, int64_t begin, int64_t end) {
  for (; begin < end; begin += TPU_FUSE_TILE) {
    int64_t n = end - begin < TPU_FUSE_TILE ? end - begin : TPU_FUSE_TILE;
    for (int j = 0; j < r->grp->n_nodes; j++)
      run_node(r, j, base, begin, n);
  }
}

static void run_chunk(int64_t begin, int64_t end, int chunk, void *arg) {
  group_run *r = arg;
  const fz_group *grp = r->grp;
  char *base = r->scratch + (size_t)chunk * r->lay.bytes;
  fill_consts(r, base);
  for (int64_t tile = begin; tile < end; tile++) {
    int64_t first = tile * TPU_FUSE_TILE;
    int64_t n = grp->numel - first < TPU_FUSE_TILE ? grp->numel - first : TPU_FUSE_TILE;
    run_range(r, base, first, first + n);
    if (grp->reduce_node >= 0) {
      const fz_value *v = &grp->values[grp->reduce_val];
      const char *at = v->store
                           ? r->val_mem[grp->reduce_val] + first * (int64_t)tpu_dtype_size(v->dtype)
                           : base + r->lay.values + (size_t)grp->reduce_val * TILE_BYTES;
      r->partial[chunk] += tile_sum(v->dtype, at, n);
    }
  }
}

/* A GEMM step's epilogue (tpu_gemm_epilogue): the group on a block of the output just written. */
static void run_epilogue(void *arg, int64_t bo, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                         int chunk) {
  group_run *r = arg;
  char *base = r->scratch + (size_t)chunk * r->lay.bytes;
  fill_consts(r, base);
  int64_t matrix = bo * r->rows * r->cols;
  if (n0 == 0 && n1 == r->cols) { /* whole rows: one range */
    run_range(r, base, matrix + m0 * r->cols, matrix + m1 * r->cols);
    return;
  }
  for (int64_t i = m0; i < m1; i++)
    run_range(r, base, matrix + i * r->cols + n0, matrix + i * r->cols + n1);
}

/* Adds the chunks' partial sums in chunk order (fixed boundaries: the result does not depend on
 * which thread ran which chunk) and writes the sum or mean. */
static void store_reduction(const group_run *r, int chunks) {
  double total = 0;
  for (int c = 0; c < chunks; c++)
    total += r->partial[c];
  if (r->grp->reduce_mean)
    total /= (double)r->grp->numel;
  if (r->grp->values[r->grp->reduce_val].dtype == TPU_FLOAT64)
    *(double *)r->reduce_out = total;
  else
    *(float *)r->reduce_out = (float)total;
}

/* Element 0 of tensor `t` for reading (its buffer must have memory) or writing (given memory now
 * if it has none). A buffer whose memory went back to the pool after its last use in this graph
 * (exec/tpu_fused.c's memory plan) still has its address, valid until this graph's run ends. */
static tpu_status locate(const tpu_tensor *t, bool write, char **out) {
  if (t->buf && !tpu_buffer_is_live(t->buf) && !tpu_buffer_memory(t->buf)) {
    if (!write)
      return tpu_error(TPU_ERR_RUNTIME, "a fused graph read a buffer that is not materialized");
    tpu_status st = tpu_buffer_materialize(t->buf);
    if (st != TPU_OK)
      return st;
  }
  *out = tpu_tensor_data(t);
  return TPU_OK;
}

/* Finds every memory operand and gives stored values memory. */
static tpu_status locate_group(group_run *r) {
  for (int j = 0; j < r->grp->n_nodes; j++) {
    const fz_node *fn = &r->grp->nodes[j];
    const tpu_op_call *c = r->graph->nodes[fn->node].call;
    for (int k = 0; k < fn->n_out + fn->n_in; k++) {
      const fz_operand *o = &fn->ops[k];
      const tpu_tensor *t = &c->tensors[o->tensor];
      tpu_status st = TPU_OK;
      if (k < fn->n_out && r->grp->values[o->val].store)
        st = locate(t, true, &r->val_mem[o->val]);
      else if (k >= fn->n_out && o->src != FZ_VAL)
        st = locate(t, false, &r->mem[j * TPU_EW_MAX_OPERANDS + o->tensor]);
      if (st != TPU_OK)
        return st;
    }
  }
  return TPU_OK;
}

static void load_ctx(tpu_ew_ctx *ctx, const tpu_op_call *call, int *failed) {
  ctx->call = call;
  ctx->failed = failed;
  for (int k = 0; k < TPU_OP_MAX_SCALARS; k++) {
    ctx->f64[k] = call->scalars[k].f;
    ctx->f32[k] = (float)call->scalars[k].f;
    ctx->i64[k] = call->scalars[k].i;
  }
}

/* Locates every tensor of a single kernel's call. */
static tpu_status locate_call(const tpu_op_call *c) {
  for (int i = 0; i < c->n_inputs + c->n_outputs; i++) {
    char *data;
    tpu_status st = locate(&c->tensors[i], i >= c->n_inputs, &data);
    if (st != TPU_OK)
      return st;
  }
  return TPU_OK;
}

static tpu_status run_single(const tpu_op_call *c) {
  tpu_status st = locate_call(c);
  if (st != TPU_OK)
    return st;
  tpu_kernel_fn kernel = tpu_host_kernel(c->op);
  if (!kernel)
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "the host driver has no kernel for %s",
                     tpu_op_name(c->op));
  return kernel(c);
}

/* Runs a group step (a GEMM step: the GEMM with the group as its epilogue); when a node of the
 * group fails *failed_node is its graph index (else it is left as it is, the step's first). */
static tpu_status run_group(const fz_step *step, const tpu_graph *g, int *failed_node) {
  const fz_group *grp = step->group;
  const tpu_op_call *gemm = step->gemm ? g->nodes[step->first].call : NULL;
  group_run r = {.grp = grp, .graph = g};
  r.lay.values = 0;
  r.lay.conv = (size_t)grp->n_values * TILE_BYTES;
  r.lay.mid = r.lay.conv + TPU_EW_MAX_OPERANDS * TILE_BYTES;
  r.lay.consts = r.lay.mid + TILE_BYTES;
  r.lay.bytes = r.lay.consts + (size_t)grp->n_consts * TILE_BYTES;
  int64_t tiles = (grp->numel + TPU_FUSE_TILE - 1) / TPU_FUSE_TILE;
  int64_t grain = TPU_ITER_GRAIN / TPU_FUSE_TILE;
  int chunks = gemm ? tpu_pool_threads() : tpu_parallel_chunks(tiles, grain);
  r.ctx = calloc((size_t)grp->n_nodes, sizeof *r.ctx);
  r.mem = calloc((size_t)grp->n_nodes * TPU_EW_MAX_OPERANDS, sizeof *r.mem);
  r.val_mem = calloc((size_t)grp->n_values, sizeof *r.val_mem);
  r.failed = calloc((size_t)grp->n_nodes, sizeof *r.failed);
  r.scratch = aligned_alloc(64, r.lay.bytes * (size_t)chunks);
  r.partial = calloc((size_t)chunks, sizeof *r.partial);
  tpu_status st = TPU_OK;
  if (!r.ctx || !r.mem || !r.val_mem || !r.failed || !r.scratch || !r.partial)
    st = tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate a fused group's tile buffers");
  if (st == TPU_OK && gemm) /* first: the epilogue reads the GEMM's output */
    st = locate_call(gemm);
  if (st == TPU_OK)
    st = locate_group(&r);
  if (st == TPU_OK && grp->reduce_node >= 0)
    st = locate(&g->nodes[grp->reduce_node].call->tensors[1], true, &r.reduce_out);
  if (st == TPU_OK) {
    for (int j = 0; j < grp->n_nodes; j++)
      load_ctx(&r.ctx[j], g->nodes[grp->nodes[j].node].call, &r.failed[j]);
    if (gemm) {
      const tpu_tensor *out = &gemm->tensors[gemm->n_inputs];
      r.rows = out->sizes[1];
      r.cols = out->sizes[2];
      tpu_gemm_epilogue epilogue = {.fn = run_epilogue, .ctx = &r};
      st = tpu_kernel_gemm_then(gemm, &epilogue); /* a failure is the GEMM's: step->first */
    } else {
      tpu_parallel_for(tiles, grain, run_chunk, &r);
    }
    if (grp->reduce_node >= 0)
      store_reduction(&r, chunks);
    for (int j = 0; j < grp->n_nodes && st == TPU_OK; j++)
      if (__atomic_load_n(&r.failed[j], __ATOMIC_RELAXED)) {
        *failed_node = grp->nodes[j].node;
        st = tpu_error(TPU_ERR_RUNTIME, "ZeroDivisionError");
      }
  }
  free(r.ctx);
  free(r.mem);
  free(r.val_mem);
  free(r.failed);
  free(r.scratch);
  free(r.partial);
  return st;
}

/* The cross-entropy pair (fuse.h): every tensor but the gradient between the two nodes. */
static tpu_status run_cross_entropy(const tpu_op_call *nll, const tpu_op_call *lsm) {
  char *data;
  for (int i = 0; i < nll->n_inputs; i++) {
    tpu_status st = locate(&nll->tensors[i], false, &data);
    if (st != TPU_OK)
      return st;
  }
  tpu_status st = locate(&lsm->tensors[1], false, &data);
  if (st == TPU_OK)
    st = locate(&lsm->tensors[2], true, &data);
  return st == TPU_OK ? tpu_kernel_nll_log_softmax_backward(nll, lsm) : st;
}

tpu_status tpu_fuse_run(const tpu_fuse_plan *p, const tpu_graph *g) {
  for (int s = 0; s < p->n_steps; s++) {
    const fz_step *step = &p->steps[s];
    int end = step->first + step->count, failed = step->first;
    const char *poison = tpu_graph_poisoned_input(g, step->first, end);
    if (poison) {
      /* Reported when it happened: pass the invalid contents on quietly, as tpu_op_launch does. */
      tpu_graph_poison_outputs(g, step->first, end, tpu_op_name(g->nodes[step->first].call->op),
                               poison);
      continue;
    }
    if (step->skip)
      continue;
    atomic_fetch_add(&run_steps, 1);
    if (step->group) {
      atomic_fetch_add(&run_fused_steps, 1);
      atomic_fetch_add(&run_fused_nodes, (uint64_t)step->count);
      if (step->gemm)
        atomic_fetch_add(&run_gemm_epilogues, 1);
    }
    tpu_status st;
    if (step->group)
      st = run_group(step, g, &failed);
    else if (step->cross_entropy)
      st = run_cross_entropy(g->nodes[step->first].call, g->nodes[step->first + 1].call);
    else
      st = run_single(g->nodes[step->first].call);
    if (st != TPU_OK) {
      /* Copied: poisoning may overwrite the thread's error text. */
      char message[4096];
      snprintf(message, sizeof message, "%s", tpu_last_error());
      const char *op = tpu_op_name(g->nodes[failed].call->op);
      tpu_graph_poison_outputs(g, step->first, g->n_nodes, op, message);
      return tpu_error(st, "'%s' failed: %s", op, message);
    }
  }
  return TPU_OK;
}

void tpu_fuse_get_stats(tpu_graph_run_stats *stats) {
  stats->steps = atomic_load(&run_steps);
  stats->fused_steps = atomic_load(&run_fused_steps);
  stats->fused_nodes = atomic_load(&run_fused_nodes);
  stats->gemm_epilogues = atomic_load(&run_gemm_epilogues);
}

void tpu_fuse_reset_stats(void) {
  atomic_store(&run_steps, 0);
  atomic_store(&run_fused_steps, 0);
  atomic_store(&run_fused_nodes, 0);
  atomic_store(&run_gemm_epilogues, 0);
}
