/* int_mm on the host (ops/tpu_ops_matmul.h): int8 or uint8 A [1, m, k] @ int8 B [1, k, n] ->
 * int32 out.
 * Sums wrap modulo 2^32 (in uint32_t), so every order of the sums gives the same bits, on both
 * paths and any thread count.
 *
 * Where the CPU has AVX512-VNNI, vpdpbusd multiplies four unsigned bytes by four signed bytes and
 * adds the four products into an int32 lane. A signed A's bytes are stored with 128 added (xor
 * 0x80), which makes them unsigned, and 128 times B's column sums is subtracted at the end. B is packed once
 * into strips of NR columns, [k quad][NR] 32-bit quads (k in the low byte first), with each
 * strip's column sums; A into strips of MR rows, [k quad][MR]. The micro-kernel keeps an MR x NR
 * int32 tile in 24 zmm over all of K; threads claim items of (MC rows, group of strips).
 * Elsewhere a portable loop over rows of A sums in the same arithmetic. Only this file uses
 * AVX512-VNNI, behind the target attribute; tpu_matmul_has_int8_kernel checks the CPU. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/engine/engine_pool.h"
#include "drivers/host/engine/engine_simd.h"
#include "drivers/host/kernels/kernels.h"
#include "drivers/host/kernels/matmul/matmul.h"
#include "drivers/host/kernels/matmul/matmul_internal.h"

#define MR 12
#define NR 32
#define MC 48 /* rows per item */

static atomic_bool disabled;

void tpu_matmul_disable_int8_kernel(bool disable) { atomic_store(&disabled, disable); }

bool tpu_matmul_has_int8_kernel(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  return !atomic_load(&disabled) && __builtin_cpu_supports("avx512vnni") &&
         __builtin_cpu_supports("avx512bw");
#else
  return false;
#endif
}

/* The operands as [rows, cols] int8 views with element strides. */
typedef struct int8_view {
  const int8_t *p;
  int64_t rs, cs;
} int8_view;

typedef struct int_mm_job {
  int8_view a, b;
  bool a_unsigned; /* A holds uint8 */
  int32_t *out;
  int64_t ors, ocs;
  int64_t m, n, k;
} int_mm_job;

/* ---- portable path ---- */

/* Rows [begin, end) of the output: acc[j] += a[i][p] * b[p][j], with B widened once (bw) and a
 * row of accumulators per pool chunk, allocated before the run so that no chunk can fail. */
typedef struct portable_job {
  const int_mm_job *j;
  const uint32_t *bw; /* [k][n] */
  uint32_t *acc;      /* [chunk][n] */
} portable_job;

TPU_SIMD static void portable_rows(int64_t begin, int64_t end, int chunk, void *ctx) {
  const portable_job *q = ctx;
  const int_mm_job *j = q->j;
  uint32_t *acc = q->acc + chunk * j->n;
  for (int64_t i = begin; i < end; i++) {
    memset(acc, 0, (size_t)j->n * sizeof *acc);
    for (int64_t p = 0; p < j->k; p++) {
      int8_t raw = j->a.p[i * j->a.rs + p * j->a.cs];
      uint32_t av = j->a_unsigned ? (uint32_t)(uint8_t)raw : (uint32_t)(int32_t)raw;
      const uint32_t *restrict br = q->bw + p * j->n;
      for (int64_t c = 0; c < j->n; c++)
        acc[c] += av * br[c];
    }
    for (int64_t c = 0; c < j->n; c++)
      j->out[i * j->ors + c * j->ocs] = (int32_t)acc[c];
  }
}

static tpu_status run_portable(const int_mm_job *j) {
  int64_t grain = TPU_GEMM_SERIAL_WORK / (j->k * j->n + 1) + 1;
  uint32_t *bw = malloc((size_t)(j->k * j->n) * sizeof *bw + 1);
  uint32_t *acc = malloc((size_t)(tpu_parallel_chunks(j->m, grain) * j->n) * sizeof *acc);
  if (!bw || !acc) {
    free(bw);
    free(acc);
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "int_mm: cannot allocate host scratch memory");
  }
  for (int64_t p = 0; p < j->k; p++)
    for (int64_t c = 0; c < j->n; c++)
      bw[p * j->n + c] = (uint32_t)(int32_t)j->b.p[p * j->b.rs + c * j->b.cs];
  portable_job q = {.j = j, .bw = bw, .acc = acc};
  tpu_parallel_for(j->m, grain, portable_rows, &q);
  free(bw);
  free(acc);
  return TPU_OK;
}

/* ---- AVX512-VNNI path ---- */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

/* Four k-consecutive bytes of a row (`step` apart; zero beyond `have`) as one little-endian quad. */
static inline uint32_t quad(const int8_t *p, int64_t step, int64_t have) {
  uint32_t v = 0;
  for (int64_t t = 0; t < 4 && t < have; t++)
    v |= (uint32_t)(uint8_t)p[t * step] << (8 * t);
  return v;
}

