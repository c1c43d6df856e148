/* fp32 x @ W^T for few rows on AVX2 CPUs, without packing: a recurrent layer's step (16 x 256
 * times a 1024 x 256 weight) or a linear layer at a small batch. A BLAS packs all of W on every
 * call, as much memory traffic as the multiply itself at so few rows; here the micro-kernel reads
 * W's rows where they lie and takes dot products along k, 4 rows of x by 3 rows of W in 12
 * accumulators, and the few rows of x stay in cache while W passes once. The threads claim items of
 * (output batch, 24 columns). With more rows, or B stored as [k][n], packing pays and the BLAS
 * (or the AVX-512 kernel) is faster.
 *
 * Every output element is one micro-kernel's sum over all of K in k order, so results do not
 * depend on the thread count. Only this file uses AVX2 here, behind the target attribute;
 * tpu_gemm_small_f32 checks the CPU at run time. */
#include <stdatomic.h>

#include "drivers/host/kernels/matmul/matmul.h"
#include "drivers/host/kernels/matmul/matmul_internal.h"
#include "drivers/host/engine/engine_pool.h"

#define MR 4  /* rows of x per micro-kernel call */
#define NW 24 /* output columns per item: eight micro-kernel calls of three W rows */

/* The most rows of x: beyond, the BLAS's packing of W pays for itself. */
#define SMALL_MAX_ROWS 16

/* The longest K: the rows of x (SMALL_MAX_ROWS x K floats, 256 KiB) stay in L2 while W passes. */
#define SMALL_MAX_K 4096

static atomic_bool disabled;

void tpu_matmul_disable_small_f32_kernel(bool disable) { atomic_store(&disabled, disable); }

