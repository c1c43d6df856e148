/* Pooling (ops/tpu_ops_conv.h) in StableHLO, with the host kernel's windows, divisors and picks
 * (drivers/host/kernels/conv/conv_pool.c): max and average and their adaptive forms over 1 to 3
 * spatial dimensions, with any kernel, stride, padding, dilation and output size (ceil mode),
 * padding counted or not, a divisor override; max pooling's indices; the backward of each. The
 * windows' reductions are tpu_pjrt_lower_pool_window.c's.
 * - Max pooling reduces each value with its position in its input plane as a pair, by the
 *   kernel's rule (a NaN wins, the last of several; else the first of the largest) written as a
 *   total order, so any grouping XLA picks gives the kernel's pick. An empty window (no tap inside
 *   the input) gives the dtype's smallest value and the position of its first tap, as on the host.
 * - Average pooling sums each window and divides it by its divisor (0 for an empty window).
 * - Max pooling's backward adds each gradient at its index in its plane (a scatter); an index
 *   outside the plane fails the call as on the host, an IndexError. Average pooling's backward
 *   adds each output's share of its gradient over its window.
 * Floating values compute in float (double for float64) and round once; max pooling picks the
 * input's own values (exact in every dtype, integers too); int64 average pooling sums and divides
 * as integers, truncating. Calls the host kernel refuses (malformed ones) fall back, for the host
 * to report. */
#include <stdio.h>

#include "drivers/pjrt/tpu_pjrt_lower_pool.h"
#include "drivers/pjrt/tpu_pjrt_lower_reduce.h"

static const tpu_tensor *x_like(const tpu_op_call *call) {
  return &call->tensors[call->op == TPU_OP_POOL ? 0 : call->n_inputs];
}

static const tpu_tensor *y_like(const tpu_op_call *call) {
  return &call->tensors[call->op == TPU_OP_POOL ? 1 : 0];
}

static bool max_mode(unsigned mode) {
  return mode == TPU_POOL_MAX || mode == TPU_POOL_ADAPTIVE_MAX;
}

/* The host kernel's checks (pool_setup). */
static bool supports(const tpu_op_call *call) {
  bool forward = call->op == TPU_OP_POOL;
  unsigned mode = (unsigned)(call->scalars[4].u & 3);
  bool max = max_mode(mode), adaptive = mode >= TPU_POOL_ADAPTIVE_AVG;
  if ((!forward && call->op != TPU_OP_POOL_BACKWARD) || call->n_inputs != (forward ? 1 : 1 + max) ||
      call->n_outputs != (forward ? 1 + max : 1))
    return false;
  const tpu_tensor *x = x_like(call), *y = y_like(call);
  int nd = x->ndim;
  bool integer = x->dtype >= TPU_UINT8 && x->dtype <= TPU_INT64;
  bool int_ok = max ? integer : mode == TPU_POOL_AVG && x->dtype == TPU_INT64;
  bool dtype_ok = tpu_dtype_is_floating(x->dtype) || (forward && int_ok);
  if (nd < 3 || nd > 5 || y->ndim != nd || y->dtype != x->dtype || !dtype_ok ||
      y->sizes[0] != x->sizes[0] || y->sizes[1] != x->sizes[1])
    return false;
  const tpu_tensor *idx = &call->tensors[forward ? 2 : 1];
  if (max && (idx->dtype != TPU_INT64 || !tpu_tensor_same_sizes(idx, y)))
    return false;
  for (int i = 0; i < nd - 2; i++) {
    int slot = 5 - nd + i; /* the last nd - 2 of three packed slots */
    if (x->sizes[2 + i] < 1 || y->sizes[2 + i] < 1)
      return false;
    if (!adaptive && (tpu_conv_unpack(call->scalars[0].u, slot) < 1 ||
                      tpu_conv_unpack(call->scalars[1].u, slot) < 1 ||
                      tpu_conv_unpack(call->scalars[3].u, slot) < 1))
      return false;
  }
  return true;
}

