/* Random op calls for fuzz_graph.c: the fuzzer's bytes decode into a few host arrays and a
 * sequence of calls over views of them (elementwise ops, reductions, copies, fills, cumsums), each
 * a call the contracts of ops/ allow, as the binding would make it:
 *   - views fit their array and are aligned to their dtype; a view may reinterpret an array's
 *     bytes as another dtype (never as bool, and a bool array only as bool, so bools stay 0 or 1);
 *   - an output never overlaps itself, and an input either is the output's very view (in place)
 *     or shares no byte with it, as TensorIterator requires;
 *   - inputs broadcast (missing or size-1 dimensions, stride-0 expanded views), read earlier
 *     results (a node often chains on a recent output view), or are scalars held in the call.
 * Decoding depends on the bytes and the arrays' sizes only, never on addresses, so the same bytes
 * give the same calls over any copy of the arrays. */
#ifndef TPU_FUZZ_GRAPH_CALLS_H
#define TPU_FUZZ_GRAPH_CALLS_H

#include <math.h>
#include <string.h>

#include "drivers/host/engine/engine_elementwise.h"
#include "fuzz_util.h"
#include "ops/tpu_op.h"

#define MAX_ARRAYS 4
#define MAX_NODES 16
#define MAX_NUMEL 600 /* more than one fused tile (TPU_FUSE_TILE) */
#define MAX_DIMS 3
#define RECENT 4

/* The arrays calls view; the same in every copy. */
typedef struct arrays {
  int n;
  tpu_dtype home[MAX_ARRAYS]; /* the dtype it is filled as */
  int64_t bytes[MAX_ARRAYS];  /* a multiple of 64 */
  bool dead[MAX_ARRAYS];      /* no storage holds it: outputs written to it are not needed */
} arrays;

typedef struct decoder {
  fuzz_in in;
  const arrays *a;
  unsigned char *const *mem; /* each array's memory in the copy being viewed */
  tpu_tensor recent[RECENT]; /* output views of the latest nodes, for chaining */
  int n_recent;
} decoder;

static const tpu_dtype real_dtypes[] = {TPU_UINT8,   TPU_INT8,     TPU_INT16,
                                        TPU_INT32,   TPU_INT64,    TPU_FLOAT16,
                                        TPU_BFLOAT16, TPU_FLOAT32, TPU_FLOAT64};
#define N_REAL (sizeof real_dtypes / sizeof real_dtypes[0])

static const tpu_dtype computes[] = {TPU_BOOL,    TPU_UINT8,    TPU_INT8,    TPU_INT16, TPU_INT32,
                                     TPU_INT64,   TPU_FLOAT16,  TPU_BFLOAT16, TPU_FLOAT32,
                                     TPU_FLOAT64, TPU_FLOAT32, TPU_FLOAT32};

static const double float_scalars[] = {0, 1, -1, 0.5, 2, -2.5, 3, 1e-3, 100, 1e30, -0.0, INFINITY,
                                       NAN, 0.1, 0.75, 1e-40};
static const int64_t int_scalars[] = {0, 1, -1, 2, 3, -7, 100, 127, 255, -128, INT64_MAX,
                                      INT64_MIN, (int64_t)1 << 31, 5, 10, 64};

static const int64_t dim_sizes[] = {1, 2, 3, 4, 5, 7, 8, 16, 33, 64, 100, 257, 520, 600};

/* Inputs of an elementwise op (ops/tpu_ops_elementwise.h): the binary ops are contiguous in the
 * op list; the rest are unary unless listed here. */
