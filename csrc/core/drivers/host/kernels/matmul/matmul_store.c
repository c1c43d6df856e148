/* The GEMM epilogue: out = alpha * acc + beta * C, computed in the accumulation type and rounded
 * once into the output's dtype. A contiguous row without C is the common case (mm, bmm): it gets
 * its own loop so that it vectorizes. */
#include <complex.h>

#include "drivers/host/kernels/matmul/matmul_internal.h"

/* glibc defines CMPLX and CMPLXF (C11) for GCC only; clang has the builtin they expand to. */
#if defined(__clang__) && !defined(CMPLX)
#define CMPLXF(x, y) __builtin_complex((float)(x), (float)(y))
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif

#define STORE_(T, A, LOAD, SAVE, ALPHA, BETA)                                                      \
  {                                                                                                \
    A alpha = ALPHA, beta = BETA;                                                                  \
    for (int64_t i = 0; i < mt; i++) {                                                             \
      const A *restrict acc_i = (const A *)acc + i * ld;                                           \
      T *restrict out_i = (T *)o->data + bo * o->bs + (m0 + i) * o->rs + n0 * o->cs;              \
      if (!job->has_c && o->cs == 1) {                                                             \
        for (int64_t jj = 0; jj < nt; jj++)                                                        \
          out_i[jj] = SAVE(alpha * acc_i[jj]);                                                     \
        continue;                                                                                  \
      }                                                                                            \
      for (int64_t jj = 0; jj < nt; jj++) {                                                        \
        A v = alpha * acc_i[jj];                                                                   \
        if (job->has_c)                                                                            \
          v += beta * LOAD(((const T *)c->data)[bo * c->bs + (m0 + i) * c->rs +                   \
                                                 (n0 + jj) * c->cs]);                              \
        out_i[jj * o->cs] = SAVE(v);                                                               \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
  break;
/* Expands the scalar-pair macros below into two arguments. */
#define STORE(...) STORE_(__VA_ARGS__)

#define SAME(x) (x)
#define TO_U32(x) ((uint32_t)(int32_t)(x))
#define TO_U64(x) ((uint64_t)(int64_t)(x))
#define FLOAT_SCALARS (float)job->alpha.f, (float)job->beta.f
#define INT32_SCALARS (uint32_t)job->alpha.i, (uint32_t)job->beta.i
#define INT64_SCALARS (uint64_t)job->alpha.i, (uint64_t)job->beta.i

void tpu_gemm_store(const gemm_job *job, int64_t bo, const void *acc, int64_t ld, int64_t m0,
                    int64_t mt, int64_t n0, int64_t nt) {
  const gemm_view *o = &job->out, *c = &job->c;
  switch (job->dtype) {
  case TPU_FLOAT32: STORE(float, float, SAME, SAME, FLOAT_SCALARS)
  case TPU_BFLOAT16: STORE(uint16_t, float, tpu_bf16_to_f32, tpu_f32_to_bf16, FLOAT_SCALARS)
  case TPU_FLOAT16: STORE(uint16_t, float, tpu_f16_to_f32, tpu_f32_to_f16, FLOAT_SCALARS)
  case TPU_FLOAT64: STORE(double, double, SAME, SAME, job->alpha.f, job->beta.f)
  case TPU_COMPLEX64:
    STORE(float _Complex, float _Complex, SAME, SAME,
          CMPLXF((float)job->alpha.f, (float)job->alpha_im.f),
          CMPLXF((float)job->beta.f, (float)job->beta_im.f))
  case TPU_COMPLEX128:
    STORE(double _Complex, double _Complex, SAME, SAME, CMPLX(job->alpha.f, job->alpha_im.f),
          CMPLX(job->beta.f, job->beta_im.f))
  case TPU_UINT8: STORE(uint8_t, uint32_t, TO_U32, (uint8_t), INT32_SCALARS)
  case TPU_INT8: STORE(int8_t, uint32_t, TO_U32, (int8_t), INT32_SCALARS)
  case TPU_INT16: STORE(int16_t, uint32_t, TO_U32, (int16_t), INT32_SCALARS)
  case TPU_INT32: STORE(int32_t, uint32_t, TO_U32, (int32_t), INT32_SCALARS)
  case TPU_INT64: STORE(int64_t, uint64_t, TO_U64, (int64_t), INT64_SCALARS)
  default:
    break;
  }
}
