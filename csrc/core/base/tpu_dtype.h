/* Element types the core stores and computes on. */
#ifndef TPU_DTYPE_H
#define TPU_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum tpu_dtype {
  TPU_BOOL,
  TPU_UINT8,
  TPU_INT8,
  TPU_INT16,
  TPU_INT32,
  TPU_INT64,
  TPU_FLOAT16,
  TPU_BFLOAT16,
  TPU_FLOAT32,
  TPU_FLOAT64,
  TPU_COMPLEX64,
  TPU_COMPLEX128,
  /* Stored and copied byte for byte; kernels do not compute on them. */
  TPU_UINT16,
  TPU_UINT32,
  TPU_UINT64,
  TPU_FLOAT8_E4M3FN,
  TPU_FLOAT8_E5M2,
  TPU_DTYPE_COUNT
} tpu_dtype;

/* The elements of complex64 and complex128: the real part, then the imaginary part. */
typedef struct tpu_c64 {
  float re, im;
} tpu_c64;
typedef struct tpu_c128 {
  double re, im;
} tpu_c128;

/* Bytes per element. */
size_t tpu_dtype_size(tpu_dtype dtype);

/* A lower-case name, e.g. "float32". */
const char *tpu_dtype_name(tpu_dtype dtype);

/* True for the dtypes the conversion kernels read and write (bool through complex128). */
bool tpu_dtype_is_computable(tpu_dtype dtype);

/* True for float16, bfloat16, float32, float64. */
bool tpu_dtype_is_floating(tpu_dtype dtype);

/* True for complex64 and complex128. */
bool tpu_dtype_is_complex(tpu_dtype dtype);

/* bfloat16 and float16 conversions, rounding to nearest even like PyTorch CPU. Inline, so the
 * kernels' conversion loops vectorize. */
static inline float tpu_bf16_to_f32(uint16_t v) {
  uint32_t bits = (uint32_t)v << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static inline uint16_t tpu_f32_to_bf16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  if (f != f)
    return 0x7fc0;
  /* Round to nearest, ties to even, as c10::BFloat16 does. */
  uint32_t rounding_bias = 0x7fff + ((bits >> 16) & 1);
  return (uint16_t)((bits + rounding_bias) >> 16);
}

static inline float tpu_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    /* Subnormal half: normalize it into a float. */
    int shift = 0;
    while (!(mant & 0x400)) {
      mant <<= 1;
      shift++;
    }
    mant &= 0x3ff;
    bits = sign | ((uint32_t)(113 - shift) << 23) | (mant << 13);
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static inline uint16_t tpu_f32_to_f16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  uint16_t sign = (uint16_t)((bits >> 16) & 0x8000);
  uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u)
    return sign | 0x7e00; /* NaN */
  if (abs >= 0x477ff000u)
    return sign | 0x7c00; /* rounds to infinity */
  if (abs < 0x38800000u) {
    /* Result is subnormal or zero: add as floats so the FPU rounds to nearest even. */
    float a;
    memcpy(&a, &abs, sizeof a);
    float r = a + 0.5f;
    uint32_t rbits;
    memcpy(&rbits, &r, sizeof rbits);
    return sign | (uint16_t)(rbits - 0x3f000000u);
  }
  uint32_t mant_odd = (abs >> 13) & 1;
  abs += 0xc8000fffu + mant_odd; /* rebias exponent (-112 << 23) and round to nearest even */
  return sign | (uint16_t)(abs >> 13);
}

/* A floating element (float16, bfloat16, float32 or float64) widened to double, exactly. */
static inline double tpu_real_load(const char *p, tpu_dtype dtype) {
  if (dtype == TPU_FLOAT64) {
    double v;
    memcpy(&v, p, sizeof v);
    return v;
  }
  if (dtype == TPU_FLOAT32) {
    float v;
    memcpy(&v, p, sizeof v);
    return v;
  }
  uint16_t h;
  memcpy(&h, p, sizeof h);
  return dtype == TPU_FLOAT16 ? tpu_f16_to_f32(h) : tpu_bf16_to_f32(h);
}

#endif