static int ew_arity(tpu_op_id op) {
  if (op >= TPU_OP_ADD && op <= TPU_OP_BITWISE_XOR)
    return 2;
  switch (op) {
  case TPU_OP_CLAMP_TENSOR:
  case TPU_OP_WHERE:
  case TPU_OP_LERP:
  case TPU_OP_ADDCMUL:
  case TPU_OP_ADDCDIV: return 3;
  case TPU_OP_THRESHOLD:
  case TPU_OP_GELU_BACKWARD:
  case TPU_OP_GELU_TANH_BACKWARD:
  case TPU_OP_SILU_BACKWARD:
  case TPU_OP_SIGMOID_BACKWARD:
  case TPU_OP_TANH_BACKWARD:
  case TPU_OP_MISH_BACKWARD:
  case TPU_OP_SOFTPLUS_BACKWARD:
  case TPU_OP_ELU_BACKWARD:
  case TPU_OP_LEAKY_RELU_BACKWARD:
  case TPU_OP_HARDTANH_BACKWARD:
  case TPU_OP_LOGIT_BACKWARD:
  case TPU_OP_HARDSWISH_BACKWARD:
  case TPU_OP_HARDSIGMOID_BACKWARD:
  case TPU_OP_SHRINK_BACKWARD:
  case TPU_OP_LOG_SIGMOID_BACKWARD:
  case TPU_OP_LOGADDEXP:
  case TPU_OP_LOGADDEXP2:
  case TPU_OP_HYPOT:
  case TPU_OP_XLOGY:
  case TPU_OP_XLOG1PY:
  case TPU_OP_ZETA:
  case TPU_OP_IGAMMA:
  case TPU_OP_IGAMMAC:
  case TPU_OP_FMAX:
  case TPU_OP_FMIN:
  case TPU_OP_HEAVISIDE:
  case TPU_OP_NEXTAFTER:
  case TPU_OP_LERP_SCALAR: return 2;
  default: return 1;
  }
}

static int64_t numel_of(int ndim, const int64_t *sizes) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++)
    n *= sizes[d];
  return n;
}

/* Element offsets of a view's lowest and highest element. */
static void reach(const tpu_tensor *t, int64_t *lo, int64_t *hi) {
  *lo = *hi = 0;
  for (int d = 0; d < t->ndim; d++) {
    int64_t extent = (t->sizes[d] - 1) * t->strides[d];
    *(extent < 0 ? lo : hi) += extent;
  }
}

/* True when two views share a byte of memory (compared by their bounding ranges). */
static bool overlaps(const tpu_tensor *a, const tpu_tensor *b) {
  if (a->host != b->host)
    return false;
  int64_t alo, ahi, blo, bhi, asz = (int64_t)tpu_dtype_size(a->dtype),
                              bsz = (int64_t)tpu_dtype_size(b->dtype);
  reach(a, &alo, &ahi);
  reach(b, &blo, &bhi);
  return a->offset + alo * asz < b->offset + (bhi + 1) * bsz &&
         b->offset + blo * bsz < a->offset + (ahi + 1) * asz;
}

static bool same_view(const tpu_tensor *a, const tpu_tensor *b) {
  size_t dims = (size_t)a->ndim * sizeof a->sizes[0];
  return a->host == b->host && a->offset == b->offset && a->dtype == b->dtype &&
         a->ndim == b->ndim && !memcmp(a->sizes, b->sizes, dims) &&
         !memcmp(a->strides, b->strides, dims);
}

static int take_array(decoder *d) { return (int)take_below(&d->in, (unsigned)d->a->n); }

/* The dtype of a view of array `arr`: mostly the array's own. */
static tpu_dtype take_view_dtype(decoder *d, int arr) {
  uint8_t b = take_u8(&d->in);
  tpu_dtype home = d->a->home[arr];
  return home == TPU_BOOL || b < 160 ? home : real_dtypes[b % N_REAL];
}

static int take_shape(decoder *d, int64_t *sizes) {
  int ndim = (int)take_below(&d->in, MAX_DIMS + 1);
  int64_t numel = 1;
  for (int i = 0; i < ndim; i++) {
    int64_t s = dim_sizes[take_below(&d->in, sizeof dim_sizes / sizeof dim_sizes[0])];
    sizes[i] = numel * s > MAX_NUMEL ? 1 : s;
    numel *= sizes[i];
  }
  return ndim;
}

