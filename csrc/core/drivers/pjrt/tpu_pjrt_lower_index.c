/* Index ops in StableHLO (ops/tpu_ops_index.h): INDEX_SELECT of a self of rank >= 1 as a gather
 * of slices, GATHER as a gather of single elements at their row-major positions, SCATTER,
 * INDEX_ADD, INDEX_COPY and INDEX_FILL as scatters into the flattened self, each with its bounds
 * check as a flag the driver reads back; TRILU as a select on each element's diagonal. Additions
 * and products of duplicates combine in XLA's order (floats may round differently from the
 * host's); an assignment keeps the duplicate of the largest dim coordinate, as on the host, by
 * scattering that coordinate with a maximum first. Also the helpers the index families share
 * (tpu_pjrt_lower_index.h). */
#include <stdio.h>

#include "drivers/pjrt/tpu_pjrt_family.h"
#include "drivers/pjrt/tpu_pjrt_lower_index.h"
#include "ops/tpu_ops_index.h"

/* The dimension scalars[0] names, negative counting from the end; a 0-d self (INDEX_SELECT's)
 * counts as one dimension of size 1. */
static int dim_of(const tpu_op_call *call) {
  int64_t d = call->scalars[0].i, rank = call->tensors[0].ndim ? call->tensors[0].ndim : 1;
  return (int)(d < 0 ? d + rank : d);
}

static bool is_index_dtype(const tpu_tensor *index) {
  return index->dtype == TPU_INT32 || index->dtype == TPU_INT64;
}

static bool supports_index_select(const tpu_op_call *call) {
  const tpu_tensor *self = &call->tensors[0], *index = &call->tensors[1],
                   *out = &call->tensors[2];
  int d = dim_of(call);
  if (out->ndim != self->ndim || out->dtype != self->dtype || d < 0 ||
      d >= (self->ndim ? self->ndim : 1) || index->ndim > 1 || !index->buf ||
      !is_index_dtype(index))
    return false;
  int64_t count = index->ndim ? index->sizes[0] : 1;
  if (self->ndim == 0) /* its 0-d output holds the one element the index picks */
    return count == 1;
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

static bool is_scatter(tpu_op_id op) {
  return op == TPU_OP_SCATTER || op == TPU_OP_INDEX_ADD || op == TPU_OP_INDEX_COPY ||
         op == TPU_OP_INDEX_FILL;
}

/* index, src and self (updated in place) of one rank with index within src, and within self
 * outside dim; real dtypes, and bool for assignments (it adds and multiplies as a logical op on
 * the host). MAX and MIN (a NaN wins, as XLA's maximum and minimum do) take real dtypes. */
static bool supports_scatter(const tpu_op_call *call) {
  const tpu_tensor *index = &call->tensors[0], *src = &call->tensors[1], *self = &call->tensors[2];
  int64_t d = call->scalars[0].i, accum = call->scalars[1].i;
  if (call->n_inputs != 2 || call->n_outputs != 1 || self->ndim < 1 || index->ndim != self->ndim ||
      src->ndim != self->ndim || d < 0 || d >= self->ndim || !index->buf ||
      !is_index_dtype(index) || src->dtype != self->dtype ||
      (self->dtype == TPU_BOOL && accum != TPU_ACCUM_ASSIGN) ||
      accum < TPU_ACCUM_ASSIGN || accum > TPU_ACCUM_MIN ||
      (accum >= TPU_ACCUM_MAX && tpu_dtype_is_complex(self->dtype)))
    return false;
  for (int i = 0; i < self->ndim; i++)
    if (index->sizes[i] > src->sizes[i] || (i != d && index->sizes[i] > self->sizes[i]))
      return false;
  return true;
}

static bool supports(const tpu_op_call *call) {
  if (is_scatter(call->op))
    return supports_scatter(call);
  switch (call->op) {
  case TPU_OP_INDEX_SELECT:
    return call->n_inputs == 2 && call->n_outputs == 1 && supports_index_select(call);
  case TPU_OP_GATHER:
    return call->n_inputs == 2 && call->n_outputs == 1 && supports_gather(call);
  default:
    return false;
  }
}

/* A scatter's self is updated in place. */
static bool reads_output(const tpu_op_call *call, int k) {
  (void)k;
  return is_scatter(call->op);
}

tpu_hlo_value tpu_pjrt_index_checked(tpu_hlo *h, tpu_hlo_value index, int64_t size,
                                     tpu_hlo_value *bad) {
  tpu_hlo_value zero = tpu_hlo_full_i64(h, 0, &index);
  *bad = tpu_hlo_any(h, tpu_hlo_binary(h, "or", tpu_hlo_compare(h, "LT", index, zero),
                                       tpu_hlo_compare(h, "GE", index,
                                                       tpu_hlo_full_i64(h, size, &index))));
  /* Clamped, so the gather stays in bounds whatever the flag says. */
  tpu_hlo_value last = tpu_hlo_full_i64(h, size - 1, &index);
  return tpu_hlo_binary(h, "minimum", tpu_hlo_binary(h, "maximum", index, zero), last);
}

/* The row-major position in a tensor of dims `dims` of each element of `like`'s dims whose
 * coordinate along dim is at[...] and elsewhere its own. */
static tpu_hlo_value position(tpu_hlo *h, const tpu_hlo_value *like, tpu_hlo_value at, int dim,
                              const int64_t *dims, int rank) {
  tpu_hlo_value pos = tpu_hlo_full(h, TPU_INT64, "0", like);
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; d--) {
    tpu_hlo_value c = d == dim ? at : tpu_hlo_coordinate(h, like, d);
    pos = tpu_hlo_binary(h, "add", pos,
                         tpu_hlo_binary(h, "multiply", c, tpu_hlo_full_i64(h, stride, like)));
    stride *= dims[d];
  }
  return pos;
}

