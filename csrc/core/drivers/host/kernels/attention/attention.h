/* The attention family on the host (ops/tpu_ops_attention.h has the call layout): one fused
 * flash-attention-style kernel each way. Scores never exist as a whole L x S matrix: the forward
 * walks blocks of keys with an online softmax, the backward recomputes each block's probabilities
 * from the saved logsumexp. Private to the attention kernels: operand views, float32 staging, the
 * GEMM and row primitives the forward and backward tiles are made of, and the task runner. */
#ifndef TPU_HOST_KERNELS_ATTENTION_H
#define TPU_HOST_KERNELS_ATTENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/tpu_dtype.h"
#include "base/tpu_status.h"
#include "drivers/host/kernels/matmul/matmul.h"
#include "tensor/tpu_tensor.h"

/* The sizes of a problem: q [B, Hq, L, D], k [B, Hkv, S, D], v [B, Hkv, S, Dv]. */
typedef struct att_dims {
  int64_t B, Hq, Hkv, L, S, D, Dv;
} att_dims;

/* Checks q, k, v and the mask (NULL when none) against the SDPA call layout and reads the
 * sizes. */
tpu_status att_check_inputs(const tpu_tensor *q, const tpu_tensor *k, const tpu_tensor *v,
                            const tpu_tensor *mask, att_dims *d, const char *op);

/* True when t is a tensor of `dtype` with ndim dimensions of the given sizes (the first ndim). */
bool att_is(const tpu_tensor *t, tpu_dtype dtype, int ndim, int64_t s0, int64_t s1, int64_t s2,
            int64_t s3);

/* A [B, H, rows, cols] operand: element (b, h, i, j) at data + (b * sb + h * sh + i * sr + j * sc)
 * elements. A 3-d view (logsumexp) has cols 1. */
typedef struct att_view {
  char *data;
  tpu_dtype dtype;
  int64_t sb, sh, sr, sc;
} att_view;

/* The view of a 4-d (or 3-d) tensor. */
att_view att_view_of(const tpu_tensor *t);

/* Address of element (b, h, i, j). */
static inline char *att_at(const att_view *v, int64_t b, int64_t h, int64_t i, int64_t j) {
  return v->data +
         (b * v->sb + h * v->sh + i * v->sr + j * v->sc) * (int64_t)tpu_dtype_size(v->dtype);
}

/* Address of element (b, h, i, 0). */
static inline char *att_row(const att_view *v, int64_t b, int64_t h, int64_t i) {
  return att_at(v, b, h, i, 0);
}

/* A float32 operand the GEMMs can read: rows of unit column stride, row stride ld. It is the
 * tensor itself when that already qualifies, else a dense copy (owned, freed by att_unstage). */
typedef struct att_f32 {
  float *data;
  int64_t sb, sh, ld;
  float *owned;
} att_f32;

/* Makes the float32 form of a [B, H, rows, cols] view, copying in parallel when needed. */
tpu_status att_stage(const att_view *v, int64_t B, int64_t H, int64_t rows, int64_t cols,
                     att_f32 *out, const char *op);

void att_unstage(att_f32 *f);

/* Row i of head (b, h). */
static inline const float *att_f32_row(const att_f32 *f, int64_t b, int64_t h, int64_t i) {
  return f->data + b * f->sb + h * f->sh + i * f->ld;
}

/* n elements of dtype `dtype` at src (element stride `stride`) as float32 into dst. */
void att_load(const char *src, tpu_dtype dtype, int64_t stride, int64_t n, float *dst);

/* dst[j * stride] = round(src[j] * mul) in dtype `dtype`, for j < n. */
void att_store(const float *src, float mul, int64_t n, char *dst, tpu_dtype dtype, int64_t stride);

/* The additive mask of row (b, h, i), columns [j0, j0 + n), as float32: the mask's own memory
 * when it is float32 with unit stride, else converted into scratch (false of a boolean mask is
 * -inf). */
const float *att_mask_row(const att_view *mask, int64_t b, int64_t h, int64_t i, int64_t j0,
                          int64_t n, float *scratch);

/* c[m x n] = alpha * op(a) @ op(b) + beta * c, float32 row-major; op(x) is x transposed when
 * ta / tb. Through the BLAS when there is one, else built-in loops. beta == 0 never reads c. */
void att_gemm(const tpu_blas *blas, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
              float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
              float *c, int64_t ldc);

/* s[j] = s[j] * scale + add[j] (add may be NULL) for j < limit, -inf from column `limit` on
 * (the causal cut, not scaled); returns the largest s[j]. */
float att_scale_mask_max(float *s, const float *add, int64_t n, int64_t limit, float scale);

/* s[j] = exp(s[j] - m) for j < limit, 0 from there on (past the causal cut, where
 * att_scale_mask_max left -inf); returns the sum. exp(-inf) is 0. */
float att_exp_sum(float *s, int64_t n, int64_t limit, float m);

/* s[j] = exp(s[j] * scale + add[j] - lse) (add may be NULL) for j < limit, 0 from there on:
 * the probabilities of a row, recomputed from its logsumexp. */
void att_probs(float *s, const float *add, int64_t n, int64_t limit, float scale, float lse);

/* exp of one value with the row primitives' precision. */
float att_exp(float x);

/* Runs fn(task, scratch, ctx) for every task in [0, tasks), tasks claimed by the pool's threads
 * one at a time (each writes disjoint outputs, so the order does not change results); each
 * thread gets `scratch_bytes` of 64-byte-aligned scratch. `work` (multiply-adds in all) keeps
 * small problems on one thread. */
typedef void (*att_task_fn)(int64_t task, float *scratch, void *ctx);
tpu_status att_run_tasks(int64_t tasks, double work, size_t scratch_bytes, att_task_fn fn,
                         void *ctx, const char *op);

#endif
