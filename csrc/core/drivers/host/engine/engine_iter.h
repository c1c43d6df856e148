/* The strided n-d iterator every host kernel runs on (numpy's ufunc iterator and PyTorch's
 * TensorIterator are the models). A kernel describes up to TPU_ITER_MAX_OPERANDS operands over one
 * common shape (already broadcast: a broadcast dimension has stride 0); tpu_iter_build drops size-1
 * dimensions, orders the rest so the innermost loop has operand 0's smallest stride, and merges
 * dimensions that are contiguous for every operand; tpu_iter_run then calls a 1-D inner loop once
 * per innermost run. Operand 0 is, by convention, the output: it decides the memory order.
 *
 * Iteration covers a flat index space [0, numel); any sub-range can run on its own, which is how a
 * thread pool splits the work (running only reads the iterator, so threads may share one). With
 * TPU_ITER_LOGICAL_ORDER the flat index is the row-major logical index of the original shape,
 * which is what random-number kernels key their values on. */
#ifndef TPU_HOST_ENGINE_ITER_H
#define TPU_HOST_ENGINE_ITER_H

#include <stdbool.h>
#include <stdint.h>

#include "tensor/tpu_tensor.h"

#define TPU_ITER_MAX_OPERANDS 8

/* A 1-D inner loop over n elements: operand k's element i is at data[k] + i * strides[k] (bytes).
 * `ctx` is the kernel's. The loop may not assume alignment beyond the element size. */
typedef void (*tpu_loop_fn)(char **data, const int64_t *strides, int64_t n, void *ctx);

/* A 1-D inner loop that is also told the flat index of its first element. */
typedef void (*tpu_loop_indexed_fn)(char **data, const int64_t *strides, int64_t n, int64_t index,
                                    void *ctx);

/* Flags of tpu_iter_build. */
enum {
  /* Keep the row-major order of the original shape: no reordering, so the flat index of an element
   * is its logical index. Slower for transposed outputs; meant for kernels whose values depend on
   * the logical index (random numbers). */
  TPU_ITER_LOGICAL_ORDER = 1u << 0,
};

typedef struct tpu_iter {
  int nops;
  int ndim;      /* dimensions, innermost first; at least 1 after tpu_iter_build */
  int64_t numel; /* elements in the flat index space */
  int64_t shape[TPU_MAX_DIMS];
  int64_t strides[TPU_MAX_DIMS][TPU_ITER_MAX_OPERANDS]; /* bytes, [dim][operand] */
  char *data[TPU_ITER_MAX_OPERANDS];                    /* element [0, ..., 0] of each operand */
  int64_t elsize[TPU_ITER_MAX_OPERANDS];                /* bytes per element of each operand */
} tpu_iter;

/* Starts an iterator over `shape` (ndim <= TPU_MAX_DIMS, outermost first; NULL when ndim is 0)
 * with no operands. */
void tpu_iter_init(tpu_iter *it, int ndim, const int64_t *shape);

/* Adds an operand: element [0, ..., 0] at `data`, `elsize` bytes per element, and one byte stride
 * per dimension of the shape, outermost first. At most TPU_ITER_MAX_OPERANDS operands. */
void tpu_iter_add(tpu_iter *it, void *data, int64_t elsize, const int64_t *byte_strides);

/* Adds a tensor view as an operand; its sizes must equal the iterator's shape. */
void tpu_iter_add_tensor(tpu_iter *it, const tpu_tensor *t);

/* Reorders and coalesces the dimensions (see the header comment); call after the last add. */
void tpu_iter_build(tpu_iter *it, unsigned flags);

/* Calls `loop` over the elements with flat index in [begin, end), in order, one call per innermost
 * run (a run never crosses the innermost dimension's end). */
void tpu_iter_run(const tpu_iter *it, int64_t begin, int64_t end, tpu_loop_fn loop, void *ctx);

/* Same as tpu_iter_run, passing each run's first flat index to the loop. */
void tpu_iter_run_indexed(const tpu_iter *it, int64_t begin, int64_t end, tpu_loop_indexed_fn loop,
                          void *ctx);

/* Elements per chunk below which splitting work over threads costs more than it saves. */
#define TPU_ITER_GRAIN 32768

/* Runs `loop` over all elements, split over the thread pool (tpu_parallel_for); the loop must only
 * touch the elements it is given. */
void tpu_iter_run_parallel(const tpu_iter *it, tpu_loop_fn loop, void *ctx);

/* Same, passing each run's first flat index to the loop. */
void tpu_iter_run_indexed_parallel(const tpu_iter *it, tpu_loop_indexed_fn loop, void *ctx);

/* The COPY kernel's dtype conversions (kernels/base/base_copy.c), for kernels that convert while
 * they run (the elementwise engine converts operands block by block): the inner loop converting
 * `src` elements to `dst`, with operand 0 the destination, operand 1 the source and ctx unused.
 * NULL when the dtypes are equal or either is not computable. */
tpu_loop_fn tpu_cast_loop(tpu_dtype src, tpu_dtype dst);

#endif
