/* The loss kernels (contract in ops/tpu_ops_nn.h). Reductions accumulate in double over fixed
 * blocks whose partial sums are added in block order, so the result does not depend on the
 * thread count, and round once at the end. */
#include <stdatomic.h>
#include <stdlib.h>

#include "drivers/host/kernels/index/index_util.h"
#include "drivers/host/kernels/kernels.h"
#include "drivers/host/kernels/norm/norm.h"
#include "drivers/host/host_driver.h"
#include "drivers/host/engine/engine_pool.h"

enum { REDUCE_NONE = 0, REDUCE_MEAN = 1, REDUCE_SUM = 2 };

/* Elements per block of a deterministic reduction. */
#define BLOCK 8192

typedef struct blocks {
  int64_t n;         /* elements in the reduction */
  double *partial;   /* [nblocks * 2]: loss and weight sums per block */
  int64_t nblocks;
} blocks;

static tpu_status blocks_init(blocks *b, int64_t n, const char *name) {
  b->n = n;
  b->nblocks = (n + BLOCK - 1) / BLOCK;
  b->partial = calloc((size_t)(b->nblocks ? b->nblocks : 1) * 2, sizeof *b->partial);
  return b->partial ? TPU_OK : tpu_error(TPU_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
}

/* Sums of both partial columns, in block order. */
static void blocks_total(const blocks *b, double *loss, double *weight) {
  *loss = *weight = 0;
  for (int64_t i = 0; i < b->nblocks; i++) {
    *loss += b->partial[2 * i];
    *weight += b->partial[2 * i + 1];
  }
}

static bool is_floating(const tpu_tensor *t) { return tpu_dtype_is_floating(t->dtype); }

/* ---- nll_loss ---------------------------------------------------------------------------- */

typedef struct nll {
  const tpu_tensor *input, *target, *weight, *out, *grad_output, *grad_input;
  int64_t N, C, S, ignore;
  int reduction;
  double scale; /* backward, reduced: -grad_output (/ total_weight) */
  blocks b;
  atomic_bool bad;
} nll;

static char *at3(const tpu_tensor *t, int64_t i, int64_t j, int64_t k) {
  int64_t e = (int64_t)tpu_dtype_size(t->dtype);
  return (char *)tpu_tensor_data(t) + (i * t->strides[0] + j * t->strides[1] + k * t->strides[2]) * e;
}

static char *at2(const tpu_tensor *t, int64_t i, int64_t k) {
  int64_t e = (int64_t)tpu_dtype_size(t->dtype);
  return (char *)tpu_tensor_data(t) + (i * t->strides[0] + k * t->strides[1]) * e;
}

/* The class of element e = n * S + s; -1 when ignored, -2 when out of range. */
static int64_t nll_class(nll *l, int64_t e) {
  const tpu_tensor *t = l->target;
  int64_t cls = tpu_index_load(at2(t, e / l->S, e % l->S), (int64_t)tpu_dtype_size(t->dtype));
  if (cls == l->ignore)
    return -1;
  if (cls < 0 || cls >= l->C) {
    atomic_store_explicit(&l->bad, true, memory_order_relaxed);
    return -2;
  }
  return cls;
}

static double nll_weight(const nll *l, int64_t cls) {
  if (!l->weight)
    return 1.0;
  const tpu_tensor *w = l->weight;
  int64_t e = (int64_t)tpu_dtype_size(w->dtype);
  return tpu_real_load((char *)tpu_tensor_data(w) + cls * w->strides[0] * e, w->dtype);
}

static void nll_forward_range(int64_t begin, int64_t end, int chunk, void *arg) {
  (void)chunk;
  nll *l = arg;
  tpu_dtype dt = l->input->dtype;
  if (l->reduction == REDUCE_NONE) {
    for (int64_t e = begin; e < end; e++) {
      int64_t cls = nll_class(l, e), n = e / l->S, s = e % l->S;
      double v = cls < 0 ? 0.0
                         : -tpu_real_round(dt, tpu_real_load(at3(l->input, n, cls, s), dt) *
                                                   nll_weight(l, cls));
      tpu_real_store(at2(l->out, n, s), dt, v);
    }
    return;
  }
  for (int64_t blk = begin; blk < end; blk++) {
    double loss = 0, weight = 0;
    int64_t hi = (blk + 1) * BLOCK < l->b.n ? (blk + 1) * BLOCK : l->b.n;
    for (int64_t e = blk * BLOCK; e < hi; e++) {
      int64_t cls = nll_class(l, e);
      if (cls < 0)
        continue;
      double w = nll_weight(l, cls);
      loss -= tpu_real_load(at3(l->input, e / l->S, cls, e % l->S), dt) * w;
      weight += w;
    }
    l->b.partial[2 * blk] = loss;
    l->b.partial[2 * blk + 1] = weight;
  }
}

/* The first bad target, for the IndexError's message. */
static tpu_status nll_target_error(nll *l) {
  for (int64_t e = 0; e < l->N * l->S; e++) {
    int64_t cls = tpu_index_load(at2(l->target, e / l->S, e % l->S),
                                 (int64_t)tpu_dtype_size(l->target->dtype));
    if (cls != l->ignore && (cls < 0 || cls >= l->C))
      return tpu_error(TPU_ERR_INDEX, "Target %lld is out of bounds.", (long long)cls);
  }
  return tpu_error(TPU_ERR_INDEX, "Target is out of bounds.");
}

/* Shared argument checks; fills the sizes. */
static tpu_status nll_setup(nll *l, const tpu_tensor *input, const tpu_tensor *target,
                            const tpu_tensor *weight, int reduction) {
  l->input = input;
  l->target = target;
  l->weight = weight;
  l->reduction = reduction;
  atomic_init(&l->bad, false);
  if (input->ndim != 3 || target->ndim != 2 || !is_floating(input) ||
      (target->dtype != TPU_INT64 && target->dtype != TPU_UINT8) || reduction < 0 ||
      reduction > 2)
    return tpu_error(TPU_ERR_VALUE, "nll_loss: malformed call");
  l->N = input->sizes[0];
  l->C = input->sizes[1];
  l->S = input->sizes[2];
  if (target->sizes[0] != l->N || target->sizes[1] != l->S ||
      (weight && (weight->ndim != 1 || weight->sizes[0] != l->C || weight->dtype != input->dtype)))
    return tpu_error(TPU_ERR_VALUE, "nll_loss: sizes of input, target and weight disagree");
  return TPU_OK;
}

tpu_status tpu_kernel_nll_loss(const tpu_op_call *call) {
  nll l = {0};
  int reduction = (int)call->scalars[0].i;
  const tpu_tensor *weight = call->n_inputs == 3 ? &call->tensors[2] : NULL;
  const tpu_tensor *out = &call->tensors[call->n_inputs];
  const tpu_tensor *total = &call->tensors[call->n_inputs + 1];
  tpu_status st = nll_setup(&l, &call->tensors[0], &call->tensors[1], weight, reduction);
  if (st != TPU_OK)
    return st;
  l.ignore = call->scalars[1].i;
  l.out = out;
  bool none = reduction == REDUCE_NONE;
  if (out->dtype != l.input->dtype || total->dtype != l.input->dtype || total->ndim != 0 ||
      (none ? out->ndim != 2 || out->sizes[0] != l.N || out->sizes[1] != l.S : out->ndim != 0))
    return tpu_error(TPU_ERR_VALUE, "nll_loss: malformed outputs");
  int64_t n = l.N * l.S;
  if (none) {
    tpu_parallel_for(n, TPU_ITER_GRAIN, nll_forward_range, &l);
    tpu_real_store(tpu_tensor_data(total), total->dtype, 0.0);
    return atomic_load(&l.bad) ? nll_target_error(&l) : TPU_OK;
  }
  st = blocks_init(&l.b, n, "nll_loss");
  if (st != TPU_OK)
    return st;
  tpu_parallel_for(l.b.nblocks, 1, nll_forward_range, &l);
  double loss, weight_sum;
  blocks_total(&l.b, &loss, &weight_sum);
  free(l.b.partial);
  if (atomic_load(&l.bad))
    return nll_target_error(&l);
  tpu_real_store(tpu_tensor_data(out), out->dtype,
                 reduction == REDUCE_MEAN ? loss / weight_sum : loss);
  tpu_real_store(tpu_tensor_data(total), total->dtype, weight_sum);
  return TPU_OK;
}

/* grad_input at (n, class cls, s): -weight[cls] * g, g being grad_output[n, s] (none) or the
 * reduced scale. */
static double nll_grad(const nll *l, int64_t cls, int64_t n, int64_t s) {
  tpu_dtype dt = l->grad_input->dtype;
  double g =
      l->reduction == REDUCE_NONE ? -tpu_real_load(at2(l->grad_output, n, s), dt) : l->scale;
  return nll_weight(l, cls) * g;
}

static void nll_backward_range(int64_t begin, int64_t end, int chunk, void *arg) {
  (void)chunk;
  nll *l = arg;
  for (int64_t e = begin; e < end; e++) {
    int64_t cls = nll_class(l, e), n = e / l->S, s = e % l->S;
    if (cls >= 0)
      tpu_real_store(at3(l->grad_input, n, cls, s), l->grad_input->dtype, nll_grad(l, cls, n, s));
  }
}

/* Reads an NLL_LOSS_BACKWARD call into `l` (grad_input: the call's output) and checks it. */
static tpu_status nll_backward_setup(nll *l, const tpu_op_call *call) {
  int reduction = (int)call->scalars[0].i;
  const tpu_tensor *go = &call->tensors[0], *total = &call->tensors[2];
  const tpu_tensor *weight = call->n_inputs == 4 ? &call->tensors[3] : NULL;
  const tpu_tensor *gi = &call->tensors[call->n_inputs];
  tpu_status st = nll_setup(l, gi, &call->tensors[1], weight, reduction);
  if (st != TPU_OK)
    return st;
  l->ignore = call->scalars[1].i;
  l->grad_output = go;
  l->grad_input = gi;
  bool none = reduction == REDUCE_NONE;
  if (go->dtype != gi->dtype || total->dtype != gi->dtype || total->ndim != 0 ||
      (none ? go->ndim != 2 || go->sizes[0] != l->N || go->sizes[1] != l->S : go->ndim != 0))
    return tpu_error(TPU_ERR_VALUE, "nll_loss_backward: malformed grad_output or total_weight");
  if (!none) {
    double g = tpu_real_load(tpu_tensor_data(go), go->dtype);
    double tw = tpu_real_load(tpu_tensor_data(total), total->dtype);
    l->scale = -(reduction == REDUCE_MEAN ? tpu_real_round(gi->dtype, g / tw) : g);
  }
  return TPU_OK;
}

tpu_status tpu_kernel_nll_loss_backward(const tpu_op_call *call) {
  nll l = {0};
  tpu_status st = nll_backward_setup(&l, call);
  if (st != TPU_OK)
    return st;
  tpu_zero_fill(l.grad_input);
  tpu_parallel_for(l.N * l.S, TPU_ITER_GRAIN, nll_backward_range, &l);
  return atomic_load(&l.bad) ? nll_target_error(&l) : TPU_OK;
}

typedef struct ce_rows {
  nll l;
  const tpu_tensor *y, *gi;
  rk_class cls;
} ce_rows;

static void ce_backward_range(int64_t begin, int64_t end, int chunk, void *arg) {
  (void)chunk;
  ce_rows *ce = arg;
  const nll *l = &ce->l;
  tpu_dtype dt = ce->gi->dtype;
  int64_t C = l->C, el = (int64_t)tpu_dtype_size(dt);
  for (int64_t n = begin; n < end; n++) {
    int64_t cls = nll_class(&ce->l, n);
    /* The one nonzero of nll_loss_backward's row, rounded as it would be stored. */
    double g = cls >= 0 ? tpu_real_round(dt, nll_grad(l, cls, n, 0)) : 0;
    const char *y = (const char *)tpu_tensor_data(ce->y) + n * C * el;
    char *gi = (char *)tpu_tensor_data(ce->gi) + n * C * el;
    /* As log_softmax_backward computes g - exp(y) * sum(g), with one nonzero g per row. */
    nk_exp_store(ce->cls, gi, y, C, 0);
    nk_scale(ce->cls, gi, C, -g);
    if (cls >= 0)
      tpu_real_store(gi + cls * el, dt, tpu_real_load(gi + cls * el, dt) + g);
  }
}

tpu_status tpu_kernel_nll_log_softmax_backward(const tpu_op_call *nll_call,
                                               const tpu_op_call *lsm) {
  ce_rows ce = {.y = &lsm->tensors[1], .gi = &lsm->tensors[2]};
  nll *l = &ce.l;
  tpu_status st = nll_backward_setup(l, nll_call);
  if (st != TPU_OK)
    return st;
  tpu_dtype dt = l->grad_input->dtype;
  if (l->S != 1 || ce.y->dtype != dt || ce.gi->dtype != dt ||
      (dt != TPU_FLOAT32 && dt != TPU_FLOAT64))
    return tpu_error(TPU_ERR_VALUE, "nll_loss_backward: malformed cross-entropy pair");
  ce.cls = nk_class(dt);
  int64_t grain = l->C > 0 ? TPU_ITER_GRAIN / l->C : 1;
  tpu_parallel_for(l->N, grain > 1 ? grain : 1, ce_backward_range, &ce);
  return atomic_load(&l->bad) ? nll_target_error(l) : TPU_OK;
}

/* ---- mse_loss ---------------------------------------------------------------------------- */

/* (a - b)^2 as PyTorch CPU computes it in `dtype`. */
static double squared_error(tpu_dtype dtype, double a, double b) {
  if (dtype == TPU_FLOAT64)
    return (a - b) * (a - b);
  float d = (float)tpu_real_round(dtype, (float)a - (float)b);
  return tpu_real_round(dtype, d * d);
}

typedef struct mse {
  const tpu_tensor *t[4]; /* the call's tensors: input, target, out; or go, input, target, gi */
  tpu_iter it;
  blocks b;
  double norm;
} mse;

static void mse_none_loop(char **data, const int64_t *strides, int64_t n, void *ctx) {
  tpu_dtype dt = *(const tpu_dtype *)ctx;
  for (int64_t i = 0; i < n; i++)
    tpu_real_store(data[0] + i * strides[0], dt,
                   squared_error(dt, tpu_real_load(data[1] + i * strides[1], dt),
                                 tpu_real_load(data[2] + i * strides[2], dt)));
}

typedef struct mse_sum {
  tpu_dtype dtype;
  double sum;
} mse_sum;

static void mse_sum_loop(char **data, const int64_t *strides, int64_t n, void *ctx) {
  mse_sum *m = ctx;
  for (int64_t i = 0; i < n; i++)
    m->sum += squared_error(m->dtype, tpu_real_load(data[0] + i * strides[0], m->dtype),
                            tpu_real_load(data[1] + i * strides[1], m->dtype));
}

static void mse_blocks(int64_t begin, int64_t end, int chunk, void *arg) {
  (void)chunk;
  mse *m = arg;
  for (int64_t blk = begin; blk < end; blk++) {
    mse_sum s = {m->t[0]->dtype, 0.0};
    tpu_iter_run(&m->it, blk * BLOCK, (blk + 1) * BLOCK, mse_sum_loop, &s);
    m->b.partial[2 * blk] = s.sum;
  }
}

/* True when a and b have the same dtype and sizes. */
static bool same_shape(const tpu_tensor *a, const tpu_tensor *b) {
  return a->dtype == b->dtype && tpu_tensor_same_sizes(a, b);
}

tpu_status tpu_kernel_mse_loss(const tpu_op_call *call) {
  const tpu_tensor *input = &call->tensors[0], *target = &call->tensors[1];
  const tpu_tensor *out = &call->tensors[2];
  int reduction = (int)call->scalars[0].i;
  if (!is_floating(input) || !same_shape(input, target) || out->dtype != input->dtype ||
      (reduction == REDUCE_NONE ? !same_shape(out, input) : out->ndim != 0))
    return tpu_error(TPU_ERR_VALUE, "mse_loss: malformed call");
  tpu_dtype dt = input->dtype;
  mse m = {.t = {input, target, out}};
  if (reduction == REDUCE_NONE) {
    tpu_iter_init(&m.it, out->ndim, out->sizes);
    tpu_iter_add_tensor(&m.it, out);
    tpu_iter_add_tensor(&m.it, input);
    tpu_iter_add_tensor(&m.it, target);
    tpu_iter_build(&m.it, 0);
    tpu_iter_run_parallel(&m.it, mse_none_loop, &dt);
    return TPU_OK;
  }
  /* Logical order: block boundaries, and so the sum, do not depend on strides. */
  tpu_iter_init(&m.it, input->ndim, input->sizes);
  tpu_iter_add_tensor(&m.it, input);
  tpu_iter_add_tensor(&m.it, target);
  tpu_iter_build(&m.it, TPU_ITER_LOGICAL_ORDER);
  tpu_status st = blocks_init(&m.b, m.it.numel, "mse_loss");
  if (st != TPU_OK)
    return st;
  tpu_parallel_for(m.b.nblocks, 1, mse_blocks, &m);
  double sum, unused;
  blocks_total(&m.b, &sum, &unused);
  free(m.b.partial);
  tpu_real_store(tpu_tensor_data(out), dt,
                 reduction == REDUCE_MEAN ? sum / (double)m.it.numel : sum);
  return TPU_OK;
}

static void mse_backward_loop(char **data, const int64_t *strides, int64_t n, void *ctx) {
  const mse *m = ctx;
  tpu_dtype dt = m->t[3]->dtype;
  double norm = m->norm;
  for (int64_t i = 0; i < n; i++) {
    double go = tpu_real_load(data[1] + i * strides[1], dt);
    double a = tpu_real_load(data[2] + i * strides[2], dt);
    double b = tpu_real_load(data[3] + i * strides[3], dt);
    double v;
    if (dt == TPU_FLOAT64) {
      v = norm * (a - b) * go;
    } else {
      float diff = (float)tpu_real_round(dt, (float)a - (float)b);
      float scaled = (float)tpu_real_round(dt, (float)norm * diff);
      v = scaled * (float)go;
    }
    tpu_real_store(data[0] + i * strides[0], dt, v);
  }
}

tpu_status tpu_kernel_mse_loss_backward(const tpu_op_call *call) {
  mse m = {.t = {&call->tensors[0], &call->tensors[1], &call->tensors[2], &call->tensors[3]}};
  if (!is_floating(m.t[3]) || !same_shape(m.t[0], m.t[3]) || !same_shape(m.t[1], m.t[3]) ||
      !same_shape(m.t[2], m.t[3]))
    return tpu_error(TPU_ERR_VALUE, "mse_loss_backward: malformed call");
  m.norm = tpu_real_round(m.t[3]->dtype, call->scalars[0].f);
  tpu_iter_init(&m.it, m.t[3]->ndim, m.t[3]->sizes);
  tpu_iter_add_tensor(&m.it, m.t[3]);
  for (int i = 0; i < 3; i++)
    tpu_iter_add_tensor(&m.it, m.t[i]);
  tpu_iter_build(&m.it, 0);
  tpu_iter_run_parallel(&m.it, mse_backward_loop, &m);
  return TPU_OK;
}