tpu_hlo_value tpu_pjrt_flat(tpu_hlo *h, tpu_hlo_value x) {
  int64_t n = 1;
  for (int d = 0; d < x.rank; d++)
    n *= x.dims[d];
  return tpu_hlo_reshape(h, x, 1, &n);
}

tpu_hlo_value tpu_pjrt_index_wrap(tpu_hlo *h, tpu_hlo_value index, int64_t size) {
  tpu_hlo_value wrapped = tpu_hlo_binary(h, "add", index, tpu_hlo_full_i64(h, size, &index));
  return tpu_hlo_select(h, tpu_hlo_compare(h, "LT", index, tpu_hlo_full_i64(h, 0, &index)),
                        wrapped, index);
}

/* out[p] = self[p with coordinate dim replaced by index[p]]: self's elements taken at their
 * row-major positions. */
static tpu_hlo_value gather(tpu_hlo *h, tpu_hlo_value self, tpu_hlo_value index, int dim,
                            tpu_hlo_value *bad) {
  index = tpu_pjrt_index_checked(h, tpu_hlo_convert(h, index, TPU_INT64), self.dims[dim], bad);
  tpu_hlo_value at = tpu_pjrt_flat(h, position(h, &index, index, dim, self.dims, self.rank));
  tpu_hlo_value taken = tpu_hlo_take(h, tpu_pjrt_flat(h, self), at, 0);
  return tpu_hlo_reshape(h, taken, index.rank, index.dims);
}

