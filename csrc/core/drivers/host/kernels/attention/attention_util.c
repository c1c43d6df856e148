/* The pieces the attention tiles are made of: float32 staging of operands, dtype conversion of
 * rows, mask rows, the tile GEMM, the softmax row primitives, and the task runner.
 *
 * The row loops are written for GCC's vectorizer and cloned per ISA (AVX-512, AVX2, baseline):
 * reductions keep 16 partial lanes, so they vectorize without -ffast-math, and exp is a
 * branch-free Cody-Waite reduction with Cephes' polynomial (about 1 ulp). */
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/kernels/attention/attention.h"
#include "drivers/host/engine/engine_pool.h"
#include "drivers/host/engine/engine_simd.h"

#define CLONES TPU_TARGET_CLONES("arch=x86-64-v4", "avx2", "default")
#define LANES 16

/* Multiply-adds below which a problem runs on one thread. */
#define SERIAL_WORK (1 << 18)

att_view att_view_of(const tpu_tensor *t) {
  att_view v = {(char *)tpu_tensor_data(t), t->dtype, t->strides[0], t->strides[1],
                t->strides[2], t->ndim > 3 ? t->strides[3] : 1};
  return v;
}

bool att_is(const tpu_tensor *t, tpu_dtype dtype, int ndim, int64_t s0, int64_t s1, int64_t s2,
            int64_t s3) {
  const int64_t sizes[4] = {s0, s1, s2, s3};
  if (t->dtype != dtype || t->ndim != ndim)
    return false;
  for (int d = 0; d < ndim; d++)
    if (t->sizes[d] != sizes[d])
      return false;
  return true;
}

static bool computable(tpu_dtype dtype) {
  return dtype == TPU_FLOAT32 || dtype == TPU_BFLOAT16 || dtype == TPU_FLOAT16;
}

tpu_status att_check_inputs(const tpu_tensor *q, const tpu_tensor *k, const tpu_tensor *v,
                            const tpu_tensor *mask, att_dims *d, const char *op) {
  if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4)
    return tpu_error(TPU_ERR_VALUE, "%s: query, key and value must be 4-d", op);
  if (!computable(q->dtype))
    return tpu_error(TPU_ERR_TYPE, "%s: unsupported dtype %s", op, tpu_dtype_name(q->dtype));
  *d = (att_dims){q->sizes[0], q->sizes[1], k->sizes[1], q->sizes[2],
                  k->sizes[2], q->sizes[3], v->sizes[3]};
  if (d->Hkv < 1 || d->Hq % d->Hkv != 0)
    return tpu_error(TPU_ERR_VALUE, "%s: key heads (%lld) must divide query heads (%lld)", op,
                     (long long)d->Hkv, (long long)d->Hq);
  if (!att_is(k, q->dtype, 4, d->B, d->Hkv, d->S, d->D) ||
      !att_is(v, q->dtype, 4, d->B, d->Hkv, d->S, d->Dv))
    return tpu_error(TPU_ERR_VALUE, "%s: key and value do not match the query", op);
  if (mask && !(att_is(mask, mask->dtype, 4, d->B, d->Hq, d->L, d->S) &&
                (mask->dtype == TPU_BOOL || mask->dtype == TPU_FLOAT32 ||
                 mask->dtype == q->dtype)))
    return tpu_error(TPU_ERR_VALUE, "%s: the mask must be a [B, Hq, L, S] view of bool, float32 "
                     "or the query's dtype", op);
  return TPU_OK;
}

/* ---- conversions ---- */

/* float16 to float32 without branches (tpu_f16_to_f32 loops over subnormals): the exponent and
 * mantissa moved into place and rescaled by 2^112 give normals and subnormals alike. */
static inline float f16_to_f32(uint16_t h) {
  uint32_t em = h & 0x7fffu, bits = em << 13;
  float f;
  memcpy(&f, &bits, sizeof f);
  f *= 0x1p112f;
  memcpy(&bits, &f, sizeof bits);
  bits = em >= 0x7c00u ? (0x7f800000u | (em & 0x3ffu) << 13) : bits; /* inf and NaN */
  bits |= (uint32_t)(h & 0x8000u) << 16;
  memcpy(&f, &bits, sizeof f);
  return f;
}

