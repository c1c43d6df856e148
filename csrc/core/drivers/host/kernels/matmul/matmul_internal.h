/* Private to the matmul kernels: one GEMM job, cut into tiles that threads run independently. */
#ifndef TPU_HOST_KERNELS_MATMUL_INTERNAL_H
#define TPU_HOST_KERNELS_MATMUL_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/tpu_dtype.h"
#include "base/tpu_status.h"
#include "drivers/host/engine/engine_pool.h"
#include "ops/tpu_op.h"

/* Multiply-adds below which a GEMM runs on one thread: waking the pool would cost more than it
 * saves. */
#define TPU_GEMM_SERIAL_WORK (1 << 20)

/* A [batch, rows, cols] operand: element (b, i, j) at data + (b * bs + i * rs + j * cs) * elsize.
 * Strides of size-1 dimensions are normalized so that BLAS layout checks can ignore them. */
typedef struct gemm_view {
  char *data;
  int64_t bs, rs, cs;
} gemm_view;

typedef struct gemm_job {
  tpu_dtype dtype;
  int64_t elsize;
  int64_t batch, m, n, k;
  bool sum_batches; /* out has one batch: the sum over A and B's batches (addbmm) */
  bool has_c;       /* C is read: present and beta != 0 */
  bool conj_a, conj_b; /* complex operands read conjugated (PyTorch's lazy conj views) */
  gemm_view a, b, c, out;
  tpu_scalar alpha, beta, alpha_im, beta_im;
} gemm_job;

/* Writes out[bo][m0 + i][n0 + j] = alpha * acc[i * ld + j] + beta * C[...] for i < mt, j < nt.
 * acc holds float for float32/bfloat16/float16, double, float/double complex pairs, or uint32_t
 * (uint64_t for int64) with wrapping arithmetic for integer dtypes. */
void tpu_gemm_store(const gemm_job *job, int64_t bo, const void *acc, int64_t ld, int64_t m0,
                    int64_t mt, int64_t n0, int64_t nt);

/* How the packed kernels (bf16, fp32) share a job among the pool's threads: items of (output
 * batch, block of mc rows, group of B's strips of nr columns), claimed dynamically, so threads
 * end together. Every output element belongs to one item, so results do not depend on which
 * thread runs what. */
typedef struct gemm_items {
  int64_t mc, nstrips, mblocks, groups, items;
  _Atomic int64_t next;
} gemm_items;

/* Cuts job j into items: at least four per thread where the rows allow, splitting the strips into
 * groups when rows are few. */
static inline void tpu_gemm_items_plan(gemm_items *it, const gemm_job *j, int64_t mc, int64_t nr) {
  it->mc = mc;
  it->nstrips = (j->n + nr - 1) / nr;
  it->mblocks = (j->m + mc - 1) / mc;
  int64_t outputs = j->sum_batches ? 1 : j->batch;
  int64_t want = 4 * (int64_t)tpu_pool_threads(), have = outputs * it->mblocks;
  it->groups = have >= want ? 1 : (want + have - 1) / have;
  if (it->groups > it->nstrips)
    it->groups = it->nstrips;
  it->items = have * it->groups;
  atomic_init(&it->next, 0);
}

/* Claims the next item: its output batch, first row and strips [s0, s1). False when none is
 * left. Safe from every thread at once. */
static inline bool tpu_gemm_items_claim(gemm_items *it, int64_t *bo, int64_t *ic, int64_t *s0,
                                        int64_t *s1) {
  int64_t item = atomic_fetch_add(&it->next, 1);
  if (item >= it->items)
    return false;
  int64_t per_batch = it->mblocks * it->groups, t = item % per_batch, g = t % it->groups;
  *bo = item / per_batch;
  *ic = (t / it->groups) * it->mc;
  *s0 = it->nstrips * g / it->groups;
  *s1 = it->nstrips * (g + 1) / it->groups;
  return true;
}

/* Threads to run the items on: one per item up to the pool's size, one for small jobs. */
static inline int64_t tpu_gemm_items_threads(const gemm_items *it, const gemm_job *j) {
  double work = (double)j->batch * (double)j->m * (double)j->n * (double)j->k;
  if (work < TPU_GEMM_SERIAL_WORK)
    return 1;
  int64_t threads = tpu_pool_threads();
  return threads < it->items ? threads : it->items;
}

/* True when every item was claimed. A thread that cannot get its scratch memory claims none, so
 * after the run either all items ran or none did, and the caller can rerun the whole job on
 * another path (an in-place C is then still unwritten). */
static inline bool tpu_gemm_items_done(gemm_items *it) {
  return atomic_load(&it->next) >= it->items;
}

/* The AVX512-BF16 path: runs the whole bf16 job over the pool. False when the CPU lacks
 * AVX512-BF16, A or B holds a subnormal value (the instruction would read it as zero), or memory
 * runs out before any output is written (the caller then runs the portable path). */
bool tpu_gemm_bf16(const gemm_job *job);

/* The AVX-512 fp32 path: runs the whole float32 job over the pool. False when the CPU lacks
 * AVX-512, the job is too small to gain from packing, or memory runs out before any output is
 * written (the caller then runs the BLAS or portable path). */
bool tpu_gemm_f32(const gemm_job *job);

/* The AVX2 fp32 path for x @ W^T with few rows (matmul_small_f32.c): runs the whole float32 job
 * over the pool without packing. False when the CPU lacks AVX2 and FMA, the job has more rows or
 * a longer K than it takes, sums batches, or B is not W^T (then the BLAS or portable path runs). */
bool tpu_gemm_small_f32(const gemm_job *job);

#endif
