/* The GEMM kernel of the matmul family (call layout in matmul.h). A job is cut into tiles,
 * whole matrices when there are enough batches for the threads, else row or column blocks of each
 * matrix, and the pool runs them. float32 x @ W^T with few rows on AVX2 CPUs (matmul_small_f32.c,
 * tried first, AVX-512 CPUs included), other float32 on AVX-512 CPUs (matmul_f32.c) and bf16 on
 * AVX512-BF16 CPUs (matmul_bf16.c) take kernels of their own that split the job their own way.
 * Otherwise each tile takes one of two paths:
 *   - BLAS: float32/64 and complex. Operands stored row- or column-major (transposes included)
 *     go to the BLAS as they are; other layouts, conjugated operands and outputs that share
 *     memory with an input take the portable path. C is copied into the output first and the
 *     BLAS applies beta, so an in-place addmm reads nothing twice.
 *   - portable: the tile's operands are copied (widened) into contiguous buffers of the
 *     accumulation type, multiplied by the BLAS (float and double) or the built-in loops, and the
 *     epilogue rounds once into the output with alpha, beta and C. */
#include <complex.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/kernels/kernels.h"
#include "drivers/host/kernels/matmul/matmul.h"
#include "drivers/host/kernels/matmul/matmul_internal.h"
#include "drivers/host/engine/engine_iter.h"
#include "drivers/host/engine/engine_pool.h"
#include "drivers/host/engine/engine_simd.h"

/* ---- views ---- */

static gemm_view view_of(const tpu_tensor *t) {
  gemm_view v = {(char *)tpu_tensor_data(t), t->strides[0], t->strides[1], t->strides[2]};
  /* Size-1 dimensions: any stride is valid; pick the one that makes the view look dense. */
  if (t->sizes[0] == 1)
    v.bs = 0;
  if (t->sizes[2] == 1)
    v.cs = 1;
  if (t->sizes[1] == 1)
    v.rs = t->sizes[2] > 1 ? t->sizes[2] : 1;
  return v;
}

/* Byte range [lo, hi) covered by a [batch, rows, cols] view (all sizes > 0). */
static void span(const gemm_view *v, int64_t batch, int64_t rows, int64_t cols, int64_t elsize,
                 char **lo, char **hi) {
  int64_t sizes[3] = {batch, rows, cols}, strides[3] = {v->bs, v->rs, v->cs}, low = 0, high = 0;
  for (int d = 0; d < 3; d++) {
    int64_t reach = (sizes[d] - 1) * strides[d];
    if (reach < 0)
      low += reach;
    else
      high += reach;
  }
  *lo = v->data + low * elsize;
  *hi = v->data + (high + 1) * elsize;
}

static bool overlaps(const gemm_job *j, const gemm_view *v, int64_t rows, int64_t cols) {
  char *lo, *hi, *olo, *ohi;
  span(v, j->batch, rows, cols, j->elsize, &lo, &hi);
  span(&j->out, j->sum_batches ? 1 : j->batch, j->m, j->n, j->elsize, &olo, &ohi);
  return lo < ohi && olo < hi;
}

/* ---- the portable path: widen, multiply, store ---- */

/* Bytes per accumulator element of a dtype. Integers accumulate in unsigned (wrapping) integers
 * at least as wide as the result, which gives the result's bits whatever the order of the sums. */
static int64_t acc_size(tpu_dtype d) {
  switch (d) {
  case TPU_FLOAT32:
  case TPU_BFLOAT16:
  case TPU_FLOAT16:
  case TPU_UINT8:
  case TPU_INT8:
  case TPU_INT16:
  case TPU_INT32:
    return 4;
  case TPU_COMPLEX128:
    return 16;
  default:
    return 8; /* double, complex64 (two floats), int64 */
  }
}

/* Copies rows x cols elements of a strided matrix into a dense row-major buffer of the
 * accumulation type. */
