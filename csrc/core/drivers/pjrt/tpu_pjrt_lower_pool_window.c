/* Pooling windows in StableHLO (tpu_pjrt_lower_pool.h), bounded as the host kernel's window_of
 * bounds them (drivers/host/kernels/conv/conv_pool.c). Regular windows (output o's taps at
 * o stride - pad + k dilation, k < size) are one reduce_window over the spatial dimensions.
 * Adaptive windows of varying size ([floor(o in / out), ceil((o + 1) in / out))) go one spatial
 * dimension at a time: the values are spread over a new dimension of output positions next to
 * the input positions, masked to each output's window and reduced, O(in out) per dimension's
 * line. Average pooling's backward is the transpose of the forward's: for regular windows the
 * shares spread out by the stride (interior padding) and summed over windows of the same size. */
#include "drivers/pjrt/tpu_pjrt_lower_pool.h"

static tpu_hlo_value i64(tpu_hlo *h, int64_t v, const tpu_hlo_value *like) {
  return tpu_hlo_full_i64(h, v, like);
}

static tpu_hlo_value op(tpu_hlo *h, const char *name, tpu_hlo_value a, tpu_hlo_value b) {
  return tpu_hlo_binary(h, name, a, b);
}

/* Output positions o's windows along spatial dimension i (int64, o's dims): the first tap inside
 * the input, one past the last, and (average pooling) the extent counting the padding. */
typedef struct bounds {
  tpu_hlo_value lo, hi, padded;
} bounds;

static bounds bounds_of(tpu_hlo *h, const tpu_pjrt_pool *p, int i, tpu_hlo_value o) {
  const tpu_pjrt_pool_dim *d = &p->dim[i];
  bounds b;
  if (p->irregular) {
    tpu_hlo_value scaled = op(h, "multiply", o, i64(h, d->in, &o));
    b.lo = op(h, "divide", scaled, i64(h, d->out, &o));
    tpu_hlo_value up = op(h, "add", scaled, i64(h, d->in - 1, &o));
    b.hi = op(h, "add", op(h, "divide", up, i64(h, d->out, &o)), i64(h, 1, &o));
    b.padded = op(h, "subtract", b.hi, b.lo);
    return b;
  }
  tpu_hlo_value start = op(h, "subtract", op(h, "multiply", o, i64(h, d->stride, &o)),
                           i64(h, d->pad, &o));
  /* start + ceil(max(-start, 0) / dilation) dilation */
  tpu_hlo_value before = op(h, "maximum", tpu_hlo_unary(h, "negate", start), i64(h, 0, &o));
  tpu_hlo_value skipped = op(h, "divide", op(h, "add", before, i64(h, d->dilation - 1, &o)),
                             i64(h, d->dilation, &o));
  b.lo = op(h, "add", start, op(h, "multiply", skipped, i64(h, d->dilation, &o)));
  tpu_hlo_value reach = i64(h, (d->size - 1) * d->dilation + 1, &o);
  b.hi = op(h, "minimum", op(h, "add", start, reach), i64(h, d->in, &o));
  tpu_hlo_value end = op(h, "minimum", op(h, "add", start, i64(h, d->size, &o)),
                         i64(h, d->in + d->pad, &o));
  b.padded = op(h, "subtract", end, start);
  return b;
}

/* The row-major position in an input plane of the per-dimension positions at[0..spatial). */
static tpu_hlo_value plane_position(tpu_hlo *h, const tpu_pjrt_pool *p, const tpu_hlo_value *at) {
  tpu_hlo_value pos = at[0];
  for (int i = 1; i < p->spatial; i++)
    pos = op(h, "add", op(h, "multiply", pos, i64(h, p->dim[i].in, &pos)), at[i]);
  return pos;
}

tpu_hlo_value tpu_pjrt_pool_positions(tpu_hlo *h, const tpu_pjrt_pool *p, const tpu_hlo_value *x) {
  tpu_hlo_value at[3];
  for (int i = 0; i < p->spatial; i++)
    at[i] = tpu_hlo_coordinate(h, x, 2 + i);
  return plane_position(h, p, at);
}

tpu_hlo_value tpu_pjrt_pool_first_tap(tpu_hlo *h, const tpu_pjrt_pool *p, const tpu_hlo_value *y) {
  tpu_hlo_value at[3];
  for (int i = 0; i < p->spatial; i++)
    at[i] = bounds_of(h, p, i, tpu_hlo_coordinate(h, y, 2 + i)).lo;
  return plane_position(h, p, at);
}

/* Spatial dimension i of v[0..n) through masks. Forward: v's dimension 2 + i (input positions)
 * moves one on, after a new one of output positions, and is reduced. Backward: a new dimension of
 * input positions follows v's (output positions), which is reduced. Taps outside each output's
 * window take init. */
