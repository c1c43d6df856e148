/* The SORT kernel (contract in ops/tpu_ops_sort.h). Rows along the dimension are independent and
 * split over the pool; each chunk of rows owns scratch for one row's items, loads a row as keyed
 * items (kernels/sort/sort.h), sorts them and writes the first k values and positions. A short
 * prefix of a long row (topk) is selected in one pass where that costs less (select_pays);
 * otherwise the keys' most significant bytes are counted first and only the elements whose byte
 * can be in the prefix, usually few, are loaded. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/kernels/kernels.h"
#include "drivers/host/kernels/sort/sort.h"
#include "drivers/host/engine/engine_iter.h"
#include "drivers/host/engine/engine_pool.h"

/* A prefix shorter than 1/SORT_PREFIX_RATIO of its row is loaded narrowed down. */
#define SORT_PREFIX_RATIO 8

typedef struct sorter {
  const tpu_sort_keys *keys;
  uint64_t flip;  /* XORed into every key: the width's mask for descending, else 0 */
  int key_bytes;  /* the element size */
  int64_t n, k;   /* elements per row, and those written */
  int64_t in_step, value_step, index_step; /* bytes between a row's elements */
  tpu_iter it;    /* over the row starts: operand 0 = values, 1 = indices, 2 = input */
  int chunks;     /* of rows, each with scratch for 2 n items */
  tpu_sort_item *scratch;
} sorter;

typedef struct chunk_ctx {
  const sorter *s;
  tpu_sort_item *items; /* the chunk's scratch */
} chunk_ctx;

/* Copies element `index` of the input row to position j of the values row. */
static inline void copy_element(const sorter *s, char *values, const char *in, int64_t j,
                                int64_t index) {
  char *to = values + j * s->value_step;
  const char *from = in + index * s->in_step;
  switch (s->key_bytes) {
  case 1: *to = *from; break;
  case 2: memcpy(to, from, 2); break;
  case 4: memcpy(to, from, 4); break;
  default: memcpy(to, from, 8); break;
  }
}

/* The largest most significant key byte among the row's first k elements in order. */
static uint64_t prefix_top(const sorter *s, const char *in) {
  int64_t counts[256] = {0}, seen = 0;
  s->keys->count(counts, in, s->n, s->in_step, s->flip);
  uint64_t top = 0;
  while ((seen += counts[top]) < s->k)
    top++;
  return top;
}

/* Whether selecting the prefix in one pass costs less than sorting the loaded elements. On random
 * rows a select inserts about k (1 + ln(n / k)) items, each shifting k / 2 on average; loading and
 * sorting costs some 6 such shifts an element. */
static bool select_pays(int64_t n, int64_t k) {
  if (k > TPU_SORT_SELECT_MAX || k >= n / SORT_PREFIX_RATIO)
    return false;
  return (double)k * (double)k * (1.0 + log((double)n / (double)k)) <= 12.0 * (double)n;
}

static void sort_row(const sorter *s, tpu_sort_item *items, char *values, char *indices,
                     const char *in) {
  const tpu_sort_item *sorted = items;
  if (select_pays(s->n, s->k)) {
    s->keys->select(items, in, s->n, s->in_step, s->flip, s->k);
  } else {
    const uint64_t top = s->k < s->n / SORT_PREFIX_RATIO ? prefix_top(s, in) : 0xff;
    const int64_t m = s->keys->load(items, in, s->n, s->in_step, s->flip, top);
    sorted = tpu_sort_items(items, items + s->n, m, s->key_bytes);
  }
  for (int64_t j = 0; j < s->k; j++) {
    copy_element(s, values, in, j, sorted[j].index);
    memcpy(indices + j * s->index_step, &sorted[j].index, sizeof(int64_t));
  }
}

static void sort_run(char **data, const int64_t *strides, int64_t n, void *ctx) {
  const chunk_ctx *c = ctx;
  for (int64_t j = 0; j < n; j++)
    sort_row(c->s, c->items, data[0] + j * strides[0], data[1] + j * strides[1],
             data[2] + j * strides[2]);
}

/* Runs chunks [begin, end) of rows. The pool is given the chunks themselves, so it never makes
 * more pieces than there is scratch for, whatever the thread count is by then. */