static void widen(tpu_dtype d, const char *src, int64_t rs, int64_t cs, int64_t rows, int64_t cols,
                  bool conjugate, void *dst) {
#define WIDEN(T, A, CONV)                                                                          \
  for (int64_t i = 0; i < rows; i++) {                                                             \
    const T *s = (const T *)src + i * rs;                                                          \
    A *o = (A *)dst + i * cols;                                                                    \
    for (int64_t j = 0; j < cols; j++)                                                             \
      o[j] = CONV(s[j * cs]);                                                                      \
  }                                                                                                \
  break;
#define AS_IS(x) (x)
#define AS_U32(x) ((uint32_t)(int32_t)(x))
#define AS_U64(x) ((uint64_t)(int64_t)(x))
  switch (d) {
  case TPU_FLOAT32: WIDEN(float, float, AS_IS)
  case TPU_BFLOAT16: WIDEN(uint16_t, float, tpu_bf16_to_f32)
  case TPU_FLOAT16: WIDEN(uint16_t, float, tpu_f16_to_f32)
  case TPU_FLOAT64: WIDEN(double, double, AS_IS)
  case TPU_COMPLEX64:
    if (conjugate) {
      WIDEN(float _Complex, float _Complex, conjf)
    }
    WIDEN(float _Complex, float _Complex, AS_IS)
  case TPU_COMPLEX128:
    if (conjugate) {
      WIDEN(double _Complex, double _Complex, conj)
    }
    WIDEN(double _Complex, double _Complex, AS_IS)
  case TPU_UINT8: WIDEN(uint8_t, uint32_t, AS_U32)
  case TPU_INT8: WIDEN(int8_t, uint32_t, AS_U32)
  case TPU_INT16: WIDEN(int16_t, uint32_t, AS_U32)
  case TPU_INT32: WIDEN(int32_t, uint32_t, AS_U32)
  case TPU_INT64: WIDEN(int64_t, uint64_t, AS_U64)
  default: break;
  }
#undef WIDEN
}

/* acc[m x n] += a[m x k] @ b[k x n], all dense row-major: the built-in kernel. Blocks of B (at
 * most BUILTIN_KB x BUILTIN_NB) stay in L2 while every row of A passes over them; the j loop is
 * the vector loop, with clones for AVX-512 (x86-64-v4: vpmullq for int64) and AVX2 picked at run
 * time. */
#define BUILTIN_KB 128
#define BUILTIN_NB 512
#define BUILTIN_GEMM(NAME, T)                                                                      \
  TPU_TARGET_CLONES("arch=x86-64-v4", "avx2", "default") static void NAME(                     \
      int64_t m, int64_t n, int64_t k, const T *restrict a, const T *restrict b,                   \
      T *restrict acc) {                                                                           \
    for (int64_t j0 = 0; j0 < n; j0 += BUILTIN_NB)                                                 \
      for (int64_t p0 = 0; p0 < k; p0 += BUILTIN_KB) {                                             \
        int64_t j1 = j0 + BUILTIN_NB < n ? j0 + BUILTIN_NB : n;                                    \
        int64_t p1 = p0 + BUILTIN_KB < k ? p0 + BUILTIN_KB : k;                                    \
        for (int64_t i = 0; i < m; i++)                                                            \
          for (int64_t p = p0; p < p1; p++) {                                                      \
            T av = a[i * k + p];                                                                   \
            const T *restrict bp = b + p * n;                                                      \
            T *restrict ci = acc + i * n;                                                          \
            for (int64_t j = j0; j < j1; j++)                                                      \
              ci[j] += av * bp[j];                                                                 \
          }                                                                                        \
      }                                                                                            \
  }
BUILTIN_GEMM(gemm_f32, float)
BUILTIN_GEMM(gemm_f64, double)
BUILTIN_GEMM(gemm_c64, float _Complex)
BUILTIN_GEMM(gemm_c128, double _Complex)
BUILTIN_GEMM(gemm_u32, uint32_t)
BUILTIN_GEMM(gemm_u64, uint64_t)

static bool fits_int(int64_t v) { return v <= INT_MAX; }