static void mask_pass(tpu_hlo *h, const tpu_pjrt_pool *p, int i, bool forward, int n,
                      tpu_hlo_value *v, const tpu_hlo_value *init, tpu_hlo_region_fn body,
                      void *ctx) {
  int a = 2 + i, rank = v[0].rank + 1, reduced = forward ? a + 1 : a;
  tpu_hlo_value wide = {.elem = TPU_INT64, .rank = rank}, r[2];
  int64_t spread[TPU_MAX_DIMS], kept[TPU_MAX_DIMS];
  for (int k = 0; k < v[0].rank; k++) {
    spread[k] = k < a ? k : k > a ? k + 1 : reduced;
    wide.dims[spread[k]] = v[0].dims[k];
  }
  wide.dims[forward ? a : a + 1] = forward ? p->dim[i].out : p->dim[i].in;
  bounds b = bounds_of(h, p, i, tpu_hlo_coordinate(h, &wide, a));
  tpu_hlo_value at = tpu_hlo_coordinate(h, &wide, a + 1);
  tpu_hlo_value inside = op(h, "and", tpu_hlo_compare(h, "GE", at, b.lo),
                            tpu_hlo_compare(h, "LT", at, b.hi));
  tpu_hlo_value masked[2];
  for (int k = 0; k < n; k++) {
    wide.elem = v[k].elem;
    masked[k] = tpu_hlo_select(h, inside, tpu_hlo_broadcast(h, v[k], rank, wide.dims, spread),
                               tpu_hlo_splat(h, init[k], &wide));
  }
  tpu_hlo_window w = tpu_hlo_window_one(rank);
  w.size[reduced] = wide.dims[reduced];
  tpu_hlo_reduce_window(h, n, masked, init, &w, body, ctx, r);
  for (int k = 0, j = 0; k < rank; k++)
    if (k != reduced)
      kept[j++] = wide.dims[k];
  for (int k = 0; k < n; k++)
    v[k] = tpu_hlo_reshape(h, r[k], rank - 1, kept);
}

void tpu_pjrt_pool_windows(tpu_hlo *h, const tpu_pjrt_pool *p, const int64_t *y_dims, int n,
                           tpu_hlo_value *v, const tpu_hlo_value *init, tpu_hlo_region_fn body,
                           void *ctx) {
  if (p->irregular) {
    for (int i = 0; i < p->spatial; i++)
      mask_pass(h, p, i, true, n, v, init, body, ctx);
    return;
  }
  tpu_hlo_window w = tpu_hlo_window_one(v[0].rank);
  for (int i = 0; i < p->spatial; i++) {
    const tpu_pjrt_pool_dim *d = &p->dim[i];
    int64_t reach = (d->out - 1) * d->stride + (d->size - 1) * d->dilation + 1;
    w.size[2 + i] = d->size;
    w.stride[2 + i] = d->stride;
    w.dilation[2 + i] = d->dilation;
    w.pad_low[2 + i] = d->pad;
    w.pad_high[2 + i] = reach > d->in + d->pad ? reach - d->in - d->pad : 0;
  }
  tpu_hlo_value r[2];
  int64_t zero[TPU_MAX_DIMS] = {0};
  tpu_hlo_reduce_window(h, n, v, init, &w, body, ctx, r);
  for (int k = 0; k < n; k++) /* the windows past the last output's (ceil mode's rule) dropped */
    v[k] = tpu_hlo_slice(h, r[k], zero, y_dims);
}

static tpu_hlo_value zero_of(tpu_hlo *h, tpu_dtype d) {
  return tpu_hlo_constant(h, d, tpu_dtype_is_floating(d) ? "0.0" : "0");
}

tpu_hlo_value tpu_pjrt_pool_share(tpu_hlo *h, const tpu_pjrt_pool *p, tpu_hlo_value v) {
  tpu_hlo_value div = i64(h, p->divisor ? p->divisor : 1, &v);
  for (int i = 0; i < p->spatial && !p->divisor; i++) {
    bounds b = bounds_of(h, p, i, tpu_hlo_coordinate(h, &v, 2 + i));
    tpu_hlo_value taps = op(h, "maximum", op(h, "subtract", b.hi, b.lo), i64(h, 0, &v));
    div = op(h, "multiply", div, p->count_pad ? b.padded : taps);
  }
  tpu_hlo_value empty = tpu_hlo_compare(h, "EQ", div, i64(h, 0, &v));
  tpu_hlo_value quotient = op(h, "divide", v, tpu_hlo_convert(h, div, v.elem));
  return tpu_hlo_select(h, empty, tpu_hlo_splat(h, zero_of(h, v.elem), &v), quotient);
}

tpu_hlo_value tpu_pjrt_pool_avg_backward(tpu_hlo *h, const tpu_pjrt_pool *p,
                                         tpu_hlo_value share) {
  tpu_hlo_value zero = zero_of(h, share.elem);
  tpu_hlo_combine add = TPU_HLO_ADD;
  if (p->irregular) {
    for (int i = 0; i < p->spatial; i++)
      mask_pass(h, p, i, false, 1, &share, &zero, tpu_hlo_combine_body, &add);
    return share;
  }
  /* Output o's share lands at o stride + size - 1 - pad; the window of `size` ending at input
   * position x sums the windows holding x. Negative padding crops. */
  int64_t low[TPU_MAX_DIMS] = {0}, high[TPU_MAX_DIMS] = {0}, interior[TPU_MAX_DIMS] = {0};
  tpu_hlo_window w = tpu_hlo_window_one(share.rank);
  for (int i = 0; i < p->spatial; i++) {
    const tpu_pjrt_pool_dim *d = &p->dim[i];
    low[2 + i] = d->size - 1 - d->pad;
    high[2 + i] = d->in - 1 + d->pad - (d->out - 1) * d->stride;
    interior[2 + i] = d->stride - 1;
    w.size[2 + i] = d->size;
  }
  tpu_hlo_value spread = tpu_hlo_pad(h, share, zero, low, high, interior), r;
  tpu_hlo_reduce_window(h, 1, &spread, &zero, &w, tpu_hlo_combine_body, &add, &r);
  return r;
}
