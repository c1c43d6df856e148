/* Element types the core stores and computes on. */
#ifndef TPU_DTYPE_H
#define TPU_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* bfloat16 and float16 conversions, rounding to nearest even like PyTorch CPU. */
float tpu_bf16_to_f32(uint16_t v);
uint16_t tpu_f32_to_bf16(float f);
float tpu_f16_to_f32(uint16_t v);
uint16_t tpu_f32_to_f16(float f);

#endif