/* acc += a @ b for dense row-major buffers of the accumulation type. */
static void multiply(const gemm_job *j, const tpu_blas *blas, int64_t m, int64_t n, const void *a,
                     const void *b, void *acc) {
  int64_t k = j->k;
  bool blas_ok = blas && fits_int(m) && fits_int(n) && fits_int(k);
  static const float one_c[2] = {1, 0};
  static const double one_z[2] = {1, 0};
  switch (j->dtype) {
  case TPU_FLOAT32:
  case TPU_BFLOAT16:
  case TPU_FLOAT16:
    if (blas_ok && blas->sgemm)
      blas->sgemm(TPU_CBLAS_ROW_MAJOR, TPU_CBLAS_NO_TRANS, TPU_CBLAS_NO_TRANS, (int)m, (int)n,
                  (int)k, 1.0f, a, (int)k, b, (int)n, 1.0f, acc, (int)n);
    else
      gemm_f32(m, n, k, a, b, acc);
    break;
  case TPU_FLOAT64:
    if (blas_ok && blas->dgemm)
      blas->dgemm(TPU_CBLAS_ROW_MAJOR, TPU_CBLAS_NO_TRANS, TPU_CBLAS_NO_TRANS, (int)m, (int)n,
                  (int)k, 1.0, a, (int)k, b, (int)n, 1.0, acc, (int)n);
    else
      gemm_f64(m, n, k, a, b, acc);
    break;
  case TPU_COMPLEX64:
    if (blas_ok && blas->cgemm)
      blas->cgemm(TPU_CBLAS_ROW_MAJOR, TPU_CBLAS_NO_TRANS, TPU_CBLAS_NO_TRANS, (int)m, (int)n,
                  (int)k, one_c, a, (int)k, b, (int)n, one_c, acc, (int)n);
    else
      gemm_c64(m, n, k, a, b, acc);
    break;
  case TPU_COMPLEX128:
    if (blas_ok && blas->zgemm)
      blas->zgemm(TPU_CBLAS_ROW_MAJOR, TPU_CBLAS_NO_TRANS, TPU_CBLAS_NO_TRANS, (int)m, (int)n,
                  (int)k, one_z, a, (int)k, b, (int)n, one_z, acc, (int)n);
    else
      gemm_c128(m, n, k, a, b, acc);
    break;
  case TPU_INT64:
    gemm_u64(m, n, k, a, b, acc);
    break;
  default:
    gemm_u32(m, n, k, a, b, acc);
    break;
  }
}

static tpu_status portable_tile(const gemm_job *j, const tpu_blas *blas, int64_t bo, int64_t m0,
                                int64_t m1, int64_t n0, int64_t n1) {
  int64_t mt = m1 - m0, nt = n1 - n0, k = j->k, es = acc_size(j->dtype);
  void *acc = calloc((size_t)(mt * nt), (size_t)es);
  void *a = malloc((size_t)(mt * k * es) + 1), *b = malloc((size_t)(k * nt * es) + 1);
  tpu_status st = TPU_OK;
  if (!acc || !a || !b) {
    st = TPU_ERR_OUT_OF_MEMORY;
    goto done;
  }
  int64_t b0 = j->sum_batches ? 0 : bo, b1 = j->sum_batches ? j->batch : bo + 1;
  for (int64_t bi = b0; bi < b1 && k > 0; bi++) {
    widen(j->dtype, j->a.data + (bi * j->a.bs + m0 * j->a.rs) * j->elsize, j->a.rs, j->a.cs, mt,
          k, j->conj_a, a);
    widen(j->dtype, j->b.data + (bi * j->b.bs + n0 * j->b.cs) * j->elsize, j->b.rs, j->b.cs, k,
          nt, j->conj_b, b);
    multiply(j, blas, mt, nt, a, b, acc);
  }
  tpu_gemm_store(j, bo, acc, nt, m0, mt, n0, nt);
done:
  free(acc);
  free(a);
  free(b);
  return st;
}

/* ---- the BLAS path ---- */

/* How a [rows, cols] matrix reaches the BLAS without a copy: row-major (trans == NO_TRANS) or
 * column-major (TRANS, read as the transpose of a row-major matrix). False when neither. */
static bool blas_layout(const gemm_view *v, int64_t rows, int64_t cols, int *trans, int64_t *ld) {
  if (v->cs == 1 && v->rs >= (cols > 1 ? cols : 1) && fits_int(v->rs)) {
    *trans = TPU_CBLAS_NO_TRANS;
    *ld = v->rs;
    return true;
  }
  if (v->rs == 1 && v->cs >= (rows > 1 ? rows : 1) && fits_int(v->cs)) {
    *trans = TPU_CBLAS_TRANS;
    *ld = v->cs;
    return true;
  }
  return false;
}

/* Whether a tile can go straight to the BLAS: the dtype has a BLAS routine, every operand has a
 * BLAS layout, and the output overlaps neither input. Decided once per job. */
typedef struct blas_plan {
  bool direct;
  int ta, tb;
  int64_t lda, ldb, ldo;
  bool out_transposed; /* output column-major: compute out^T = B^T @ A^T */
} blas_plan;

