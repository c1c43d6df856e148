/* The reduce family's kernels on the reduction engine (reduce.h). Every one reads
 * tensors[0] = input and writes outputs of the input's rank with size 1 in each reduced dimension
 * (keepdim-shaped views of the real outputs); which dimensions are reduced follows from the sizes.
 *
 *   SUM, PROD:     out. call->compute: the dtype the input is cast to and accumulated as
 *                  (PyTorch's result dtype; floats accumulate in float lanes added into double,
 *                  the integers in int64, wrapping). SUM's scalars[0].i = 1 makes it the mean.
 *                  A complex input (SUM only) is summed part by part into a complex output.
 *   AMAX, AMIN:    out, the input's dtype; NaN propagates.
 *   MAX_DIM, MIN_DIM: values (the input's dtype), indices (int64): the first extreme, NaN first.
 *   ARGMAX, ARGMIN: indices (int64), counted in the logical row-major order of the reduced
 *                  dimensions, as PyTorch flattens them.
 *   VAR:           out [, mean]: scalars[0].f = correction, scalars[1].i = 1 for the standard
 *                  deviation; call->compute = the (floating) dtype computed in. Two passes: the
 *                  mean, then the sum of squared deviations with the rounding correction.
 *   NORM:          out: the vector p-norm, scalars[0].f = p (0, +-inf and any other value);
 *                  call->compute = the floating dtype the input is cast to; complex inputs use |z|.
 *   LOGSUMEXP:     out: log(sum(exp(x - m))) + m with m the maximum (0 when infinite); floating.
 *   ANY, ALL:      out (bool, or uint8 for uint8 inputs): any / every element nonzero.
 *   COUNT_NONZERO: out (int64). */
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
