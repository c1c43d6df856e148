/* Random ops (ops/tpu_ops_random.h) in StableHLO: UNIFORM, NORMAL, RANDOM (its range a constant
 * of the module: it decides whether an element takes one word or two), BERNOULLI with a scalar
 * p, DROPOUT and DROPOUT_BACKWARD. The module computes the stream's Philox4x32-10 words itself
 * (drivers/pjrt/tpu_pjrt_philox.h), with the rounding of the host driver's kernels, so both
 * drivers draw the same values bit for bit; NORMAL's logarithm, cosine and sine are XLA's where
 * the host's are libm's, so its values agree within a few units in the last place. */
#include <stdio.h>
#include <string.h>

#include "drivers/pjrt/tpu_pjrt_family.h"
#include "drivers/pjrt/tpu_pjrt_philox.h"

static bool floating_real(tpu_dtype d) {
  return tpu_dtype_is_floating(d) && tpu_dtype_is_computable(d) && !tpu_dtype_is_complex(d);
}

static bool same_sizes(const tpu_tensor *a, const tpu_tensor *b) {
  return a->ndim == b->ndim && !memcmp(a->sizes, b->sizes, (size_t)a->ndim * sizeof *a->sizes);
}

static bool supports(const tpu_op_call *call) {
  const tpu_tensor *t = call->tensors;
  switch (call->op) {
  case TPU_OP_UNIFORM: case TPU_OP_NORMAL:
    return call->n_inputs == 0 && call->n_outputs == 1 && floating_real(t[0].dtype);
  case TPU_OP_RANDOM:
    return call->n_inputs == 0 && call->n_outputs == 1 && tpu_dtype_is_computable(t[0].dtype) &&
           !tpu_dtype_is_complex(t[0].dtype);
  case TPU_OP_BERNOULLI: { /* a p tensor (of the output's sizes) is checked against [0, 1] */
    const tpu_tensor *out = &t[call->n_inputs];
    return call->n_inputs <= 1 && call->n_outputs == 1 && tpu_dtype_is_computable(out->dtype) &&
           !tpu_dtype_is_complex(out->dtype) &&
           (call->n_inputs == 0 || (floating_real(t[0].dtype) && same_sizes(&t[0], out)));
  }
  case TPU_OP_DROPOUT:
    return call->n_inputs == 1 && call->n_outputs == 2 && floating_real(t[0].dtype) &&
           t[1].dtype == t[0].dtype && t[2].dtype == TPU_BOOL && same_sizes(&t[0], &t[1]) &&
           same_sizes(&t[0], &t[2]);
  case TPU_OP_DROPOUT_BACKWARD:
    return call->n_inputs == 2 && call->n_outputs == 1 && floating_real(t[0].dtype) &&
           t[2].dtype == t[0].dtype && (t[1].dtype == TPU_BOOL || t[1].dtype == TPU_UINT8) &&
           same_sizes(&t[0], &t[1]) && same_sizes(&t[0], &t[2]);
  default:
    return false;
  }
}

static tpu_hlo_value u64(tpu_hlo *h, const char *literal, const tpu_hlo_value *like) {
  return tpu_hlo_full(h, TPU_UINT64, literal, like);
}

/* A runtime 64-bit scalar as uint64, rank 0. */
static tpu_hlo_value scalar_u64(tpu_hlo *h, tpu_pjrt_scalar_fn scalar, void *ctx, int slot) {
  return tpu_hlo_bitcast(h, scalar(ctx, slot, false), TPU_UINT64, 0, NULL);
}

/* The uniforms of `out`'s elements (double for float64, float otherwise), shaped as out. */
static tpu_hlo_value uniforms(tpu_hlo *h, tpu_pjrt_scalar_fn scalar, void *ctx,
                              const tpu_tensor *out, bool f64) {
  int64_t n = tpu_tensor_numel(out);
  tpu_hlo_value u = f64 ? tpu_pjrt_philox_uniforms_f64(h, scalar, ctx, n)
                        : tpu_pjrt_philox_uniforms_f32(h, scalar, ctx, n);
  return tpu_hlo_reshape(h, u, out->ndim, out->sizes);
}