static blas_plan plan_blas(const gemm_job *j, const tpu_blas *blas, bool aliased) {
  blas_plan p = {0};
  if (!blas || aliased || j->conj_a || j->conj_b || j->k == 0 || !fits_int(j->m) ||
      !fits_int(j->n) || !fits_int(j->k))
    return p;
  bool has_routine = (j->dtype == TPU_FLOAT32 && blas->sgemm) ||
                     (j->dtype == TPU_FLOAT64 && blas->dgemm) ||
                     (j->dtype == TPU_COMPLEX64 && blas->cgemm) ||
                     (j->dtype == TPU_COMPLEX128 && blas->zgemm);
  int to;
  if (!has_routine || !blas_layout(&j->a, j->m, j->k, &p.ta, &p.lda) ||
      !blas_layout(&j->b, j->k, j->n, &p.tb, &p.ldb) ||
      !blas_layout(&j->out, j->m, j->n, &to, &p.ldo))
    return p;
  p.out_transposed = to == TPU_CBLAS_TRANS;
  p.direct = true;
  return p;
}

static int flip(int trans) {
  return trans == TPU_CBLAS_TRANS ? TPU_CBLAS_NO_TRANS : TPU_CBLAS_TRANS;
}

/* One BLAS call: out_tile = alpha * a_tile @ b_tile + beta * out_tile. */
static void blas_call(const gemm_job *j, const tpu_blas *blas, const blas_plan *p, int64_t mt,
                      int64_t nt, const char *a, const char *b, char *out, bool accumulate) {
  int m = (int)mt, n = (int)nt, k = (int)j->k, ta = p->ta, tb = p->tb, lda = (int)p->lda,
      ldb = (int)p->ldb, ldo = (int)p->ldo;
  if (p->out_transposed) {
    /* out^T (n x m, row-major) = B^T @ A^T: swap the operands and flip their transposes. */
    const char *t = a;
    a = b;
    b = t;
    int ti = m;
    m = n;
    n = ti;
    ti = ta;
    ta = flip(tb);
    tb = flip(ti);
    ti = lda;
    lda = ldb;
    ldb = ti;
  }
  double beta = accumulate ? 1.0 : (j->has_c ? j->beta.f : 0.0);
  double beta_im = accumulate || !j->has_c ? 0.0 : j->beta_im.f;
  switch (j->dtype) {
  case TPU_FLOAT32:
    blas->sgemm(TPU_CBLAS_ROW_MAJOR, ta, tb, m, n, k, (float)j->alpha.f, (const float *)a, lda,
                (const float *)b, ldb, (float)beta, (float *)out, ldo);
    break;
  case TPU_FLOAT64:
    blas->dgemm(TPU_CBLAS_ROW_MAJOR, ta, tb, m, n, k, j->alpha.f, (const double *)a, lda,
                (const double *)b, ldb, beta, (double *)out, ldo);
    break;
  case TPU_COMPLEX64: {
    float al[2] = {(float)j->alpha.f, (float)j->alpha_im.f}, be[2] = {(float)beta, (float)beta_im};
    blas->cgemm(TPU_CBLAS_ROW_MAJOR, ta, tb, m, n, k, al, a, lda, b, ldb, be, out, ldo);
    break;
  }
  default: {
    double al[2] = {j->alpha.f, j->alpha_im.f}, be[2] = {beta, beta_im};
    blas->zgemm(TPU_CBLAS_ROW_MAJOR, ta, tb, m, n, k, al, a, lda, b, ldb, be, out, ldo);
    break;
  }
  }
}

/* Copies C's tile into the output's (same dtype), so the BLAS can apply beta in place. */
static void copy_c(const gemm_job *j, int64_t bo, int64_t m0, int64_t mt, int64_t n0, int64_t nt) {
  const gemm_view *c = &j->c, *o = &j->out;
  int64_t es = j->elsize;
  const char *src = c->data + (bo * c->bs + m0 * c->rs + n0 * c->cs) * es;
  char *dst = o->data + (bo * o->bs + m0 * o->rs + n0 * o->cs) * es;
  if (src == dst && c->rs == o->rs && c->cs == o->cs)
    return; /* in place */
  for (int64_t i = 0; i < mt; i++) {
    char *d = dst + i * o->rs * es;
    const char *s = src + i * c->rs * es;
    if (c->cs == 1 && o->cs == 1) { /* dense rows, e.g. a bias broadcast over the rows */
      memcpy(d, s, (size_t)(nt * es));
      continue;
    }
    for (int64_t jj = 0; jj < nt; jj++)
      memcpy(d + jj * o->cs * es, s + jj * c->cs * es, (size_t)es);
  }
}