static tpu_pjrt_pool pool_of(const tpu_op_call *call) {
  const tpu_tensor *x = x_like(call), *y = y_like(call);
  tpu_pjrt_pool p = {.mode = (unsigned)(call->scalars[4].u & 3), .divisor = call->scalars[5].i,
                     .spatial = x->ndim - 2};
  p.max = max_mode(p.mode);
  p.count_pad = p.mode == TPU_POOL_AVG && (call->scalars[4].u & TPU_POOL_COUNT_PAD);
  for (int i = 0; i < p.spatial; i++) {
    tpu_pjrt_pool_dim *d = &p.dim[i];
    int slot = 3 - p.spatial + i;
    d->in = x->sizes[2 + i];
    d->out = y->sizes[2 + i];
    d->dilation = 1; /* average pooling has none */
    if (p.mode < TPU_POOL_ADAPTIVE_AVG) {
      d->size = tpu_conv_unpack(call->scalars[0].u, slot);
      d->stride = tpu_conv_unpack(call->scalars[1].u, slot);
      d->pad = tpu_conv_unpack(call->scalars[2].u, slot);
      if (p.max)
        d->dilation = tpu_conv_unpack(call->scalars[3].u, slot);
    } else if (d->in % d->out == 0) { /* [o in / out, (o + 1) in / out): a regular window */
      d->size = d->stride = d->in / d->out;
    } else {
      p.irregular = true;
    }
  }
  return p;
}

/* Of two (value, position) pairs, the one the host kernel's scan keeps (see the top). */
static void pick(tpu_hlo *h, const tpu_hlo_value *p, const tpu_hlo_value *q, tpu_hlo_value *r,
                 void *ctx) {
  (void)ctx;
  tpu_hlo_value earlier = tpu_hlo_binary(h, "and", tpu_hlo_compare(h, "EQ", q[0], p[0]),
                                         tpu_hlo_compare(h, "LT", q[1], p[1]));
  tpu_hlo_value take = tpu_hlo_binary(h, "or", tpu_hlo_compare(h, "GT", q[0], p[0]), earlier);
  if (tpu_dtype_is_floating(q[0].elem)) { /* a NaN q wins unless p is a later NaN */
    tpu_hlo_value wins = tpu_hlo_binary(h, "or", tpu_hlo_compare(h, "EQ", p[0], p[0]),
                                        tpu_hlo_compare(h, "GT", q[1], p[1]));
    take = tpu_hlo_select(h, tpu_hlo_compare(h, "NE", q[0], q[0]), wins, take);
  }
  r[0] = tpu_hlo_select(h, take, q[0], p[0]);
  r[1] = tpu_hlo_select(h, take, q[1], p[1]);
}

/* Where values compute: float16 and bfloat16 as float32 (a max converts back exactly). */
static tpu_dtype wide(tpu_dtype d) {
  return d == TPU_FLOAT16 || d == TPU_BFLOAT16 ? TPU_FLOAT32 : d;
}

static void forward(tpu_hlo *h, const tpu_pjrt_pool *p, const tpu_op_call *call, tpu_hlo_value x,
                    tpu_hlo_value *out) {
  const int64_t *y_dims = call->tensors[1].sizes;
  x = tpu_hlo_convert(h, x, wide(x.elem));
  if (!p->max) {
    tpu_hlo_value zero = tpu_hlo_constant(h, x.elem, tpu_dtype_is_floating(x.elem) ? "0.0" : "0");
    tpu_hlo_combine add = TPU_HLO_ADD;
    tpu_pjrt_pool_windows(h, p, y_dims, 1, &x, &zero, tpu_hlo_combine_body, &add);
    out[0] = tpu_pjrt_pool_share(h, p, x);
    return;
  }
  tpu_hlo_value v[2] = {x, tpu_pjrt_pool_positions(h, p, &x)};
  tpu_hlo_value init[2] = {tpu_hlo_constant(h, x.elem, tpu_pjrt_reduce_identity(x.elem, true)),
                           tpu_hlo_constant(h, TPU_INT64, "9223372036854775807")};
  tpu_pjrt_pool_windows(h, p, y_dims, 2, v, init, pick, NULL);
  if (!p->irregular) { /* an empty window (no tap inside the input) keeps init's position */
    tpu_hlo_value empty = tpu_hlo_compare(h, "EQ", v[1], tpu_hlo_full_i64(h, INT64_MAX, &v[1]));
    v[1] = tpu_hlo_select(h, empty, tpu_pjrt_pool_first_tap(h, p, &v[1]), v[1]);
  }
  out[0] = v[0];
  out[1] = v[1];
}