/* An input shape that broadcasts to `sizes`: mostly the same, else leading dimensions dropped
 * and some others 1. */
static int take_broadcast(decoder *d, int ndim, const int64_t *sizes, int64_t *out) {
  uint8_t b = take_u8(&d->in);
  int drop = b & 0x80 ? 0 : (int)((b & 3) % (unsigned)(ndim + 1));
  for (int i = drop; i < ndim; i++)
    out[i - drop] = (b & 0x80) || !((b >> (2 + i)) & 1) ? sizes[i] : 1;
  return ndim - drop;
}

/* A view of array `arr` over `sizes`: row-major, the last two dimensions transposed, every other
 * element of the last dimension, the first dimension reversed, or (inputs only) expanded along
 * its first dimension (stride 0); at offset 0 or another that fits. False when it cannot fit. */
static bool take_view(decoder *d, int arr, tpu_dtype dtype, int ndim, const int64_t *sizes,
                      bool input, tpu_tensor *t) {
  memset(t, 0, sizeof *t);
  t->host = d->mem[arr];
  t->dtype = dtype;
  t->ndim = ndim;
  unsigned layout = take_below(&d->in, input ? 5 : 4);
  int order[MAX_DIMS] = {0, 1, 2};
  if (layout == 1 && ndim >= 2)
    order[ndim - 1] = ndim - 2, order[ndim - 2] = ndim - 1;
  int64_t step = layout == 2 ? 2 : 1;
  for (int i = ndim - 1; i >= 0; i--) {
    t->sizes[order[i]] = sizes[order[i]];
    t->strides[order[i]] = step;
    step *= sizes[order[i]];
  }
  if (layout == 3 && ndim >= 1)
    t->strides[0] = -t->strides[0];
  for (int i = 0; layout == 4 && i < ndim; i++)
    if (sizes[i] > 1) {
      t->strides[i] = 0;
      break;
    }
  int64_t lo, hi, item = (int64_t)tpu_dtype_size(dtype);
  reach(t, &lo, &hi);
  int64_t room = d->a->bytes[arr] / item - (hi - lo + 1);
  if (room < 0)
    return false;
  uint8_t b = take_u8(&d->in);
  int64_t shift = b < 128 ? 0 : (int64_t)((uint64_t)b * 7919 % (uint64_t)(room + 1));
  t->offset = (shift - lo) * item;
  return true;
}

static tpu_scalar take_scalar(decoder *d, bool floating) {
  unsigned k = take_below(&d->in, 16);
  return floating ? (tpu_scalar){.f = float_scalars[k]} : (tpu_scalar){.i = int_scalars[k]};
}

/* Remembers an output view for later nodes to chain on. */
static void remember(decoder *d, const tpu_tensor *t) {
  memmove(d->recent + 1, d->recent, (RECENT - 1) * sizeof d->recent[0]);
  d->recent[0] = *t;
  d->n_recent += d->n_recent < RECENT;
}

/* The shape of a new node: a recent output's (then *chained is that view) or a new one. */
static int take_node_shape(decoder *d, int64_t *sizes, const tpu_tensor **chained) {
  *chained = NULL;
  if (d->n_recent && take_u8(&d->in) & 1) {
    *chained = &d->recent[take_below(&d->in, (unsigned)d->n_recent)];
    memcpy(sizes, (*chained)->sizes, (size_t)(*chained)->ndim * sizeof sizes[0]);
    return (*chained)->ndim;
  }
  return take_shape(d, sizes);
}

/* Scalars an op gives a meaning the contract restricts. */
static void fix_scalars(tpu_op_call *c, bool floating, uint8_t b) {
  switch (c->op) {
  case TPU_OP_POW_SCALAR:
    if (!floating) /* integer exponents must not be negative */
      c->scalars[0].i = b % 8;
    break;
  case TPU_OP_ROUND_DECIMALS:
    c->scalars[0].f = pow(10, b % 4);
    c->scalars[1].f = b >> 7;
    break;
  case TPU_OP_ELU:
  case TPU_OP_ELU_BACKWARD: c->scalars[3].f = b >> 7; break;
  default: break;
  }
}

