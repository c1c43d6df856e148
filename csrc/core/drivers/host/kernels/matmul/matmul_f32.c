/* fp32 GEMM with AVX-512 FMA, for the sizes models run (K and N of a few hundred), where
 * OpenBLAS's kernels, which pack and split each call for large matrices, leave much of the FMA
 * units idle. B is packed once, by all threads, into strips of NR columns, [k][NR]; then the
 * threads claim blocks of MC rows (and, with few rows, groups of strips), packing A one KC block at
 * a time into strips of MR rows, [k][MR]. The micro-kernel keeps an MR x NR tile in 24 of the 32
 * zmm registers, broadcasting one element of A against two zmm of B per row. K beyond one KC
 * block (or summed batches) accumulates in a per-thread fp32 workspace; the last block writes an
 * output with unit column stride directly, adding C (a matrix or a bias row), else goes through
 * the common epilogue.
 *
 * Every output element is summed by one micro-kernel call per K block, in k order, so results do
 * not depend on the thread count or on which thread runs what. Only this file uses AVX-512, behind
 * the target attribute; tpu_gemm_f32 checks the CPU at run time. */
#include <stdatomic.h>
#include <stdlib.h>

#include "drivers/host/kernels/matmul/matmul.h"
#include "drivers/host/kernels/matmul/matmul_internal.h"
#include "drivers/host/engine/engine_pool.h"

#define MR 12
#define NR 32
#define KC 128 /* k per block: the B micro-panel (KC x NR, 16 KiB) and the A strip stay in L1 */
#define MC 48  /* rows per item (an A block, MC x KC floats in L2): few, so threads end together */

/* Multiply-adds below which OpenBLAS is as fast or faster: packing both operands and the second
 * pass over the pool cost more than they save. */
#define TPU_GEMM_F32_MIN_WORK (1 << 22)

/* The most elements of B (per batch) this kernel takes: it packs all of B before it starts, which
 * stays in cache up to here; beyond, OpenBLAS's blocking, which packs B a cache-sized panel at a
 * time, is faster. */
#define TPU_GEMM_F32_MAX_B (1 << 20)

/* Atomic: set from Python's thread while the stream worker reads it. */
static atomic_bool disabled;

void tpu_matmul_disable_f32_kernel(bool disable) { atomic_store(&disabled, disable); }

bool tpu_matmul_has_f32_kernel(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  return !atomic_load(&disabled) && __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,fma")))

/* The low (or high) 64-bit halves of each 128-bit lane of a and b, interleaved. */
AVX512 static inline __m512 unpack64(__m512 a, __m512 b, bool high) {
  __m512d x = _mm512_castps_pd(a), y = _mm512_castps_pd(b);
  return _mm512_castpd_ps(high ? _mm512_unpackhi_pd(x, y) : _mm512_unpacklo_pd(x, y));
}

/* dst[t][0..w) = rows [0, w) of a 16 x 16 block held as 16 row vectors, transposed: dst row t gets
 * element t of every row. w <= 16 lanes are stored per output row, `steps` output rows. */
AVX512 static inline void transpose_store(__m512 r[16], float *dst, int64_t ld, int w,
                                          int64_t steps) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = unpack64(t[i], t[i + 2], false);
    r[i + 1] = unpack64(t[i], t[i + 2], true);
    r[i + 2] = unpack64(t[i + 1], t[i + 3], false);
    r[i + 3] = unpack64(t[i + 1], t[i + 3], true);
  }
  /* Each 128-bit lane now holds four elements of one column: two rounds of 128-bit shuffles
   * bring a column's four lanes together. */
  for (int i = 0; i < 4; i++) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
    t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
  }
  __mmask16 m = (__mmask16)((1u << w) - 1);
  for (int i = 0; i < 4; i++) {
    __m512 lo0 = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    __m512 lo1 = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
    __m512 hi0 = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    __m512 hi1 = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xdd);
    __m512 out[4] = {lo0, lo1, hi0, hi1};
    int rows[4] = {i, i + 4, i + 8, i + 12};
    for (int q = 0; q < 4; q++)
      if (rows[q] < steps)
        _mm512_mask_storeu_ps(dst + rows[q] * ld, m, out[q]);
  }
}

/* Packs rows [0, rows) (zero padded to whole strips) by k in [k0, k0 + kc) of a matrix with
 * element strides rs (between rows) and ks (along k): dst[strip][k][width]. A uses it with width
 * MR; B, read as its transpose, with width NR. Rows contiguous in memory (rs == 1) are copied a
 * vector at a time; k contiguous (ks == 1) is transposed 16 x 16 in registers; other strides go
 * element by element. */
