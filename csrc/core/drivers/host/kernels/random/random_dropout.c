/* The BERNOULLI, DROPOUT and DROPOUT_BACKWARD kernels (contract in ops/tpu_ops_random.h), on the
 * Philox stream that random.c also draws from. One iterator walks the output in logical
 * order, so each run computes its elements' words from their logical indices. */
#include <math.h>
#include <stdatomic.h>

#include "drivers/host/kernels/index/index_util.h"
#include "drivers/host/kernels/kernels.h"
#include "drivers/host/engine/engine_philox.h"

/* Elements drawn per step: bounds the stack buffer of words. */
#define CHUNK 128

typedef struct draw {
  tpu_philox_stream stream;
  double p, keep, scale;
  tpu_dtype out_dtype, p_dtype; /* p_dtype TPU_DTYPE_COUNT: no p tensor */
  atomic_bool bad;
} draw;

static void draw_init(draw *d, const tpu_op_call *call) {
  uint64_t seed = call->scalars[2].u, offset = call->scalars[3].u;
  d->stream = tpu_philox_stream_of(seed, offset);
  atomic_init(&d->bad, false);
}

/* Stores 0 or 1 in a bool, integer or floating element. */
static void store_bit(char *p, tpu_dtype dtype, bool bit) {
  if (tpu_dtype_is_floating(dtype)) {
    tpu_real_store(p, dtype, bit ? 1.0 : 0.0);
    return;
  }
  size_t size = tpu_dtype_size(dtype);
  memset(p, 0, size);
  p[0] = (char)bit; /* little-endian: the low byte */
}

/* Operands: 0 = out, 1 = p (when a tensor). */
static void bernoulli_loop(char **data, const int64_t *strides, int64_t n, int64_t index,
                           void *ctx) {
  draw *d = ctx;
  for (int64_t done = 0; done < n; done += CHUNK) {
    int64_t m = n - done < CHUNK ? n - done : CHUNK;
    float u[CHUNK];
    tpu_philox_uniforms_f32(&d->stream, (uint64_t)(index + done), m, u);
    for (int64_t i = 0; i < m; i++) {
      double p = d->p;
      if (d->p_dtype != TPU_DTYPE_COUNT) {
        p = tpu_real_load(data[1] + (done + i) * strides[1], d->p_dtype);
        if (!(p >= 0 && p <= 1))
          atomic_store_explicit(&d->bad, true, memory_order_relaxed);
      }
      store_bit(data[0] + (done + i) * strides[0], d->out_dtype, (double)u[i] < p);
    }
  }
}

tpu_status tpu_kernel_bernoulli(const tpu_op_call *call) {
  const tpu_tensor *out = &call->tensors[call->n_inputs];
  const tpu_tensor *p = call->n_inputs == 1 ? &call->tensors[0] : NULL;
  if (!tpu_dtype_is_computable(out->dtype) || tpu_dtype_is_complex(out->dtype) ||
      (p && (!tpu_dtype_is_floating(p->dtype) || p->ndim != out->ndim)))
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "bernoulli_ is not implemented for %s",
                     tpu_dtype_name(out->dtype));
  draw d;
  draw_init(&d, call);
  d.p = call->scalars[0].f;
  d.out_dtype = out->dtype;
  d.p_dtype = p ? p->dtype : TPU_DTYPE_COUNT;
  tpu_iter it;
  tpu_iter_init(&it, out->ndim, out->sizes);
  tpu_iter_add_tensor(&it, out);
  if (p)
    tpu_iter_add_tensor(&it, p);
  tpu_iter_build(&it, TPU_ITER_LOGICAL_ORDER);
  tpu_iter_run_indexed_parallel(&it, bernoulli_loop, &d);
  if (atomic_load(&d.bad))
    return tpu_error(TPU_ERR_RUNTIME, "bernoulli_ expects p to be in [0, 1]");
  return TPU_OK;
}

/* out[i] = (in[i] * keep[i]) * scale over n elements (byte strides os, is, ks), in the dtype's
 * compute type (float for float16, bfloat16 and float32), rounded once; complex dtypes scale both
 * parts. One loop per dtype, the dtype switch outside it. */
#define MASK_LOOP(NAME, T, M, LOAD, STORE)                                                         \
  static void mask_##NAME(char *out, int64_t os, const char *in, int64_t is, const char *keep,     \
                          int64_t ks, int64_t n, int parts, double scale) {                        \
    const M s = (M)scale;                                                                          \
    for (int64_t i = 0; i < n; i++) {                                                              \
      const M m = keep[i * ks] != 0 ? (M)1 : (M)0;                                                 \
      for (int c = 0; c < parts; c++) {                                                            \
        T x;                                                                                       \
        memcpy(&x, in + i * is + c * (int64_t)sizeof x, sizeof x);                                 \
        T y = STORE(LOAD(x) * m * s);                                                              \
        memcpy(out + i * os + c * (int64_t)sizeof y, &y, sizeof y);                                \
      }                                                                                            \
    }                                                                                              \
  }
