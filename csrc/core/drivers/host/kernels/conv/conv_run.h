/* Private to the conv family's kernels: strided runs converted between a floating dtype (float16,
 * bfloat16, float32, float64) and its accumulation type (float, or double for float64). The
 * dtype switch sits outside each loop so the loops vectorize. */
#ifndef TPU_KERNELS_CONV_RUN_H
#define TPU_KERNELS_CONV_RUN_H

#include <stdint.h>

#include "base/tpu_dtype.h"

/* The accumulation type of a floating dtype. */
static inline tpu_dtype tpu_conv_acc(tpu_dtype d) {
  return d == TPU_FLOAT64 ? TPU_FLOAT64 : TPU_FLOAT32;
}

/* dst[i] = src[i * stride] (stride in elements of d) for i < n; dst is of the accumulation type. */
void tpu_conv_load_run(void *dst, const char *src, int64_t stride, int64_t n, tpu_dtype d);

/* dst[i * dstride] = round(src[i * sstride] + bias[i * bstride]) for i < n; src and bias (NULL:
 * none) are of the accumulation type. */
void tpu_conv_store_run(char *dst, int64_t dstride, const void *src, int64_t sstride, int64_t n,
                        tpu_dtype d, const void *bias, int64_t bstride);

/* dst[i * dstride] += src[i] for i < n, both of the accumulation type `acc`. */
void tpu_conv_add_run(void *dst, int64_t dstride, const void *src, int64_t n, tpu_dtype acc);

/* dst[i * stride] = src[i] rounded to d (through float for the 16-bit types), for i < n. */
void tpu_conv_store_double_run(char *dst, int64_t stride, const double *src, int64_t n,
                               tpu_dtype d);

/* The sum of src[i * stride] for i < n, in double. */
double tpu_conv_sum_run(const char *src, int64_t stride, int64_t n, tpu_dtype d);

/* Zeroes n elements of the accumulation type `acc`. */
void tpu_conv_zero_run(void *dst, int64_t n, tpu_dtype acc);

#endif