CLONES static void load_dense(const char *src, tpu_dtype dtype, int64_t n, float *restrict dst) {
  const uint16_t *h = (const uint16_t *)src;
  switch (dtype) {
  case TPU_FLOAT32: memcpy(dst, src, (size_t)n * sizeof *dst); break;
  case TPU_BFLOAT16:
    for (int64_t j = 0; j < n; j++)
      dst[j] = tpu_bf16_to_f32(h[j]);
    break;
  case TPU_FLOAT16:
    for (int64_t j = 0; j < n; j++)
      dst[j] = f16_to_f32(h[j]);
    break;
  default: break;
  }
}

void att_load(const char *src, tpu_dtype dtype, int64_t stride, int64_t n, float *dst) {
  if (stride == 1 || n == 1) {
    load_dense(src, dtype, n, dst);
    return;
  }
  const uint16_t *h = (const uint16_t *)src;
  for (int64_t j = 0; j < n; j++) {
    switch (dtype) {
    case TPU_FLOAT32: dst[j] = ((const float *)src)[j * stride]; break;
    case TPU_BFLOAT16: dst[j] = tpu_bf16_to_f32(h[j * stride]); break;
    case TPU_FLOAT16: dst[j] = f16_to_f32(h[j * stride]); break;
    default: break;
    }
  }
}

CLONES void att_store(const float *src, float mul, int64_t n, char *dst, tpu_dtype dtype,
                      int64_t stride) {
  uint16_t *h = (uint16_t *)dst;
  float *f = (float *)dst;
  switch (dtype) {
  case TPU_FLOAT32:
    if (stride == 1) {
      for (int64_t j = 0; j < n; j++)
        f[j] = src[j] * mul;
      break;
    }
    for (int64_t j = 0; j < n; j++)
      f[j * stride] = src[j] * mul;
    break;
  case TPU_BFLOAT16:
    for (int64_t j = 0; j < n; j++)
      h[j * stride] = tpu_f32_to_bf16(src[j] * mul);
    break;
  case TPU_FLOAT16:
    for (int64_t j = 0; j < n; j++)
      h[j * stride] = tpu_f32_to_f16(src[j] * mul);
    break;
  default: break;
  }
}

const float *att_mask_row(const att_view *mask, int64_t b, int64_t h, int64_t i, int64_t j0,
                          int64_t n, float *scratch) {
  const char *row = att_at(mask, b, h, i, j0);
  if (mask->dtype == TPU_FLOAT32 && mask->sc == 1)
    return (const float *)row;
  if (mask->dtype == TPU_BOOL) {
    for (int64_t j = 0; j < n; j++)
      scratch[j] = row[j * mask->sc] ? 0.0f : -INFINITY;
  } else {
    att_load(row, mask->dtype, mask->sc, n, scratch);
  }
  return scratch;
}

/* ---- staging ---- */

typedef struct stage_job {
  const att_view *v;
  int64_t H, rows, cols;
  float *dst;
} stage_job;

static void stage_rows(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  const stage_job *s = ctx;
  for (int64_t r = begin; r < end; r++) {
    int64_t i = r % s->rows, h = r / s->rows % s->H, b = r / s->rows / s->H;
    att_load(att_row(s->v, b, h, i), s->v->dtype, s->v->sc, s->cols, s->dst + r * s->cols);
  }
}

tpu_status att_stage(const att_view *v, int64_t B, int64_t H, int64_t rows, int64_t cols,
                     att_f32 *out, const char *op) {
  memset(out, 0, sizeof *out);
  int64_t ld = rows > 1 ? v->sr : cols;
  if (v->dtype == TPU_FLOAT32 && (v->sc == 1 || cols == 1) && ld >= cols && ld >= 1 &&
      ld <= INT_MAX) {
    *out = (att_f32){(float *)v->data, v->sb, v->sh, ld, NULL};
    return TPU_OK;
  }
  int64_t n = B * H * rows * cols;
  out->owned = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  if (!out->owned)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
  *out = (att_f32){out->owned, H * rows * cols, rows * cols, cols > 0 ? cols : 1, out->owned};
  stage_job s = {v, H, rows, cols, out->owned};
  int64_t grain = cols > 0 ? (32768 + cols - 1) / cols : B * H * rows;
  tpu_parallel_for(B * H * rows, grain > 0 ? grain : 1, stage_rows, &s);
  return TPU_OK;
}

