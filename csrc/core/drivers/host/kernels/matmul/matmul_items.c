/* The packed GEMM kernels' items (matmul_internal.h): how a job is cut, claimed and run
 * over the pool. */
#include "drivers/host/kernels/matmul/matmul_internal.h"
#include "drivers/host/engine/engine_pool.h"

void tpu_gemm_items_plan(gemm_items *it, const gemm_job *j, int64_t mc, int64_t nr) {
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

bool tpu_gemm_items_claim(gemm_items *it, int64_t *bo, int64_t *ic, int64_t *s0, int64_t *s1) {
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

bool tpu_gemm_items_done(gemm_items *it) { return atomic_load(&it->next) >= it->items; }

int64_t tpu_gemm_items_threads(const gemm_items *it, const gemm_job *j) {
  double work = (double)j->batch * (double)j->m * (double)j->n * (double)j->k;
  if (work < TPU_GEMM_SERIAL_WORK)
    return 1;
  int64_t threads = tpu_pool_threads();
  return threads < it->items ? threads : it->items;
}