/* dx: each gradient added at its index within its (n, c) plane. */
static tpu_hlo_value max_backward(tpu_hlo *h, const tpu_op_call *call, tpu_hlo_value dy,
                                  tpu_hlo_value idx, tpu_hlo_value *bad) {
  const tpu_tensor *x = &call->tensors[call->n_inputs];
  int64_t plane = 1, count = 1;
  for (int d = 2; d < x->ndim; d++)
    plane *= x->sizes[d];
  for (int d = 0; d < idx.rank; d++)
    count *= idx.dims[d];
  tpu_hlo_value outside =
      tpu_hlo_binary(h, "or", tpu_hlo_compare(h, "LT", idx, tpu_hlo_full_i64(h, 0, &idx)),
                     tpu_hlo_compare(h, "GE", idx, tpu_hlo_full_i64(h, plane, &idx)));
  *bad = tpu_hlo_any(h, outside);
  tpu_hlo_value n = tpu_hlo_coordinate(h, &idx, 0), c = tpu_hlo_coordinate(h, &idx, 1);
  n = tpu_hlo_binary(h, "multiply", n, tpu_hlo_full_i64(h, x->sizes[1], &idx));
  tpu_hlo_value first = tpu_hlo_binary(h, "multiply", tpu_hlo_binary(h, "add", n, c),
                                       tpu_hlo_full_i64(h, plane, &idx));
  tpu_hlo_value at = tpu_hlo_binary(h, "add", first, idx);
  /* Out of range: a target the scatter skips. */
  at = tpu_hlo_select(h, outside, tpu_hlo_full_i64(h, -1, &idx), at);
  tpu_hlo_value zeros = {.elem = dy.elem, .rank = 1, .dims = {x->sizes[0] * x->sizes[1] * plane}};
  zeros = tpu_hlo_splat(h, tpu_hlo_constant(h, dy.elem, "0.0"), &zeros);
  tpu_hlo_value dx = tpu_hlo_scatter(h, zeros, tpu_hlo_reshape(h, at, 1, &count),
                                     tpu_hlo_reshape(h, dy, 1, &count), TPU_HLO_ADD);
  return tpu_hlo_reshape(h, dx, x->ndim, x->sizes);
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  (void)scalar;
  (void)ctx;
  tpu_pjrt_pool p = pool_of(call);
  if (call->op == TPU_OP_POOL) {
    forward(h, &p, call, in[0], out);
    return;
  }
  tpu_hlo_value dy = tpu_hlo_convert(h, in[0], wide(in[0].elem));
  out[0] = p.max ? max_backward(h, call, dy, in[1], bad)
                 : tpu_pjrt_pool_avg_backward(h, &p, tpu_pjrt_pool_share(h, &p, dy));
}

/* Max pooling's backward checks its indices. */
static bool message(const tpu_op_call *call, int check, char *buf, size_t len,
                    tpu_status *code) {
  (void)code; /* an IndexError, as on the host */
  if (check != 0 || call->op != TPU_OP_POOL_BACKWARD ||
      !max_mode((unsigned)(call->scalars[4].u & 3)))
    return false;
  snprintf(buf, len, "pool_backward: index out of bounds");
  return true;
}

const tpu_pjrt_family tpu_pjrt_pool_family = {
    .supports = supports, .emit = emit, .message = message};
