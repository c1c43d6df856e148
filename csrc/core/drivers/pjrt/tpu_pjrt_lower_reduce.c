#include "drivers/pjrt/tpu_pjrt_lower_reduce.h"

#include <stdio.h>

bool tpu_pjrt_reduce_supports(const tpu_op_call *call) {
  const tpu_tensor *in = &call->tensors[0], *out = &call->tensors[1];
  if (call->n_inputs != 1 || call->n_outputs != 1 || in->ndim != out->ndim)
    return false;
  bool real = tpu_dtype_is_computable(in->dtype) && !tpu_dtype_is_complex(in->dtype);
  switch (call->op) {
  case TPU_OP_SUM: /* bool counts its true elements in the compute dtype */
    return real && tpu_dtype_is_computable(call->compute) &&
           !tpu_dtype_is_complex(call->compute) && call->compute != TPU_BOOL;
  case TPU_OP_AMAX: case TPU_OP_AMIN:
    return real;
  default:
    return false;
  }
}

const char *tpu_pjrt_reduce_identity(tpu_dtype elem, bool max) {
  switch (elem) {
  case TPU_FLOAT64: return max ? "0xFFF0000000000000" : "0x7FF0000000000000";
  case TPU_FLOAT32: case TPU_FLOAT16: case TPU_BFLOAT16: return max ? "0xFF800000" : "0x7F800000";
  case TPU_UINT8: return max ? "0" : "255";
  case TPU_INT8: return max ? "-128" : "127";
  case TPU_INT16: return max ? "-32768" : "32767";
  case TPU_INT32: return max ? "-2147483648" : "2147483647";
  default: return max ? "-9223372036854775808" : "9223372036854775807";
  }
}

int tpu_pjrt_reduced_dims(const tpu_op_call *call, int64_t *dims, int64_t *count) {
  const tpu_tensor *src = &call->tensors[0], *out = &call->tensors[1];
  int n = 0;
  *count = 1;
  bool every = out->ndim == 0; /* a 0-d output (NONZERO_COUNT) reduces every dimension */
  for (int i = 0; i < src->ndim; i++)
    if (every || (out->sizes[i] == 1 && src->sizes[i] != 1)) {
      dims[n++] = i;
      *count *= src->sizes[i];
    }
  return n;
}

tpu_hlo_value tpu_pjrt_reduce_spread(tpu_hlo *h, tpu_hlo_value r, tpu_hlo_value x,
                                     const int64_t *dims, int n) {
  int64_t kept[TPU_MAX_DIMS];
  for (int i = 0, j = 0, k = 0; i < x.rank; i++) {
    if (k < n && dims[k] == i)
      k++;
    else
      kept[j++] = i;
  }
  return tpu_hlo_broadcast(h, r, x.rank, x.dims, kept);
}

tpu_hlo_value tpu_pjrt_reduce_emit(tpu_hlo *h, const tpu_op_call *call, tpu_hlo_value in) {
  const tpu_tensor *out = &call->tensors[1];
  int64_t dims[TPU_MAX_DIMS], count;
  int n = tpu_pjrt_reduced_dims(call, dims, &count);
  tpu_hlo_value r;
  if (call->op == TPU_OP_SUM) {
    /* Floats add in float64 (more exact than PyTorch's float32 cascade, never less), integers
     * in int64, wrapping; the result is rounded once. */
    tpu_dtype acc = tpu_dtype_is_floating(call->compute) ? TPU_FLOAT64 : TPU_INT64;
    tpu_hlo_value x = tpu_hlo_convert(h, tpu_hlo_cast(h, in, call->compute), acc);
    r = tpu_hlo_reduce(h, x, tpu_hlo_constant(h, acc, acc == TPU_FLOAT64 ? "0.0" : "0"), dims, n,
                       TPU_HLO_ADD);
    if (call->scalars[0].i == 1) {
      char literal[32];
      snprintf(literal, sizeof literal, "%lld.0", (long long)count);
      r = tpu_hlo_binary(h, "divide", r, tpu_hlo_splat(h, tpu_hlo_constant(h, acc, literal), &r));
    }
    r = tpu_hlo_convert(h, r, call->compute);
  } else {
    bool max = call->op == TPU_OP_AMAX;
    tpu_hlo_value x = in;
    if (in.elem == TPU_FLOAT16 || in.elem == TPU_BFLOAT16)
      x = tpu_hlo_convert(h, in, TPU_FLOAT32); /* exact; the extreme converts back exactly */
    else if (in.elem == TPU_BOOL)
      x = tpu_hlo_cast(h, in, TPU_UINT8); /* max is any, min is all */
    tpu_hlo_value init = tpu_hlo_constant(h, x.elem, tpu_pjrt_reduce_identity(x.elem, max));
    r = tpu_hlo_reduce(h, x, init, dims, n, max ? TPU_HLO_MAX : TPU_HLO_MIN);
    r = in.elem == TPU_BOOL ? tpu_hlo_cast(h, r, TPU_BOOL) : tpu_hlo_convert(h, r, in.elem);
  }
  return tpu_hlo_reshape(h, r, out->ndim, out->sizes);
}