static void sort_chunk(int64_t begin, int64_t end, int piece, void *ctx) {
  const sorter *s = ctx;
  chunk_ctx c = {s, s->scratch + 2 * s->n * piece};
  const int64_t rows = s->it.numel;
  tpu_iter_run(&s->it, rows * begin / s->chunks, rows * end / s->chunks, sort_run, &c);
}

/* Checks the call's shapes against the contract; sets *dim. */
static tpu_status check_call(const tpu_op_call *call, int *dim) {
  if (call->n_inputs != 1 || call->n_outputs != 2)
    return tpu_error(TPU_ERR_VALUE, "sort takes one input and two outputs");
  const tpu_tensor *in = &call->tensors[0], *values = &call->tensors[1],
                   *indices = &call->tensors[2];
  int64_t d = call->scalars[0].i;
  if (in->ndim < 1 || d < 0 || d >= in->ndim || values->ndim != in->ndim ||
      indices->ndim != in->ndim)
    return tpu_error(TPU_ERR_VALUE, "sort: bad dimension or output rank");
  for (int i = 0; i < in->ndim; i++)
    if (values->sizes[i] != indices->sizes[i] ||
        (i == d ? values->sizes[i] > in->sizes[i] : values->sizes[i] != in->sizes[i]))
      return tpu_error(TPU_ERR_VALUE, "sort: output sizes do not fit the input's");
  if (values->dtype != in->dtype || indices->dtype != TPU_INT64)
    return tpu_error(TPU_ERR_VALUE, "sort: values take the input's dtype, indices int64");
  *dim = (int)d;
  return TPU_OK;
}

tpu_status tpu_kernel_sort(const tpu_op_call *call) {
  int dim = 0;
  tpu_status st = check_call(call, &dim);
  if (st != TPU_OK)
    return st;
  const tpu_tensor *in = &call->tensors[0], *values = &call->tensors[1],
                   *indices = &call->tensors[2];
  sorter s = {.keys = tpu_sort_keys_of(in->dtype)};
  if (!s.keys)
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "sort is not implemented for %s",
                     tpu_dtype_name(in->dtype));
  if (tpu_tensor_numel(values) == 0)
    return TPU_OK;
  s.key_bytes = (int)tpu_dtype_size(in->dtype);
  s.flip = call->scalars[1].i ? ~0ull >> (64 - 8 * s.key_bytes) : 0;
  s.n = in->sizes[dim];
  s.k = values->sizes[dim];
  const int64_t size = s.key_bytes, index_size = (int64_t)sizeof(int64_t);
  s.in_step = in->strides[dim] * size;
  s.value_step = values->strides[dim] * size;
  s.index_step = indices->strides[dim] * index_size;
  /* The iterator covers the row starts: the sorted dimension gets size 1. */
  int64_t shape[TPU_MAX_DIMS], vst[TPU_MAX_DIMS], ist[TPU_MAX_DIMS], xst[TPU_MAX_DIMS];
  for (int d = 0; d < in->ndim; d++) {
    shape[d] = d == dim ? 1 : in->sizes[d];
    vst[d] = values->strides[d] * size;
    ist[d] = indices->strides[d] * index_size;
    xst[d] = in->strides[d] * size;
  }
  tpu_iter_init(&s.it, in->ndim, shape);
  tpu_iter_add(&s.it, tpu_tensor_data(values), size, vst);
  tpu_iter_add(&s.it, tpu_tensor_data(indices), index_size, ist);
  tpu_iter_add(&s.it, tpu_tensor_data(in), size, xst);
  tpu_iter_build(&s.it, 0);
  int64_t grain = TPU_ITER_GRAIN / s.n;
  grain = grain > 1 ? grain : 1;
  s.chunks = tpu_parallel_chunks(s.it.numel, grain);
  s.scratch = malloc((size_t)s.chunks * 2 * (size_t)s.n * sizeof *s.scratch);
  if (!s.scratch)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "sort: out of host memory for %d rows of %lld",
                     s.chunks, (long long)s.n);
  tpu_parallel_for(s.chunks, 1, sort_chunk, &s);
  free(s.scratch);
  return TPU_OK;
}
