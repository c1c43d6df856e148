/* The reduce family's ops: X(ID, "name", attribute scalars) per op; see ops/tpu_op.h.
 *
 * Reductions (all but CUMSUM) read tensors[0] = input (any strides) and write outputs of the
 * input's rank with size 1 in each reduced dimension (keepdim-shaped views of the real outputs);
 * which dimensions are reduced follows from the sizes.
 *   SUM, PROD:     out. call->compute: the dtype the input is cast to and accumulated as
 *                  (PyTorch's result dtype; the integers accumulate in int64, wrapping).
 *                  SUM's scalars[0].i = 1 makes it the mean. A complex input (SUM only) is
 *                  summed part by part into a complex output.
 *   AMAX, AMIN:    out, the input's dtype; NaN propagates.
 *   MAX_DIM, MIN_DIM: values (the input's dtype), indices (int64): the first extreme, NaN first.
 *   ARGMAX, ARGMIN: indices (int64), counted in the logical row-major order of the reduced
 *                  dimensions, as PyTorch flattens them.
 *   VAR:           out [, mean]: the sum of squared deviations from the mean divided by
 *                  max(n - correction, 0); scalars[0].f = correction, scalars[1].i = 1 for the
 *                  standard deviation; call->compute = the (floating) dtype computed in.
 *   NORM:          out: the vector p-norm, scalars[0].f = p (0 counts the nonzero elements, +-inf
 *                  takes the largest / smallest |x|, any other p is (sum |x|^p)^(1/p));
 *                  call->compute = the floating dtype the input is cast to; complex inputs use
 *                  |z|.
 *   LOGSUMEXP:     out: log(sum(exp(x - m))) + m with m the maximum (0 when infinite); floating.
 *   ANY, ALL:      out (bool, or uint8 for uint8 inputs): any / every element nonzero.
 *   COUNT_NONZERO: out (int64).
 *
 * CUMSUM: tensors[0] = input, tensors[1] = output of the same sizes, scalars[0].i = the dimension
 *   (0 <= dim < ndim; 0-d tensors scan a single element). As PyTorch CPU: each input element is
 *   first cast to the output's dtype, then added to a running sum in the output dtype's
 *   accumulation type (double for float32 and float64, float for bfloat16 and float16, int64
 *   wrapping for the integers) that is rounded to the output at every step. Complex tensors scan
 *   their real and imaginary parts separately. */
#ifndef TPU_OPS_REDUCE_H
#define TPU_OPS_REDUCE_H

#define TPU_OPS_REDUCE(X)                                                                          \
  X(SUM, "sum", TPU_ATTR(0))                                                                       \
  X(PROD, "prod", 0)                                                                               \
  X(AMAX, "amax", 0)                                                                               \
  X(AMIN, "amin", 0)                                                                               \
  X(MAX_DIM, "max_dim", 0)                                                                         \
  X(MIN_DIM, "min_dim", 0)                                                                         \
  X(ARGMAX, "argmax", 0)                                                                           \
  X(ARGMIN, "argmin", 0)                                                                           \
  X(VAR, "var", TPU_ATTR(1))                                                                       \
  X(NORM, "norm", 0)                                                                               \
  X(LOGSUMEXP, "logsumexp", 0)                                                                     \
  X(ANY, "any", 0)                                                                                 \
  X(ALL, "all", 0)                                                                                 \
  X(COUNT_NONZERO, "count_nonzero", 0)                                                             \
  X(CUMSUM, "cumsum", TPU_ATTR(0))

#endif