bool tpu_matmul_has_small_f32_kernel(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  return !atomic_load(&disabled) && __builtin_cpu_supports("avx2") &&
         __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma")))
#define INLINE_AVX2 __attribute__((target("avx2,fma"), always_inline)) static inline

/* Where a micro-kernel writes its rows: out rows ldo apart; C (NULL: none) rows ldc apart, 0 for
 * a bias row; out = alpha * acc + beta * C. */
typedef struct tile_dst {
  float *out;
  const float *c;
  int64_t ldo, ldc;
  float alpha, beta;
} tile_dst;

/* Lanes [0, n) of a vector, n in [0, 8]. */
INLINE_AVX2 __m256i lanes(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* The sums of x, y and z's lanes in lanes 0, 1, 2 (lane 3 repeats z's). */
INLINE_AVX2 __m128 sum3(__m256 x, __m256 y, __m256 z) {
  __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(x, y), _mm256_hadd_ps(z, z));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

/* Three rows of W from `w` (ldw apart), the missing ones (past `cols`) repeating the last. */
typedef struct w_rows {
  const float *r0, *r1, *r2;
} w_rows;

INLINE_AVX2 w_rows rows_of(const float *w, int64_t ldw, int64_t cols) {
  w_rows r = {w, cols > 1 ? w + ldw : w, w};
  r.r2 = cols > 2 ? w + 2 * ldw : r.r1;
  return r;
}

/* out[r][q] = alpha * (x[r][0..k) . W[q][0..k)) (+ beta * C[r][q]) for ROWS rows of x (lda
 * apart) and the `cols` (<= 3) W rows at w, ldw apart. With PREFETCH, it also asks for the rows
 * `next` into L1: W streams from L3 once per product, and without it the hardware prefetcher
 * leaves the first pass over each group of rows waiting on memory. ROWS and PREFETCH are
 * constants in every call, so the accumulators stay in registers. */
INLINE_AVX2 void micro(int ROWS, bool PREFETCH, int64_t k, const float *a, int64_t lda,
                       const float *w, int64_t ldw, int64_t cols, w_rows next,
                       const tile_dst *d) {
  /* Missing W rows repeat the last one; their lanes are not stored. */
  w_rows rw = rows_of(w, ldw, cols);
  const float *w0 = rw.r0, *w1 = rw.r1, *w2 = rw.r2;
  __m256 c[MR][3];
#pragma GCC unroll 4
  for (int r = 0; r < MR; r++)
    c[r][0] = c[r][1] = c[r][2] = _mm256_setzero_ps();
  int64_t p = 0;
  for (; p + 8 <= k; p += 8) {
    if (PREFETCH) {
      _mm_prefetch((const char *)(next.r0 + p), _MM_HINT_T0);
      _mm_prefetch((const char *)(next.r1 + p), _MM_HINT_T0);
      _mm_prefetch((const char *)(next.r2 + p), _MM_HINT_T0);
    }
    __m256 x0 = _mm256_loadu_ps(w0 + p), x1 = _mm256_loadu_ps(w1 + p), x2 = _mm256_loadu_ps(w2 + p);
#pragma GCC unroll 4
    for (int r = 0; r < MR; r++)
      if (r < ROWS) {
        __m256 av = _mm256_loadu_ps(a + r * lda + p);
        c[r][0] = _mm256_fmadd_ps(av, x0, c[r][0]);
        c[r][1] = _mm256_fmadd_ps(av, x1, c[r][1]);
        c[r][2] = _mm256_fmadd_ps(av, x2, c[r][2]);
      }
  }
  if (p < k) {
    __m256i m = lanes(k - p);
    __m256 x0 = _mm256_maskload_ps(w0 + p, m), x1 = _mm256_maskload_ps(w1 + p, m);
    __m256 x2 = _mm256_maskload_ps(w2 + p, m);
#pragma GCC unroll 4
    for (int r = 0; r < MR; r++)
      if (r < ROWS) {
        __m256 av = _mm256_maskload_ps(a + r * lda + p, m);
        c[r][0] = _mm256_fmadd_ps(av, x0, c[r][0]);
        c[r][1] = _mm256_fmadd_ps(av, x1, c[r][1]);
        c[r][2] = _mm256_fmadd_ps(av, x2, c[r][2]);
      }
  }
  __m128i mask = _mm256_castsi256_si128(lanes(cols));
#pragma GCC unroll 4
  for (int r = 0; r < MR; r++)
    if (r < ROWS) {
      __m128 v = _mm_mul_ps(sum3(c[r][0], c[r][1], c[r][2]), _mm_set1_ps(d->alpha));
      if (d->c)
        v = _mm_fmadd_ps(_mm_set1_ps(d->beta), _mm_maskload_ps(d->c + r * d->ldc, mask), v);
      _mm_maskstore_ps(d->out + r * d->ldo, mask, v);
    }
}

/* All rows by columns [n0, n1) of output batch bo. */
AVX2 static void run_block(const gemm_job *j, int64_t bo, int64_t n0, int64_t n1) {
  const float *a = (const float *)j->a.data + bo * j->a.bs;
  const float *w = (const float *)j->b.data + bo * j->b.bs;
  int64_t ldw = j->b.cs;
  tile_dst d = {.alpha = (float)j->alpha.f, .beta = (float)j->beta.f, .ldo = j->out.rs,
                .ldc = j->c.rs};
  for (int64_t col = n0; col < n1; col += 3) {
    int64_t cols = n1 - col < 3 ? n1 - col : 3;
    /* The next group's rows (this group's at the end), fetched during the first row block. */
    int64_t after = col + 3 < n1 ? col + 3 : col;
    w_rows next = rows_of(w + after * ldw, ldw, n1 - after < 3 ? n1 - after : 3);
    for (int64_t i = 0; i < j->m; i += MR) {
      d.out = (float *)j->out.data + bo * j->out.bs + i * j->out.rs + col;
      d.c = j->has_c ? (const float *)j->c.data + bo * j->c.bs + i * j->c.rs + col : NULL;
      const float *ai = a + i * j->a.rs, *wc = w + col * ldw;
      int64_t rows = j->m - i < MR ? j->m - i : MR;
#define MICRO(R)                                                                                   \
  (i == 0 ? micro(R, true, j->k, ai, j->a.rs, wc, ldw, cols, next, &d)                             \
          : micro(R, false, j->k, ai, j->a.rs, wc, ldw, cols, next, &d))
      switch (rows) {
      case 1: MICRO(1); break;
      case 2: MICRO(2); break;
      case 3: MICRO(3); break;
      default: MICRO(4); break;
      }
#undef MICRO
    }
  }
}

typedef struct small_job {
  const gemm_job *j;
  gemm_items it;
} small_job;

static void run_items(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)begin, (void)end, (void)chunk;
  small_job *q = ctx;
  int64_t bo, ic, s0, s1;
  while (tpu_gemm_items_claim(&q->it, &bo, &ic, &s0, &s1))
    run_block(q->j, bo, s0 * NW, s1 * NW < q->j->n ? s1 * NW : q->j->n);
}

bool tpu_gemm_small_f32(const gemm_job *j) {
  /* x and the output (and C) with unit steps along their rows; W^T's k along memory (any step
   * when K is 1). */
  bool layout = j->a.cs == 1 && (j->b.rs == 1 || j->k == 1) && j->out.cs == 1 &&
                (!j->has_c || j->c.cs == 1);
  if (!tpu_matmul_has_small_f32_kernel() || j->sum_batches || !layout || j->m > SMALL_MAX_ROWS ||
      j->k > SMALL_MAX_K)
    return false;
  small_job q = {.j = j};
  /* Items of all rows (one block of SMALL_MAX_ROWS) by groups of 24-column strips. */
  tpu_gemm_items_plan(&q.it, j, SMALL_MAX_ROWS, NW);
  /* One chunk per thread; the chunks share the items. */
  tpu_parallel_for(tpu_gemm_items_threads(&q.it, j), 1, run_items, &q);
  return true;
}

#else

bool tpu_gemm_small_f32(const gemm_job *j) {
  (void)j;
  return false;
}

#endif