void att_unstage(att_f32 *f) {
  free(f->owned);
  f->owned = NULL;
}

/* ---- the tile GEMM ---- */

/* The built-in GEMM when there is no BLAS: rows of c updated by rows of op(b) (unit stride, so
 * the j loop vectorizes), except a @ bᵀ, which is rows of dot products. */
CLONES static void gemm_builtin(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                                const float *restrict a, int64_t lda, const float *restrict b,
                                int64_t ldb, float beta, float *restrict c, int64_t ldc) {
  for (int64_t i = 0; i < m; i++) {
    float *restrict ci = c + i * ldc;
    for (int64_t j = 0; j < n; j++)
      ci[j] = beta == 0.0f ? 0.0f : ci[j] * beta;
    if (tb && !ta) {
      for (int64_t j = 0; j < n; j++) {
        float lane[LANES] = {0};
        const float *ai = a + i * lda, *bj = b + j * ldb;
        int64_t p = 0;
        for (; p + LANES <= k; p += LANES)
          for (int l = 0; l < LANES; l++)
            lane[l] += ai[p + l] * bj[p + l];
        float dot = 0.0f;
        for (; p < k; p++)
          dot += ai[p] * bj[p];
        for (int l = 0; l < LANES; l++)
          dot += lane[l];
        ci[j] += alpha * dot;
      }
      continue;
    }
    for (int64_t p = 0; p < k; p++) {
      float av = alpha * (ta ? a[p * lda + i] : a[i * lda + p]);
      if (tb) {
        for (int64_t j = 0; j < n; j++)
          ci[j] += av * b[j * ldb + p];
      } else {
        const float *restrict bp = b + p * ldb;
        for (int64_t j = 0; j < n; j++)
          ci[j] += av * bp[j];
      }
    }
  }
}

