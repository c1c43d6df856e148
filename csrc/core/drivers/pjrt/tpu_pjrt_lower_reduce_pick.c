/* Reductions that pick or test elements (ops/tpu_ops_reduce.h) in StableHLO: MAX_DIM, MIN_DIM,
 * ARGMAX, ARGMIN, ANY, ALL and COUNT_NONZERO, and NONZERO_COUNT (ops/tpu_ops_index.h: the count
 * over every element, into a 0-d int64 the host may hold), exact as the host's kernels are. An
 * index is the first position of the extreme in the logical row-major order of the reduced
 * dimensions (a NaN, when there is one, is the extreme), found as the smallest position whose
 * element equals the reduction's maximum (or minimum) or is a NaN. */
#include "drivers/pjrt/tpu_pjrt_family.h"
#include "drivers/pjrt/tpu_pjrt_lower_reduce.h"

static bool is_extreme(tpu_op_id op) {
  return op == TPU_OP_MAX_DIM || op == TPU_OP_MIN_DIM || op == TPU_OP_ARGMAX ||
         op == TPU_OP_ARGMIN;
}

static bool supports(const tpu_op_call *call) {
  tpu_op_id op = call->op;
  if (op == TPU_OP_NONZERO_COUNT)
    return call->n_inputs == 1 && call->n_outputs == 1 && call->tensors[1].ndim == 0 &&
           call->tensors[1].dtype == TPU_INT64;
  int outs = op == TPU_OP_MAX_DIM || op == TPU_OP_MIN_DIM ? 2 : 1;
  bool tests = op == TPU_OP_ANY || op == TPU_OP_ALL || op == TPU_OP_COUNT_NONZERO;
  if ((!is_extreme(op) && !tests) || call->n_inputs != 1 || call->n_outputs != outs)
    return false;
  const tpu_tensor *in = &call->tensors[0];
  if (is_extreme(op) && in->dtype == TPU_BOOL)
    return false;
  for (int k = 1; k <= outs; k++)
    if (call->tensors[k].ndim != in->ndim)
      return false;
  return true;
}

/* Each element's position in the row-major order of the reduced dimensions (int64, x's dims). */
static tpu_hlo_value positions(tpu_hlo *h, tpu_hlo_value x, const int64_t *dims, int n) {
  tpu_hlo_value pos = tpu_hlo_full_i64(h, 0, &x);
  int64_t stride = 1;
  for (int i = n - 1; i >= 0; i--) {
    tpu_hlo_value along = tpu_hlo_binary(h, "multiply", tpu_hlo_coordinate(h, &x, dims[i]),
                                         tpu_hlo_full_i64(h, stride, &x));
    pos = tpu_hlo_binary(h, "add", pos, along);
    stride *= x.dims[dims[i]];
  }
  return pos;
}

static tpu_hlo_value keepdim(tpu_hlo *h, tpu_hlo_value r, const tpu_tensor *out) {
  return tpu_hlo_reshape(h, r, out->ndim, out->sizes);
}

/* The extreme along the reduced dimensions, NaN first (x's element type; float16 and bfloat16
 * compare exactly as float32). */
static tpu_hlo_value extreme(tpu_hlo *h, tpu_hlo_value x, const int64_t *dims, int n, bool max) {
  tpu_hlo_value init = tpu_hlo_constant(h, x.elem, tpu_pjrt_reduce_identity(x.elem, max));
  return tpu_hlo_reduce(h, x, init, dims, n, max ? TPU_HLO_MAX : TPU_HLO_MIN);
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)scalar;
  (void)ctx;
  (void)bad;
  int64_t dims[TPU_MAX_DIMS], count;
  int n = tpu_pjrt_reduced_dims(call, dims, &count);
  const tpu_tensor *first = &call->tensors[1], *last = &call->tensors[call->n_outputs];
  tpu_op_id op = call->op;
  if (!is_extreme(op)) {
    tpu_hlo_value nonzero = tpu_hlo_cast(h, in[0], TPU_BOOL);
    if (op == TPU_OP_COUNT_NONZERO || op == TPU_OP_NONZERO_COUNT) {
      tpu_hlo_value ones = tpu_hlo_convert(h, nonzero, TPU_INT64);
      out[0] = keepdim(h, tpu_hlo_reduce(h, ones, tpu_hlo_constant(h, TPU_INT64, "0"), dims, n,
                                         TPU_HLO_ADD), first);
      return;
    }
    bool any = op == TPU_OP_ANY; /* empty: any is false, all is true */
    tpu_hlo_value bytes = tpu_hlo_convert(h, nonzero, TPU_UINT8);
    out[0] = keepdim(h, tpu_hlo_reduce(h, bytes, tpu_hlo_constant(h, TPU_UINT8, any ? "0" : "1"),
                                       dims, n, any ? TPU_HLO_MAX : TPU_HLO_MIN), first);
    return;
  }
  bool max = op == TPU_OP_MAX_DIM || op == TPU_OP_ARGMAX;
  tpu_hlo_value x = in[0];
  if (x.elem == TPU_FLOAT16 || x.elem == TPU_BFLOAT16)
    x = tpu_hlo_convert(h, x, TPU_FLOAT32); /* exact; the extreme converts back exactly */
  tpu_hlo_value m = extreme(h, x, dims, n, max);
  tpu_hlo_value m_all = tpu_pjrt_reduce_spread(h, m, x, dims, n);
  tpu_hlo_value hit = tpu_hlo_binary(h, "or", tpu_hlo_compare(h, "EQ", x, m_all),
                                     tpu_hlo_compare(h, "NE", x, x));
  tpu_hlo_value pos = positions(h, x, dims, n);
  tpu_hlo_value none = tpu_hlo_full_i64(h, INT64_MAX, &x);
  tpu_hlo_value index = tpu_hlo_reduce(h, tpu_hlo_select(h, hit, pos, none),
                                       tpu_hlo_constant(h, TPU_INT64, "9223372036854775807"),
                                       dims, n, TPU_HLO_MIN);
  if (op == TPU_OP_ARGMAX || op == TPU_OP_ARGMIN) {
    out[0] = keepdim(h, index, first);
    return;
  }
  out[0] = keepdim(h, tpu_hlo_convert(h, m, in[0].elem), first);
  out[1] = keepdim(h, index, last);
}

const tpu_pjrt_family tpu_pjrt_reduce_pick_family = {.supports = supports, .emit = emit};
