/* The reduce family's kernels (contract in ops/tpu_ops_reduce.h) on the reduction engine
 * (reduce.h): each op is a pass kind, a final step and the dtype the input is loaded as. Floats
 * accumulate in float lanes added into double, the integers in int64. VAR makes two passes: the
 * mean, then the sum of squared deviations with the rounding correction. */
#include "drivers/host/kernels/kernels.h"
#include "drivers/host/kernels/reduce/reduce.h"

#include <math.h>

static tpu_status reduce(const tpu_op_call *call, rk_kind kind, rk_final fin, tpu_dtype compute) {
  rk_spec spec = {.kind = kind, .fin = fin, .compute = compute};
  return tpu_reduce(call, &spec);
}

static tpu_dtype input_dtype(const tpu_op_call *call) { return call->tensors[0].dtype; }

tpu_status tpu_kernel_sum(const tpu_op_call *call) {
  return reduce(call, RK_SUM, call->scalars[0].i ? RK_MEAN : RK_VALUE, call->compute);
}

tpu_status tpu_kernel_prod(const tpu_op_call *call) {
  return reduce(call, RK_PROD, RK_VALUE, call->compute);
}

tpu_status tpu_kernel_amax(const tpu_op_call *call) {
  return reduce(call, RK_MAX, RK_VALUE, input_dtype(call));
}

tpu_status tpu_kernel_amin(const tpu_op_call *call) {
  return reduce(call, RK_MIN, RK_VALUE, input_dtype(call));
}

tpu_status tpu_kernel_max_dim(const tpu_op_call *call) {
  return reduce(call, RK_ARGMAX, RK_VALUE, input_dtype(call));
}

tpu_status tpu_kernel_min_dim(const tpu_op_call *call) {
  return reduce(call, RK_ARGMIN, RK_VALUE, input_dtype(call));
}

tpu_status tpu_kernel_argmax(const tpu_op_call *call) {
  return reduce(call, RK_ARGMAX, RK_VALUE, input_dtype(call));
}

tpu_status tpu_kernel_argmin(const tpu_op_call *call) {
  return reduce(call, RK_ARGMIN, RK_VALUE, input_dtype(call));
}

tpu_status tpu_kernel_var(const tpu_op_call *call) {
  rk_spec spec = {.kind = RK_VAR,
                  .fin = RK_VARIANCE,
                  .compute = call->compute,
                  .p = call->scalars[0].f,
                  .sqrt = call->scalars[1].i != 0};
  return tpu_reduce(call, &spec);
}

tpu_status tpu_kernel_norm(const tpu_op_call *call) {
  double p = call->scalars[0].f;
  bool complex = tpu_dtype_is_complex(input_dtype(call));
  rk_spec spec = {.kind = RK_SUMPOW, .fin = RK_ROOT, .abs = true, .compute = call->compute, .p = p};
  if (p == 0)
    spec.kind = RK_COUNT, spec.fin = RK_VALUE;
  else if (p == 1)
    spec.kind = RK_SUM, spec.fin = RK_VALUE;
  else if (p == 2) /* squares need no |x|, except to make complex values real */
    spec.kind = RK_SUMSQ, spec.fin = RK_SQRT, spec.abs = complex;
  else if (p == INFINITY)
    spec.kind = RK_MAX, spec.fin = RK_VALUE;
  else if (p == -INFINITY)
    spec.kind = RK_MIN, spec.fin = RK_VALUE;
  return tpu_reduce(call, &spec);
}

tpu_status tpu_kernel_logsumexp(const tpu_op_call *call) {
  return reduce(call, RK_LSE, RK_VALUE, call->compute);
}

/* The dtype nonzero tests load in: the input's own, or its magnitude's for complex. */
static rk_spec nonzero_spec(const tpu_op_call *call, rk_final fin) {
  tpu_dtype in = input_dtype(call);
  bool complex = tpu_dtype_is_complex(in);
  tpu_dtype compute = in == TPU_COMPLEX64 ? TPU_FLOAT32 : in == TPU_COMPLEX128 ? TPU_FLOAT64 : in;
  rk_spec spec = {.kind = RK_COUNT, .fin = fin, .abs = complex, .compute = compute};
  return spec;
}

tpu_status tpu_kernel_any(const tpu_op_call *call) {
  rk_spec spec = nonzero_spec(call, RK_ANY);
  return tpu_reduce(call, &spec);
}

tpu_status tpu_kernel_all(const tpu_op_call *call) {
  rk_spec spec = nonzero_spec(call, RK_ALL);
  return tpu_reduce(call, &spec);
}

tpu_status tpu_kernel_count_nonzero(const tpu_op_call *call) {
  rk_spec spec = nonzero_spec(call, RK_VALUE);
  return tpu_reduce(call, &spec);
}