static tpu_op_call *take_elementwise(decoder *d) {
  static tpu_op_id ops[TPU_OP_COUNT];
  static unsigned n_ops;
  if (!n_ops)
    for (int op = 0; op < TPU_OP_COUNT; op++)
      if (tpu_ew_op_of((tpu_op_id)op))
        ops[n_ops++] = (tpu_op_id)op;
  tpu_op_id op = ops[take_below(&d->in, n_ops)];
  int n_in = ew_arity(op);
  tpu_dtype compute = computes[take_below(&d->in, sizeof computes / sizeof computes[0])];
  if (!tpu_ew_supports(op, compute))
    compute = tpu_ew_supports(op, TPU_FLOAT32) ? TPU_FLOAT32 : TPU_INT64;
  int64_t sizes[MAX_DIMS];
  const tpu_tensor *chained;
  int ndim = take_node_shape(d, sizes, &chained);
  int arr = take_array(d);
  tpu_op_call *c = tpu_op_call_new(op, n_in, 1);
  c->compute = compute;
  tpu_tensor *out = &c->tensors[n_in];
  if (!take_view(d, arr, take_view_dtype(d, arr), ndim, sizes, false, out)) {
    tpu_op_call_free(c);
    return NULL;
  }
  int scalar_input = -1;
  for (int i = 0; i < n_in; i++) {
    tpu_tensor *t = &c->tensors[i];
    unsigned kind = take_below(&d->in, 8);
    int64_t in_sizes[MAX_DIMS];
    if (i == 0 && chained) {
      *t = *chained;
    } else if (kind == 0) {
      *t = *out;
    } else if (kind == 1 && i == 1) {
      scalar_input = i;
    } else {
      int in_ndim = take_broadcast(d, ndim, sizes, in_sizes), in_arr = take_array(d);
      if (!take_view(d, in_arr, take_view_dtype(d, in_arr), in_ndim, in_sizes, true, t))
        *t = *out;
    }
    if (scalar_input != i && overlaps(t, out) && !same_view(t, out))
      *t = *out; /* a partial overlap is the caller's to refuse: make it in place */
  }
  bool floating = tpu_dtype_is_floating(compute);
  for (int k = 0; k < 4; k++)
    c->scalars[k] = take_scalar(d, floating);
  fix_scalars(c, floating, take_u8(&d->in));
  if (scalar_input >= 0) {
    bool f = take_u8(&d->in) & 1;
    tpu_op_set_scalar_input(c, scalar_input, TPU_OP_MAX_SCALARS - 1, take_scalar(d, f), f);
  }
  remember(d, out);
  return c;
}

/* The input of a reduction, cumsum or copy: a recent output or a new view (NULL: none fits). */
static bool take_source(decoder *d, const tpu_tensor *chained, int ndim, const int64_t *sizes,
                        tpu_tensor *t) {
  if (chained) {
    *t = *chained;
    return true;
  }
  int arr = take_array(d);
  return take_view(d, arr, take_view_dtype(d, arr), ndim, sizes, true, t);
}

/* A reduction (ops/tpu_ops_reduce.h) of one input; half of them over every dimension, the sums
 * among them in the float dtype of their input, which is what a fused group takes in. */
