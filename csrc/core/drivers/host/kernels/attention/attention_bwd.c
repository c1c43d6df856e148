/* SDPA backward (call layout in ops/tpu_ops_attention.h), FlashAttention-2's order on the host:
 *   1. delta = rowsum(grad_out * out) per query row;
 *   2. a task owns a run of key blocks of one key/value head: for each of its blocks (BWD_BK keys)
 *      and every query head of the group and every visible block of BWD_BQ query rows it
 *      recomputes p = exp(q kᵀ * scale + mask - logsumexp) and accumulates
 *        dv += pᵀ grad_out,  dp = grad_out vᵀ,  ds = p * (dp - delta),
 *        dk += dsᵀ q,        dq += ds k   (into the task's float32 dq partial),
 *      then writes the block's grad_k = dk * scale and grad_v;
 *   3. grad_q = scale * the sum of the partials, in split order.
 * The keys are cut into as many runs per head as the threads need (1 when batch x heads is
 * enough), each with its own dq partial, so no two threads write the same memory and the result
 * depends only on the sizes and the thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/kernels/attention/attention.h"
#include "drivers/host/kernels/kernels.h"
#include "drivers/host/engine/engine_pool.h"

#define BWD_BQ 64
#define BWD_BK 64

/* Floats the dq partials may take beyond one: more threads than heads split the keys only as
 * far as this allows (1 GiB). */
#define DQ_PARTIALS_MAX (1 << 28)

typedef struct bwd {
  const tpu_blas *blas;
  att_dims d;
  int64_t group, kblocks, splits, per_split;
  float scale;
  bool causal, has_mask;
  att_f32 q, k, v, dout;
  att_view mask, lse, dq, dk, dv, dmask;
  bool has_dmask;
  float *delta; /* [B, Hq, L] */
  float *dq_acc; /* [splits, B, Hq, L, D] */
} bwd;

/* ---- 1. delta ---- */

typedef struct delta_job {
  const bwd *g;
  att_f32 out;
} delta_job;

static void delta_rows(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  const delta_job *j = ctx;
  const att_dims *d = &j->g->d;
  for (int64_t r = begin; r < end; r++) {
    int64_t i = r % d->L, h = r / d->L % d->Hq, b = r / d->L / d->Hq;
    const float *o = att_f32_row(&j->out, b, h, i), *go = att_f32_row(&j->g->dout, b, h, i);
    float acc = 0.0f;
    for (int64_t c = 0; c < d->Dv; c++)
      acc += o[c] * go[c];
    j->g->delta[r] = acc;
  }
}

/* ---- 2. key blocks ---- */

/* Scratch of a task, in floats. */
static size_t task_scratch(const att_dims *d) {
  return (size_t)(2 * BWD_BQ * BWD_BK + BWD_BK * d->D + BWD_BK * d->Dv + BWD_BK);
}

/* One query block [i0, i0 + rows) of head h against the key block [j0, j0 + n). */
static void pair(const bwd *g, float *s, float *dp, float *mask_row, float *dk, float *dv,
                 int64_t b, int64_t h, int64_t hk, int64_t split, int64_t i0, int64_t rows,
                 int64_t j0, int64_t n) {
  const att_dims *d = &g->d;
  const float *q = att_f32_row(&g->q, b, h, i0), *go = att_f32_row(&g->dout, b, h, i0);
  const float *k = att_f32_row(&g->k, b, hk, j0), *v = att_f32_row(&g->v, b, hk, j0);
  const float *delta = g->delta + (b * d->Hq + h) * d->L + i0;
  float *dq = g->dq_acc + (((split * d->B + b) * d->Hq + h) * d->L + i0) * d->D;

  att_gemm(g->blas, false, true, rows, n, d->D, 1.0f, q, g->q.ld, k, g->k.ld, 0.0f, s, n);
  for (int64_t r = 0; r < rows; r++) {
    const float *add =
        g->has_mask ? att_mask_row(&g->mask, b, h, i0 + r, j0, n, mask_row) : NULL;
    int64_t limit = g->causal ? i0 + r + 1 - j0 : n;
    att_probs(s + r * n, add, n, limit, g->scale, *(const float *)att_row(&g->lse, b, h, i0 + r));
  }
  att_gemm(g->blas, true, false, n, d->Dv, rows, 1.0f, s, n, go, g->dout.ld, 1.0f, dv, d->Dv);
  att_gemm(g->blas, false, true, rows, n, d->Dv, 1.0f, go, g->dout.ld, v, g->v.ld, 0.0f, dp, n);
  for (int64_t r = 0; r < rows; r++) {
    float *pr = s + r * n, *dsr = dp + r * n;
    for (int64_t c = 0; c < n; c++)
      dsr[c] = pr[c] * (dsr[c] - delta[r]);
    if (g->has_dmask)
      att_store(dsr, 1.0f, n, att_at(&g->dmask, b, h, i0 + r, j0), g->dmask.dtype, g->dmask.sc);
  }
  att_gemm(g->blas, true, false, n, d->D, rows, 1.0f, dp, n, q, g->q.ld, 1.0f, dk, d->D);
  att_gemm(g->blas, false, false, rows, d->D, n, 1.0f, dp, n, k, g->k.ld, 1.0f, dq, d->D);
}