static void blas_tile(const gemm_job *j, const tpu_blas *blas, const blas_plan *p, int64_t bo,
                      int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  int64_t es = j->elsize, mt = m1 - m0, nt = n1 - n0;
  if (j->has_c)
    copy_c(j, bo, m0, mt, n0, nt);
  char *out = j->out.data + (bo * j->out.bs + m0 * j->out.rs + n0 * j->out.cs) * es;
  int64_t b0 = j->sum_batches ? 0 : bo, b1 = j->sum_batches ? j->batch : bo + 1;
  for (int64_t bi = b0; bi < b1; bi++)
    blas_call(j, blas, p, mt, nt, j->a.data + (bi * j->a.bs + m0 * j->a.rs) * es,
              j->b.data + (bi * j->b.bs + n0 * j->b.cs) * es, out, bi > b0);
}

/* ---- splitting and the kernel ---- */

typedef struct gemm_split {
  const gemm_job *job;
  const tpu_blas *blas;
  blas_plan plan;
  int64_t tiles_m, tiles_n, tm, tn; /* tiles per matrix and their sizes */
  const tpu_gemm_epilogue *epilogue; /* or NULL */
  _Atomic tpu_status status;
} gemm_split;

static void run_tiles(int64_t begin, int64_t end, int chunk, void *ctx) {
  gemm_split *s = ctx;
  const gemm_job *j = s->job;
  int64_t per = s->tiles_m * s->tiles_n;
  for (int64_t item = begin; item < end; item++) {
    int64_t bo = item / per, t = item % per;
    int64_t m0 = (t / s->tiles_n) * s->tm, n0 = (t % s->tiles_n) * s->tn;
    int64_t m1 = m0 + s->tm < j->m ? m0 + s->tm : j->m, n1 = n0 + s->tn < j->n ? n0 + s->tn : j->n;
    tpu_status st = TPU_OK;
    if (s->plan.direct)
      blas_tile(j, s->blas, &s->plan, bo, m0, m1, n0, n1);
    else
      st = portable_tile(j, s->blas, bo, m0, m1, n0, n1);
    if (st != TPU_OK) {
      tpu_status ok = TPU_OK;
      atomic_compare_exchange_strong(&s->status, &ok, st);
    } else if (s->epilogue && s->tiles_n == 1) {
      s->epilogue->fn(s->epilogue->ctx, bo, m0, m1, n0, n1, chunk);
    }
  }
}

/* The epilogue over whole rows once every tile is done: for column tiles, whose pieces of rows
 * would each be too short to run well. The same tiles and so the same sums as without an
 * epilogue: every mode computes bit-identical GEMMs. */
static void rows_epilogue(int64_t begin, int64_t end, int chunk, void *ctx) {
  const gemm_split *s = ctx;
  int64_t m = s->job->m;
  for (int64_t r = begin; r < end;) {
    int64_t bo = r / m, r1 = (bo + 1) * m < end ? (bo + 1) * m : end;
    s->epilogue->fn(s->epilogue->ctx, bo, r - bo * m, r1 - bo * m, 0, s->job->n, chunk);
    r = r1;
  }
}

static int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

/* Cuts each matrix into tiles when the batches alone cannot share the threads evenly: BLAS calls
 * on quiet cores take equal times, and fewer tiles pack fewer copies of the operands. */
static void choose_tiles(gemm_split *s) {
  const gemm_job *j = s->job;
  int64_t outputs = j->sum_batches ? 1 : j->batch;
  int threads = tpu_pool_threads();
  double work = (double)j->batch * (double)j->m * (double)j->n * (double)j->k;
  s->tiles_m = s->tiles_n = 1;
  s->tm = j->m;
  s->tn = j->n;
  if (threads == 1 || outputs % threads == 0 || outputs >= 4 * threads ||
      work < TPU_GEMM_SERIAL_WORK)
    return;
  int64_t want = outputs < threads ? (threads + outputs - 1) / outputs : threads;
  /* Split the longer side, in multiples of 16 rows or columns: whole register tiles of the BLAS
   * and whole cache lines of the output. */
  if (j->m >= j->n) {
    s->tm = round_up((j->m + want - 1) / want, 16);
    s->tiles_m = (j->m + s->tm - 1) / s->tm;
  } else {
    s->tn = round_up((j->n + want - 1) / want, 16);
    s->tiles_n = (j->n + s->tn - 1) / s->tn;
  }
}

static bool dims_are(const tpu_tensor *t, int64_t b, int64_t r, int64_t c) {
  return t->ndim == 3 && t->sizes[0] == b && t->sizes[1] == r && t->sizes[2] == c;
}

tpu_status tpu_kernel_gemm(const tpu_op_call *call) { return tpu_kernel_gemm_then(call, NULL); }