static tpu_op_call *take_reduction(decoder *d) {
  static const tpu_op_id ops[] = {TPU_OP_SUM,  TPU_OP_SUM,  TPU_OP_SUM,       TPU_OP_PROD,
                                  TPU_OP_AMAX, TPU_OP_AMIN, TPU_OP_LOGSUMEXP, TPU_OP_NORM,
                                  TPU_OP_ANY,  TPU_OP_COUNT_NONZERO};
  tpu_op_id op = ops[take_below(&d->in, sizeof ops / sizeof ops[0])];
  int64_t sizes[MAX_DIMS], out_sizes[MAX_DIMS];
  const tpu_tensor *chained;
  int ndim = take_node_shape(d, sizes, &chained);
  tpu_op_call *c = tpu_op_call_new(op, 1, 1);
  tpu_tensor *in = &c->tensors[0], *out = &c->tensors[1];
  uint8_t mask = take_u8(&d->in);
  for (int i = 0; i < ndim; i++)
    out_sizes[i] = (mask & 0x80) || ((mask >> i) & 1) ? 1 : sizes[i];
  int arr = take_array(d);
  bool ok = take_source(d, chained, ndim, sizes, in);
  tpu_dtype dt = in->dtype;
  bool floating = tpu_dtype_is_floating(dt);
  c->compute = take_u8(&d->in) & 1 ? dt : floating ? TPU_FLOAT64 : TPU_INT64;
  if (op == TPU_OP_LOGSUMEXP || op == TPU_OP_NORM)
    c->compute = floating ? dt : TPU_FLOAT32;
  tpu_dtype out_dt = op == TPU_OP_AMAX || op == TPU_OP_AMIN ? dt
                     : op == TPU_OP_ANY                     ? (dt == TPU_UINT8 ? dt : TPU_BOOL)
                     : op == TPU_OP_COUNT_NONZERO           ? TPU_INT64
                                                            : c->compute;
  ok = ok && (d->a->home[arr] == TPU_BOOL) == (out_dt == TPU_BOOL) && /* bools on bool arrays */
       take_view(d, arr, out_dt, ndim, out_sizes, false, out) &&
       !overlaps(in, out);
  if (!ok) {
    tpu_op_call_free(c);
    return NULL;
  }
  if (op == TPU_OP_SUM)
    c->scalars[0].i = tpu_dtype_is_floating(c->compute) && (take_u8(&d->in) & 1); /* mean */
  if (op == TPU_OP_NORM)
    c->scalars[0].f = (double[]){0, 1, 2, 3, INFINITY, -INFINITY}[take_below(&d->in, 6)];
  remember(d, out);
  return c;
}

/* COPY (a broadcast or converting copy into the output view), FILL, or CUMSUM. */
static tpu_op_call *take_base(decoder *d) {
  unsigned kind = take_below(&d->in, 3);
  tpu_op_id op = kind == 0 ? TPU_OP_COPY : kind == 1 ? TPU_OP_FILL : TPU_OP_CUMSUM;
  int64_t sizes[MAX_DIMS];
  const tpu_tensor *chained;
  int ndim = take_node_shape(d, sizes, &chained);
  int n_in = op != TPU_OP_FILL;
  tpu_op_call *c = tpu_op_call_new(op, n_in, 1);
  tpu_tensor *out = &c->tensors[n_in];
  int arr = take_array(d);
  bool ok = take_view(d, arr, take_view_dtype(d, arr), ndim, sizes, false, out) &&
            (!n_in || take_source(d, chained, ndim, sizes, &c->tensors[0]));
  if (ok && n_in) /* in place or apart, as for elementwise ops */
    ok = !overlaps(&c->tensors[0], out) || same_view(&c->tensors[0], out);
  if (!ok) {
    tpu_op_call_free(c);
    return NULL;
  }
  if (op == TPU_OP_FILL)
    c->scalars[0] = take_scalar(d, tpu_dtype_is_floating(out->dtype));
  if (op == TPU_OP_CUMSUM)
    c->scalars[0].i = ndim ? take_below(&d->in, (unsigned)ndim) : 0;
  remember(d, out);
  return c;
}

/* The next call, or NULL when the node is dropped (a view did not fit). */
static tpu_op_call *take_call(decoder *d) {
  unsigned kind = take_below(&d->in, 16);
  return kind < 10 ? take_elementwise(d) : kind < 13 ? take_reduction(d) : take_base(d);
}

#endif
