#include "drivers/pjrt/tpu_pjrt_lower_complex.h"

#include "drivers/pjrt/tpu_pjrt_view.h"

/* A complex value held as its two parts, each of the value's dims. */
typedef struct parts {
  tpu_hlo_value re, im;
} parts;

/* Part k (0: real, 1: imaginary) of complex value x: x's dims without the last. */
static tpu_hlo_value part(tpu_hlo *h, tpu_hlo_value x, int64_t k) {
  int64_t start[TPU_MAX_DIMS + 1] = {0}, limit[TPU_MAX_DIMS + 1];
  int rank = x.rank - 1;
  for (int i = 0; i < rank; i++)
    limit[i] = x.dims[i];
  start[rank] = k;
  limit[rank] = k + 1;
  return tpu_hlo_reshape(h, tpu_hlo_slice(h, x, start, limit), rank, x.dims);
}

static parts split(tpu_hlo *h, tpu_hlo_value x) { return (parts){part(h, x, 0), part(h, x, 1)}; }

tpu_hlo_value tpu_pjrt_complex_pair(tpu_hlo *h, tpu_hlo_value re, tpu_hlo_value im) {
  int64_t dims[TPU_MAX_DIMS + 1], bdims[TPU_MAX_DIMS + 1];
  int rank = re.rank + 1;
  for (int i = 0; i < re.rank; i++) {
    dims[i] = re.dims[i];
    bdims[i] = i;
  }
  dims[re.rank] = 2;
  /* A select rather than arithmetic, which would turn a -0.0 part into +0.0. */
  re = tpu_hlo_broadcast(h, re, rank, dims, bdims);
  im = tpu_hlo_broadcast(h, im, rank, dims, bdims);
  tpu_hlo_value first = tpu_hlo_compare(h, "EQ", tpu_hlo_coordinate(h, &re, re.rank - 1),
                                        tpu_hlo_full_i64(h, 0, &re));
  return tpu_hlo_select(h, first, re, im);
}

tpu_hlo_value tpu_pjrt_complex_convert(tpu_hlo *h, tpu_hlo_value x, tpu_dtype from,
                                       tpu_dtype to) {
  bool from_complex = tpu_dtype_is_complex(from), to_complex = tpu_dtype_is_complex(to);
  if (from_complex && to_complex)
    return tpu_hlo_convert(h, x, tpu_pjrt_view_value_elem(to));
  if (to_complex) {
    tpu_hlo_value re = tpu_hlo_cast(h, x, tpu_pjrt_view_value_elem(to));
    return tpu_pjrt_complex_pair(h, re, tpu_hlo_full(h, re.elem, "0.0", &re));
  }
  if (!from_complex)
    return tpu_hlo_cast(h, x, to);
  parts p = split(h, x);
  if (to != TPU_BOOL)
    return tpu_hlo_cast(h, p.re, to);
  return tpu_hlo_binary(h, "or", tpu_hlo_cast(h, p.re, TPU_BOOL), tpu_hlo_cast(h, p.im, TPU_BOOL));
}

/* a * b, as the host's (ar br - ai bi, ar bi + ai br). */
static parts multiply(tpu_hlo *h, parts a, parts b) {
  tpu_hlo_value rr = tpu_hlo_binary(h, "multiply", a.re, b.re);
  tpu_hlo_value ii = tpu_hlo_binary(h, "multiply", a.im, b.im);
  tpu_hlo_value ri = tpu_hlo_binary(h, "multiply", a.re, b.im);
  tpu_hlo_value ir = tpu_hlo_binary(h, "multiply", a.im, b.re);
  return (parts){tpu_hlo_binary(h, "subtract", rr, ii), tpu_hlo_binary(h, "add", ri, ir)};
}

/* The complex scalar of runtime slots re_slot and im_slot (float64), in `elem`, splat to `like`. */
static parts scalar_parts(tpu_hlo *h, tpu_pjrt_scalar_fn scalar, void *ctx, int re_slot,
                          int im_slot, tpu_dtype elem, const tpu_hlo_value *like) {
  tpu_hlo_value re = tpu_hlo_convert(h, scalar(ctx, re_slot, true), elem);
  tpu_hlo_value im = tpu_hlo_convert(h, scalar(ctx, im_slot, true), elem);
  return (parts){tpu_hlo_splat(h, re, like), tpu_hlo_splat(h, im, like)};
}

tpu_hlo_value tpu_pjrt_complex_matmul_emit(tpu_hlo *h, const tpu_op_call *call,
                                           const tpu_hlo_value *in, tpu_pjrt_scalar_fn scalar,
                                           void *ctx) {
  tpu_dtype elem = tpu_pjrt_view_value_elem(call->tensors[0].dtype);
  const tpu_tensor *out = &call->tensors[call->n_inputs];
  bool sum_batches = out->sizes[0] == 1 && call->tensors[0].sizes[0] != 1;
  parts a = split(h, in[0]), b = split(h, in[1]);
  if (call->scalars[4].i & TPU_GEMM_CONJ_A)
    a.im = tpu_hlo_unary(h, "negate", a.im);
  if (call->scalars[4].i & TPU_GEMM_CONJ_B)
    b.im = tpu_hlo_unary(h, "negate", b.im);
  tpu_hlo_value rr = tpu_hlo_dot(h, a.re, b.re, sum_batches, elem);
  tpu_hlo_value ii = tpu_hlo_dot(h, a.im, b.im, sum_batches, elem);
  tpu_hlo_value ri = tpu_hlo_dot(h, a.re, b.im, sum_batches, elem);
  tpu_hlo_value ir = tpu_hlo_dot(h, a.im, b.re, sum_batches, elem);
  parts ab = {tpu_hlo_reshape(h, tpu_hlo_binary(h, "subtract", rr, ii), 3, out->sizes),
              tpu_hlo_reshape(h, tpu_hlo_binary(h, "add", ri, ir), 3, out->sizes)};
  parts r = multiply(h, scalar_parts(h, scalar, ctx, 0, 2, elem, &ab.re), ab);
  if (call->n_inputs == 3) {
    /* beta == 0 is decided on the float64 scalars, as the host decides it. */
    tpu_hlo_value zero = tpu_hlo_constant(h, TPU_FLOAT64, "0.0");
    tpu_hlo_value keep = tpu_hlo_binary(h, "and",
                                        tpu_hlo_compare(h, "EQ", scalar(ctx, 1, true), zero),
                                        tpu_hlo_compare(h, "EQ", scalar(ctx, 3, true), zero));
    keep = tpu_hlo_splat(h, keep, &ab.re);
    parts bc = multiply(h, scalar_parts(h, scalar, ctx, 1, 3, elem, &ab.re), split(h, in[2]));
    r.re = tpu_hlo_select(h, keep, r.re, tpu_hlo_binary(h, "add", r.re, bc.re));
    r.im = tpu_hlo_select(h, keep, r.im, tpu_hlo_binary(h, "add", r.im, bc.im));
  }
  return tpu_pjrt_complex_pair(h, r.re, r.im);
}
