/* Peak arithmetic throughput: independent FMA chains per thread, enough of them to cover the FMA
 * latency on every pipe. Each ISA variant carries its own target attribute, so the file builds at
 * the baseline ISA and the caller picks a variant with tpb_isa() (cpuid). Zen 4 double-pumps
 * AVX-512, so AVX2 and AVX-512 give about the same fp32 FLOP/s there; both are measured. */
#include <pthread.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TPB_X86 1
#endif

enum { ISA_SCALAR = 0, ISA_AVX2 = 1, ISA_AVX512 = 2, ISA_AVX512_BF16 = 3, ISA_AVX512_VNNI = 4 };
enum { ACC_SCALAR = 8, ACC_AVX2 = 12, ACC_AVX512 = 16 };

int tpb_isa(void) {
  int m = 0;
#ifdef TPB_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) m |= 1 << ISA_AVX2;
  if (__builtin_cpu_supports("avx512f")) m |= 1 << ISA_AVX512;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16"))
    m |= 1 << ISA_AVX512_BF16;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni"))
    m |= 1 << ISA_AVX512_VNNI;
#endif
  return m;
}

/* FLOPs one thread performs per loop iteration: lanes x 2 (multiply and add) x accumulators. */
double tpb_peak_flops_per_iter(int isa) {
  switch (isa) {
    case ISA_AVX2: return 8.0 * 2 * ACC_AVX2;
    case ISA_AVX512: return 16.0 * 2 * ACC_AVX512;
    case ISA_AVX512_BF16: return 16.0 * 2 * 2 * ACC_AVX512; /* vdpbf16ps: 2 products per lane */
    case ISA_AVX512_VNNI: return 16.0 * 4 * 2 * ACC_AVX512; /* vpdpbusd: 4 products per lane */
    default: return 2.0 * ACC_SCALAR;
  }
}

/* x = x*m + a converges to a/(1-m) = 1: values stay normal, so no denormal slow path. */
static float loop_scalar(long iters) {
  volatile float seed = 0.999999f;
  float m = seed, a = 1e-6f, x[ACC_SCALAR];
  for (int k = 0; k < ACC_SCALAR; k++) x[k] = 1.0f + (float)k * 1e-3f;
  for (long i = 0; i < iters; i++)
    for (int k = 0; k < ACC_SCALAR; k++) x[k] = x[k] * m + a;
  float s = 0;
  for (int k = 0; k < ACC_SCALAR; k++) s += x[k];
  return s;
}

#ifdef TPB_X86
__attribute__((target("avx2,fma"))) static float loop_avx2(long iters) {
  volatile float seed = 0.999999f;
  __m256 m = _mm256_set1_ps(seed), a = _mm256_set1_ps(1e-6f), x[ACC_AVX2];
  for (int k = 0; k < ACC_AVX2; k++) x[k] = _mm256_set1_ps(1.0f + (float)k * 1e-3f);
  for (long i = 0; i < iters; i++)
    for (int k = 0; k < ACC_AVX2; k++) x[k] = _mm256_fmadd_ps(x[k], m, a);
  __m256 s = x[0];
  for (int k = 1; k < ACC_AVX2; k++) s = _mm256_add_ps(s, x[k]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0];
}

__attribute__((target("avx512f"))) static float loop_avx512(long iters) {
  volatile float seed = 0.999999f;
  __m512 m = _mm512_set1_ps(seed), a = _mm512_set1_ps(1e-6f), x[ACC_AVX512];
  for (int k = 0; k < ACC_AVX512; k++) x[k] = _mm512_set1_ps(1.0f + (float)k * 1e-3f);
  for (long i = 0; i < iters; i++)
    for (int k = 0; k < ACC_AVX512; k++) x[k] = _mm512_fmadd_ps(x[k], m, a);
  __m512 s = x[0];
  for (int k = 1; k < ACC_AVX512; k++) s = _mm512_add_ps(s, x[k]);
  return _mm512_reduce_add_ps(s);
}

/* bf16 dot products accumulate into fp32: 2^-10 * 2^-10 * 2 per lane and step stays far from
 * overflow for any iteration count used here. */
__attribute__((target("avx512f,avx512bf16"))) static float loop_bf16(long iters) {
  volatile float seed = 0.0009765625f;
  __m512 v = _mm512_set1_ps(seed);
  __m512bh p = _mm512_cvtne2ps_pbh(v, v);
  __m512 x[ACC_AVX512];
  for (int k = 0; k < ACC_AVX512; k++) x[k] = _mm512_setzero_ps();
  for (long i = 0; i < iters; i++)
    for (int k = 0; k < ACC_AVX512; k++) x[k] = _mm512_dpbf16_ps(x[k], p, p);
  __m512 s = x[0];
  for (int k = 1; k < ACC_AVX512; k++) s = _mm512_add_ps(s, x[k]);
  return _mm512_reduce_add_ps(s);
}

/* int8 dot products accumulate into int32 lanes, 1 * 1 * 4 per lane and step; long runs wrap, so
 * the result is read unsigned, plus one to stay positive. */
__attribute__((target("avx512f,avx512vnni"))) static float loop_vnni(long iters) {
  volatile int seed = 1;
  __m512i p = _mm512_set1_epi8((char)seed), x[ACC_AVX512];
  for (int k = 0; k < ACC_AVX512; k++) x[k] = _mm512_setzero_si512();
  for (long i = 0; i < iters; i++)
    for (int k = 0; k < ACC_AVX512; k++) x[k] = _mm512_dpbusd_epi32(x[k], p, p);
  __m512i s = x[0];
  for (int k = 1; k < ACC_AVX512; k++) s = _mm512_add_epi32(s, x[k]);
  return (float)(unsigned)_mm512_reduce_add_epi32(s) + 1.0f;
}
#endif

typedef struct {
  int isa;
  long iters;
  float sink;
} peak_job_t;

static void *peak_worker(void *arg) {
  peak_job_t *j = arg;
  switch (j->isa) {
#ifdef TPB_X86
    case ISA_AVX2: j->sink = loop_avx2(j->iters); break;
    case ISA_AVX512: j->sink = loop_avx512(j->iters); break;
    case ISA_AVX512_BF16: j->sink = loop_bf16(j->iters); break;
    case ISA_AVX512_VNNI: j->sink = loop_vnni(j->iters); break;
#endif
    default: j->sink = loop_scalar(j->iters); break;
  }
  return NULL;
}

/* Seconds for `threads` threads to each run `iters` iterations; negative when it cannot run.
 * *check receives the sum of the results, so the caller can reject a loop optimized away. */
double tpb_peak(int isa, long iters, int threads, double *check) {
  if (threads < 1 || threads > 256) return -1.0;
  if (isa != ISA_SCALAR && !(tpb_isa() & (1 << isa))) return -1.0;
  peak_job_t jobs[256];
  pthread_t tids[256];
  struct timespec t0, t1;
  int started = 0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int t = 0; t < threads; t++) {
    jobs[t] = (peak_job_t){isa, iters, 0.0f};
    if (t > 0) {
      if (pthread_create(&tids[t], NULL, peak_worker, &jobs[t]) != 0) break;
      started++;
    }
  }
  peak_worker(&jobs[0]);
  for (int t = 1; t <= started; t++) pthread_join(tids[t], NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (started != threads - 1) return -1.0;
  double s = 0;
  for (int t = 0; t < threads; t++) s += jobs[t].sink;
  *check = s;
  return (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
}
