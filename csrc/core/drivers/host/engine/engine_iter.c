#include "drivers/host/engine/engine_iter.h"

#include <assert.h>
#include <string.h>

#include "drivers/host/engine/engine_pool.h"

void tpu_iter_init(tpu_iter *it, int ndim, const int64_t *shape) {
  assert(ndim >= 0 && ndim <= TPU_MAX_DIMS);
  it->nops = 0;
  it->ndim = ndim;
  it->numel = 1;
  for (int d = 0; d < ndim; d++) {
    it->shape[ndim - 1 - d] = shape[d];
    it->numel *= shape[d];
  }
}

void tpu_iter_add(tpu_iter *it, void *data, int64_t elsize, const int64_t *byte_strides) {
  assert(it->nops < TPU_ITER_MAX_OPERANDS);
  int op = it->nops++;
  it->data[op] = data;
  it->elsize[op] = elsize;
  for (int d = 0; d < it->ndim; d++)
    it->strides[it->ndim - 1 - d][op] = byte_strides[d];
}

void tpu_iter_add_tensor(tpu_iter *it, const tpu_tensor *t) {
  assert(t->ndim == it->ndim);
  int64_t elsize = (int64_t)tpu_dtype_size(t->dtype);
  int64_t byte_strides[TPU_MAX_DIMS];
  /* The stride of a size-1 dimension is never used and may be anything (PyTorch leaves such
   * strides arbitrary), nor is any stride of a view without elements (tpu_tensor_check accepts it
   * whatever its strides), so those are not multiplied, which could overflow. */
  for (int d = 0; d < t->ndim; d++)
    byte_strides[d] = t->sizes[d] == 1 || it->numel == 0 ? 0 : t->strides[d] * elsize;
  tpu_iter_add(it, tpu_tensor_data(t), elsize, byte_strides);
}

static uint64_t magnitude(int64_t v) { return v < 0 ? -(uint64_t)v : (uint64_t)v; }

/* True when dimension a should be iterated inside dimension b: the first operand that is not
 * broadcast in either has a smaller stride in a. Operand 0 (the output) is asked first. */
static bool goes_inside(const tpu_iter *it, int a, int b) {
  for (int op = 0; op < it->nops; op++) {
    uint64_t sa = magnitude(it->strides[a][op]), sb = magnitude(it->strides[b][op]);
    if (sa == 0 || sb == 0)
      continue;
    if (sa != sb)
      return sa < sb;
  }
  return false;
}

static void move_dim(tpu_iter *it, int to, int from) {
  it->shape[to] = it->shape[from];
  memcpy(it->strides[to], it->strides[from], sizeof it->strides[from]);
}

static void swap_dims(tpu_iter *it, int a, int b) {
  int64_t shape = it->shape[a];
  int64_t strides[TPU_ITER_MAX_OPERANDS];
  memcpy(strides, it->strides[a], sizeof strides);
  move_dim(it, a, b);
  it->shape[b] = shape;
  memcpy(it->strides[b], strides, sizeof strides);
}

/* Dimension outer can fold into inner when, for every operand, stepping once in outer is the same
 * as stepping shape[inner] times in inner. */
static bool can_merge(const tpu_iter *it, int inner, int outer) {
  for (int op = 0; op < it->nops; op++)
    if (it->strides[outer][op] != it->strides[inner][op] * it->shape[inner])
      return false;
  return true;
}

void tpu_iter_build(tpu_iter *it, unsigned flags) {
  int nd = 0;
  for (int d = 0; d < it->ndim; d++)
    if (it->shape[d] != 1)
      move_dim(it, nd++, d);
  if (it->numel <= 1) { /* no element, or a single one: one dimension of size numel */
    it->ndim = 1;
    it->shape[0] = it->numel;
    memset(it->strides[0], 0, sizeof it->strides[0]);
    return;
  }
  /* Insertion sort: stable, so dimensions the strides cannot order keep their row-major order. */
  if (!(flags & TPU_ITER_LOGICAL_ORDER))
    for (int i = 1; i < nd; i++)
      for (int j = i; j > 0 && goes_inside(it, j, j - 1); j--)
        swap_dims(it, j, j - 1);
  int kept = 0;
  for (int d = 1; d < nd; d++) {
    if (can_merge(it, kept, d))
      it->shape[kept] *= it->shape[d];
    else
      move_dim(it, ++kept, d);
  }
  it->ndim = kept + 1;
}