/* Zeroes grad_mask's rows [0, rows) of head h in the key block: queries the causal mask hides
 * from it, which no pair visits. */
static void zero_dmask(const bwd *g, float *zeros, int64_t b, int64_t h, int64_t rows, int64_t j0,
                       int64_t n) {
  memset(zeros, 0, (size_t)n * sizeof *zeros);
  for (int64_t i = 0; i < rows; i++)
    att_store(zeros, 1.0f, n, att_at(&g->dmask, b, h, i, j0), g->dmask.dtype, g->dmask.sc);
}

static void bwd_task(int64_t task, float *scratch, void *ctx) {
  const bwd *g = ctx;
  const att_dims *d = &g->d;
  int64_t split = task % g->splits, bh = task / g->splits, hk = bh % d->Hkv, b = bh / d->Hkv;
  float *s = scratch, *dp = s + BWD_BQ * BWD_BK, *dk = dp + BWD_BQ * BWD_BK;
  float *dv = dk + BWD_BK * d->D, *mask_row = dv + BWD_BK * d->Dv;
  int64_t first = split * g->per_split;
  int64_t last = first + g->per_split < g->kblocks ? first + g->per_split : g->kblocks;
  for (int64_t kb = first; kb < last; kb++) {
    int64_t j0 = kb * BWD_BK, n = d->S - j0 < BWD_BK ? d->S - j0 : BWD_BK;
    memset(dk, 0, (size_t)(n * d->D) * sizeof *dk);
    memset(dv, 0, (size_t)(n * d->Dv) * sizeof *dv);
    /* Under the causal mask only queries i >= j0 see the block. */
    int64_t start = g->causal ? j0 / BWD_BQ * BWD_BQ : 0;
    if (start > d->L)
      start = d->L;
    for (int64_t h = hk * g->group; h < (hk + 1) * g->group; h++) {
      if (g->has_dmask)
        zero_dmask(g, mask_row, b, h, start, j0, n);
      for (int64_t i0 = start; i0 < d->L; i0 += BWD_BQ) {
        int64_t rows = d->L - i0 < BWD_BQ ? d->L - i0 : BWD_BQ;
        pair(g, s, dp, mask_row, dk, dv, b, h, hk, split, i0, rows, j0, n);
      }
    }
    for (int64_t r = 0; r < n; r++) {
      att_store(dk + r * d->D, g->scale, d->D, att_row(&g->dk, b, hk, j0 + r), g->dk.dtype,
                g->dk.sc);
      att_store(dv + r * d->Dv, 1.0f, d->Dv, att_row(&g->dv, b, hk, j0 + r), g->dv.dtype,
                g->dv.sc);
    }
  }
}

/* ---- 3. grad_q ---- */

static void dq_rows(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  const bwd *g = ctx;
  const att_dims *d = &g->d;
  int64_t stride = d->B * d->Hq * d->L * d->D;
  for (int64_t r = begin; r < end; r++) {
    float *acc = g->dq_acc + r * d->D;
    for (int64_t split = 1; split < g->splits; split++)
      for (int64_t c = 0; c < d->D; c++)
        acc[c] += acc[split * stride + c];
    int64_t i = r % d->L, h = r / d->L % d->Hq, b = r / d->L / d->Hq;
    att_store(acc, g->scale, d->D, att_row(&g->dq, b, h, i), g->dq.dtype, g->dq.sc);
  }
}

/* ---- the kernel ---- */

static tpu_status check_outputs(const tpu_op_call *call, const att_dims *d, const char *op) {
  const tpu_tensor *t = call->tensors, *o = t + call->n_inputs;
  tpu_dtype dt = t[1].dtype;
  bool ok = att_is(&t[0], dt, 4, d->B, d->Hq, d->L, d->Dv) &&
            att_is(&t[4], dt, 4, d->B, d->Hq, d->L, d->Dv) &&
            att_is(&t[5], TPU_FLOAT32, 3, d->B, d->Hq, d->L, 0) &&
            att_is(&o[0], dt, 4, d->B, d->Hq, d->L, d->D) &&
            att_is(&o[1], dt, 4, d->B, d->Hkv, d->S, d->D) &&
            att_is(&o[2], dt, 4, d->B, d->Hkv, d->S, d->Dv);
  if (call->n_outputs == 4)
    ok = ok && call->n_inputs == 7 && t[6].dtype != TPU_BOOL &&
         att_is(&o[3], t[6].dtype, 4, d->B, d->Hq, d->L, d->S);
  return ok ? TPU_OK : tpu_error(TPU_ERR_VALUE, "%s: bad tensor views", op);
}

