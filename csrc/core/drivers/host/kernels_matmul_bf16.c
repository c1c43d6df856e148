/* bf16 GEMM with AVX512-BF16: vdpbf16ps multiplies pairs of bf16 and adds both products into
 * fp32 lanes, so operands are packed in pairs along K. B (the tile's columns, all of K) is packed
 * once into strips of NR columns, [k pair][NR] 32-bit pairs; A, one block of MC rows by KC at a
 * time, into strips of MR rows, [k pair][MR]. The micro-kernel keeps an MR x NR fp32 tile in
 * registers (24 of the 32 zmm), broadcasting one A pair against two zmm of B per row. K beyond
 * one KC block (or summed batches) accumulates in an fp32 workspace; the last block goes through
 * the common epilogue, which applies alpha, beta and C and rounds once to bf16.
 *
 * Only this file uses AVX-512 instructions, behind the target attribute; the rest of the build is
 * baseline x86-64, and tpu_matmul_has_bf16_kernel checks the CPU at run time. */
#include <stdlib.h>
#include <string.h>

#include "drivers/host/kernels_matmul.h"
#include "drivers/host/kernels_matmul_internal.h"

#define MR 12
#define NR 32
#define KC 512 /* k elements per block: the B micro-panel (KC x NR bf16) stays in L1/L2 */
#define MC 192 /* rows per A block: MC x KC bf16 stays in L2 */

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

/* Packs rows [r0, r0 + rows) (zero padded to whole strips) by k in [k0, k0 + kc) of a matrix with
 * element strides rs (between rows) and ks (along k): dst[strip][k pair][width]. A uses it with
 * width MR; B, read as its transpose, with width NR. */
static void pack(const uint16_t *src, int64_t rs, int64_t ks, int64_t rows, int64_t k0,
                 int64_t kc, int64_t k, int width, uint32_t *dst) {
  int64_t kp = (kc + 1) / 2, strips = (rows + width - 1) / width;
  for (int64_t s = 0; s < strips; s++) {
    uint32_t *d = dst + s * kp * width;
    for (int64_t p = 0; p < kp; p++) {
      int64_t kk = k0 + 2 * p;
      bool second = kk + 1 < k;
      for (int r = 0; r < width; r++) {
        int64_t row = s * width + r;
        d[p * width + r] = row < rows ? pair(src + row * rs + kk * ks, ks, second) : 0u;
      }
    }
  }
}

/* c[MR][NR] (ld ldc) = cin (or 0) + A strip @ B strip over kp pairs. */
AVX512BF16 static void micro(int64_t kp, const uint32_t *restrict a, const uint32_t *restrict b,
                             const float *cin, int64_t ldin, float *cout, int64_t ldout) {
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
#pragma GCC unroll 12
  for (int r = 0; r < MR; r++) {
    _mm512_storeu_ps(cout + r * ldout, c[r][0]);
    _mm512_storeu_ps(cout + r * ldout + 16, c[r][1]);
  }
}

bool tpu_gemm_bf16_tile(const gemm_job *j, int64_t bo, int64_t m0, int64_t m1, int64_t n0,
                        int64_t n1) {
  if (!tpu_matmul_has_bf16_kernel())
    return false;
  int64_t mt = m1 - m0, nt = n1 - n0, k = j->k, kpt = (k + 1) / 2;
  int64_t nstrips = (nt + NR - 1) / NR, blocks = (k + KC - 1) / KC;
  int64_t b0 = j->sum_batches ? 0 : bo, b1 = j->sum_batches ? j->batch : bo + 1;
  /* Partial sums live in the workspace between K blocks: one A block's rows, or the whole tile
   * when batches are summed (all of a batch's blocks run before the next batch's B is packed). */
  bool partial = blocks > 1 || b1 - b0 > 1;
  int64_t ws_rows = j->sum_batches ? (mt + MR - 1) / MR * MR : MC, ws_ld = nstrips * NR;
  uint32_t *bp = malloc((size_t)(nstrips * NR * kpt) * 4);
  uint32_t *ap = malloc((size_t)(MC * (KC / 2)) * 4);
  float *ws = partial ? malloc((size_t)(ws_rows * ws_ld) * 4) : NULL;
  if (!bp || !ap || (partial && !ws)) {
    free(bp);
    free(ap);
    free(ws);
    return false;
  }
  float tile[MR * NR];
  for (int64_t bi = b0; bi < b1; bi++) {
    const uint16_t *a = (const uint16_t *)j->a.data + bi * j->a.bs + m0 * j->a.rs;
    const uint16_t *b = (const uint16_t *)j->b.data + bi * j->b.bs + n0 * j->b.cs;
    /* B^T is a [nt, k] matrix: rows step by cs, k by rs. Pack per KC block, strip-major. */
    for (int64_t pc = 0; pc < blocks; pc++) {
      int64_t k0 = pc * KC, kc = k - k0 < KC ? k - k0 : KC;
      for (int64_t s = 0; s < nstrips; s++) {
        int64_t cols = nt - s * NR < NR ? nt - s * NR : NR;
        pack(b + s * NR * j->b.cs, j->b.cs, j->b.rs, cols, k0, kc, k, NR,
             bp + (s * kpt + k0 / 2) * NR);
      }
    }
    for (int64_t ic = 0; ic < mt; ic += MC) {
      int64_t mc = mt - ic < MC ? mt - ic : MC, mstrips = (mc + MR - 1) / MR;
      float *wrow = ws ? ws + (j->sum_batches ? ic : 0) * ws_ld : NULL;
      for (int64_t pc = 0; pc < blocks; pc++) {
        int64_t k0 = pc * KC, kc = k - k0 < KC ? k - k0 : KC, kp = (kc + 1) / 2;
        bool first = bi == b0 && pc == 0, last = bi == b1 - 1 && pc == blocks - 1;
        pack(a + ic * j->a.rs, j->a.rs, j->a.cs, mc, k0, kc, k, MR, ap);
        for (int64_t s = 0; s < nstrips; s++) {
          const uint32_t *bs = bp + (s * kpt + k0 / 2) * NR;
          for (int64_t r = 0; r < mstrips; r++) {
            float *w = wrow ? wrow + r * MR * ws_ld + s * NR : NULL;
            micro(kp, ap + r * kp * MR, bs, first ? NULL : w, ws_ld, last ? tile : w,
                  last ? NR : ws_ld);
            if (last) {
              int64_t rows = mc - r * MR < MR ? mc - r * MR : MR;
              int64_t cols = nt - s * NR < NR ? nt - s * NR : NR;
              tpu_gemm_store(j, bo, tile, NR, m0 + ic + r * MR, rows, n0 + s * NR, cols);
            }
          }
        }
      }
    }
  }
  free(bp);
  free(ap);
  free(ws);
  return true;
}

#else

bool tpu_gemm_bf16_tile(const gemm_job *j, int64_t bo, int64_t m0, int64_t m1, int64_t n0,
                        int64_t n1) {
  (void)j, (void)bo, (void)m0, (void)m1, (void)n0, (void)n1;
  return false;
}

#endif
