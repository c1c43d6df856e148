/* Strided conversion runs between the floating dtypes and their accumulation types (conv.h). */
#include "drivers/host/kernels/conv/conv.h"

#include <string.h>

#define LOAD_LOOP(T, A, CONV)                                                                      \
  {                                                                                                \
    A *restrict o = dst;                                                                           \
    const T *restrict s = (const T *)src;                                                          \
    if (stride == 1)                                                                               \
      for (int64_t i = 0; i < n; i++)                                                              \
        o[i] = CONV(s[i]);                                                                         \
    else                                                                                           \
      for (int64_t i = 0; i < n; i++)                                                              \
        o[i] = CONV(s[i * stride]);                                                                \
    break;                                                                                         \
  }

#define AS_IS(v) (v)

void tpu_conv_load_run(void *dst, const char *src, int64_t stride, int64_t n, tpu_dtype d) {
  if (stride == 1 && (d == TPU_FLOAT32 || d == TPU_FLOAT64)) {
    memcpy(dst, src, (size_t)n * tpu_dtype_size(d));
    return;
  }
  switch (d) {
  case TPU_FLOAT32: LOAD_LOOP(float, float, AS_IS)
  case TPU_FLOAT64: LOAD_LOOP(double, double, AS_IS)
  case TPU_BFLOAT16: LOAD_LOOP(uint16_t, float, tpu_bf16_to_f32)
  case TPU_FLOAT16: LOAD_LOOP(uint16_t, float, tpu_f16_to_f32)
  default: break;
  }
}

#define STORE_LOOP(T, A, CONV)                                                                     \
  {                                                                                                \
    T *restrict o = (T *)dst;                                                                      \
    const A *restrict s = src;                                                                     \
    const A *restrict b = bias;                                                                    \
    if (!b) {                                                                                      \
      if (dstride == 1 && sstride == 1)                                                            \
        for (int64_t i = 0; i < n; i++)                                                            \
          o[i] = CONV(s[i]);                                                                       \
      else                                                                                         \
        for (int64_t i = 0; i < n; i++)                                                            \
          o[i * dstride] = CONV(s[i * sstride]);                                                   \
    } else if (dstride == 1 && sstride == 1 && bstride == 1) {                                     \
      for (int64_t i = 0; i < n; i++)                                                              \
        o[i] = CONV(s[i] + b[i]);                                                                  \
    } else {                                                                                       \
      for (int64_t i = 0; i < n; i++)                                                              \
        o[i * dstride] = CONV(s[i * sstride] + b[i * bstride]);                                    \
    }                                                                                              \
    break;                                                                                         \
  }

void tpu_conv_store_run(char *dst, int64_t dstride, const void *src, int64_t sstride, int64_t n,
                        tpu_dtype d, const void *bias, int64_t bstride) {
  switch (d) {
  case TPU_FLOAT32: STORE_LOOP(float, float, AS_IS)
  case TPU_FLOAT64: STORE_LOOP(double, double, AS_IS)
  case TPU_BFLOAT16: STORE_LOOP(uint16_t, float, tpu_f32_to_bf16)
  case TPU_FLOAT16: STORE_LOOP(uint16_t, float, tpu_f32_to_f16)
  default: break;
  }
}

#define ADD_LOOP(A)                                                                                \
  {                                                                                                \
    A *restrict o = dst;                                                                           \
    const A *restrict s = src;                                                                     \
    if (dstride == 1)                                                                              \
      for (int64_t i = 0; i < n; i++)                                                              \
        o[i] += s[i];                                                                              \
    else                                                                                           \
      for (int64_t i = 0; i < n; i++)                                                              \
        o[i * dstride] += s[i];                                                                    \
  }

void tpu_conv_add_run(void *dst, int64_t dstride, const void *src, int64_t n, tpu_dtype acc) {
  if (acc == TPU_FLOAT64)
    ADD_LOOP(double)
  else
    ADD_LOOP(float)
}

#define TO_BF16(v) tpu_f32_to_bf16((float)(v))
#define TO_F16(v) tpu_f32_to_f16((float)(v))
#define TO_F32(v) ((float)(v))

#define STORE_DOUBLE_LOOP(T, CONV)                                                                 \
  {                                                                                                \
    T *restrict o = (T *)dst;                                                                      \
    for (int64_t i = 0; i < n; i++)                                                                \
      o[i * stride] = CONV(src[i]);                                                                \
    break;                                                                                         \
  }

void tpu_conv_store_double_run(char *dst, int64_t stride, const double *src, int64_t n,
                               tpu_dtype d) {
  switch (d) {
  case TPU_FLOAT32: STORE_DOUBLE_LOOP(float, TO_F32)
  case TPU_FLOAT64: STORE_DOUBLE_LOOP(double, AS_IS)
  case TPU_BFLOAT16: STORE_DOUBLE_LOOP(uint16_t, TO_BF16)
  case TPU_FLOAT16: STORE_DOUBLE_LOOP(uint16_t, TO_F16)
  default: break;
  }
}

#define SUM_LOOP(T, CONV)                                                                          \
  {                                                                                                \
    const T *restrict s = (const T *)src;                                                          \
    for (int64_t i = 0; i < n; i++)                                                                \
      sum += CONV(s[i * stride]);                                                                  \
    break;                                                                                         \
  }

double tpu_conv_sum_run(const char *src, int64_t stride, int64_t n, tpu_dtype d) {
  double sum = 0;
  switch (d) {
  case TPU_FLOAT32: SUM_LOOP(float, AS_IS)
  case TPU_FLOAT64: SUM_LOOP(double, AS_IS)
  case TPU_BFLOAT16: SUM_LOOP(uint16_t, tpu_bf16_to_f32)
  case TPU_FLOAT16: SUM_LOOP(uint16_t, tpu_f16_to_f32)
  default: break;
  }
  return sum;
}

void tpu_conv_zero_run(void *dst, int64_t n, tpu_dtype acc) {
  memset(dst, 0, (size_t)n * tpu_dtype_size(acc));
}