/* The walk behind both run functions: exactly one of loop and indexed is non-NULL. */
static void run(const tpu_iter *it, int64_t begin, int64_t end, tpu_loop_fn loop,
                tpu_loop_indexed_fn indexed, void *ctx) {
  if (begin < 0)
    begin = 0;
  if (end > it->numel)
    end = it->numel;
  if (begin >= end)
    return;
  const int nops = it->nops, ndim = it->ndim;
  int64_t idx[TPU_MAX_DIMS];
  char *ptr[TPU_ITER_MAX_OPERANDS];
  memcpy(ptr, it->data, sizeof ptr);
  int64_t rest = begin;
  for (int d = 0; d < ndim; d++) {
    idx[d] = rest % it->shape[d];
    rest /= it->shape[d];
    for (int op = 0; op < nops; op++)
      ptr[op] += idx[d] * it->strides[d][op];
  }
  for (int64_t pos = begin;;) {
    int64_t n = it->shape[0] - idx[0];
    if (n > end - pos)
      n = end - pos;
    char *data[TPU_ITER_MAX_OPERANDS]; /* a copy: the loop may not move our cursor */
    memcpy(data, ptr, sizeof data);
    if (loop)
      loop(data, it->strides[0], n, ctx);
    else
      indexed(data, it->strides[0], n, pos, ctx);
    pos += n;
    if (pos >= end)
      return;
    /* The run reached the end of dimension 0: rewind it and carry into the outer dimensions. Since
     * pos < end <= numel, the carry stops before the outermost dimension overflows. */
    for (int op = 0; op < nops; op++)
      ptr[op] -= idx[0] * it->strides[0][op];
    idx[0] = 0;
    for (int d = 1;; d++) {
      if (idx[d] + 1 < it->shape[d]) {
        idx[d]++;
        for (int op = 0; op < nops; op++)
          ptr[op] += it->strides[d][op];
        break;
      }
      for (int op = 0; op < nops; op++)
        ptr[op] -= idx[d] * it->strides[d][op];
      idx[d] = 0;
    }
  }
}

void tpu_iter_run(const tpu_iter *it, int64_t begin, int64_t end, tpu_loop_fn loop, void *ctx) {
  run(it, begin, end, loop, NULL, ctx);
}

void tpu_iter_run_indexed(const tpu_iter *it, int64_t begin, int64_t end, tpu_loop_indexed_fn loop,
                          void *ctx) {
  run(it, begin, end, NULL, loop, ctx);
}

typedef struct parallel_run {
  const tpu_iter *it;
  tpu_loop_fn loop;
  tpu_loop_indexed_fn indexed;
  void *ctx;
} parallel_run;

static void run_chunk(int64_t begin, int64_t end, int chunk, void *arg) {
  (void)chunk;
  const parallel_run *p = arg;
  run(p->it, begin, end, p->loop, p->indexed, p->ctx);
}

void tpu_iter_run_parallel(const tpu_iter *it, tpu_loop_fn loop, void *ctx) {
  parallel_run p = {.it = it, .loop = loop, .ctx = ctx};
  tpu_parallel_for(it->numel, TPU_ITER_GRAIN, run_chunk, &p);
}

void tpu_iter_run_indexed_parallel(const tpu_iter *it, tpu_loop_indexed_fn loop, void *ctx) {
  parallel_run p = {.it = it, .indexed = loop, .ctx = ctx};
  tpu_parallel_for(it->numel, TPU_ITER_GRAIN, run_chunk, &p);
}
