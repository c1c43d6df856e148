/* The HISTC kernel (contract in ops/tpu_ops_sort.h): histc and bincount. The elements split into
 * chunks over the pool, each counting into a histogram of its own (int64 counts, or double sums
 * of weights), which are added up in chunk order at the end, so the result depends only on the
 * shapes and the thread count. The bin of an element is computed in the type the contract names
 * for its dtype, with one loop per such type. */
#include <stdlib.h>
#include <string.h>

#include "drivers/host/kernels/kernels.h"
#include "drivers/host/kernels/sort/sort.h"
#include "drivers/host/kernels/reduce/reduce.h"
#include "drivers/host/engine/engine_iter.h"
#include "drivers/host/engine/engine_pool.h"

typedef struct histo {
  tpu_dtype dtype, wdtype; /* the input's and the weights' */
  int64_t bins;
  double min, max;
  bool weighted;
  tpu_iter it;   /* operand 0 = input [, 1 = weights] */
  int chunks;    /* each with `bins` counters */
  int64_t *counts;
  double *sums;
} histo;

typedef struct chunk_ctx {
  const histo *h;
  int64_t *counts;
  double *sums;
} chunk_ctx;

/* Adds the element's weight (w points at it, or NULL) to bin pos. */
static inline void add(const chunk_ctx *c, int64_t pos, const char *w) {
  if (c->sums)
    c->sums[pos] += tpu_real_load(w, c->h->wdtype);
  else
    c->counts[pos]++;
}

/* The bin of float x, or -1 outside [lo, hi] (NaN included). */
static inline int64_t bin_f(float x, float lo, float hi, float bins, int64_t n) {
  if (!(x >= lo && x <= hi))
    return -1;
  int64_t pos = (int64_t)((x - lo) * bins / (hi - lo));
  return pos >= n ? n - 1 : pos;
}

static inline int64_t bin_d(double x, double lo, double hi, double bins, int64_t n) {
  if (!(x >= lo && x <= hi))
    return -1;
  int64_t pos = (int64_t)((x - lo) * bins / (hi - lo));
  return pos >= n ? n - 1 : pos;
}

static inline int64_t bin_i(int64_t x, int64_t lo, int64_t hi, int64_t n) {
  if (x < lo || x > hi)
    return -1;
  int64_t pos = (int64_t)((uint64_t)(x - lo) * (uint64_t)n / (uint64_t)(hi - lo));
  return pos >= n ? n - 1 : pos;
}

/* x rounded to bfloat16 or float16, as each operation of those types rounds on PyTorch CPU. */
static inline float narrow(tpu_dtype dt, float x) {
  return dt == TPU_BFLOAT16 ? tpu_bf16_to_f32(tpu_f32_to_bf16(x))
                            : tpu_f16_to_f32(tpu_f32_to_f16(x));
}

static void count_run(char **data, const int64_t *strides, int64_t n, void *ctx) {
  const chunk_ctx *c = ctx;
  const histo *h = c->h;
  const char *x = data[0], *w = h->weighted ? data[1] : NULL;
  const int64_t ws = h->weighted ? strides[1] : 0, xs = strides[0], nb = h->bins;
  switch (h->dtype) {
  case TPU_FLOAT32: {
    const float lo = (float)h->min, hi = (float)h->max, bins = (float)nb;
    if (!w && xs == (int64_t)sizeof(float)) { /* the dense unweighted loop */
      for (int64_t j = 0; j < n; j++) {
        float v;
        memcpy(&v, x + j * xs, sizeof v);
        int64_t pos = bin_f(v, lo, hi, bins, nb);
        if (pos >= 0)
          c->counts[pos]++;
      }
      return;
    }
    for (int64_t j = 0; j < n; j++) {
      float v;
      memcpy(&v, x + j * xs, sizeof v);
      int64_t pos = bin_f(v, lo, hi, bins, nb);
      if (pos >= 0)
        add(c, pos, w + j * ws);
    }
    return;
  }
  case TPU_BFLOAT16:
  case TPU_FLOAT16: {
    const tpu_dtype dt = h->dtype;
    const float lo = (float)h->min, hi = (float)h->max, bins = narrow(dt, (float)nb),
                range = narrow(dt, hi - lo);
    for (int64_t j = 0; j < n; j++) {
      const float v = (float)tpu_real_load(x + j * xs, dt);
      if (!(v >= lo && v <= hi))
        continue;
      int64_t pos = (int64_t)narrow(dt, narrow(dt, narrow(dt, v - lo) * bins) / range);
      add(c, pos >= nb ? nb - 1 : pos, w + j * ws);
    }
    return;
  }
  case TPU_FLOAT64:
    for (int64_t j = 0; j < n; j++) {
      int64_t pos = bin_d(tpu_real_load(x + j * xs, TPU_FLOAT64), h->min, h->max, (double)nb, nb);
      if (pos >= 0)
        add(c, pos, w + j * ws);
    }
    return;
  default: {
    const int64_t lo = (int64_t)h->min, hi = (int64_t)h->max;
    for (int64_t j = 0; j < n; j++) {
      int64_t pos = bin_i(tpu_sort_load_int(x + j * xs, h->dtype), lo, hi, nb);
      if (pos >= 0)
        add(c, pos, w + j * ws);
    }
    return;
  }
  }
}

