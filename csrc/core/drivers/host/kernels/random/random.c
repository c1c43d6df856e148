/* The random fills UNIFORM, NORMAL and RANDOM (contract and stream in ops/tpu_ops_random.h). One
 * iterator walks the output in logical order, split over the pool; each run computes its
 * elements' words from their logical indices in chunks, so one Philox call serves 4 elements of
 * one word each, or 2 of two words, and no chunking or thread count changes a value. NORMAL makes
 * whole Box-Muller pairs and keeps the wanted ones. */
#include <math.h>
#include <string.h>

#include "drivers/host/kernels/kernels.h"
#include "drivers/host/engine/engine_iter.h"
#include "drivers/host/engine/engine_philox.h"

/* Elements generated per step: bounds the stack buffers below. */
#define CHUNK 128

#define TWO_PI 6.283185307179586476925286766559

typedef struct rng {
  tpu_philox_stream stream;
  tpu_dtype dtype;
  tpu_scalar a, b; /* from and to, mean and std, or from and range */
} rng;

/* Uniforms in [0, 1) of elements [first, first + n), n <= CHUNK + 2. */
static void uniforms_f64(const rng *r, int64_t first, int64_t n, double *u) {
  uint32_t w[2 * (CHUNK + 2)];
  tpu_philox_words(&r->stream, 2 * (uint64_t)first, 2 * n, w);
  for (int64_t i = 0; i < n; i++)
    u[i] = tpu_philox_uniform_f64(w[2 * i], w[2 * i + 1]);
}

/* Standard normals of elements [first, first + n), n <= CHUNK: whole Box-Muller pairs are made
 * and the wanted ones kept. 1 - u lies in (0, 1], so the logarithm is finite. */
static void normals_f32(const rng *r, int64_t first, int64_t n, float *z) {
  int64_t lo = first & ~(int64_t)1, hi = (first + n + 1) & ~(int64_t)1;
  float u[CHUNK + 2];
  tpu_philox_uniforms_f32(&r->stream, (uint64_t)lo, hi - lo, u);
  for (int64_t i = 0; i < hi - lo; i += 2) {
    float radius = sqrtf(-2.0f * logf(1.0f - u[i]));
    float theta = (float)TWO_PI * u[i + 1];
    u[i] = radius * cosf(theta);
    u[i + 1] = radius * sinf(theta);
  }
  memcpy(z, u + (first - lo), (size_t)n * sizeof *z);
}

static void normals_f64(const rng *r, int64_t first, int64_t n, double *z) {
  int64_t lo = first & ~(int64_t)1, hi = (first + n + 1) & ~(int64_t)1;
  double u[CHUNK + 2];
  uniforms_f64(r, lo, hi - lo, u);
  for (int64_t i = 0; i < hi - lo; i += 2) {
    double radius = sqrt(-2.0 * log(1.0 - u[i]));
    double theta = TWO_PI * u[i + 1];
    u[i] = radius * cos(theta);
    u[i + 1] = radius * sin(theta);
  }
  memcpy(z, u + (first - lo), (size_t)n * sizeof *z);
}

/* `v` rounded to a float-class dtype and back: the value the output will hold. */
static float round_to(tpu_dtype dtype, float v) {
  switch (dtype) {
  case TPU_FLOAT16: return tpu_f16_to_f32(tpu_f32_to_f16(v));
  case TPU_BFLOAT16: return tpu_bf16_to_f32(tpu_f32_to_bf16(v));
  default: return v;
  }
}

/* Writes n float values to a float16, bfloat16 or float32 output with byte stride `stride`. */
static void store_f32(tpu_dtype dtype, const float *v, int64_t n, char *out, int64_t stride) {
  for (int64_t i = 0; i < n; i++) {
    if (dtype == TPU_FLOAT32) {
      memcpy(out + i * stride, &v[i], sizeof v[i]);
    } else {
      uint16_t h = dtype == TPU_FLOAT16 ? tpu_f32_to_f16(v[i]) : tpu_f32_to_bf16(v[i]);
      memcpy(out + i * stride, &h, sizeof h);
    }
  }
}

static void store_f64(const double *v, int64_t n, char *out, int64_t stride) {
  for (int64_t i = 0; i < n; i++)
    memcpy(out + i * stride, &v[i], sizeof v[i]);
}

static void uniform_loop(char **data, const int64_t *strides, int64_t n, int64_t index,
                         void *ctx) {
  const rng *r = ctx;
  for (int64_t done = 0; done < n; done += CHUNK) {
    int64_t m = n - done < CHUNK ? n - done : CHUNK;
    char *out = data[0] + done * strides[0];
    if (r->dtype == TPU_FLOAT64) {
      double v[CHUNK], from = r->a.f, to = r->b.f;
      uniforms_f64(r, index + done, m, v);
      for (int64_t i = 0; i < m; i++) {
        v[i] = v[i] * (to - from) + from;
        v[i] = v[i] == to ? from : v[i];
      }
      store_f64(v, m, out, strides[0]);
    } else {
      float v[CHUNK], from = (float)r->a.f, to = (float)r->b.f;
      float from_rounded = round_to(r->dtype, from), to_rounded = round_to(r->dtype, to);
      tpu_philox_uniforms_f32(&r->stream, (uint64_t)(index + done), m, v);
      for (int64_t i = 0; i < m; i++) {
        v[i] = round_to(r->dtype, v[i] * (to - from) + from);
        v[i] = v[i] == to_rounded ? from_rounded : v[i];
      }
      store_f32(r->dtype, v, m, out, strides[0]);
    }
  }
}