/* Runs steps 1 to 3 once the operands are staged. */
static tpu_status run(bwd *g, const tpu_tensor *out, const char *op) {
  const att_dims *d = &g->d;
  int64_t rows = d->B * d->Hq * d->L;
  delta_job dj = {g, {0}};
  att_view ov = att_view_of(out);
  tpu_status st = att_stage(&ov, d->B, d->Hq, d->L, d->Dv, &dj.out, op);
  if (st != TPU_OK)
    return st;
  tpu_parallel_for(rows, d->Dv > 0 ? 32768 / (d->Dv + 1) + 1 : rows, delta_rows, &dj);
  att_unstage(&dj.out);

  int64_t heads = d->B * d->Hkv, threads = tpu_pool_threads();
  g->kblocks = (d->S + BWD_BK - 1) / BWD_BK;
  g->splits = heads >= 2 * threads ? 1 : (2 * threads + heads - 1) / heads;
  if (g->splits > g->kblocks)
    g->splits = g->kblocks > 0 ? g->kblocks : 1;
  while (g->splits > 1 && (double)g->splits * rows * d->D > DQ_PARTIALS_MAX)
    g->splits--;
  g->per_split = (g->kblocks + g->splits - 1) / g->splits;
  g->dq_acc = calloc((size_t)(g->splits * rows * d->D) + 1, sizeof(float));
  if (!g->dq_acc)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
  double work = 2.5 * (double)rows * d->S * (d->D + d->Dv);
  st = att_run_tasks(heads * g->splits, work, task_scratch(d) * sizeof(float), bwd_task, g, op);
  if (st == TPU_OK)
    tpu_parallel_for(rows, d->D > 0 ? 32768 / (d->D + 1) + 1 : rows, dq_rows, g);
  free(g->dq_acc);
  return st;
}

tpu_status tpu_kernel_sdpa_backward(const tpu_op_call *call) {
  static const char *op = "scaled_dot_product_attention_backward";
  if ((call->n_inputs != 6 && call->n_inputs != 7) ||
      (call->n_outputs != 3 && call->n_outputs != 4))
    return tpu_error(TPU_ERR_VALUE, "%s: bad tensor count", op);
  const tpu_tensor *t = call->tensors, *o = t + call->n_inputs;
  const tpu_tensor *mask = call->n_inputs == 7 ? &t[6] : NULL;
  bwd g = {.blas = tpu_matmul_blas(), .scale = (float)call->scalars[0].f,
           .causal = (call->scalars[1].i & TPU_SDPA_CAUSAL) != 0, .has_mask = mask != NULL,
           .has_dmask = call->n_outputs == 4};
  tpu_status st = att_check_inputs(&t[1], &t[2], &t[3], mask, &g.d, op);
  if (st != TPU_OK || (st = check_outputs(call, &g.d, op)) != TPU_OK)
    return st;
  const att_dims *d = &g.d;
  if (d->B * d->Hq == 0)
    return TPU_OK;
  g.group = d->Hq / d->Hkv;
  g.lse = att_view_of(&t[5]);
  g.dq = att_view_of(&o[0]);
  g.dk = att_view_of(&o[1]);
  g.dv = att_view_of(&o[2]);
  if (mask)
    g.mask = att_view_of(mask);
  if (g.has_dmask)
    g.dmask = att_view_of(&o[3]);
  g.delta = malloc((size_t)(d->B * d->Hq * d->L + 1) * sizeof(float));
  if (!g.delta)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
  att_view go = att_view_of(&t[0]), q = att_view_of(&t[1]), k = att_view_of(&t[2]),
           v = att_view_of(&t[3]);
  if ((st = att_stage(&go, d->B, d->Hq, d->L, d->Dv, &g.dout, op)) == TPU_OK &&
      (st = att_stage(&q, d->B, d->Hq, d->L, d->D, &g.q, op)) == TPU_OK &&
      (st = att_stage(&k, d->B, d->Hkv, d->S, d->D, &g.k, op)) == TPU_OK &&
      (st = att_stage(&v, d->B, d->Hkv, d->S, d->Dv, &g.v, op)) == TPU_OK)
    st = run(&g, &t[4], op);
  att_unstage(&g.dout);
  att_unstage(&g.q);
  att_unstage(&g.k);
  att_unstage(&g.v);
  free(g.delta);
  return st;
}
