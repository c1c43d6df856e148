/* The vision family (ops/tpu_ops_vision.h) in StableHLO, on the taps of ops/tpu_resample.h that
 * the host kernel uses, as constants of the program:
 * - RESAMPLE's gather modes (nearest, pads) take each spatial dimension's input positions, the
 *   input's elements as they are, in any dtype;
 * - its interpolation modes go one spatial dimension at a time, the last first, each output the
 *   sum in tap order of each tap's gathered slice times its weight, in float (double for
 *   float64), rounded once at the end: the host kernel's (and PyTorch CPU's) arithmetic;
 * - RESAMPLE_BACKWARD goes the other way, the first dimension first: each tap's weight times the
 *   gradient scattered (added) onto its input positions.
 * Calls the host kernel refuses, and empty ones, fall back, for the host to report. */
#include "drivers/pjrt/tpu_pjrt_family.h"
#include "ops/tpu_resample.h"

#include <stdlib.h>

static bool supports(const tpu_op_call *call) {
  int spatial = 0;
  if ((call->op != TPU_OP_RESAMPLE && call->op != TPU_OP_RESAMPLE_BACKWARD) ||
      tpu_resample_check(call, &spatial) != TPU_OK)
    return false;
  for (int k = 0; k < 2; k++)
    if (tpu_tensor_numel(&call->tensors[k]) == 0)
      return false;
  /* Every tap must fall inside the input (the pads' sizes). */
  for (int s = 0; s < spatial; s++) {
    tpu_resample_axis a;
    if (tpu_resample_axis_init(call, s, &a) != TPU_OK)
      return false;
    tpu_resample_axis_free(&a);
  }
  return true;
}

/* Tap t's input positions (int64) or weights (elem) along the axis, a rank-1 constant. */
static tpu_hlo_value tap_constant(tpu_hlo *h, const tpu_resample_axis *a, int t, bool weights,
                                  tpu_hlo_elem elem, bool *no_memory) {
  double *v = malloc((size_t)a->out * sizeof *v);
  if (!v) {
    *no_memory = true;
    return tpu_hlo_constant(h, elem, "0");
  }
  for (int64_t o = 0; o < a->out; o++)
    v[o] = weights ? a->weight[o * a->taps + t] : (double)a->index[o * a->taps + t];
  tpu_hlo_value c = tpu_hlo_constant_array(h, weights ? elem : TPU_INT64, a->out, v);
  free(v);
  return c;
}

/* x times tap t's weights, which run along dimension d. */
static tpu_hlo_value weighted(tpu_hlo *h, tpu_hlo_value x, const tpu_resample_axis *a, int t,
                              int64_t d, bool *no_memory) {
  tpu_hlo_value w = tap_constant(h, a, t, true, x.elem, no_memory);
  return tpu_hlo_binary(h, "multiply", x, tpu_hlo_broadcast(h, w, x.rank, x.dims, &d));
}

/* RESAMPLE along dimension d. */
static tpu_hlo_value forward_axis(tpu_hlo *h, tpu_hlo_value x, const tpu_resample_axis *a,
                                  int d, bool gathers, bool *no_memory) {
  tpu_hlo_value r = x;
  for (int t = 0; t < a->taps; t++) {
    tpu_hlo_value taken =
        tpu_hlo_take(h, x, tap_constant(h, a, t, false, x.elem, no_memory), d);
    if (!gathers)
      taken = weighted(h, taken, a, t, d, no_memory);
    r = t == 0 ? taken : tpu_hlo_binary(h, "add", r, taken);
  }
  return r;
}

/* RESAMPLE_BACKWARD along dimension d: dimension d moves to the front for the scatters. */
static tpu_hlo_value backward_axis(tpu_hlo *h, tpu_hlo_value dy, const tpu_resample_axis *a,
                                   int d, bool gathers, bool *no_memory) {
  int64_t perm[TPU_MAX_DIMS + 1], back[TPU_MAX_DIMS + 1], dims[TPU_MAX_DIMS + 1];
  perm[0] = d;
  for (int i = 0, k = 1; i < dy.rank; i++)
    if (i != d)
      perm[k++] = i;
  for (int i = 0; i < dy.rank; i++)
    back[perm[i]] = i;
  tpu_hlo_value front = tpu_hlo_transpose(h, dy, perm);
  for (int i = 0; i < dy.rank; i++)
    dims[i] = i == 0 ? a->in : front.dims[i];
  tpu_hlo_value zero = tpu_hlo_constant(h, dy.elem, "0.0");
  tpu_hlo_value shape = {.elem = dy.elem, .rank = dy.rank};
  for (int i = 0; i < dy.rank; i++)
    shape.dims[i] = dims[i];
  tpu_hlo_value r = tpu_hlo_splat(h, zero, &shape);
  for (int t = 0; t < a->taps; t++) {
    tpu_hlo_value update = gathers ? front : weighted(h, front, a, t, 0, no_memory);
    r = tpu_hlo_scatter(h, r, tap_constant(h, a, t, false, dy.elem, no_memory), update,
                        TPU_HLO_ADD);
  }
  return tpu_hlo_transpose(h, r, back);
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)scalar;
  (void)ctx;
  (void)bad;
  const bool backward = call->op == TPU_OP_RESAMPLE_BACKWARD;
  const bool gathers = tpu_resample_gathers(call);
  const int spatial = (int)call->scalars[1].i, rank = call->tensors[0].ndim;
  const tpu_dtype dtype = call->tensors[1].dtype;
  tpu_hlo_value v = in[0];
  /* Interpolation and every backward compute in float or double; gathers keep the dtype. */
  if (backward || !gathers)
    v = tpu_hlo_convert(h, v, dtype == TPU_FLOAT64 ? TPU_FLOAT64 : TPU_FLOAT32);
  bool no_memory = false;
  for (int step = 0; step < spatial && !h->failed; step++) {
    const int s = backward ? step : spatial - 1 - step;
    tpu_resample_axis a;
    if (tpu_resample_axis_init(call, s, &a) != TPU_OK) {
      h->failed = true;
      break;
    }
    const int d = rank - spatial + s;
    v = backward ? backward_axis(h, v, &a, d, gathers, &no_memory)
                 : forward_axis(h, v, &a, d, gathers, &no_memory);
    tpu_resample_axis_free(&a);
  }
  if (no_memory)
    h->failed = true;
  out[0] = v.elem == dtype ? v : tpu_hlo_cast(h, v, dtype);
}

const tpu_pjrt_family tpu_pjrt_vision_family = {.supports = supports, .emit = emit};
