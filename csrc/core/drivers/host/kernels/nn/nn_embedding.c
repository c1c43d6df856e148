/* The EMBEDDING_BACKWARD kernel (contract in ops/tpu_ops_nn.h). As in PyTorch CPU, the rows of
 * grad_weight are split over threads and every thread scans all indices, adding the rows it owns
 * in increasing n: sums do not depend on the thread count. */
#include <stdatomic.h>

#include "drivers/host/kernels/index/index_util.h"
#include "drivers/host/kernels/kernels.h"
#include "drivers/host/engine/engine_pool.h"

typedef struct embed {
  const tpu_tensor *grad, *indices, *gw, *counts;
  int64_t N, V, D, padding;
  int64_t index_size, index_stride; /* bytes */
  const char *index_data;
  tpu_accum_fn add;
  atomic_bool bad;
} embed;

static int64_t index_at(const embed *e, int64_t n) {
  return tpu_index_load(e->index_data + n * e->index_stride, e->index_size);
}

static void check_range(int64_t begin, int64_t end, int chunk, void *arg) {
  (void)chunk;
  embed *e = arg;
  bool bad = false;
  for (int64_t n = begin; n < end; n++) {
    int64_t k = index_at(e, n);
    bad |= k != e->padding && (k < 0 || k >= e->V);
  }
  if (bad)
    atomic_store_explicit(&e->bad, true, memory_order_relaxed);
}

static char *row(const tpu_tensor *t, int64_t r) {
  return (char *)tpu_tensor_data(t) + r * t->strides[0] * (int64_t)tpu_dtype_size(t->dtype);
}

static void rows_range(int64_t begin, int64_t end, int chunk, void *arg) {
  (void)chunk;
  const embed *e = arg;
  int64_t gs = e->gw->strides[1] * (int64_t)tpu_dtype_size(e->gw->dtype);
  int64_t ss = e->grad->strides[1] * (int64_t)tpu_dtype_size(e->grad->dtype);
  int64_t *counts = e->counts ? tpu_tensor_data(e->counts) : NULL;
  if (counts) {
    for (int64_t k = begin; k < end; k++)
      counts[k] = 0;
    for (int64_t n = 0; n < e->N; n++) {
      int64_t k = index_at(e, n);
      if (k >= begin && k < end)
        counts[k]++;
    }
  }
  for (int64_t n = 0; n < e->N; n++) {
    int64_t k = index_at(e, n);
    if (k == e->padding || k < begin || k >= end)
      continue;
    tpu_accum_alpha alpha = {counts ? 1.0 / (double)counts[k] : 1.0, 0.0, 1, false};
    e->add(row(e->gw, k), gs, row(e->grad, n), ss, e->D, &alpha);
  }
}

tpu_status tpu_kernel_embedding_backward(const tpu_op_call *call) {
  const tpu_tensor *grad = &call->tensors[0], *indices = &call->tensors[1];
  const tpu_tensor *gw = &call->tensors[2];
  bool scale = call->scalars[1].i != 0;
  const tpu_tensor *counts = scale ? &call->tensors[3] : NULL;
  if (grad->ndim != 2 || indices->ndim != 1 || gw->ndim != 2 || grad->dtype != gw->dtype ||
      !tpu_index_dtype_ok(indices->dtype) || grad->sizes[0] != indices->sizes[0] ||
      grad->sizes[1] != gw->sizes[1] || call->n_outputs != (scale ? 2 : 1) ||
      (counts && (counts->dtype != TPU_INT64 || counts->ndim != 1 ||
                  counts->sizes[0] != gw->sizes[0] || !tpu_tensor_is_contiguous(counts))))
    return tpu_error(TPU_ERR_VALUE, "embedding_dense_backward: malformed call");
  embed e = {
      .grad = grad, .indices = indices, .gw = gw, .counts = counts,
      .N = indices->sizes[0], .V = gw->sizes[0], .D = gw->sizes[1],
      .padding = call->scalars[0].i,
      .index_size = (int64_t)tpu_dtype_size(indices->dtype),
      .index_data = tpu_tensor_data(indices),
      .add = tpu_accum_loop(gw->dtype, TPU_ACCUM_ADD),
  };
  e.index_stride = e.index_size * indices->strides[0];
  atomic_init(&e.bad, false);
  if (!e.add)
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "embedding_dense_backward is not implemented for "
                     "%s", tpu_dtype_name(gw->dtype));
  tpu_parallel_for(e.N, TPU_ITER_GRAIN, check_range, &e);
  if (atomic_load(&e.bad)) {
    for (int64_t n = 0; n < e.N; n++) {
      int64_t k = index_at(&e, n);
      if (k != e.padding && (k < 0 || k >= e.V))
        return tpu_error(TPU_ERR_INDEX, "embedding_dense_backward(): index %lld is out of "
                         "bounds for %lld embeddings", (long long)k, (long long)e.V);
    }
  }
  tpu_zero_fill(gw);
  if (e.D > 0)
    tpu_parallel_for(e.V, 1, rows_range, &e);
  return TPU_OK;
}
