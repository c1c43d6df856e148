/* The direct convolution's micro-kernel (conv_direct.h): an AVX2 tile of up to 4 output channels
 * by up to 64 flattened outputs, its accumulators held in registers across the whole reduction.
 * Each step loads the tile's source vectors once and broadcasts one weight per output channel
 * against them. The shapes (channels x vectors) are compiled one by one, so that the loops over
 * both unroll and the accumulators never leave the 16 ymm registers. */
#include "drivers/host/kernels/conv/conv_direct.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

bool tpu_conv_direct_cpu_ok(void) {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

#define AVX2 __attribute__((target("avx2,fma")))

/* The tile's accumulators are named variables, not an array: GCC keeps an array of vectors in
 * memory and stores it on every step. `ocb` and `nv` are constants in each compiled shape, so
 * every test on them folds away. */
#define EACH_V(M, o) M(o, 0) M(o, 1) M(o, 2) M(o, 3) M(o, 4) M(o, 5) M(o, 6) M(o, 7)
#define EACH_OV(M) EACH_V(M, 0) EACH_V(M, 1) EACH_V(M, 2) EACH_V(M, 3)
#define START(o, v)                                                                                \
  __m256 a##o##v = _mm256_setzero_ps();                                                            \
  if (accumulate && ocb > o && nv > v)                                                             \
    a##o##v = _mm256_loadu_ps(out + o * t->ldo + 8 * v);
#define LOAD(o, v)                                                                                 \
  if (nv > v)                                                                                      \
    x##v = _mm256_loadu_ps(p + 8 * v);
#define FMA(o, v)                                                                                  \
  if (nv > v)                                                                                      \
    a##o##v = _mm256_fmadd_ps(b, x##v, a##o##v);
/* One channel's broadcast weight against every loaded vector, before the next broadcast: so
 * only one broadcast is live at a time. */
#define ROW(o)                                                                                     \
  if (ocb > o) {                                                                                   \
    __m256 b = _mm256_broadcast_ss(w + o);                                                         \
    EACH_V(FMA, o)                                                                                 \
  }
#define STORE(o, v)                                                                                \
  if (ocb > o && nv > v)                                                                           \
    _mm256_storeu_ps(out + o * t->ldo + 8 * v, a##o##v);

/* One step: the source vectors at sp against the weights at wp. */
#define STEP(sp, wp)                                                                               \
  {                                                                                                \
    const float *p = (sp), *w = (wp);                                                              \
    __m256 x0 = _mm256_setzero_ps(), x1 = x0, x2 = x0, x3 = x0, x4 = x0, x5 = x0, x6 = x0,         \
           x7 = x0;                                                                                \
    EACH_V(LOAD, 0)                                                                                \
    ROW(0) ROW(1) ROW(2) ROW(3)                                                                    \
  }
#define OCB TPU_CONV_DIRECT_OCB

AVX2 static inline __attribute__((always_inline)) void
tile(const tpu_conv_direct_tile *t, int64_t q0, float *out, bool accumulate, const int ocb,
     const int nv) {
  EACH_OV(START)
  const float *src = t->src + q0, *wt = t->weight;
  for (int64_t i = 0; i < t->steps; i++, wt += OCB)
    STEP(src + t->off[i], wt)
  EACH_OV(STORE)
}

/* Shapes that fit the 16 ymm registers: ocb * nv accumulators, nv loaded vectors (folded into
 * the FMAs when ocb is 1) and one broadcast. */
int tpu_conv_direct_vectors(int ocb) { return ocb >= 3 ? 3 : ocb == 2 ? 5 : 8; }

#define SHAPE(o, v)                                                                                \
  case (o) * 16 + (v):                                                                             \
    tile(t, q0, out, accumulate, o, v);                                                                        \
    return;

AVX2 void tpu_conv_direct_run_tile(const tpu_conv_direct_tile *t, int64_t q0, float *out,
                                   bool accumulate, int ocb, int nv) {
  switch (ocb * 16 + nv) {
    SHAPE(4, 1) SHAPE(4, 2) SHAPE(4, 3)
    SHAPE(3, 1) SHAPE(3, 2) SHAPE(3, 3)
    SHAPE(2, 1) SHAPE(2, 2) SHAPE(2, 3) SHAPE(2, 4) SHAPE(2, 5)
    SHAPE(1, 1) SHAPE(1, 2) SHAPE(1, 3) SHAPE(1, 4) SHAPE(1, 5) SHAPE(1, 6) SHAPE(1, 7)
    SHAPE(1, 8)
  default: return;
  }
}

#else

bool tpu_conv_direct_cpu_ok(void) { return false; }

int tpu_conv_direct_vectors(int ocb) {
  (void)ocb;
  return 1;
}

void tpu_conv_direct_run_tile(const tpu_conv_direct_tile *t, int64_t q0, float *out,
                              bool accumulate, int ocb, int nv) {
  (void)t, (void)q0, (void)out, (void)accumulate, (void)ocb, (void)nv;
}

#endif