static void normal_loop(char **data, const int64_t *strides, int64_t n, int64_t index, void *ctx) {
  const rng *r = ctx;
  for (int64_t done = 0; done < n; done += CHUNK) {
    int64_t m = n - done < CHUNK ? n - done : CHUNK;
    char *out = data[0] + done * strides[0];
    if (r->dtype == TPU_FLOAT64) {
      double z[CHUNK];
      normals_f64(r, index + done, m, z);
      for (int64_t i = 0; i < m; i++)
        z[i] = z[i] * r->b.f + r->a.f;
      store_f64(z, m, out, strides[0]);
    } else {
      float z[CHUNK], mean = (float)r->a.f, std = (float)r->b.f;
      normals_f32(r, index + done, m, z);
      for (int64_t i = 0; i < m; i++)
        z[i] = z[i] * std + mean;
      store_f32(r->dtype, z, m, out, strides[0]);
    }
  }
}

/* from + bits % range for elements [first, first + n), n <= CHUNK, in wrapping uint64 math. */
static void random_values(const rng *r, int64_t first, int64_t n, uint64_t *v) {
  uint64_t from = r->a.u, range = r->b.u;
  uint32_t w[2 * CHUNK];
  if (range != 0 && range <= (UINT64_C(1) << 32)) {
    tpu_philox_words(&r->stream, (uint64_t)first, n, w);
    for (int64_t i = 0; i < n; i++)
      v[i] = from + w[i] % range;
  } else {
    tpu_philox_words(&r->stream, 2 * (uint64_t)first, 2 * n, w);
    for (int64_t i = 0; i < n; i++) {
      uint64_t bits = (uint64_t)w[2 * i + 1] << 32 | w[2 * i];
      v[i] = from + (range ? bits % range : bits);
    }
  }
}

/* Stores the low `size` bytes' worth of x: integers wrap. */
static void store_int(uint64_t x, size_t size, char *p) {
  uint8_t b = (uint8_t)x;
  uint16_t h = (uint16_t)x;
  uint32_t w = (uint32_t)x;
  memcpy(p, size == 1 ? (void *)&b : size == 2 ? (void *)&h : size == 4 ? (void *)&w : &x, size);
}

static void random_loop(char **data, const int64_t *strides, int64_t n, int64_t index, void *ctx) {
  const rng *r = ctx;
  const int64_t stride = strides[0];
  const size_t size = tpu_dtype_size(r->dtype);
  for (int64_t done = 0; done < n; done += CHUNK) {
    int64_t m = n - done < CHUNK ? n - done : CHUNK;
    char *out = data[0] + done * stride;
    uint64_t v[CHUNK];
    random_values(r, index + done, m, v);
    /* The value is a signed integer; float16 and bfloat16 go through float, as in a copy. */
    if (r->dtype == TPU_FLOAT64) {
      double d[CHUNK];
      for (int64_t i = 0; i < m; i++)
        d[i] = (double)(int64_t)v[i];
      store_f64(d, m, out, stride);
    } else if (tpu_dtype_is_floating(r->dtype)) {
      float f[CHUNK];
      for (int64_t i = 0; i < m; i++)
        f[i] = (float)(int64_t)v[i];
      store_f32(r->dtype, f, m, out, stride);
    } else {
      for (int64_t i = 0; i < m; i++)
        store_int(r->dtype == TPU_BOOL ? v[i] != 0 : v[i], size, out + i * stride);
    }
  }
}

/* Runs `loop` over the output in logical order with the call's seed and offset. */
static tpu_status run(const tpu_op_call *call, tpu_loop_indexed_fn loop, bool dtype_ok) {
  const tpu_tensor *out = &call->tensors[0];
  if (!dtype_ok)
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "%s is not implemented for %s",
                     tpu_op_name(call->op), tpu_dtype_name(out->dtype));
  uint64_t seed = call->scalars[2].u, offset = call->scalars[3].u;
  rng r = {
      .stream = tpu_philox_stream_of(seed, offset),
      .dtype = out->dtype,
      .a = call->scalars[0],
      .b = call->scalars[1],
  };
  tpu_iter it;
  tpu_iter_init(&it, out->ndim, out->sizes);
  tpu_iter_add_tensor(&it, out);
  tpu_iter_build(&it, TPU_ITER_LOGICAL_ORDER);
  tpu_iter_run_indexed_parallel(&it, loop, &r);
  return TPU_OK;
}

tpu_status tpu_kernel_uniform(const tpu_op_call *call) {
  return run(call, uniform_loop, tpu_dtype_is_floating(call->tensors[0].dtype));
}

tpu_status tpu_kernel_normal(const tpu_op_call *call) {
  return run(call, normal_loop, tpu_dtype_is_floating(call->tensors[0].dtype));
}

tpu_status tpu_kernel_random(const tpu_op_call *call) {
  tpu_dtype dtype = call->tensors[0].dtype;
  bool unsigned_wide = dtype == TPU_UINT16 || dtype == TPU_UINT32 || dtype == TPU_UINT64;
  return run(call, random_loop, dtype <= TPU_FLOAT64 || unsigned_wide);
}
