/* Index ops in StableHLO (ops/tpu_ops_index.h): INDEX_SELECT of a self of rank >= 1 as a gather
 * of slices, GATHER as a gather of single elements at their row-major positions, each with its
 * bounds check as a flag the driver reads back; TRILU as a select on each element's diagonal. */
#include <stdio.h>

#include "drivers/pjrt/tpu_pjrt_family.h"

/* The dimension scalars[0] names, negative counting from the end. */
static int dim_of(const tpu_op_call *call) {
  int64_t d = call->scalars[0].i, rank = call->tensors[0].ndim;
  return (int)(d < 0 ? d + rank : d);
}

static bool is_index_dtype(const tpu_tensor *index) {
  return index->dtype == TPU_INT32 || index->dtype == TPU_INT64;
}

static bool supports_index_select(const tpu_op_call *call) {
  const tpu_tensor *self = &call->tensors[0], *index = &call->tensors[1],
                   *out = &call->tensors[2];
  int d = dim_of(call);
  if (self->ndim < 1 || out->ndim != self->ndim || out->dtype != self->dtype || d < 0 ||
      d >= self->ndim || index->ndim > 1 || !index->buf || !is_index_dtype(index))
    return false;
  int64_t count = index->ndim ? index->sizes[0] : 1;
  for (int i = 0; i < self->ndim; i++)
    if (out->sizes[i] != (i == d ? count : self->sizes[i]))
      return false;
  return true;
}

static bool supports_gather(const tpu_op_call *call) {
  const tpu_tensor *self = &call->tensors[0], *index = &call->tensors[1],
                   *out = &call->tensors[2];
  int64_t d = call->scalars[0].i;
  if (self->ndim < 1 || index->ndim != self->ndim || out->ndim != self->ndim ||
      out->dtype != self->dtype || d < 0 || d >= self->ndim || !index->buf ||
      !is_index_dtype(index))
    return false;
  for (int i = 0; i < self->ndim; i++)
    if (out->sizes[i] != index->sizes[i] || (i != d && index->sizes[i] > self->sizes[i]))
      return false;
  return true;
}

static bool supports(const tpu_op_call *call) {
  switch (call->op) {
  case TPU_OP_INDEX_SELECT:
    return call->n_inputs == 2 && call->n_outputs == 1 && supports_index_select(call);
  case TPU_OP_GATHER:
    return call->n_inputs == 2 && call->n_outputs == 1 && supports_gather(call);
  default:
    return false;
  }
}

/* index (int64, any dims) clamped into [0, size), and *bad, whether any was outside. */
static tpu_hlo_value checked(tpu_hlo *h, tpu_hlo_value index, int64_t size, tpu_hlo_value *bad) {
  char literal[24];
  snprintf(literal, sizeof literal, "%lld", (long long)size);
  tpu_hlo_value zero = tpu_hlo_full(h, TPU_INT64, "0", &index);
  tpu_hlo_value limit = tpu_hlo_full(h, TPU_INT64, literal, &index);
  *bad = tpu_hlo_any(h, tpu_hlo_binary(h, "or", tpu_hlo_compare(h, "LT", index, zero),
                                       tpu_hlo_compare(h, "GE", index, limit)));
  /* Clamped, so the gather stays in bounds whatever the flag says. */
  tpu_hlo_value one = tpu_hlo_full(h, TPU_INT64, "1", &index);
  tpu_hlo_value last = tpu_hlo_binary(h, "subtract", limit, one);
  return tpu_hlo_binary(h, "minimum", tpu_hlo_binary(h, "maximum", index, zero), last);
}

/* 0, 1, 2, ... along dimension d of `like`'s dims, as int64. */
static tpu_hlo_value coordinate(tpu_hlo *h, const tpu_hlo_value *like, int64_t d) {
  return tpu_hlo_broadcast(h, tpu_hlo_iota(h, TPU_INT64, like->dims[d]), like->rank, like->dims,
                           &d);
}