typedef struct vnni_job {
  const int_mm_job *j;
  int64_t kq;         /* k quads */
  uint32_t *ap;       /* [A strip][kq][MR] */
  uint32_t *bp;       /* [B strip][kq][NR] */
  int32_t *bsum;      /* [B strip][NR]: 128 * column sums */
  int64_t a_strips, b_strips;
  gemm_items it;
} vnni_job;

/* Strips [begin, end) of A: rows r0 + r, quads of k, 128 added to every byte of a signed A. */
static void pack_a(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  const vnni_job *q = ctx;
  const int_mm_job *j = q->j;
  uint32_t flip = j->a_unsigned ? 0u : 0x80808080u;
  for (int64_t s = begin; s < end; s++) {
    uint32_t *d = q->ap + s * q->kq * MR;
    for (int r = 0; r < MR; r++) {
      int64_t row = s * MR + r;
      const int8_t *src = j->a.p + row * j->a.rs;
      for (int64_t g = 0; g < q->kq; g++) {
        uint32_t v = 0;
        if (row < j->m)
          v = quad(src + 4 * g * j->a.cs, j->a.cs, j->k - 4 * g) ^ flip;
        d[g * MR + r] = v;
      }
    }
  }
}

/* Strips [begin, end) of B: quads of k per column (zero beyond k and n), and 128 times each
 * column's sum (computed by vpdpbusd against bytes of one) for a signed A, else zero. */
VNNI static void pack_b(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  const vnni_job *q = ctx;
  const int_mm_job *j = q->j;
  const __m512i ones = _mm512_set1_epi8(1);
  for (int64_t s = begin; s < end; s++) {
    uint32_t *d = q->bp + s * q->kq * NR;
    int64_t c0 = s * NR, cols = j->n - c0 < NR ? j->n - c0 : NR;
    const int8_t *src = j->b.p + c0 * j->b.cs;
    __m512i sum0 = _mm512_setzero_si512(), sum1 = sum0;
    for (int64_t g = 0; g < q->kq; g++) {
      uint32_t *dg = d + g * NR;
      int64_t have = j->k - 4 * g;
      if (j->b.cs == 1 && have >= 4) { /* rows of B dense: widen four rows, 16 columns at once */
        for (int h = 0; h < 2; h++) {
          int64_t left = cols - 16 * h;
          __mmask16 m = left >= 16 ? 0xffff : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
          __m512i v = _mm512_setzero_si512();
          for (int t = 0; t < 4; t++) {
            const int8_t *row = src + (4 * g + t) * j->b.rs + 16 * h;
            __m512i w = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, row));
            v = _mm512_or_si512(v, _mm512_slli_epi32(w, 8 * t));
          }
          _mm512_storeu_si512(dg + 16 * h, v);
        }
      } else {
        for (int c = 0; c < NR; c++)
          dg[c] = c < cols ? quad(src + c * j->b.cs + 4 * g * j->b.rs, j->b.rs, have) : 0u;
      }
      sum0 = _mm512_dpbusd_epi32(sum0, ones, _mm512_loadu_si512(dg));
      sum1 = _mm512_dpbusd_epi32(sum1, ones, _mm512_loadu_si512(dg + 16));
    }
    if (j->a_unsigned)
      sum0 = sum1 = _mm512_setzero_si512();
    _mm512_storeu_si512(q->bsum + s * NR, _mm512_slli_epi32(sum0, 7));
    _mm512_storeu_si512(q->bsum + s * NR + 16, _mm512_slli_epi32(sum1, 7));
  }
}

/* out tile (rows x cols of it) = A strip @ B strip over kq quads, less 128 * column sums. */
VNNI static void micro(int64_t kq, const uint32_t *restrict a, const uint32_t *restrict b,
                       const int32_t *bsum, int32_t *out, int64_t ors, int64_t ocs, int rows,
                       int cols) {
  __m512i c[MR][2];
#pragma GCC unroll 12
  for (int r = 0; r < MR; r++)
    c[r][0] = c[r][1] = _mm512_setzero_si512();
  for (int64_t g = 0; g < kq; g++) {
    __m512i b0 = _mm512_loadu_si512(b + g * NR), b1 = _mm512_loadu_si512(b + g * NR + 16);
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) {
      __m512i av = _mm512_set1_epi32((int)a[g * MR + r]);
      c[r][0] = _mm512_dpbusd_epi32(c[r][0], av, b0);
      c[r][1] = _mm512_dpbusd_epi32(c[r][1], av, b1);
    }
  }
  __m512i s0 = _mm512_loadu_si512(bsum), s1 = _mm512_loadu_si512(bsum + 16);
  int32_t tile[NR];
