#include "base/tpu_dtype.h"


static const struct {
  const char *name;
  size_t size;
} dtype_info[TPU_DTYPE_COUNT] = {
    [TPU_BOOL] = {"bool", 1},           [TPU_UINT8] = {"uint8", 1},
    [TPU_INT8] = {"int8", 1},           [TPU_INT16] = {"int16", 2},
    [TPU_INT32] = {"int32", 4},         [TPU_INT64] = {"int64", 8},
    [TPU_FLOAT16] = {"float16", 2},     [TPU_BFLOAT16] = {"bfloat16", 2},
    [TPU_FLOAT32] = {"float32", 4},     [TPU_FLOAT64] = {"float64", 8},
    [TPU_COMPLEX64] = {"complex64", 8}, [TPU_COMPLEX128] = {"complex128", 16},
    [TPU_UINT16] = {"uint16", 2},       [TPU_UINT32] = {"uint32", 4},
    [TPU_UINT64] = {"uint64", 8},       [TPU_FLOAT8_E4M3FN] = {"float8_e4m3fn", 1},
    [TPU_FLOAT8_E5M2] = {"float8_e5m2", 1},
};

size_t tpu_dtype_size(tpu_dtype dtype) {
  return (unsigned)dtype < TPU_DTYPE_COUNT ? dtype_info[dtype].size : 0;
}

const char *tpu_dtype_name(tpu_dtype dtype) {
  return (unsigned)dtype < TPU_DTYPE_COUNT ? dtype_info[dtype].name : "invalid";
}

bool tpu_dtype_is_computable(tpu_dtype dtype) { return dtype <= TPU_COMPLEX128; }

bool tpu_dtype_is_floating(tpu_dtype dtype) {
  return dtype == TPU_FLOAT16 || dtype == TPU_BFLOAT16 || dtype == TPU_FLOAT32 ||
         dtype == TPU_FLOAT64;
}

bool tpu_dtype_is_complex(tpu_dtype dtype) {
  return dtype == TPU_COMPLEX64 || dtype == TPU_COMPLEX128;
}
