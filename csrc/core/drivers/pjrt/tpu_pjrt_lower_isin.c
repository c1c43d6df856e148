/* ISIN (ops/tpu_ops_index.h) in StableHLO: every element compared with every test element and
 * the comparisons reduced, as CUDA's isin does for small sets. XLA fuses the broadcast compare
 * into the reduction, so nothing of n x m elements is stored, but the work is n x m: calls past
 * MAX_COMPARISONS run through the driver fallback, whose host kernel sorts the set. Compare's EQ
 * is the dtype's ==: NaN equals nothing, -0.0 equals +0.0. */
#include "drivers/pjrt/tpu_pjrt_family.h"

/* The most comparisons a call lowers to (2^26, a few tens of milliseconds on a CPU). */
#define MAX_COMPARISONS (INT64_C(1) << 26)

static bool supports(const tpu_op_call *call) {
  const tpu_tensor *t = call->tensors;
  tpu_dtype dtype = t[0].dtype;
  return call->n_inputs == 2 && call->n_outputs == 1 && dtype != TPU_BOOL &&
         !tpu_dtype_is_complex(dtype) && t[1].dtype == dtype && t[1].ndim == 1 &&
         t[1].sizes[0] >= 1 && t[2].dtype == TPU_BOOL && tpu_tensor_same_sizes(&t[0], &t[2]) &&
         tpu_tensor_numel(&t[0]) <= MAX_COMPARISONS / t[1].sizes[0];
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)scalar, (void)ctx, (void)bad;
  const tpu_tensor *elements = &call->tensors[0];
  int rank = elements->ndim;
  int64_t dims[TPU_MAX_DIMS + 1], keep[TPU_MAX_DIMS], last = rank;
  for (int d = 0; d < rank; d++) {
    dims[d] = elements->sizes[d];
    keep[d] = d;
  }
  dims[rank] = call->tensors[1].sizes[0];
  tpu_hlo_value x = tpu_hlo_broadcast(h, in[0], rank + 1, dims, keep);
  tpu_hlo_value t = tpu_hlo_broadcast(h, in[1], rank + 1, dims, &last);
  tpu_hlo_value hits = tpu_hlo_convert(h, tpu_hlo_compare(h, "EQ", x, t), TPU_UINT8);
  tpu_hlo_value any = tpu_hlo_reduce(h, hits, tpu_hlo_constant(h, TPU_UINT8, "0"), &last, 1,
                                     TPU_HLO_MAX);
  out[0] = tpu_hlo_compare(h, call->scalars[0].i ? "EQ" : "NE", any,
                           tpu_hlo_full(h, TPU_UINT8, "0", &any));
}

const tpu_pjrt_family tpu_pjrt_isin_family = {.supports = supports, .emit = emit};