/* Standard normals of `out`'s elements by Box-Muller over the uniforms of elements 2p, 2p + 1:
 * r cos(t) and r sin(t), r = sqrt(-2 log(1 - u_2p)), t = 2 pi u_2p+1 (XLA's log, cos and sin,
 * where the host uses libm's: the values agree within a few units in the last place). */
static tpu_hlo_value normals(tpu_hlo *h, tpu_pjrt_scalar_fn scalar, void *ctx,
                             const tpu_tensor *out, bool f64) {
  int64_t n = tpu_tensor_numel(out), p = (n + 1) / 2, pairs[2] = {p, 2};
  int64_t start0[2] = {0, 0}, end0[2] = {p, 1}, start1[2] = {0, 1}, end1[2] = {p, 2};
  tpu_hlo_elem work = f64 ? TPU_FLOAT64 : TPU_FLOAT32;
  tpu_hlo_value u = f64 ? tpu_pjrt_philox_uniforms_f64(h, scalar, ctx, 2 * p)
                        : tpu_pjrt_philox_uniforms_f32(h, scalar, ctx, 2 * p);
  u = tpu_hlo_reshape(h, u, 2, pairs);
  tpu_hlo_value u0 = tpu_hlo_slice(h, u, start0, end0), u1 = tpu_hlo_slice(h, u, start1, end1);
  tpu_hlo_value one = tpu_hlo_full(h, work, "1.0", &u0);
  tpu_hlo_value radius = tpu_hlo_unary(
      h, "sqrt",
      tpu_hlo_binary(h, "multiply", tpu_hlo_full(h, work, "-2.0", &u0),
                     tpu_hlo_unary(h, "log", tpu_hlo_binary(h, "subtract", one, u0))));
  tpu_hlo_value theta = tpu_hlo_binary(
      h, "multiply", tpu_hlo_full(h, work, f64 ? "6.283185307179586" : "6.28318548", &u1), u1);
  tpu_hlo_value z0 = tpu_hlo_binary(h, "multiply", radius, tpu_hlo_unary(h, "cosine", theta));
  tpu_hlo_value z1 = tpu_hlo_binary(h, "multiply", radius, tpu_hlo_unary(h, "sine", theta));
  /* Interleaved: column 0 of each pair from z0, column 1 from z1. */
  int64_t keep[2] = {0, 1}, column = 1;
  tpu_hlo_value wide0 = tpu_hlo_broadcast(h, tpu_hlo_reshape(h, z0, 1, &p), 2, pairs, keep);
  tpu_hlo_value wide1 = tpu_hlo_broadcast(h, tpu_hlo_reshape(h, z1, 1, &p), 2, pairs, keep);
  tpu_hlo_value col = tpu_hlo_broadcast(h, tpu_hlo_iota(h, TPU_INT64, 2), 2, pairs, &column);
  tpu_hlo_value z = tpu_hlo_select(
      h, tpu_hlo_compare(h, "EQ", col, tpu_hlo_full(h, TPU_INT64, "0", &col)), wide0, wide1);
  int64_t all = 2 * p, from = 0;
  z = tpu_hlo_slice(h, tpu_hlo_reshape(h, z, 1, &all), &from, &n);
  return tpu_hlo_reshape(h, z, out->ndim, out->sizes);
}

/* u * (to - from) + from in float (double for float64), rounded once to the dtype; a value equal
 * to `to` (rounded) becomes `from` (rounded). */
