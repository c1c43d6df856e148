/* The SEARCH kernel (contract in ops/tpu_ops_sort.h): searchsorted and bucketize. The values are
 * taken a row (their last dimension) at a time, rows split over the pool; each row finds its
 * sorted row once and bisects it per value with PyTorch's predicates, in int64 for the integer
 * dtypes and double for the floating ones (both exact). */
#include <string.h>

#include "drivers/host/kernels/kernels.h"
#include "drivers/host/kernels/sort/sort.h"
#include "drivers/host/engine/engine_pool.h"

typedef struct searcher {
  const tpu_tensor *sorted, *values, *out;
  bool right, ints, shared; /* shared: one sorted row serves every value */
  int64_t n, m;             /* elements per sorted row, values per row */
} searcher;

/* The position of value v (element `at` of the values) in the sorted row at `row`. */
static int64_t bisect(const searcher *s, const char *row, int64_t step, const char *at) {
  const tpu_dtype dt = s->sorted->dtype;
  int64_t lo = 0, hi = s->n;
  if (s->ints) {
    const int64_t v = tpu_sort_load_int(at, dt);
    while (lo < hi) {
      int64_t mid = lo + ((hi - lo) >> 1), e = tpu_sort_load_int(row + mid * step, dt);
      if (s->right ? !(e > v) : !(e >= v))
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  }
  const double v = tpu_real_load(at, dt);
  while (lo < hi) {
    int64_t mid = lo + ((hi - lo) >> 1);
    double e = tpu_real_load(row + mid * step, dt);
    if (s->right ? !(e > v) : !(e >= v))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Byte offset of row r (the leading dimensions of t, all but its last) in t. */
static int64_t row_offset(const tpu_tensor *t, int64_t r) {
  int64_t off = 0;
  for (int d = t->ndim - 2; d >= 0; d--) {
    off += r % t->sizes[d] * t->strides[d];
    r /= t->sizes[d];
  }
  return off * (int64_t)tpu_dtype_size(t->dtype);
}

static int64_t last_stride(const tpu_tensor *t) {
  return t->ndim ? t->strides[t->ndim - 1] * (int64_t)tpu_dtype_size(t->dtype) : 0;
}

static void search_rows(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  const searcher *s = ctx;
  const char *sorted = tpu_tensor_data(s->sorted), *values = tpu_tensor_data(s->values);
  char *out = tpu_tensor_data(s->out);
  const int64_t sstep = last_stride(s->sorted), vstep = last_stride(s->values),
                ostep = last_stride(s->out);
  const bool wide = s->out->dtype == TPU_INT64;
  for (int64_t r = begin; r < end; r++) {
    const char *row = sorted + (s->shared ? 0 : row_offset(s->sorted, r));
    const char *v = values + row_offset(s->values, r);
    char *o = out + row_offset(s->out, r);
    for (int64_t j = 0; j < s->m; j++) {
      int64_t pos = bisect(s, row, sstep, v + j * vstep);
      if (wide) {
        memcpy(o + j * ostep, &pos, sizeof pos);
      } else {
        int32_t p32 = (int32_t)pos;
        memcpy(o + j * ostep, &p32, sizeof p32);
      }
    }
  }
}

/* Checks the call against the contract. */
static tpu_status check_call(const tpu_op_call *call) {
  const tpu_tensor *sorted = &call->tensors[0], *values = &call->tensors[1],
                   *out = &call->tensors[2];
  if (call->n_inputs != 2 || call->n_outputs != 1 || sorted->ndim < 1 ||
      !tpu_tensor_same_sizes(values, out))
    return tpu_error(TPU_ERR_VALUE, "search: bad tensor count or sizes");
  if (sorted->ndim > 1) {
    if (values->ndim != sorted->ndim)
      return tpu_error(TPU_ERR_VALUE, "search: values and sorted rows differ in rank");
    for (int d = 0; d + 1 < sorted->ndim; d++)
      if (values->sizes[d] != sorted->sizes[d])
        return tpu_error(TPU_ERR_VALUE, "search: values and sorted rows differ in size");
  }
  if (values->dtype != sorted->dtype || (out->dtype != TPU_INT64 && out->dtype != TPU_INT32))
    return tpu_error(TPU_ERR_VALUE, "search: values take the rows' dtype, out int64 or int32");
  if (!tpu_dtype_is_computable(sorted->dtype) || tpu_dtype_is_complex(sorted->dtype))
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "search is not implemented for %s",
                     tpu_dtype_name(sorted->dtype));
  return TPU_OK;
}

tpu_status tpu_kernel_search(const tpu_op_call *call) {
  tpu_status st = check_call(call);
  if (st != TPU_OK)
    return st;
  searcher s = {.sorted = &call->tensors[0], .values = &call->tensors[1],
                .out = &call->tensors[2], .right = call->scalars[0].i != 0};
  s.ints = !tpu_dtype_is_floating(s.sorted->dtype);
  s.shared = s.sorted->ndim == 1;
  s.n = s.sorted->sizes[s.sorted->ndim - 1];
  s.m = s.values->ndim ? s.values->sizes[s.values->ndim - 1] : 1;
  const int64_t numel = tpu_tensor_numel(s.values);
  if (numel == 0)
    return TPU_OK;
  const int64_t rows = numel / s.m;
  int64_t log_n = 1;
  while (((int64_t)1 << log_n) < s.n && log_n < 62)
    log_n++;
  int64_t grain = 32768 / (s.m * log_n);
  tpu_parallel_for(rows, grain > 1 ? grain : 1, search_rows, &s);
  return TPU_OK;
}
