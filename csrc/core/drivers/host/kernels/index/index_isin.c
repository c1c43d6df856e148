/* The ISIN kernel (contract in ops/tpu_ops_index.h). Each value is read as a key that compares
 * with the dtype's own ==: a double for the floating dtypes (exact for all four), an int64 for
 * the integers. A few test elements are compared one by one; a larger set is sorted once, without
 * its NaNs (which equal nothing), and each element is looked up by binary search, so a call costs
 * O((n + m) log m) for n elements and m test elements. Elements run split over the pool. */
#include <stdlib.h>

#include "drivers/host/engine/engine_iter.h"
#include "drivers/host/kernels/kernels.h"

/* Test sets up to this size are scanned: no sort, and a scan of a few keys beats a search. */
#define SCAN_MAX 16

typedef union key {
  double f;
  int64_t i;
} key;

static key load_key(const char *p, tpu_dtype dtype) {
  key k;
  switch (dtype) {
  case TPU_UINT8: k.i = *(const uint8_t *)p; break;
  case TPU_INT8: k.i = *(const int8_t *)p; break;
  case TPU_INT16: {
    int16_t v;
    memcpy(&v, p, sizeof v);
    k.i = v;
    break;
  }
  case TPU_INT32: {
    int32_t v;
    memcpy(&v, p, sizeof v);
    k.i = v;
    break;
  }
  case TPU_INT64: memcpy(&k.i, p, sizeof k.i); break;
  default: k.f = tpu_real_load(p, dtype); break;
  }
  return k;
}

static int compare_f(const void *a, const void *b) {
  double x = ((const key *)a)->f, y = ((const key *)b)->f;
  return (x > y) - (x < y);
}

static int compare_i(const void *a, const void *b) {
  int64_t x = ((const key *)a)->i, y = ((const key *)b)->i;
  return (x > y) - (x < y);
}

typedef struct isin_set {
  key *keys; /* no NaN; sorted when count > SCAN_MAX */
  int64_t count;
  bool real;
  tpu_dtype dtype;
  bool invert;
} isin_set;

static bool equal(const isin_set *s, key a, key b) { return s->real ? a.f == b.f : a.i == b.i; }

static bool less(const isin_set *s, key a, key b) { return s->real ? a.f < b.f : a.i < b.i; }

static bool contains(const isin_set *s, key x) {
  if (s->count <= SCAN_MAX) {
    for (int64_t i = 0; i < s->count; i++)
      if (equal(s, x, s->keys[i]))
        return true;
    return false;
  }
  int64_t lo = 0, hi = s->count; /* the first key not less than x */
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (less(s, s->keys[mid], x))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < s->count && equal(s, x, s->keys[lo]);
}

/* Operands: 0 = out (bool), 1 = elements. */
static void isin_loop(char **data, const int64_t *strides, int64_t n, void *ctx) {
  const isin_set *s = ctx;
  for (int64_t i = 0; i < n; i++)
    data[0][i * strides[0]] = (char)(contains(s, load_key(data[1] + i * strides[1], s->dtype)) !=
                                     s->invert);
}

/* Reads the test elements into s->keys without their NaNs; a set too large to scan is sorted. */
static tpu_status load_set(isin_set *s, const tpu_tensor *test) {
  int64_t m = test->sizes[0];
  s->keys = malloc((size_t)m * sizeof *s->keys);
  if (!s->keys)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "isin: cannot allocate %lld test elements",
                     (long long)m);
  const char *base = tpu_tensor_data(test);
  int64_t stride = test->strides[0] * (int64_t)tpu_dtype_size(test->dtype);
  s->count = 0;
  for (int64_t i = 0; i < m; i++) {
    key k = load_key(base + i * stride, test->dtype);
    if (!s->real || k.f == k.f)
      s->keys[s->count++] = k;
  }
  if (s->count > SCAN_MAX)
    qsort(s->keys, (size_t)s->count, sizeof *s->keys, s->real ? compare_f : compare_i);
  return TPU_OK;
}

tpu_status tpu_kernel_isin(const tpu_op_call *call) {
  const tpu_tensor *elements = &call->tensors[0], *test = &call->tensors[1];
  const tpu_tensor *out = &call->tensors[2];
  tpu_dtype dtype = elements->dtype;
  bool supported = dtype != TPU_BOOL && tpu_dtype_is_computable(dtype) &&
                   !tpu_dtype_is_complex(dtype);
  if (!supported || test->dtype != dtype || out->dtype != TPU_BOOL || test->ndim != 1 ||
      test->sizes[0] < 1 || !tpu_tensor_same_sizes(elements, out))
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "isin: unsupported call (%s elements)",
                     tpu_dtype_name(dtype));
  isin_set s = {.real = tpu_dtype_is_floating(dtype), .dtype = dtype,
                .invert = call->scalars[0].i != 0};
  tpu_status st = load_set(&s, test);
  if (st != TPU_OK)
    return st;
  tpu_iter it;
  tpu_iter_init(&it, out->ndim, out->sizes);
  tpu_iter_add_tensor(&it, out);
  tpu_iter_add_tensor(&it, elements);
  tpu_iter_build(&it, 0);
  tpu_iter_run_parallel(&it, isin_loop, &s);
  free(s.keys);
  return TPU_OK;
}