void att_gemm(const tpu_blas *blas, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
              float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
              float *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  if (blas && k > 0) {
    blas->sgemm(TPU_CBLAS_ROW_MAJOR, ta ? TPU_CBLAS_TRANS : TPU_CBLAS_NO_TRANS,
                tb ? TPU_CBLAS_TRANS : TPU_CBLAS_NO_TRANS, (int)m, (int)n, (int)k, alpha, a,
                (int)lda, b, (int)ldb, beta, c, (int)ldc);
    return;
  }
  gemm_builtin(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* ---- softmax rows ---- */

/* exp's range: ln of the smallest normal float, rounded up, and a bound that keeps 2^r finite. */
#define EXP_LO -87.33f
#define EXP_HI 88.0f

static inline float exp_lane(float x) {
  /* Clamped so that 2^r stays a normal float and the integer conversion stays defined (NaN goes
   * to the low end and is put back at the end). Below the clamp the result is 0 (where exp is
   * denormal); above it inf, which softmax never asks for (its arguments are <= 0). */
  float xc = x > EXP_LO ? x : EXP_LO;
  xc = xc < EXP_HI ? xc : EXP_HI;
  float r = __builtin_rintf(xc * 1.44269504088896341f);
  float f = xc - r * 0.693359375f; /* ln 2 in two parts: r * the first is exact */
  f = f - r * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * f + 1.3981999507e-3f;
  p = p * f + 8.3334519073e-3f;
  p = p * f + 4.1665795894e-2f;
  p = p * f + 1.6666665459e-1f;
  p = p * f + 5.0000001201e-1f;
  p = p * f * f + f + 1.0f;
  uint32_t bits;
  memcpy(&bits, &p, sizeof bits);
  bits += (uint32_t)(int32_t)r << 23;
  memcpy(&p, &bits, sizeof p);
  p = x < EXP_LO ? 0.0f : p;
  p = x > EXP_HI ? INFINITY : p;
  return x != x ? x : p;
}

float att_exp(float x) { return exp_lane(x); }

/* Where the lane loops of a row cut at `end` (of n) stop: `end` rounded up to whole vectors of
 * lanes when the row has them, so a short remainder costs no scalar loop. */
static int64_t lanes_end(int64_t end, int64_t n) {
  int64_t up = (end + LANES - 1) / LANES * LANES;
  return up <= n ? up : end;
}

CLONES float att_scale_mask_max(float *restrict s, const float *restrict add, int64_t n,
                                int64_t limit, float scale) {
  int64_t end = limit < 0 ? 0 : limit < n ? limit : n;
  if (add) {
    for (int64_t j = 0; j < end; j++)
      s[j] = s[j] * scale + add[j];
  } else {
    for (int64_t j = 0; j < end; j++)
      s[j] = s[j] * scale;
  }
  for (int64_t j = end; j < n; j++)
    s[j] = -INFINITY;
  /* The -inf past the cut leave the max as it is: the lanes run on up to a whole vector there. */
  int64_t stop = lanes_end(end, n);
  float lane[LANES];
  for (int l = 0; l < LANES; l++)
    lane[l] = -INFINITY;
  int64_t j = 0;
  for (; j + LANES <= stop; j += LANES)
    for (int l = 0; l < LANES; l++)
      lane[l] = lane[l] > s[j + l] ? lane[l] : s[j + l];
  for (int half = LANES / 2; half > 0; half /= 2)
    for (int l = 0; l < half; l++)
      lane[l] = lane[l] > lane[l + half] ? lane[l] : lane[l + half];
  float m = lane[0];
  for (; j < stop; j++)
    m = m > s[j] ? m : s[j];
  return m;
}

CLONES void att_probs(float *restrict s, const float *restrict add, int64_t n, int64_t limit,
                      float scale, float lse) {
  int64_t end = limit < 0 ? 0 : limit < n ? limit : n;
  if (add) {
    for (int64_t j = 0; j < end; j++)
      s[j] = exp_lane(s[j] * scale + add[j] - lse);
  } else {
    for (int64_t j = 0; j < end; j++)
      s[j] = exp_lane(s[j] * scale - lse);
  }
  for (int64_t j = end; j < n; j++)
    s[j] = 0.0f;
}

CLONES float att_exp_sum(float *restrict s, int64_t n, int64_t limit, float m) {
  int64_t end = limit < 0 ? 0 : limit < n ? limit : n, stop = lanes_end(end, n);
  float lane[LANES] = {0};
  int64_t j = 0;
  for (; j + LANES <= stop; j += LANES) /* exp(-inf) is 0 past the cut */
    for (int l = 0; l < LANES; l++) {
      float y = exp_lane(s[j + l] - m);
      s[j + l] = y;
      lane[l] += y;
    }
  for (int half = LANES / 2; half > 0; half /= 2)
    for (int l = 0; l < half; l++)
      lane[l] += lane[l + half];
  float sum = lane[0];
  for (; j < stop; j++) {
    s[j] = exp_lane(s[j] - m);
    sum += s[j];
  }
  for (; j < n; j++)
    s[j] = 0.0f;
  return sum;
}

/* ---- tasks ---- */

typedef struct runner {
  atomic_llong next;
  int64_t tasks;
  size_t scratch_bytes;
  att_task_fn fn;
  void *ctx;
} runner;

static void run_worker(int64_t begin, int64_t end, int chunk, void *p) {
  (void)begin, (void)end, (void)chunk;
  runner *r = p;
  float *scratch = aligned_alloc(64, (r->scratch_bytes + 63) / 64 * 64 + 64);
  if (!scratch)
    return; /* the other workers take the tasks; att_run_tasks checks that someone did */
  for (int64_t t; (t = atomic_fetch_add(&r->next, 1)) < r->tasks;)
    r->fn(t, scratch, r->ctx);
  free(scratch);
}

tpu_status att_run_tasks(int64_t tasks, double work, size_t scratch_bytes, att_task_fn fn,
                         void *ctx, const char *op) {
  runner r = {.tasks = tasks, .scratch_bytes = scratch_bytes, .fn = fn, .ctx = ctx};
  atomic_init(&r.next, 0);
  int64_t workers = tpu_pool_threads();
  if (workers > tasks)
    workers = tasks;
  if (work < SERIAL_WORK)
    workers = 1;
  if (workers > 0)
    tpu_parallel_for(workers, 1, run_worker, &r);
  if (atomic_load(&r.next) < tasks)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
  return TPU_OK;
}
