/* bf16 GEMM with AVX512-BF16: vdpbf16ps multiplies pairs of bf16 and adds both products into
 * fp32 lanes, so operands are packed in pairs along K. B is packed once, by all threads, into
 * strips of NR columns, [k pair][NR] 32-bit pairs; then each thread claims blocks of MC rows,
 * packing A one KC block at a time into strips of MR rows, [k pair][MR]. The micro-kernel keeps
 * an MR x NR fp32 tile in registers (24 of the 32 zmm), broadcasting one A pair against two zmm
 * of B per row. K beyond one KC block (or summed batches) accumulates in an fp32 workspace. The
 * last block rounds straight into a plain output; with C or odd output strides it goes
 * through the common epilogue. Either way each result is rounded once. vdpbf16ps reads subnormal
 * inputs as zero, so a job with one takes the portable fp32 path instead.
 *
 * Only this file uses AVX-512 instructions, behind the target attribute; the rest of the build is
 * baseline x86-64, and tpu_matmul_has_bf16_kernel checks the CPU at run time. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/kernels/matmul/matmul.h"
#include "drivers/host/kernels/matmul/matmul_internal.h"
#include "drivers/host/engine/engine_pool.h"

#define MR 12
#define NR 32
#define KC 1024 /* k per block: one block up to K = 1024 (no fp32 workspace pass); B micro-panel 64 KiB in L2 */
#define MC 48 /* rows per item (an A block, MC x KC bf16 in L2): small, so threads end together */

static bool disabled;

void tpu_matmul_disable_bf16_kernel(bool disable) { disabled = disable; }

bool tpu_matmul_has_bf16_kernel(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  return !disabled && __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw");
#else
  return false;
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

static inline uint32_t pair(const uint16_t *p, int64_t step, bool has_second) {
  return (uint32_t)p[0] | (has_second ? (uint32_t)p[step] << 16 : 0u);
}

/* Whole strips of a matrix with unit row stride (A transposed, or B as stored), pairs [0, whole):
 * two k rows widened and interleaved 16 lanes at a time. Pairs are the outer loop, so each k row's
 * segment is read once for all strips, and the rows PF pairs ahead are prefetched: k rows lie ks
 * elements apart, often a page or more, where the hardware prefetcher does not follow. */
#define PF 8
AVX512BF16 static void pack_unit_rows(const uint16_t *src, int64_t ks, int64_t strips, int64_t k0,
                                      int64_t whole, int64_t kp, int width, uint32_t *dst) {
  int64_t bytes = strips * width * 2;
  for (int64_t p = 0; p < whole; p++) {
    const uint16_t *lo = src + (k0 + 2 * p) * ks, *hi = lo + ks;
    if (p + PF < whole)
      for (int64_t b = 0; b < bytes; b += 64) {
        _mm_prefetch((const char *)(lo + 2 * PF * ks) + b, _MM_HINT_T0);
        _mm_prefetch((const char *)(hi + 2 * PF * ks) + b, _MM_HINT_T0);
      }
    for (int64_t s = 0; s < strips; s++) {
      uint32_t *restrict d = dst + s * kp * width + p * width;
      for (int r = 0; r < width; r += 16) {
        __mmask16 m = width - r >= 16 ? 0xffff : (__mmask16)((1u << (width - r)) - 1);
        int64_t off = s * width + r;
        __m512i l = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, lo + off));
        __m512i h = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, hi + off));
        _mm512_mask_storeu_epi32(d + r, m, _mm512_or_si512(l, _mm512_slli_epi32(h, 16)));
      }
    }
  }
}

/* Packs rows [0, rows) (zero padded to whole strips) by k in [k0, k0 + kc) of a matrix with
 * element strides rs (between rows) and ks (along k): dst[strip][k pair][width]. A uses it with
 * width MR; B, read as its transpose, with width NR. Whole strips of the two dense layouts have
 * loops of their own (one 32-bit copy per pair along k, or pack_unit_rows); the rest, edges and
 * odd strides, go element by element. */