tpu_status tpu_kernel_gemm_then(const tpu_op_call *call, const tpu_gemm_epilogue *epilogue) {
  const tpu_tensor *a = &call->tensors[0], *b = &call->tensors[1];
  const tpu_tensor *c = call->n_inputs == 3 ? &call->tensors[2] : NULL;
  const tpu_tensor *out = &call->tensors[call->n_inputs];
  if (call->n_inputs < 2 || call->n_inputs > 3 || call->n_outputs != 1 || a->ndim != 3)
    return tpu_error(TPU_ERR_VALUE, "matmul: expected A, B[, C] and one output, all 3-d");
  int64_t batch = a->sizes[0], m = a->sizes[1], k = a->sizes[2], n = b->sizes[2];
  bool sum = out->ndim == 3 && out->sizes[0] == 1 && batch != 1;
  if (!dims_are(b, batch, k, n) || !dims_are(out, sum ? 1 : batch, m, n) ||
      (c && !dims_are(c, sum ? 1 : batch, m, n)))
    return tpu_error(TPU_ERR_VALUE, "matmul: operand sizes do not form [b, m, k] @ [b, k, n]");
  tpu_dtype d = a->dtype;
  if (b->dtype != d || out->dtype != d || (c && c->dtype != d))
    return tpu_error(TPU_ERR_TYPE, "matmul: operands must share one dtype");
  if (d == TPU_BOOL || !tpu_dtype_is_computable(d))
    return tpu_error(TPU_ERR_TYPE, "matmul: dtype %s is not supported", tpu_dtype_name(d));
  if (m == 0 || n == 0 || (batch == 0 && !sum))
    return TPU_OK;

  bool is_complex = tpu_dtype_is_complex(d), integer = !is_complex && !tpu_dtype_is_floating(d);
  gemm_job j = {
      .dtype = d, .elsize = (int64_t)tpu_dtype_size(d), .batch = batch, .m = m, .n = n, .k = k,
      .sum_batches = sum, .a = view_of(a), .b = view_of(b), .out = view_of(out),
      .alpha = call->scalars[0], .beta = call->scalars[1], .alpha_im = call->scalars[2],
      .beta_im = call->scalars[3],
      .conj_a = is_complex && (call->scalars[4].i & TPU_GEMM_CONJ_A),
      .conj_b = is_complex && (call->scalars[4].i & TPU_GEMM_CONJ_B),
  };
  bool beta_zero = integer ? j.beta.i == 0 : j.beta.f == 0 && (!is_complex || j.beta_im.f == 0);
  j.has_c = c && !beta_zero;
  if (j.has_c)
    j.c = view_of(c);
  if (batch == 0 || k == 0)
    j.k = 0; /* nothing to multiply: out = beta * C (or 0) through the portable path */

  /* An output sharing memory with A or B (an in-place product) is computed by the portable path
   * in one piece: it reads all of its operands before it writes. */
  bool aliased = j.k > 0 && (overlaps(&j, &j.a, m, k) || overlaps(&j, &j.b, k, n));
  gemm_split s = {.job = &j, .blas = tpu_matmul_blas(), .epilogue = epilogue};
  s.plan = plan_blas(&j, s.blas, aliased);
  bool packed = j.k > 0 && !aliased &&
                ((d == TPU_FLOAT32 && (tpu_gemm_small_f32(&j) || tpu_gemm_f32(&j))) ||
                 (d == TPU_BFLOAT16 && tpu_gemm_bf16(&j)));
  if (packed) {
    /* These kernels' items are small blocks: the epilogue runs over whole rows after them. */
    if (epilogue)
      tpu_parallel_for((sum ? 1 : batch) * m, TPU_ITER_GRAIN / n + 1, rows_epilogue, &s);
    return TPU_OK;
  }
  atomic_init(&s.status, TPU_OK);
  choose_tiles(&s);
  int64_t items = (sum ? 1 : batch) * s.tiles_m * s.tiles_n;
  tpu_parallel_for(items, aliased ? items : 1, run_tiles, &s);
  /* The only failure is running out of scratch, maybe on a helper thread: report it here. */
  tpu_status st = atomic_load(&s.status);
  if (st == TPU_OK && epilogue && s.tiles_n > 1)
    tpu_parallel_for((sum ? 1 : batch) * m, TPU_ITER_GRAIN / n + 1, rows_epilogue, &s);
  return st == TPU_OK ? TPU_OK : tpu_error(st, "matmul: cannot allocate host scratch memory");
}
