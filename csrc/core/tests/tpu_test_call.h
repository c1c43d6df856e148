/* A one-shot kernel call with any number of tensors and up to 8 scalars, for the index and nn
 * families' tests (tpu_test_host.h's run_kernel takes 4 scalars). */
#ifndef TPU_TEST_CALL_H
#define TPU_TEST_CALL_H

#include "tpu_test_host.h"

/* Runs the host kernel of `op` on n_in inputs then n_out outputs; `scalars` may be NULL. */
static inline tpu_status run_call(tpu_op_id op, const tpu_tensor *tensors, int n_in, int n_out,
                                  const tpu_scalar *scalars, int n_scalars) {
  tpu_op_call *call = tpu_op_call_new(op, n_in, n_out);
  if (!call)
    return TPU_ERR_OUT_OF_MEMORY;
  for (int i = 0; i < n_in + n_out; i++)
    call->tensors[i] = tensors[i];
  for (int i = 0; i < n_scalars; i++)
    call->scalars[i] = scalars[i];
  tpu_status st = tpu_host_kernel(op)(call);
  tpu_op_call_free(call);
  return st;
}

/* A 1-d host view of n elements. */
static inline tpu_tensor vec(void *mem, tpu_dtype dtype, int64_t n) {
  return host_view(mem, dtype, 1, &n, NULL);
}

/* A 2-d row-major host view. */
static inline tpu_tensor mat(void *mem, tpu_dtype dtype, int64_t rows, int64_t cols) {
  const int64_t sizes[2] = {rows, cols};
  return host_view(mem, dtype, 2, sizes, NULL);
}

#endif