AVX512BF16 static inline void pack(const uint16_t *src, int64_t rs, int64_t ks, int64_t rows,
                                   int64_t k0, int64_t kc, int64_t k, int width, uint32_t *dst) {
  int64_t kp = (kc + 1) / 2, strips = (rows + width - 1) / width;
  int64_t whole = (k - k0) / 2 < kp ? (k - k0) / 2 : kp; /* pairs with both elements */
  int64_t unit_rows = rs == 1 && ks != 1 ? rows / width : 0; /* strips pack_unit_rows fills */
  if (unit_rows)
    pack_unit_rows(src, ks, unit_rows, k0, whole, kp, width, dst);
  for (int64_t s = 0; s < strips; s++) {
    uint32_t *restrict d = dst + s * kp * width;
    int64_t r0 = s * width, p0 = 0;
    if (s < unit_rows) {
      p0 = whole;
    } else if (r0 + width <= rows && ks == 1) {
      for (int r = 0; r < width; r++) {
        const uint16_t *row = src + (r0 + r) * rs + k0;
        for (int64_t p = 0; p < whole; p++)
          memcpy(&d[p * width + r], row + 2 * p, 4); /* little-endian: k in the low half */
      }
      p0 = whole;
    }
    for (int64_t p = p0; p < kp; p++) {
      int64_t kk = k0 + 2 * p;
      bool second = kk + 1 < k;
      for (int r = 0; r < width; r++) {
        int64_t row = r0 + r;
        d[p * width + r] = row < rows ? pair(src + row * rs + kk * ks, ks, second) : 0u;
      }
    }
  }
}

/* Where the micro-kernel puts its tile: fp32 rows (a workspace, or a tile for the epilogue), or,
 * for the last K block of an output with unit column stride and no C, the output itself: rows x
 * cols of alpha * acc rounded to bf16 by vcvtne2ps2bf16 (nearest even, as PyTorch's oneDNN). */
typedef struct tile_out {
  float *f32;
  uint16_t *bf16;
  int64_t ld;
  int rows, cols;
  float alpha;
} tile_out;

/* tile = cin (or 0) + A strip @ B strip over kp pairs. */
AVX512BF16 static void micro(int64_t kp, const uint32_t *restrict a, const uint32_t *restrict b,
                             const float *cin, int64_t ldin, const tile_out *o) {
  __m512 c[MR][2];
#pragma GCC unroll 12
  for (int r = 0; r < MR; r++) {
    c[r][0] = cin ? _mm512_loadu_ps(cin + r * ldin) : _mm512_setzero_ps();
    c[r][1] = cin ? _mm512_loadu_ps(cin + r * ldin + 16) : _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < kp; p++) {
    __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + p * NR);
    __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + p * NR + 16);
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) {
      __m512bh av = (__m512bh)_mm512_set1_epi32((int)a[p * MR + r]);
      c[r][0] = _mm512_dpbf16_ps(c[r][0], av, b0);
      c[r][1] = _mm512_dpbf16_ps(c[r][1], av, b1);
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
  __m512 alpha = _mm512_set1_ps(o->alpha);
  __mmask32 cols = o->cols == NR ? ~(__mmask32)0 : ((__mmask32)1 << o->cols) - 1;
#pragma GCC unroll 12
  for (int r = 0; r < MR; r++) {
    if (r < o->rows) {
      __m512bh v = _mm512_cvtne2ps_pbh(_mm512_mul_ps(c[r][1], alpha),
                                       _mm512_mul_ps(c[r][0], alpha));
      _mm512_mask_storeu_epi16(o->bf16 + r * o->ld, cols, (__m512i)v);
    }
  }
}

/* The job after B is packed; its items are claimed dynamically by the pool's threads. Every
 * output element is computed by one item in a fixed order, so the results do not depend on which
 * thread runs what. */
typedef struct bf16_job {
  const gemm_job *j;
  const uint32_t *bp; /* per B batch: [strip][k pair][NR] */
  gemm_items it;
  int64_t kpt, blocks, b_batches;
} bf16_job;

