/* The one thread pool that host kernels split their work over. The calling thread (a stream's
 * worker, or the host thread under launch blocking) takes part, so a pool of N threads has N - 1
 * helpers. Work is cut into chunks whose boundaries depend only on the size, the grain and the
 * thread count, never on timing, so partial results can be combined in a fixed order. */
#ifndef TPU_HOST_ENGINE_POOL_H
#define TPU_HOST_ENGINE_POOL_H

#include <stdint.h>

/* Runs one chunk [begin, end) of the range; `chunk` is its index in [0, chunks). */
typedef void (*tpu_chunk_fn)(int64_t begin, int64_t end, int chunk, void *ctx);

/* Number of threads kernels use (at least 1). Initially the number of online CPUs. */
int tpu_pool_threads(void);

/* Sets the number of threads (torch.set_num_threads); helpers start lazily on the next use. */
void tpu_pool_set_threads(int threads);

/* Number of chunks tpu_parallel_for cuts [0, n) into: at most the thread count, each at least
 * `grain` long (except when n < grain: one chunk). */
int tpu_parallel_chunks(int64_t n, int64_t grain);

/* Calls fn for every chunk of [0, n), in parallel, and returns when all are done. Nested calls
 * (fn calling tpu_parallel_for) run serially on the calling thread. */
void tpu_parallel_for(int64_t n, int64_t grain, tpu_chunk_fn fn, void *ctx);

#endif