AVX512 static void pack(const float *src, int64_t rs, int64_t ks, int64_t rows, int64_t k0,
                        int64_t kc, int width, float *dst) {
  int64_t strips = (rows + width - 1) / width;
  for (int64_t s = 0; s < strips; s++) {
    float *restrict d = dst + s * kc * width;
    int64_t r0 = s * width, live = rows - r0 < width ? rows - r0 : width;
    if (rs == 1) {
      for (int64_t p = 0; p < kc; p++)
        for (int r = 0; r < width; r += 16) {
          int n = live - r > 16 ? 16 : (live - r > 0 ? (int)(live - r) : 0);
          int w = width - r < 16 ? width - r : 16;
          const float *from = src + (k0 + p) * ks + r0 + r;
          __m512 v = _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1), from);
          _mm512_mask_storeu_ps(d + p * width + r, (__mmask16)((1u << w) - 1), v);
        }
    } else if (ks == 1) {
      for (int r = 0; r < width; r += 16) {
        int w = width - r < 16 ? width - r : 16;
        for (int64_t p = 0; p < kc; p += 16) {
          int64_t steps = kc - p < 16 ? kc - p : 16;
          __mmask16 m = (__mmask16)((1u << steps) - 1);
          __m512 block[16];
          for (int i = 0; i < 16; i++)
            block[i] = r + i < live ? _mm512_maskz_loadu_ps(m, src + (r0 + r + i) * rs + k0 + p)
                                    : _mm512_setzero_ps();
          transpose_store(block, d + p * width + r, width, w, steps);
        }
      }
    } else {
      for (int64_t p = 0; p < kc; p++)
        for (int r = 0; r < width; r++)
          d[p * width + r] = r < live ? src[(r0 + r) * rs + (k0 + p) * ks] : 0.0f;
    }
  }
}

/* Where the micro-kernel puts its tile: fp32 rows (a workspace or a tile for the epilogue), or,
 * for the last K block of an output with unit column stride, rows x cols of alpha * acc (+ beta *
 * C, C's rows with unit column stride, ldc apart: 0 for a bias row) into the output itself. */
typedef struct tile_out {
  float *f32;
  float *out;
  const float *c; /* NULL: no C */
  int64_t ld, ldc;
  int rows, cols;
  float alpha, beta;
} tile_out;

/* tile = cin (or 0) + A strip @ B strip over kc steps. */
AVX512 static void micro(int64_t kc, const float *restrict a, const float *restrict b,
                         const float *cin, int64_t ldin, const tile_out *o) {
  __m512 c[MR][2];
#pragma GCC unroll 12
  for (int r = 0; r < MR; r++) {
    c[r][0] = cin ? _mm512_loadu_ps(cin + r * ldin) : _mm512_setzero_ps();
    c[r][1] = cin ? _mm512_loadu_ps(cin + r * ldin + 16) : _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < kc; p++) {
    __m512 b0 = _mm512_loadu_ps(b + p * NR), b1 = _mm512_loadu_ps(b + p * NR + 16);
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) {
      __m512 av = _mm512_set1_ps(a[p * MR + r]);
      c[r][0] = _mm512_fmadd_ps(av, b0, c[r][0]);
      c[r][1] = _mm512_fmadd_ps(av, b1, c[r][1]);
    }
  }
  if (o->f32) {
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) {
      _mm512_storeu_ps(o->f32 + r * o->ld, c[r][0]);
      _mm512_storeu_ps(o->f32 + r * o->ld + 16, c[r][1]);
    }
    return;
  }
  __m512 alpha = _mm512_set1_ps(o->alpha), beta = _mm512_set1_ps(o->beta);
  int lo = o->cols < 16 ? o->cols : 16, hi = o->cols - lo;
  __mmask16 m0 = (__mmask16)((1u << lo) - 1), m1 = (__mmask16)((1u << hi) - 1);
#pragma GCC unroll 12
  for (int r = 0; r < MR; r++) {
    if (r < o->rows) {
      __m512 v0 = _mm512_mul_ps(c[r][0], alpha), v1 = _mm512_mul_ps(c[r][1], alpha);
      if (o->c) {
        v0 = _mm512_add_ps(v0, _mm512_mul_ps(beta, _mm512_maskz_loadu_ps(m0, o->c + r * o->ldc)));
        v1 = _mm512_add_ps(v1,
                           _mm512_mul_ps(beta, _mm512_maskz_loadu_ps(m1, o->c + r * o->ldc + 16)));
      }
      _mm512_mask_storeu_ps(o->out + r * o->ld, m0, v0);
      _mm512_mask_storeu_ps(o->out + r * o->ld + 16, m1, v1);
    }
  }
}

/* Packed operands start on a cache line, so that no vector load of B's rows splits two lines. */
static float *aligned_floats(int64_t count) {
  size_t bytes = ((size_t)count * sizeof(float) + 63) / 64 * 64;
  return aligned_alloc(64, bytes ? bytes : 64);
}

/* The job after B is packed. */
typedef struct f32_job {
  const gemm_job *j;
  float *bp; /* per B batch: [strip][k][NR] */
  gemm_items it;
  int64_t blocks, b_batches;
  bool direct; /* the last K block writes the output itself (and reads C) */
} f32_job;

