/* Philox4x32-10, the counter-based generator of Salmon et al., "Parallel random numbers: as easy
 * as 1, 2, 3" (SC'11; Random123), which PyTorch's CUDA and XLA generators also use. A counter-based
 * generator makes every random value a pure function of (key, counter), so a kernel can compute
 * any element's value from its logical index, independent of threads and tiling. */
#ifndef TPU_HOST_ENGINE_PHILOX_H
#define TPU_HOST_ENGINE_PHILOX_H

#include <stdint.h>

/* Multipliers and Weyl key increments from Random123's philox.h. */
#define TPU_PHILOX_M0 UINT32_C(0xD2511F53)
#define TPU_PHILOX_M1 UINT32_C(0xCD9E8D57)
#define TPU_PHILOX_W0 UINT32_C(0x9E3779B9)
#define TPU_PHILOX_W1 UINT32_C(0xBB67AE85)

/* Encrypts the 128-bit counter `ctr` under the 64-bit key with 10 Philox rounds into `out`. */
static inline void tpu_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                                     uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; round++) {
    uint64_t p0 = (uint64_t)TPU_PHILOX_M0 * c0;
    uint64_t p1 = (uint64_t)TPU_PHILOX_M1 * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1;
    c3 = (uint32_t)p0;
    c0 = n0;
    c2 = n2;
    k0 += TPU_PHILOX_W0;
    k1 += TPU_PHILOX_W1;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

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

/* One op call's random stream (ops/tpu_ops_random.h): Philox keyed by the seed, with the offset in
 * the high half of every counter. */
typedef struct tpu_philox_stream {
  uint32_t key[2], offset[2];
} tpu_philox_stream;

static inline tpu_philox_stream tpu_philox_stream_of(uint64_t seed, uint64_t offset) {
  tpu_philox_stream s = {{(uint32_t)seed, (uint32_t)(seed >> 32)},
                         {(uint32_t)offset, (uint32_t)(offset >> 32)}};
  return s;
}

/* Words [first, first + n) of the stream: word w is output w % 4 of the block with counter
 * (w / 4 low, high, offset low, high). */
static inline void tpu_philox_words(const tpu_philox_stream *s, uint64_t first, int64_t n,
                                    uint32_t *out) {
  uint64_t block = first / 4;
  int skip = (int)(first % 4);
  for (int64_t i = 0; i < n; block++, skip = 0) {
    uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), s->offset[0], s->offset[1]};
    uint32_t words[4];
    tpu_philox4x32_10(ctr, s->key, words);
    for (int j = skip; j < 4 && i < n; j++)
      out[i++] = words[j];
  }
}

/* The float uniforms of elements [first, first + n), one word each. */
static inline void tpu_philox_uniforms_f32(const tpu_philox_stream *s, uint64_t first, int64_t n,
                                           float *u) {
  uint32_t w[64];
  for (int64_t done = 0; done < n; done += 64) {
    int64_t m = n - done < 64 ? n - done : 64;
    tpu_philox_words(s, first + (uint64_t)done, m, w);
    for (int64_t i = 0; i < m; i++)
      u[done + i] = tpu_philox_uniform_f32(w[i]);
  }
}

#endif