static void count_chunk(int64_t begin, int64_t end, int piece, void *ctx) {
  const histo *h = ctx;
  chunk_ctx c = {h, h->counts ? h->counts + piece * h->bins : NULL,
                 h->sums ? h->sums + piece * h->bins : NULL};
  const int64_t numel = h->it.numel;
  tpu_iter_run(&h->it, numel * begin / h->chunks, numel * end / h->chunks, count_run, &c);
}

/* Checks the call against the contract. */
static tpu_status check_call(const tpu_op_call *call) {
  const tpu_tensor *in = &call->tensors[0], *out = &call->tensors[call->n_inputs];
  if (call->n_inputs < 1 || call->n_inputs > 2 || call->n_outputs != 1 || out->ndim != 1)
    return tpu_error(TPU_ERR_VALUE, "histc: bad tensor count or output rank");
  if (call->n_inputs == 2 && (!tpu_tensor_same_sizes(in, &call->tensors[1]) ||
                              !tpu_dtype_is_floating(call->tensors[1].dtype)))
    return tpu_error(TPU_ERR_VALUE, "histc: weights take the input's sizes, a floating dtype");
  if (!tpu_dtype_is_computable(in->dtype) || tpu_dtype_is_complex(in->dtype) ||
      in->dtype == TPU_BOOL || (!tpu_dtype_is_floating(out->dtype) && out->dtype != TPU_INT64))
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "histc is not implemented from %s to %s",
                     tpu_dtype_name(in->dtype), tpu_dtype_name(out->dtype));
  if (!(call->scalars[0].f < call->scalars[1].f))
    return tpu_error(TPU_ERR_VALUE, "histc: min must be below max");
  return TPU_OK;
}

tpu_status tpu_kernel_histc(const tpu_op_call *call) {
  tpu_status st = check_call(call);
  if (st != TPU_OK)
    return st;
  const tpu_tensor *in = &call->tensors[0], *out = &call->tensors[call->n_inputs];
  histo h = {.dtype = in->dtype, .bins = out->sizes[0], .min = call->scalars[0].f,
             .max = call->scalars[1].f, .weighted = call->n_inputs == 2};
  if (h.dtype == TPU_BFLOAT16 || h.dtype == TPU_FLOAT16) { /* min and max in the input's dtype */
    char lo[8], hi[8];
    rk_store(h.dtype, lo, false, 0, h.min);
    rk_store(h.dtype, hi, false, 0, h.max);
    h.min = tpu_real_load(lo, h.dtype);
    h.max = tpu_real_load(hi, h.dtype);
  }
  if (h.weighted)
    h.wdtype = call->tensors[1].dtype;
  if (h.bins == 0)
    return TPU_OK;
  const int64_t size = (int64_t)tpu_dtype_size(in->dtype);
  int64_t xst[TPU_MAX_DIMS], wst[TPU_MAX_DIMS];
  for (int d = 0; d < in->ndim; d++) {
    xst[d] = in->strides[d] * size;
    wst[d] = h.weighted ? call->tensors[1].strides[d] *
                              (int64_t)tpu_dtype_size(call->tensors[1].dtype)
                        : 0;
  }
  tpu_iter_init(&h.it, in->ndim, in->sizes);
  tpu_iter_add(&h.it, tpu_tensor_data(in), size, xst);
  if (h.weighted)
    tpu_iter_add(&h.it, tpu_tensor_data(&call->tensors[1]),
                 (int64_t)tpu_dtype_size(call->tensors[1].dtype), wst);
  tpu_iter_build(&h.it, 0);
  /* Chunks only where each has many elements per bin it must clear and add. */
  int64_t grain = TPU_ITER_GRAIN > 4 * h.bins ? TPU_ITER_GRAIN : 4 * h.bins;
  h.chunks = tpu_parallel_chunks(h.it.numel, grain);
  if (h.chunks < 1)
    h.chunks = 1;
  const size_t cells = (size_t)h.chunks * (size_t)h.bins;
  if (h.weighted)
    h.sums = calloc(cells, sizeof *h.sums);
  else
    h.counts = calloc(cells, sizeof *h.counts);
  if (!h.sums && !h.counts)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "histc: out of host memory for %lld bins",
                     (long long)h.bins);
  if (h.it.numel > 0)
    tpu_parallel_for(h.chunks, 1, count_chunk, &h);
  char *o = tpu_tensor_data(out);
  const int64_t ostep = out->strides[0] * (int64_t)tpu_dtype_size(out->dtype);
  for (int64_t b = 0; b < h.bins; b++) {
    int64_t count = 0;
    double sum = 0;
    for (int k = 0; k < h.chunks; k++) {
      if (h.weighted)
        sum += h.sums[(size_t)k * (size_t)h.bins + (size_t)b];
      else
        count += h.counts[(size_t)k * (size_t)h.bins + (size_t)b];
    }
    rk_store(out->dtype, o + b * ostep, !h.weighted, count, sum);
  }
  free(h.counts);
  free(h.sums);
  return TPU_OK;
}