static void pack_b(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  const bf16_job *q = ctx;
  const gemm_job *j = q->j;
  int64_t nt = j->n, k = j->k;
  for (int64_t t = begin; t < end; t++) {
    int64_t bi = t / q->it.nstrips, s = t % q->it.nstrips;
    int64_t cols = nt - s * NR < NR ? nt - s * NR : NR;
    const uint16_t *b = (const uint16_t *)j->b.data + bi * j->b.bs + s * NR * j->b.cs;
    uint32_t *dst = (uint32_t *)q->bp + (bi * q->it.nstrips + s) * q->kpt * NR;
    /* B^T is an [n, k] matrix: rows step by cs, k by rs. One KC block after another. */
    for (int64_t k0 = 0; k0 < k; k0 += KC)
      pack(b, j->b.cs, j->b.rs, cols, k0, k - k0 < KC ? k - k0 : KC, k, NR, dst + k0 / 2 * NR);
  }
}

/* One item: rows [ic, ic + mc) by strips [s0, s1) of output batch bo. */
static void run_item(const bf16_job *q, int64_t bo, int64_t ic, int64_t s0, int64_t s1,
                     uint32_t *ap, float *ws) {
  const gemm_job *j = q->j;
  int64_t k = j->k, mc = j->m - ic < MC ? j->m - ic : MC, mstrips = (mc + MR - 1) / MR;
  int64_t b0 = j->sum_batches ? 0 : bo, b1 = j->sum_batches ? j->batch : bo + 1;
  int64_t ws_ld = (s1 - s0) * NR;
  bool direct = j->out.cs == 1 && !j->has_c;
  float tile[MR * NR];
  for (int64_t bi = b0; bi < b1; bi++) {
    const uint16_t *a = (const uint16_t *)j->a.data + bi * j->a.bs + ic * j->a.rs;
    const uint32_t *bp = q->bp + (q->b_batches > 1 ? bi : 0) * q->it.nstrips * q->kpt * NR;
    for (int64_t pc = 0; pc < q->blocks; pc++) {
      int64_t k0 = pc * KC, kc = k - k0 < KC ? k - k0 : KC, kp = (kc + 1) / 2;
      bool first = bi == b0 && pc == 0, last = bi == b1 - 1 && pc == q->blocks - 1;
      pack(a, j->a.rs, j->a.cs, mc, k0, kc, k, MR, ap);
      for (int64_t s = s0; s < s1; s++) {
        const uint32_t *bs = bp + (s * q->kpt + k0 / 2) * NR;
        for (int64_t r = 0; r < mstrips; r++) {
          float *w = ws + r * MR * ws_ld + (s - s0) * NR;
          int64_t rows = mc - r * MR < MR ? mc - r * MR : MR;
          int64_t cols = j->n - s * NR < NR ? j->n - s * NR : NR;
          int64_t m0 = ic + r * MR, n0 = s * NR;
          tile_out o = {.f32 = w, .ld = ws_ld, .rows = (int)rows, .cols = (int)cols,
                        .alpha = (float)j->alpha.f};
          if (last && direct) {
            o.f32 = NULL;
            o.bf16 = (uint16_t *)j->out.data + bo * j->out.bs + m0 * j->out.rs + n0;
            o.ld = j->out.rs;
          } else if (last) {
            o.f32 = tile;
            o.ld = NR;
          }
          micro(kp, ap + r * kp * MR, bs, first ? NULL : w, ws_ld, &o);
          if (last && !direct)
            tpu_gemm_store(j, bo, tile, NR, m0, rows, n0, cols);
        }
      }
    }
  }
}

static void run_items(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)begin, (void)end, (void)chunk;
  bf16_job *q = ctx;
  uint32_t *ap = malloc((size_t)(MC * (KC / 2)) * 4);
  float *ws = malloc((size_t)(MC * q->it.nstrips * NR) * 4);
  int64_t bo, ic, s0, s1;
  while (ap && ws && tpu_gemm_items_claim(&q->it, &bo, &ic, &s0, &s1))
    run_item(q, bo, ic, s0, s1, ap, ws);
  free(ap);
  free(ws);
}