static tpu_hlo_value scaled(tpu_hlo *h, tpu_hlo_value x, int64_t factor) {
  char literal[24];
  snprintf(literal, sizeof literal, "%lld", (long long)factor);
  return tpu_hlo_binary(h, "multiply", x, tpu_hlo_full(h, TPU_INT64, literal, &x));
}

/* out[p] = self[p with coordinate dim replaced by index[p]]: self's elements taken at their
 * row-major positions. */
static tpu_hlo_value gather(tpu_hlo *h, tpu_hlo_value self, tpu_hlo_value index, int dim,
                            tpu_hlo_value *bad) {
  index = checked(h, tpu_hlo_convert(h, index, TPU_INT64), self.dims[dim], bad);
  tpu_hlo_value position = tpu_hlo_full(h, TPU_INT64, "0", &index);
  int64_t stride = 1, total = 1;
  for (int d = self.rank - 1; d >= 0; d--) {
    tpu_hlo_value at = d == dim ? index : coordinate(h, &index, d);
    position = tpu_hlo_binary(h, "add", position, scaled(h, at, stride));
    stride *= self.dims[d];
  }
  for (int d = 0; d < index.rank; d++)
    total *= index.dims[d];
  tpu_hlo_value flat = tpu_hlo_reshape(h, self, 1, &stride);
  tpu_hlo_value taken = tpu_hlo_take(h, flat, tpu_hlo_reshape(h, position, 1, &total), 0);
  return tpu_hlo_reshape(h, taken, index.rank, index.dims);
}

static bool supports_trilu(const tpu_op_call *call) {
  return call->op == TPU_OP_TRILU && call->n_inputs == 1 && call->n_outputs == 1 &&
         call->tensors[0].ndim >= 2 && call->tensors[1].dtype == call->tensors[0].dtype;
}

/* The elements outside the kept triangle of the last two dimensions zeroed: tril keeps
 * column - row <= k, triu column - row >= k (k, a runtime argument). It checks nothing. */
static void emit_trilu(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                       tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out,
                       tpu_hlo_value *bad) {
  (void)bad;
  tpu_hlo_value x = in[0];
  tpu_hlo_value shape = x;
  shape.elem = TPU_INT64;
  tpu_hlo_value diagonal = tpu_hlo_binary(h, "subtract", coordinate(h, &shape, x.rank - 1),
                                          coordinate(h, &shape, x.rank - 2));
  tpu_hlo_value k = tpu_hlo_splat(h, scalar(ctx, 0, false), &shape);
  tpu_hlo_value keep = tpu_hlo_compare(h, call->scalars[1].i ? "GE" : "LE", diagonal, k);
  const char *zero = x.elem == TPU_BOOL ? "false" : tpu_dtype_is_floating(x.elem) ? "0.0" : "0";
  out[0] = tpu_hlo_select(h, keep, x, tpu_hlo_full(h, x.elem, zero, &x));
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)scalar;
  (void)ctx;
  int d = dim_of(call);
  if (call->op == TPU_OP_GATHER) {
    out[0] = gather(h, in[0], in[1], d, bad);
    return;
  }
  int64_t count = call->tensors[1].ndim ? call->tensors[1].sizes[0] : 1;
  tpu_hlo_value index = tpu_hlo_reshape(h, tpu_hlo_convert(h, in[1], TPU_INT64), 1, &count);
  out[0] = tpu_hlo_take(h, in[0], checked(h, index, in[0].dims[d], bad), d);
}

static void message(const tpu_op_call *call, char *buf, size_t len) {
  int d = dim_of(call);
  snprintf(buf, len, "%s(): index out of bounds for dimension %d with size %lld",
           tpu_op_name(call->op), d, (long long)call->tensors[0].sizes[d]);
}

const tpu_pjrt_family tpu_pjrt_index_family = {
    .supports = supports, .emit = emit, .message = message};

const tpu_pjrt_family tpu_pjrt_trilu_family = {.supports = supports_trilu, .emit = emit_trilu};
