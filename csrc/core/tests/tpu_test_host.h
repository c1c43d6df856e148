/* Helpers for host-kernel tests: views of host memory and one-shot kernel calls. */
#ifndef TPU_TEST_HOST_H
#define TPU_TEST_HOST_H

#include <string.h>

#include "drivers/host/host_driver.h"
#include "ops/tpu_op.h"
#include "tensor/tpu_tensor.h"

/* A host view of `mem` (element [0, ..., 0] at `mem`): row-major when strides is NULL. */
static inline tpu_tensor host_view(void *mem, tpu_dtype dtype, int ndim, const int64_t *sizes,
                                   const int64_t *strides) {
  tpu_tensor t;
  memset(&t, 0, sizeof t);
  t.host = mem;
  t.dtype = dtype;
  t.ndim = ndim;
  int64_t step = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    t.sizes[d] = sizes[d];
    t.strides[d] = strides ? strides[d] : step;
    step *= sizes[d];
  }
  return t;
}

/* Runs the host kernel of `op` on n_in inputs then n_out outputs, with up to 4 scalars. */
static inline tpu_status run_kernel(tpu_op_id op, const tpu_tensor *tensors, int n_in, int n_out,
                                    tpu_scalar s0, tpu_scalar s1, tpu_scalar s2, tpu_scalar s3) {
  tpu_op_call *call = tpu_op_call_new(op, n_in, n_out);
  if (!call)
    return TPU_ERR_OUT_OF_MEMORY;
  for (int i = 0; i < n_in + n_out; i++)
    call->tensors[i] = tensors[i];
  call->scalars[0] = s0;
  call->scalars[1] = s1;
  call->scalars[2] = s2;
  call->scalars[3] = s3;
  tpu_status st = tpu_host_kernel(op)(call);
  tpu_op_call_free(call);
  return st;
}

#define SCALAR_F(x) ((tpu_scalar){.f = (x)})
#define SCALAR_I(x) ((tpu_scalar){.i = (x)})
#define SCALAR_U(x) ((tpu_scalar){.u = (x)})
#define NO_SCALAR SCALAR_I(0)

#endif