AVX512 static void pack_b(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  const f32_job *q = ctx;
  const gemm_job *j = q->j;
  for (int64_t t = begin; t < end; t++) {
    int64_t bi = t / q->it.nstrips, s = t % q->it.nstrips;
    int64_t cols = j->n - s * NR < NR ? j->n - s * NR : NR;
    const float *b = (const float *)j->b.data + bi * j->b.bs + s * NR * j->b.cs;
    /* B^T is an [n, k] matrix: rows step by cs, k by rs. The whole of K, one strip. */
    pack(b, j->b.cs, j->b.rs, cols, 0, j->k, NR, q->bp + (bi * q->it.nstrips + s) * j->k * NR);
  }
}

/* One item: rows [ic, ic + mc) by strips [s0, s1) of output batch bo. */
static void run_item(const f32_job *q, int64_t bo, int64_t ic, int64_t s0, int64_t s1, float *ap,
                     float *ws) {
  const gemm_job *j = q->j;
  int64_t k = j->k, mc = j->m - ic < MC ? j->m - ic : MC, mstrips = (mc + MR - 1) / MR;
  int64_t b0 = j->sum_batches ? 0 : bo, b1 = j->sum_batches ? j->batch : bo + 1;
  int64_t ws_ld = (s1 - s0) * NR;
  float tile[MR * NR];
  for (int64_t bi = b0; bi < b1; bi++) {
    const float *a = (const float *)j->a.data + bi * j->a.bs + ic * j->a.rs;
    const float *bp = q->bp + (q->b_batches > 1 ? bi : 0) * q->it.nstrips * k * NR;
    for (int64_t pc = 0; pc < q->blocks; pc++) {
      int64_t k0 = pc * KC, kc = k - k0 < KC ? k - k0 : KC;
      bool first = bi == b0 && pc == 0, last = bi == b1 - 1 && pc == q->blocks - 1;
      pack(a, j->a.rs, j->a.cs, mc, k0, kc, MR, ap);
      for (int64_t s = s0; s < s1; s++) {
        const float *bs = bp + (s * k + k0) * NR;
        for (int64_t r = 0; r < mstrips; r++) {
          float *w = ws ? ws + r * MR * ws_ld + (s - s0) * NR : NULL;
          int64_t rows = mc - r * MR < MR ? mc - r * MR : MR;
          int64_t cols = j->n - s * NR < NR ? j->n - s * NR : NR;
          int64_t m0 = ic + r * MR, n0 = s * NR;
          tile_out o = {.f32 = w, .ld = ws_ld, .rows = (int)rows, .cols = (int)cols,
                        .alpha = (float)j->alpha.f, .beta = (float)j->beta.f};
          if (last && q->direct) {
            o.f32 = NULL;
            o.out = (float *)j->out.data + bo * j->out.bs + m0 * j->out.rs + n0;
            o.ld = j->out.rs;
            if (j->has_c) {
              o.c = (const float *)j->c.data + bo * j->c.bs + m0 * j->c.rs + n0;
              o.ldc = j->c.rs;
            }
          } else if (last) {
            o.f32 = tile;
            o.ld = NR;
          }
          micro(kc, ap + r * kc * MR, bs, first ? NULL : w, ws_ld, &o);
          if (last && !q->direct)
            tpu_gemm_store(j, bo, tile, NR, m0, rows, n0, cols);
        }
      }
    }
  }
}

static void run_items(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)begin, (void)end, (void)chunk;
  f32_job *q = ctx;
  /* One K block written straight to the output needs no workspace. */
  bool need_ws = q->blocks > 1 || q->j->sum_batches;
  float *ap = aligned_floats(MC * KC);
  float *ws = need_ws ? aligned_floats(MC * q->it.nstrips * NR) : NULL;
  int64_t bo, ic, s0, s1;
  while (ap && (ws || !need_ws) && tpu_gemm_items_claim(&q->it, &bo, &ic, &s0, &s1))
    run_item(q, bo, ic, s0, s1, ap, ws);
  free(ap);
  free(ws);
}

bool tpu_gemm_f32(const gemm_job *j) {
  double work = (double)j->batch * (double)j->m * (double)j->n * (double)j->k;
  if (!tpu_matmul_has_f32_kernel() || work < TPU_GEMM_F32_MIN_WORK ||
      (double)j->k * (double)j->n > TPU_GEMM_F32_MAX_B)
    return false;
  f32_job q = {.j = j, .blocks = (j->k + KC - 1) / KC, .b_batches = j->b.bs == 0 ? 1 : j->batch,
               .direct = j->out.cs == 1 && (!j->has_c || j->c.cs == 1)};
  tpu_gemm_items_plan(&q.it, j, MC, NR);
  q.bp = aligned_floats(q.b_batches * q.it.nstrips * j->k * NR);
  if (!q.bp)
    return false;
  tpu_parallel_for(q.b_batches * q.it.nstrips, 4, pack_b, &q);
  /* One chunk per thread; the chunks share the items. */
  tpu_parallel_for(tpu_gemm_items_threads(&q.it, j), 1, run_items, &q);
  free(q.bp);
  return tpu_gemm_items_done(&q.it);
}

#else

bool tpu_gemm_f32(const gemm_job *j) {
  (void)j;
  return false;
}

#endif
