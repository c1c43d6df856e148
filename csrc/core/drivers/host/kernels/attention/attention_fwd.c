/* SDPA forward (call layout in ops/tpu_ops_attention.h): flash attention on the host. A task is one
 * block of FWD_BQ query rows of one head; it walks the visible keys FWD_BK at a time:
 *   s = q_blk k_blkᵀ (GEMM), s = s * scale + mask, cut at the causal diagonal;
 *   online softmax: running row max m and sum l, the output accumulator rescaled by
 *   exp(m_old - m_new) whenever the max grows;
 *   o += exp(s - m) v_blk (GEMM).
 * At the end out = o / l and logsumexp = m + log l, as PyTorch CPU's flash attention computes
 * them (and, like it, 0 for both on rows that see no key). Under the causal flag the key walk
 * stops at the block's last row, so blocks above the diagonal cost nothing.
 *
 * Operands are read as float32 rows (attention.h's staging: float32 tensors with
 * unit column stride in place, anything else converted once). */
#include <math.h>
#include <string.h>

#include "drivers/host/kernels/attention/attention.h"
#include "drivers/host/kernels/kernels.h"

/* Query rows per task and keys per step: the score tile (64 KiB) and the accumulator stay in L2,
 * and the GEMMs are large enough for the BLAS's kernels. */
#define FWD_BQ 64
#define FWD_BK 256

typedef struct fwd {
  const tpu_blas *blas;
  att_dims d;
  int64_t group, qblocks;
  float scale;
  bool causal, has_mask;
  att_f32 q, k, v;
  att_view mask, out, lse;
} fwd;

/* One row of the score tile (n keys; add is its mask, limit its causal cut): scaled, masked, its
 * exp taken in place and folded into the row's running max, sum and output accumulator. */
static void online_softmax_row(const fwd *f, float *sr, int64_t n, const float *add,
                               int64_t limit, float *o, float *mx, float *sum) {
  float m_new = att_scale_mask_max(sr, add, n, limit, f->scale);
  m_new = *mx > m_new ? *mx : m_new;
  if (m_new == -INFINITY) {
    memset(sr, 0, (size_t)n * sizeof *sr); /* nothing visible yet: no weight, no rescale */
    return;
  }
  float alpha = att_exp(*mx - m_new);
  *sum = *sum * alpha + att_exp_sum(sr, n, limit, m_new);
  if (alpha != 1.0f)
    for (int64_t c = 0; c < f->d.Dv; c++)
      o[c] *= alpha;
  *mx = m_new;
}

static void fwd_task(int64_t task, float *scratch, void *ctx) {
  const fwd *f = ctx;
  const att_dims *d = &f->d;
  int64_t qb = task % f->qblocks, bh = task / f->qblocks;
  int64_t h = bh % d->Hq, b = bh / d->Hq, hk = h / f->group;
  int64_t i0 = qb * FWD_BQ, rows = d->L - i0 < FWD_BQ ? d->L - i0 : FWD_BQ;
  float *s = scratch, *o = s + FWD_BQ * FWD_BK, *mx = o + FWD_BQ * d->Dv, *sum = mx + FWD_BQ;
  float *mask_row = sum + FWD_BQ;
  for (int64_t r = 0; r < rows; r++) {
    mx[r] = -INFINITY;
    sum[r] = 0.0f;
  }
  memset(o, 0, (size_t)(rows * d->Dv) * sizeof *o);

  int64_t keys = f->causal && i0 + rows < d->S ? i0 + rows : d->S;
  const float *q = att_f32_row(&f->q, b, h, i0);
  for (int64_t j0 = 0; j0 < keys; j0 += FWD_BK) {
    int64_t n = keys - j0 < FWD_BK ? keys - j0 : FWD_BK;
    att_gemm(f->blas, false, true, rows, n, d->D, 1.0f, q, f->q.ld,
             att_f32_row(&f->k, b, hk, j0), f->k.ld, 0.0f, s, n);
    for (int64_t r = 0; r < rows; r++) {
      const float *add =
          f->has_mask ? att_mask_row(&f->mask, b, h, i0 + r, j0, n, mask_row) : NULL;
      int64_t limit = f->causal ? i0 + r + 1 - j0 : n;
      online_softmax_row(f, s + r * n, n, add, limit, o + r * d->Dv, &mx[r], &sum[r]);
    }
    att_gemm(f->blas, false, false, rows, d->Dv, n, 1.0f, s, n, att_f32_row(&f->v, b, hk, j0),
             f->v.ld, 1.0f, o, d->Dv);
  }

  for (int64_t r = 0; r < rows; r++) {
    bool seen = mx[r] != -INFINITY;
    float *lse = (float *)att_row(&f->lse, b, h, i0 + r);
    *lse = seen ? mx[r] + logf(sum[r]) : 0.0f;
    att_store(o + r * d->Dv, seen ? 1.0f / sum[r] : 0.0f, d->Dv, att_row(&f->out, b, h, i0 + r),
              f->out.dtype, f->out.sc);
  }
}

tpu_status tpu_kernel_sdpa(const tpu_op_call *call) {
  static const char *op = "scaled_dot_product_attention";
  if ((call->n_inputs != 3 && call->n_inputs != 4) || call->n_outputs != 2)
    return tpu_error(TPU_ERR_VALUE, "%s: expects q, k, v[, mask] and 2 outputs", op);
  const tpu_tensor *t = call->tensors, *mask = call->n_inputs == 4 ? &t[3] : NULL;
  const tpu_tensor *out = &t[call->n_inputs], *lse = out + 1;
  fwd f = {.blas = tpu_matmul_blas(), .scale = (float)call->scalars[0].f,
           .causal = (call->scalars[1].i & TPU_SDPA_CAUSAL) != 0, .has_mask = mask != NULL};
  tpu_status st = att_check_inputs(&t[0], &t[1], &t[2], mask, &f.d, op);
  if (st != TPU_OK)
    return st;
  const att_dims *d = &f.d;
  if (!att_is(out, t[0].dtype, 4, d->B, d->Hq, d->L, d->Dv) ||
      !att_is(lse, TPU_FLOAT32, 3, d->B, d->Hq, d->L, 0))
    return tpu_error(TPU_ERR_VALUE, "%s: bad output views", op);
  if (d->B == 0 || d->Hq == 0 || d->L == 0)
    return TPU_OK;
  f.group = d->Hq / d->Hkv;
  f.qblocks = (d->L + FWD_BQ - 1) / FWD_BQ;
  f.out = att_view_of(out);
  f.lse = att_view_of(lse);
  if (mask)
    f.mask = att_view_of(mask);
  att_view q = att_view_of(&t[0]), k = att_view_of(&t[1]), v = att_view_of(&t[2]);
  if ((st = att_stage(&q, d->B, d->Hq, d->L, d->D, &f.q, op)) == TPU_OK &&
      (st = att_stage(&k, d->B, d->Hkv, d->S, d->D, &f.k, op)) == TPU_OK &&
      (st = att_stage(&v, d->B, d->Hkv, d->S, d->Dv, &f.v, op)) == TPU_OK) {
    size_t scratch = (size_t)(FWD_BQ * FWD_BK + FWD_BQ * d->Dv + 2 * FWD_BQ + FWD_BK);
    double work = (double)d->B * d->Hq * d->L * d->S * (d->D + d->Dv);
    st = att_run_tasks(d->B * d->Hq * f.qblocks, work, scratch * sizeof(float), fwd_task, &f,
                       op);
  }
  att_unstage(&f.q);
  att_unstage(&f.k);
  att_unstage(&f.v);
  return st;
}