static tpu_hlo_value uniform(tpu_hlo *h, tpu_pjrt_scalar_fn scalar, void *ctx,
                             const tpu_tensor *out) {
  bool f64 = out->dtype == TPU_FLOAT64;
  tpu_hlo_elem work = f64 ? TPU_FLOAT64 : TPU_FLOAT32;
  tpu_hlo_value u = uniforms(h, scalar, ctx, out, f64);
  tpu_hlo_value from = tpu_hlo_convert(h, scalar(ctx, 0, true), work);
  tpu_hlo_value to = tpu_hlo_convert(h, scalar(ctx, 1, true), work);
  tpu_hlo_value range = tpu_hlo_splat(h, tpu_hlo_binary(h, "subtract", to, from), &u);
  /* The product is rounded before the sum, as on the host: the barrier keeps XLA's CPU compiler
   * from contracting the two into one fused multiply-add. */
  tpu_hlo_value product = tpu_hlo_unary(h, "optimization_barrier",
                                        tpu_hlo_binary(h, "multiply", u, range));
  tpu_hlo_value v = tpu_hlo_binary(h, "add", product, tpu_hlo_splat(h, from, &u));
  v = tpu_hlo_convert(h, v, out->dtype);
  tpu_hlo_value to_r = tpu_hlo_splat(h, tpu_hlo_convert(h, to, out->dtype), &v);
  tpu_hlo_value from_r = tpu_hlo_splat(h, tpu_hlo_convert(h, from, out->dtype), &v);
  return tpu_hlo_select(h, tpu_hlo_compare(h, "EQ", v, to_r), from_r, v);
}

/* from + bits % range in wrapping uint64 (range 0: every value), as int64 shaped as `out`: bits
 * is word i for a range of at most 2^32, else words 2i, 2i + 1 as lo | hi << 32. */
static tpu_hlo_value random_ints(tpu_hlo *h, tpu_pjrt_scalar_fn scalar, void *ctx,
                                 const tpu_tensor *out, uint64_t range) {
  int64_t n = tpu_tensor_numel(out);
  tpu_hlo_value bits;
  if (range != 0 && range <= (UINT64_C(1) << 32))
    bits = tpu_hlo_convert(h, tpu_pjrt_philox_words(h, scalar, ctx, n), TPU_UINT64);
  else
    bits = tpu_pjrt_philox_words64(h, scalar, ctx, n);
  if (range != 0) {
    char literal[24];
    snprintf(literal, sizeof literal, "%llu", (unsigned long long)range);
    bits = tpu_hlo_binary(h, "remainder", bits, u64(h, literal, &bits));
  }
  tpu_hlo_value from = tpu_hlo_splat(h, scalar_u64(h, scalar, ctx, 0), &bits);
  tpu_hlo_value v = tpu_hlo_binary(h, "add", bits, from);
  return tpu_hlo_reshape(h, tpu_hlo_bitcast(h, v, TPU_INT64, 1, &n), out->ndim, out->sizes);
}

/* z * std + mean in float (double for float64), the product rounded before the sum as on the
 * host, then rounded to the dtype. */
static tpu_hlo_value normal(tpu_hlo *h, tpu_pjrt_scalar_fn scalar, void *ctx,
                            const tpu_tensor *out) {
  bool f64 = out->dtype == TPU_FLOAT64;
  tpu_hlo_elem work = f64 ? TPU_FLOAT64 : TPU_FLOAT32;
  tpu_hlo_value z = normals(h, scalar, ctx, out, f64);
  tpu_hlo_value mean = tpu_hlo_splat(h, tpu_hlo_convert(h, scalar(ctx, 0, true), work), &z);
  tpu_hlo_value std = tpu_hlo_splat(h, tpu_hlo_convert(h, scalar(ctx, 1, true), work), &z);
  tpu_hlo_value product =
      tpu_hlo_unary(h, "optimization_barrier", tpu_hlo_binary(h, "multiply", z, std));
  return tpu_hlo_convert(h, tpu_hlo_binary(h, "add", product, mean), out->dtype);
}

/* u < p in double: element i's draw as an i1 value shaped as `out`; p is the scalar slot 0, or
 * the values of *p_tensor when given. */