#define SAME(x) (x)
MASK_LOOP(f16, uint16_t, float, tpu_f16_to_f32, tpu_f32_to_f16)
MASK_LOOP(bf16, uint16_t, float, tpu_bf16_to_f32, tpu_f32_to_bf16)
MASK_LOOP(f32, float, float, SAME, SAME)
MASK_LOOP(f64, double, double, SAME, SAME)

static void apply_mask(tpu_dtype dtype, char *out, int64_t os, const char *in, int64_t is,
                       const char *keep, int64_t ks, int64_t n, double scale) {
  switch (dtype) {
  case TPU_FLOAT16: mask_f16(out, os, in, is, keep, ks, n, 1, scale); break;
  case TPU_BFLOAT16: mask_bf16(out, os, in, is, keep, ks, n, 1, scale); break;
  case TPU_FLOAT32: mask_f32(out, os, in, is, keep, ks, n, 1, scale); break;
  case TPU_COMPLEX64: mask_f32(out, os, in, is, keep, ks, n, 2, scale); break;
  case TPU_COMPLEX128: mask_f64(out, os, in, is, keep, ks, n, 2, scale); break;
  default: mask_f64(out, os, in, is, keep, ks, n, 1, scale); break;
  }
}

/* Operands: 0 = out, 1 = mask, 2 = input. */
static void dropout_loop(char **data, const int64_t *strides, int64_t n, int64_t index,
                         void *ctx) {
  draw *d = ctx;
  for (int64_t done = 0; done < n; done += CHUNK) {
    int64_t m = n - done < CHUNK ? n - done : CHUNK;
    float u[CHUNK];
    tpu_philox_uniforms_f32(&d->stream, (uint64_t)(index + done), m, u);
    char *mask = data[1] + done * strides[1];
    for (int64_t i = 0; i < m; i++)
      mask[i * strides[1]] = (char)((double)u[i] < d->keep);
    apply_mask(d->out_dtype, data[0] + done * strides[0], strides[0], data[2] + done * strides[2],
               strides[2], mask, strides[1], m, d->scale);
  }
}

static bool dropout_dtype(tpu_dtype dtype) {
  return tpu_dtype_is_floating(dtype) || tpu_dtype_is_complex(dtype);
}

tpu_status tpu_kernel_dropout(const tpu_op_call *call) {
  const tpu_tensor *input = &call->tensors[0], *out = &call->tensors[1];
  const tpu_tensor *mask = &call->tensors[2];
  if (!dropout_dtype(input->dtype) || out->dtype != input->dtype || mask->dtype != TPU_BOOL ||
      !tpu_tensor_same_sizes(input, out) || !tpu_tensor_same_sizes(input, mask))
    return tpu_error(TPU_ERR_VALUE, "native_dropout: malformed call");
  draw d;
  draw_init(&d, call);
  d.keep = call->scalars[0].f;
  d.scale = call->scalars[1].f;
  d.out_dtype = input->dtype;
  tpu_iter it;
  tpu_iter_init(&it, out->ndim, out->sizes);
  tpu_iter_add_tensor(&it, out);
  tpu_iter_add_tensor(&it, mask);
  tpu_iter_add_tensor(&it, input);
  tpu_iter_build(&it, TPU_ITER_LOGICAL_ORDER);
  tpu_iter_run_indexed_parallel(&it, dropout_loop, &d);
  return TPU_OK;
}

/* Operands: 0 = grad_input, 1 = mask, 2 = grad. */
static void dropout_backward_loop(char **data, const int64_t *strides, int64_t n, void *ctx) {
  const draw *d = ctx;
  apply_mask(d->out_dtype, data[0], strides[0], data[2], strides[2], data[1], strides[1], n,
             d->scale);
}

tpu_status tpu_kernel_dropout_backward(const tpu_op_call *call) {
  const tpu_tensor *grad = &call->tensors[0], *mask = &call->tensors[1];
  const tpu_tensor *gi = &call->tensors[2];
  if (!dropout_dtype(grad->dtype) || gi->dtype != grad->dtype ||
      (mask->dtype != TPU_BOOL && mask->dtype != TPU_UINT8) ||
      !tpu_tensor_same_sizes(grad, gi) || !tpu_tensor_same_sizes(grad, mask))
    return tpu_error(TPU_ERR_VALUE, "native_dropout_backward: malformed call");
  draw d = {.scale = call->scalars[0].f, .out_dtype = grad->dtype};
  tpu_iter it;
  tpu_iter_init(&it, gi->ndim, gi->sizes);
  tpu_iter_add_tensor(&it, gi);
  tpu_iter_add_tensor(&it, mask);
  tpu_iter_add_tensor(&it, grad);
  tpu_iter_build(&it, 0);
  tpu_iter_run_parallel(&it, dropout_backward_loop, &d);
  return TPU_OK;
}