#pragma GCC unroll 12
  for (int r = 0; r < MR; r++) {
    if (r >= rows)
      break;
    __m512i v0 = _mm512_sub_epi32(c[r][0], s0), v1 = _mm512_sub_epi32(c[r][1], s1);
    if (ocs == 1) {
      __mmask16 m0 = cols >= 16 ? 0xffff : (__mmask16)((1u << cols) - 1);
      __mmask16 m1 = cols >= 32 ? 0xffff : cols <= 16 ? 0 : (__mmask16)((1u << (cols - 16)) - 1);
      _mm512_mask_storeu_epi32(out + r * ors, m0, v0);
      _mm512_mask_storeu_epi32(out + r * ors + 16, m1, v1);
    } else {
      _mm512_storeu_si512(tile, v0);
      _mm512_storeu_si512(tile + 16, v1);
      for (int cc = 0; cc < cols; cc++)
        out[r * ors + cc * ocs] = tile[cc];
    }
  }
}

static void run_items(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)begin, (void)end, (void)chunk;
  vnni_job *q = ctx;
  const int_mm_job *j = q->j;
  int64_t bo, ic, s0, s1;
  while (tpu_gemm_items_claim(&q->it, &bo, &ic, &s0, &s1)) {
    int64_t rows_left = j->m - ic < MC ? j->m - ic : MC;
    for (int64_t s = s0; s < s1; s++) {
      int64_t c0 = s * NR, cols = j->n - c0 < NR ? j->n - c0 : NR;
      for (int64_t r0 = 0; r0 < rows_left; r0 += MR) {
        int64_t row = ic + r0, rows = rows_left - r0 < MR ? rows_left - r0 : MR;
        micro(q->kq, q->ap + row / MR * q->kq * MR, q->bp + s * q->kq * NR, q->bsum + s * NR,
              j->out + row * j->ors + c0 * j->ocs, j->ors, j->ocs, (int)rows, (int)cols);
      }
    }
  }
}

/* False when scratch memory runs out before any output is written. */
static bool run_vnni(const int_mm_job *j) {
  vnni_job q = {.j = j, .kq = (j->k + 3) / 4, .a_strips = (j->m + MR - 1) / MR,
                .b_strips = (j->n + NR - 1) / NR};
  q.ap = malloc((size_t)(q.a_strips * q.kq * MR) * 4);
  q.bp = malloc((size_t)(q.b_strips * q.kq * NR) * 4);
  q.bsum = malloc((size_t)(q.b_strips * NR) * 4);
  bool ok = q.ap && q.bp && q.bsum;
  if (ok) {
    tpu_parallel_for(q.a_strips, 4, pack_a, &q);
    tpu_parallel_for(q.b_strips, 4, pack_b, &q);
    gemm_job shape = {.batch = 1, .m = j->m, .n = j->n, .k = j->k};
    tpu_gemm_items_plan(&q.it, &shape, MC, NR);
    tpu_parallel_for(tpu_gemm_items_threads(&q.it, &shape), 1, run_items, &q);
  }
  free(q.ap);
  free(q.bp);
  free(q.bsum);
  return ok;
}

#else

static bool run_vnni(const int_mm_job *j) {
  (void)j;
  return false;
}

#endif

static bool dims_are(const tpu_tensor *t, tpu_dtype dtype, int64_t rows, int64_t cols) {
  return t->dtype == dtype && t->ndim == 3 && t->sizes[0] == 1 && t->sizes[1] == rows &&
         t->sizes[2] == cols;
}

tpu_status tpu_kernel_int_mm(const tpu_op_call *call) {
  if (call->n_inputs != 2 || call->n_outputs != 1)
    return tpu_error(TPU_ERR_VALUE, "int_mm: expected A, B and one output");
  const tpu_tensor *a = &call->tensors[0], *b = &call->tensors[1], *out = &call->tensors[2];
  int64_t m = a->ndim == 3 ? a->sizes[1] : -1, k = a->ndim == 3 ? a->sizes[2] : -1;
  int64_t n = b->ndim == 3 ? b->sizes[2] : -1;
  bool a_unsigned = a->dtype == TPU_UINT8;
  if (!dims_are(a, a_unsigned ? TPU_UINT8 : TPU_INT8, m, k) || !dims_are(b, TPU_INT8, k, n) ||
      !dims_are(out, TPU_INT32, m, n))
    return tpu_error(TPU_ERR_VALUE, "int_mm: expected int8 or uint8 [1, m, k] @ int8 [1, k, n] "
                                    "-> int32 [1, m, n]");
  int_mm_job j = {.a = {tpu_tensor_data(a), a->strides[1], a->strides[2]},
                  .b = {tpu_tensor_data(b), b->strides[1], b->strides[2]},
                  .a_unsigned = a_unsigned,
                  .out = tpu_tensor_data(out), .ors = out->strides[1], .ocs = out->strides[2],
                  .m = m, .n = n, .k = k};
  if (m == 0 || n == 0)
    return TPU_OK;
  if (k > 0 && tpu_matmul_has_int8_kernel() && run_vnni(&j))
    return TPU_OK;
  return run_portable(&j);
}
