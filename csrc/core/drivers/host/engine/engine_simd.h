/* Helpers for the host kernels' vectorized loops: run-time ISA dispatch, and
 * branch-free forms of the scalar functions those loops need (so GCC vectorizes the loops that call
 * them) — a float16 load and an exp for float. */
#ifndef TPU_HOST_ENGINE_SIMD_H
#define TPU_HOST_ENGINE_SIMD_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Compiles a function once for each target named, picked at load time by the CPU (GCC's ifunc
 * clones): the build targets baseline x86-64 only. Every clone site of the host driver goes
 * through this macro, so the sanitized builds keep one version everywhere: an ifunc resolver runs
 * while the dynamic loader relocates, before a sanitizer's runtime has started, which
 * ThreadSanitizer does not survive (the program crashes at load), and ASan and UBSan then see
 * plain functions. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                           \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define TPU_TARGET_CLONES(...) __attribute__((target_clones(__VA_ARGS__)))
#else
#define TPU_TARGET_CLONES(...)
#endif

/* A loop function for AVX-512, AVX2 (with FMA and F16C) and baseline x86-64. */
#define TPU_SIMD TPU_TARGET_CLONES("arch=x86-64-v4", "arch=x86-64-v3", "default")

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

/* cond ? a : b through bit masks: under -ftrapping-math (GCC's default; the core itself builds
 * with -fno-trapping-math, its C tests do not) GCC will not if-convert a float select whose arms
 * it computed, and then a loop calling these helpers would not vectorize. */
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

/* e^x for float within about 1 ulp (Cody-Waite reduction x = n ln2 + r, Cephes' polynomial), with
 * subnormal results down to x = -104, 0 below, +inf above 89 and NaN for NaN. The clamp comes
 * before the float-to-int conversion, so NaN never reaches it; no branches, so loops vectorize. */
static inline float tpu_expf_simd(float x) {
  float xc = x >= -104.0f ? (x <= 89.0f ? x : 89.0f) : -104.0f;
  const float shifter = 0x1.8p23f; /* adding it rounds to an integer in its low mantissa bits */
  float n = fmaf(xc, 1.44269504088896341f, shifter) - shifter;
  float r = fmaf(n, -0.693359375f, xc);
  r = fmaf(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = fmaf(p, r, 1.3981999507e-3f);
  p = fmaf(p, r, 8.3334519073e-3f);
  p = fmaf(p, r, 4.1665795894e-2f);
  p = fmaf(p, r, 1.6666665459e-1f);
  p = fmaf(p, r, 5.0000001201e-1f);
  float y = fmaf(p, r * r, r) + 1.0f;
  int32_t ni = (int32_t)n, n1 = ni >> 1, n2 = ni - n1; /* two factors keep 2^n normal */
  y = y * tpu_bits_f32((uint32_t)(n1 + 127) << 23) * tpu_bits_f32((uint32_t)(n2 + 127) << 23);
  return tpu_select_f32(x != x, x, y);
}

/* tanh for float: an odd polynomial near 0 (Cephes), 1 - 2 / (e^2|x| + 1) beyond; NaN for NaN. */
static inline float tpu_tanhf_simd(float x) {
  float ax = fabsf(x), z = x * x;
  float p = -5.70498872745e-3f;
  p = fmaf(p, z, 2.06390887954e-2f);
  p = fmaf(p, z, -5.37397155531e-2f);
  p = fmaf(p, z, 1.33314422036e-1f);
  p = fmaf(p, z, -3.33332819422e-1f);
  float small = fmaf(p * z, x, x);
  float big = 1.0f - 2.0f / (tpu_expf_simd(2.0f * ax) + 1.0f);
  return copysignf(ax < 0.625f ? small : big, x); /* odd: keeps tanh(-0) = -0 */
}

/* ln x for float within about 1 ulp (Cephes' logf: x = m 2^e with m in [sqrt(1/2), sqrt(2)), a
 * polynomial in m - 1, ln 2 split in two), subnormal inputs scaled by 2^23 first; -inf for +-0,
 * NaN below 0 and for NaN, +inf for +inf. No branches and no libm call, so loops vectorize. */
static inline float tpu_logf_simd(float x) {
  int subnormal = x < 0x1p-126f;
  uint32_t bits = tpu_f32_bits(tpu_select_f32(subnormal, x * 0x1p23f, x));
  int32_t e = (int32_t)((bits >> 23) & 0xff) - 126 - (subnormal ? 23 : 0);
  float m = tpu_bits_f32((bits & 0x007fffffu) | 0x3f000000u); /* [0.5, 1) */
  int low = m < 0.707106781186547524f;
  e -= low;
  m = (low ? m + m : m) - 1.0f;
  float z = m * m, fe = (float)e;
  float p = 7.0376836292e-2f;
  p = fmaf(p, m, -1.1514610310e-1f);
  p = fmaf(p, m, 1.1676998740e-1f);
  p = fmaf(p, m, -1.2420140846e-1f);
  p = fmaf(p, m, 1.4249322787e-1f);
  p = fmaf(p, m, -1.6668057665e-1f);
  p = fmaf(p, m, 2.0000714765e-1f);
  p = fmaf(p, m, -2.4999993993e-1f);
  p = fmaf(p, m, 3.3333331174e-1f);
  float y = fmaf(fe, -2.12194440e-4f, p * m * z);
  y = fmaf(-0.5f, z, y);
  y = fmaf(fe, 0.693359375f, m + y);
  y = tpu_select_f32(x == INFINITY, x, y);
  y = tpu_select_f32(x == 0, -INFINITY, y);
  return tpu_select_f32(x < 0 || x != x, NAN, y);
}

/* ln(1 + x) for float: ln u * x / (u - 1) with u = 1 + x rounded, which cancels the rounding of u
 * (Goldberg), x itself where u is 1, +inf for +inf; as accurate as tpu_logf_simd. */
static inline float tpu_log1pf_simd(float x) {
  float u = 1.0f + x;
  float y = tpu_logf_simd(u) * (x / (u - 1.0f));
  y = tpu_select_f32(u == 1.0f, x, y);
  return tpu_select_f32(x == INFINITY, x, y);
}

#endif