/* self with src[p] combined into self[p with coordinate dim replaced by index[p]]. */
static tpu_hlo_value scatter(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                             tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *bad) {
  int dim = (int)call->scalars[0].i;
  tpu_hlo_value self = in[2], src = in[1];
  tpu_hlo_value index = tpu_hlo_convert(h, in[0], TPU_INT64);
  int64_t size = self.dims[dim], zero[TPU_MAX_DIMS] = {0};
  if (call->op == TPU_OP_INDEX_FILL) /* alone of these, it counts [-size, 0) from the end */
    index = tpu_pjrt_index_wrap(h, index, size);
  index = tpu_pjrt_index_checked(h, index, size, bad);
  tpu_hlo_value targets = tpu_pjrt_flat(h, position(h, &index, index, dim, self.dims, self.rank));
  tpu_dtype work = self.elem == TPU_FLOAT16 || self.elem == TPU_BFLOAT16 ? TPU_FLOAT32 : self.elem;
  tpu_hlo_value base = tpu_pjrt_flat(h, tpu_hlo_convert(h, self, work)), r;
  int64_t accum = call->scalars[1].i;
  if (accum != TPU_ACCUM_ASSIGN) {
    tpu_hlo_value used = tpu_hlo_slice(h, src, zero, index.dims); /* src's part index covers */
    tpu_hlo_value taken = tpu_pjrt_flat(h, tpu_hlo_convert(h, used, work));
    if (accum == TPU_ACCUM_ADD) {
      bool floating = tpu_dtype_is_floating(work);
      tpu_hlo_value alpha = tpu_hlo_convert(h, scalar(ctx, floating ? 2 : 4, floating), work);
      taken = tpu_hlo_binary(h, "multiply", taken, tpu_hlo_splat(h, alpha, &taken));
    }
    tpu_hlo_combine combine = accum == TPU_ACCUM_ADD   ? TPU_HLO_ADD
                              : accum == TPU_ACCUM_MUL ? TPU_HLO_MUL
                              : accum == TPU_ACCUM_MAX ? TPU_HLO_MAX
                                                       : TPU_HLO_MIN;
    r = tpu_hlo_scatter(h, base, targets, taken, combine);
  } else {
    /* Each target's last writer: the largest dim coordinate among the positions hitting it. */
    tpu_hlo_value order = tpu_pjrt_flat(h, tpu_hlo_coordinate(h, &index, dim));
    tpu_hlo_value winner =
        tpu_hlo_scatter(h, tpu_hlo_full_i64(h, -1, &base), targets, order, TPU_HLO_MAX);
    tpu_hlo_value last = tpu_hlo_reshape(h, winner, self.rank, self.dims);
    tpu_hlo_value at = tpu_hlo_binary(h, "maximum", last, tpu_hlo_full_i64(h, 0, &last));
    tpu_hlo_value from = tpu_pjrt_flat(h, position(h, &self, at, dim, src.dims, src.rank));
    int64_t count = 1;
    for (int d = 0; d < src.rank; d++)
      count *= src.dims[d];
    /* Targets nobody writes may lie outside src: clamped, then not selected. */
    from = tpu_hlo_binary(h, "minimum", from, tpu_hlo_full_i64(h, count - 1, &from));
    tpu_hlo_value values =
        tpu_hlo_take(h, tpu_pjrt_flat(h, tpu_hlo_convert(h, src, work)), from, 0);
    tpu_hlo_value written = tpu_hlo_compare(h, "GE", winner, tpu_hlo_full_i64(h, 0, &winner));
    r = tpu_hlo_select(h, written, values, base);
  }
  return tpu_hlo_convert(h, tpu_hlo_reshape(h, r, self.rank, self.dims), self.elem);
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
  tpu_hlo_value diagonal = tpu_hlo_binary(h, "subtract", tpu_hlo_coordinate(h, &x, x.rank - 1),
                                          tpu_hlo_coordinate(h, &x, x.rank - 2));
  tpu_hlo_value k = tpu_hlo_splat(h, scalar(ctx, 0, false), &x);
  tpu_hlo_value keep = tpu_hlo_compare(h, call->scalars[1].i ? "GE" : "LE", diagonal, k);
  const char *zero = x.elem == TPU_BOOL ? "false" : tpu_dtype_is_floating(x.elem) ? "0.0" : "0";
  out[0] = tpu_hlo_select(h, keep, x, tpu_hlo_full(h, x.elem, zero, &x));
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  if (is_scatter(call->op)) {
    out[0] = scatter(h, call, in, scalar, ctx, bad);
    return;
  }
  int d = dim_of(call);
  if (call->op == TPU_OP_GATHER) {
    out[0] = gather(h, in[0], in[1], d, bad);
    return;
  }
  int64_t count = call->tensors[1].ndim ? call->tensors[1].sizes[0] : 1, one = 1;
  tpu_hlo_value index = tpu_hlo_reshape(h, tpu_hlo_convert(h, in[1], TPU_INT64), 1, &count);
  tpu_hlo_value self = in[0].rank ? in[0] : tpu_hlo_reshape(h, in[0], 1, &one);
  out[0] = tpu_hlo_take(h, self, tpu_pjrt_index_checked(h, index, self.dims[d], bad), d);
  if (!in[0].rank)
    out[0] = tpu_hlo_reshape(h, out[0], 0, NULL);
}

static bool message(const tpu_op_call *call, int check, char *buf, size_t len,
                    tpu_status *code) {
  if (check != 0) /* one check */
    return false;
  (void)code; /* an IndexError */
  int d = dim_of(call);
  const tpu_tensor *self = &call->tensors[is_scatter(call->op) ? 2 : 0];
  snprintf(buf, len, "%s(): index out of bounds for dimension %d with size %lld",
           tpu_op_name(call->op), d, (long long)(self->ndim ? self->sizes[d] : 1));
  return true;
}

const tpu_pjrt_family tpu_pjrt_index_family = {
    .supports = supports, .reads_output = reads_output, .emit = emit, .message = message};

const tpu_pjrt_family tpu_pjrt_trilu_family = {.supports = supports_trilu, .emit = emit_trilu};
