/* Helpers for the vectorized loops of the reduce and norm kernels: run-time ISA dispatch, and
 * branch-free forms of the scalar functions those loops need (so GCC vectorizes the loops that call
 * them) — a float16 load and an exp for float. */
#ifndef TPU_KERNELS_SIMD_H
#define TPU_KERNELS_SIMD_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Compiles a loop function for AVX-512, AVX2 (with FMA and F16C) and baseline x86-64, picked at
 * load time by the CPU (GCC's ifunc clones): the build targets baseline x86-64 only. The sanitized
 * build keeps one version, so ASan and UBSan see plain functions. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                           \
    !defined(__SANITIZE_ADDRESS__)
#define TPU_SIMD __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TPU_SIMD
#endif

static inline float tpu_bits_f32(uint32_t bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static inline uint32_t tpu_f32_bits(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return bits;
}

/* cond ? a : b through bit masks: GCC will not if-convert a float select whose arms it computed
 * (under -ftrapping-math it refuses to speculate them), and then the loop does not vectorize. */
static inline float tpu_select_f32(int cond, float a, float b) {
  uint32_t m = 0u - (uint32_t)(cond != 0);
  return tpu_bits_f32((m & tpu_f32_bits(a)) | (~m & tpu_f32_bits(b)));
}

/* float16 to float, exactly as tpu_f16_to_f32, without branches. */
static inline float tpu_f16_to_f32_simd(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t em = h & 0x7fff;
  /* Normal: rebias the exponent; infinite/NaN: once more, to 255; subnormal and zero: the
   * mantissa times 2^-24, exact in float. Masks instead of branches. */
  uint32_t normal = (em << 13) + ((uint32_t)112 << 23);
  uint32_t sub = tpu_f32_bits((float)em * 0x1p-24f);
  uint32_t is_normal = 0u - (uint32_t)(em >= 0x0400);
  uint32_t is_special = 0u - (uint32_t)(em >= 0x7c00);
  uint32_t bits =
      ((is_normal & normal) | (~is_normal & sub)) + (is_special & ((uint32_t)112 << 23));
  return tpu_bits_f32(bits | sign);
}

/* exp(x) for float within 2 ulp down to 2^-125, and 0 below that (x < -86.64: results under
 * 2.4e-38 flush to zero instead of becoming subnormal); +inf above 88.7228 and NaN for NaN.
 * Written without branches or float-to-int conversions so loops calling it vectorize (and NaN
 * stays defined): Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, Cephes' degree-6 polynomial
 * with fused multiply-adds, and 2^n assembled from n's bits, which the rounding constant leaves in
 * t's mantissa. */
static inline float tpu_expf_simd(float x) {
  const float hi = 88.7229f, lo = -86.64f, magic = 12582912.0f; /* 1.5 * 2^23 */
  float xc = lo > x ? lo : x; /* both clamps keep NaN */
  xc = hi < xc ? hi : xc;
  float t = fmaf(xc, 1.44269504f, magic);
  float n = t - magic; /* n rounded to an integer, in [-125, 128] */
  float r = fmaf(n, -0.693359375f, xc);
  r = fmaf(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = fmaf(p, r, 1.3981999507e-3f);
  p = fmaf(p, r, 8.3334519073e-3f);
  p = fmaf(p, r, 4.1665795894e-2f);
  p = fmaf(p, r, 1.6666665459e-1f);
  p = fmaf(p, r, 5.0000001201e-1f);
  p = fmaf(p * r, r, r) + 1.0f;
  /* 2^(n-1) from the bits of n (n - 1 >= -126 stays normal), times 2p: the product overflows to
   * +inf exactly where exp does. */
  int32_t ni = (int32_t)(tpu_f32_bits(t) - tpu_f32_bits(magic));
  float half_scale = tpu_bits_f32((uint32_t)(ni + 126) << 23);
  float y = (p + p) * half_scale;
  return tpu_select_f32(x < lo, 0.0f, y);
}

#endif