static tpu_hlo_value draw(tpu_hlo *h, tpu_pjrt_scalar_fn scalar, void *ctx,
                         const tpu_tensor *out, const tpu_hlo_value *p_tensor) {
  tpu_hlo_value u = tpu_hlo_convert(h, uniforms(h, scalar, ctx, out, false), TPU_FLOAT64);
  tpu_hlo_value p = p_tensor ? tpu_hlo_convert(h, *p_tensor, TPU_FLOAT64)
                             : tpu_hlo_splat(h, scalar(ctx, 0, true), &u);
  return tpu_hlo_compare(h, "LT", u, p);
}

/* (x * mask) * scale in the dtype's compute type (float below float64), rounded once. */
static tpu_hlo_value apply_mask(tpu_hlo *h, tpu_hlo_value x, tpu_hlo_value keep,
                                tpu_hlo_value scale, tpu_dtype dtype) {
  tpu_hlo_elem work = dtype == TPU_FLOAT64 ? TPU_FLOAT64 : TPU_FLOAT32;
  x = tpu_hlo_convert(h, x, work);
  /* Behind a barrier: seeing a converted boolean, XLA would select instead of multiplying, and
   * a dropped negative element would come out +0 instead of -0. */
  tpu_hlo_value m = tpu_hlo_unary(h, "optimization_barrier", tpu_hlo_convert(h, keep, work));
  tpu_hlo_value s = tpu_hlo_splat(h, tpu_hlo_convert(h, scale, work), &x);
  return tpu_hlo_binary(h, "multiply", tpu_hlo_binary(h, "multiply", x, m), s);
}

static void emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                 tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad) {
  const tpu_tensor *t = call->tensors;
  switch (call->op) {
  case TPU_OP_UNIFORM:
    out[0] = uniform(h, scalar, ctx, &t[0]);
    break;
  case TPU_OP_NORMAL:
    out[0] = normal(h, scalar, ctx, &t[0]);
    break;
  case TPU_OP_RANDOM: /* an int64 value, stored as a copy from int64 stores it */
    out[0] = random_ints(h, scalar, ctx, &t[0], call->scalars[1].u);
    break;
  case TPU_OP_BERNOULLI: /* stored as 1 or 0 in the output's dtype */
    out[0] = draw(h, scalar, ctx, &t[call->n_inputs], call->n_inputs ? &in[0] : NULL);
    if (call->n_inputs) { /* a p outside [0, 1] (or NaN) fails the call */
      tpu_hlo_value p = tpu_hlo_convert(h, in[0], TPU_FLOAT64);
      tpu_hlo_value inside = tpu_hlo_binary(
          h, "and", tpu_hlo_compare(h, "GE", p, tpu_hlo_full(h, TPU_FLOAT64, "0.0", &p)),
          tpu_hlo_compare(h, "LE", p, tpu_hlo_full(h, TPU_FLOAT64, "1.0", &p)));
      *bad = tpu_hlo_any(h, tpu_hlo_unary(h, "not", inside));
    }
    break;
  case TPU_OP_DROPOUT: {
    tpu_hlo_value keep = draw(h, scalar, ctx, &t[0], NULL);
    out[0] = apply_mask(h, in[0], keep, scalar(ctx, 1, true), t[0].dtype);
    out[1] = keep;
    break;
  }
  default: { /* DROPOUT_BACKWARD */
    tpu_hlo_value mask = tpu_hlo_cast(h, in[1], TPU_BOOL);
    out[0] = apply_mask(h, in[0], mask, scalar(ctx, 0, true), t[0].dtype);
    break;
  }
  }
}

/* Only bernoulli with a p tensor checks its input: PyTorch CPU's RuntimeError for a bad p. */
static bool message(const tpu_op_call *call, int check, char *buf, size_t len,
                    tpu_status *code) {
  if (check != 0 || call->op != TPU_OP_BERNOULLI || call->n_inputs == 0)
    return false;
  snprintf(buf, len, "bernoulli_ expects p to be in [0, 1]");
  *code = TPU_ERR_RUNTIME;
  return true;
}

const tpu_pjrt_family tpu_pjrt_random_family = {
    .supports = supports, .emit = emit, .message = message};
