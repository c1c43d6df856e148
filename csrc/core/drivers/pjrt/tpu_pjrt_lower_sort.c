/* The sort family (ops/tpu_ops_sort.h) in StableHLO: SORT as one stable sort of the input and its
 * positions along the dimension, by a comparator on the input alone, then a slice of the first k
 * (topk). The comparator puts NaN after every number ascending (before, descending) and finds
 * -0.0 and +0.0, and any two NaNs, equal, so the stable sort keeps them in input order: the host
 * kernel's order exactly. */
#include "drivers/pjrt/tpu_pjrt_family.h"

static bool supports(const tpu_op_call *call) {
  if (call->op != TPU_OP_SORT || call->n_inputs != 1 || call->n_outputs != 2)
    return false;
  const tpu_tensor *in = &call->tensors[0], *values = &call->tensors[1],
                   *indices = &call->tensors[2];
  int64_t dim = call->scalars[0].i;
  if (in->ndim < 1 || dim < 0 || dim >= in->ndim || values->ndim != in->ndim ||
      indices->ndim != in->ndim || values->dtype != in->dtype || indices->dtype != TPU_INT64)
    return false;
  for (int d = 0; d < in->ndim; d++)
    if (values->sizes[d] != indices->sizes[d] ||
        (d == dim ? values->sizes[d] > in->sizes[d] : values->sizes[d] != in->sizes[d]))
      return false;
  return true;
}

/* Whether a[0] goes before b[0]: *(const bool *)ctx for descending. */
static tpu_hlo_value before(tpu_hlo *h, const tpu_hlo_value *a, const tpu_hlo_value *b,
                            void *ctx) {
  const bool descending = *(const bool *)ctx;
  tpu_hlo_value x = a[0], y = b[0];
  tpu_hlo_value ordered = tpu_hlo_compare(h, descending ? "GT" : "LT", x, y);
  if (!tpu_dtype_is_floating(x.elem))
    return ordered;
  /* A NaN goes after a number ascending, before it descending. */
  tpu_hlo_value first = descending ? x : y, second = descending ? y : x;
  tpu_hlo_value nan_first = tpu_hlo_binary(h, "and", tpu_hlo_compare(h, "NE", first, first),
                                           tpu_hlo_compare(h, "EQ", second, second));
  return tpu_hlo_binary(h, "or", ordered, nan_first);
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)scalar;
  (void)ctx;
  (void)bad;
  const int dim = (int)call->scalars[0].i;
  bool descending = call->scalars[1].i != 0;
  tpu_hlo_value xs[2] = {in[0], tpu_hlo_coordinate(h, &in[0], dim)}, sorted[2];
  tpu_hlo_sort(h, 2, xs, dim, before, &descending, sorted);
  const tpu_tensor *values = &call->tensors[1];
  int64_t start[TPU_MAX_DIMS] = {0}, limit[TPU_MAX_DIMS];
  for (int d = 0; d < values->ndim; d++)
    limit[d] = values->sizes[d];
  for (int k = 0; k < 2; k++)
    out[k] = tpu_hlo_slice(h, sorted[k], start, limit);
}

const tpu_pjrt_family tpu_pjrt_sort_family = {.supports = supports, .emit = emit};
