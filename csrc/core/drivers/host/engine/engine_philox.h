/* Philox4x32-10, the counter-based generator of Salmon et al., "Parallel random numbers: as easy
 * as 1, 2, 3" (SC'11; Random123), which PyTorch's CUDA and XLA generators also use. A counter-based
 * generator makes every random value a pure function of (key, counter), so a kernel can compute
 * any element's value from its logical index, independent of threads and tiling. */
#ifndef TPU_PHILOX_H
#define TPU_PHILOX_H

#include <stdint.h>

/* Encrypts the 128-bit counter `ctr` under the 64-bit key with 10 Philox rounds into `out`. */
void tpu_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* A float in [0, 1) from the low 24 bits of `bits`: every value is a multiple of 2^-24, exactly
 * representable, and 1.0 is never produced (the form of PyTorch's uniform_real). */
static inline float tpu_philox_uniform_f32(uint32_t bits) {
  return (float)(bits & 0xffffffu) * 0x1p-24f;
}

/* A double in [0, 1) from the low 53 bits of the 64-bit word lo | hi << 32. */
static inline double tpu_philox_uniform_f64(uint32_t lo, uint32_t hi) {
  uint64_t bits = ((uint64_t)hi << 32 | lo) & ((UINT64_C(1) << 53) - 1);
  return (double)bits * 0x1p-53;
}

#endif