/* The subnormal scan of one operand, a [batches, rows, cols] view with element strides. */
typedef struct subnormal_scan {
  const uint16_t *p;
  int64_t rows, cols, bs, rs, cs;
  atomic_bool found;
} subnormal_scan;

/* True when one of n bf16 values `step` elements apart is subnormal: exponent bits zero, mantissa
 * not. An or over the run, without an early exit, so the dense case vectorizes. */
static bool run_has_subnormal(const uint16_t *restrict v, int64_t n, int64_t step) {
  unsigned any = 0;
  if (step == 1) {
    for (int64_t i = 0; i < n; i++)
      any |= ((v[i] & 0x7f80u) == 0) & ((v[i] & 0x7fu) != 0);
  } else {
    for (int64_t i = 0; i < n; i++)
      any |= ((v[i * step] & 0x7f80u) == 0) & ((v[i * step] & 0x7fu) != 0);
  }
  return any != 0;
}

static void scan_rows(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  subnormal_scan *s = ctx;
  for (int64_t r = begin; r < end && !atomic_load_explicit(&s->found, memory_order_relaxed); r++)
    if (run_has_subnormal(s->p + r / s->rows * s->bs + r % s->rows * s->rs, s->cols, s->cs))
      atomic_store(&s->found, true);
}

/* True when the operand `v` ([batches, rows, cols]) holds a subnormal value. vdpbf16ps reads
 * subnormal inputs as zero whatever MXCSR says, where CPU and CUDA keep them (2.9e-39 * 3.39e38 is
 * 0.98, not 0); such jobs take the fp32 path. The scan reads each element once, little next to the
 * product's rows * cols * n multiply-adds, along the smaller stride. */
static bool has_subnormal(const gemm_view *v, int64_t batches, int64_t rows, int64_t cols) {
  subnormal_scan s = {.p = (const uint16_t *)(const void *)v->data, .rows = rows, .cols = cols,
                      .bs = v->bs, .rs = v->rs, .cs = v->cs};
  if (llabs(v->rs) < llabs(v->cs)) { /* a transposed view: scan in memory order */
    s.rows = cols, s.cols = rows, s.rs = v->cs, s.cs = v->rs;
  }
  atomic_init(&s.found, false);
  int64_t grain = s.cols >= 65536 ? 1 : 65536 / s.cols;
  tpu_parallel_for(batches * s.rows, grain, scan_rows, &s);
  return atomic_load(&s.found);
}

bool tpu_gemm_bf16(const gemm_job *j) {
  if (!tpu_matmul_has_bf16_kernel())
    return false;
  if (has_subnormal(&j->a, j->a.bs == 0 ? 1 : j->batch, j->m, j->k) ||
      has_subnormal(&j->b, j->b.bs == 0 ? 1 : j->batch, j->k, j->n))
    return false;
  bf16_job q = {.j = j, .kpt = (j->k + 1) / 2, .blocks = (j->k + KC - 1) / KC,
                .b_batches = j->b.bs == 0 ? 1 : j->batch};
  tpu_gemm_items_plan(&q.it, j, MC, NR);
  uint32_t *bp = malloc((size_t)(q.b_batches * q.it.nstrips * q.kpt * NR) * 4);
  if (!bp)
    return false;
  q.bp = bp;
  tpu_parallel_for(q.b_batches * q.it.nstrips, 8, pack_b, &q);
  /* One chunk per thread; the chunks share the items. */
  tpu_parallel_for(tpu_gemm_items_threads(&q.it, j), 1, run_items, &q);
  free(bp);
  return tpu_gemm_items_done(&q.it);
}

#else

bool tpu_gemm_bf16(const gemm_job *j) {
  (void)j;
  return false;
}

#endif
