/* The FILL kernel (contract in ops/tpu_ops_base.h): the value is encoded once as one element of
 * the output dtype, then copied into every element; a value whose bytes are all equal fills
 * dense runs with memset. */
#include <string.h>

#include "drivers/host/kernels/kernels.h"
#include "drivers/host/engine/engine_iter.h"

typedef struct fill_value {
  unsigned char bytes[16]; /* one element of the output dtype */
  bool one_byte;           /* every byte equal: a dense run is a memset */
} fill_value;

/* The element's bytes for `dtype`; its size, or 0 when the dtype cannot be filled. */
static size_t encode(const tpu_op_call *call, tpu_dtype dtype, unsigned char *out) {
  double re = call->scalars[0].f, im = call->scalars[1].f;
  uint64_t bits = call->scalars[0].u; /* wraps to any integer width by truncation */
  union {
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    float f32[2];
    double f64[2];
  } v;
  switch (dtype) {
  case TPU_BOOL: v.u8 = call->scalars[0].i != 0; break;
  case TPU_UINT8: case TPU_INT8: v.u8 = (uint8_t)bits; break;
  case TPU_INT16: case TPU_UINT16: v.u16 = (uint16_t)bits; break;
  case TPU_INT32: case TPU_UINT32: v.u32 = (uint32_t)bits; break;
  case TPU_INT64: case TPU_UINT64: v.u64 = bits; break;
  case TPU_FLOAT16: v.u16 = tpu_f32_to_f16((float)re); break;
  case TPU_BFLOAT16: v.u16 = tpu_f32_to_bf16((float)re); break;
  case TPU_FLOAT32: v.f32[0] = (float)re; break;
  case TPU_FLOAT64: v.f64[0] = re; break;
  case TPU_COMPLEX64: v.f32[0] = (float)re, v.f32[1] = (float)im; break;
  case TPU_COMPLEX128: v.f64[0] = re, v.f64[1] = im; break;
  default: return 0;
  }
  size_t size = tpu_dtype_size(dtype);
  memcpy(out, &v, size);
  return size;
}

#define FILL_LOOP(N)                                                                               \
  static void fill_##N(char **data, const int64_t *strides, int64_t n, void *ctx) {                \
    const fill_value *value = ctx;                                                                 \
    char *restrict out = data[0];                                                                  \
    unsigned char v[N];                                                                            \
    memcpy(v, value->bytes, N);                                                                    \
    if (strides[0] == N && value->one_byte)                                                        \
      memset(out, v[0], (size_t)n * N);                                                            \
    else if (strides[0] == N)                                                                      \
      for (int64_t i = 0; i < n; i++)                                                              \
        memcpy(out + i * N, v, N);                                                                 \
    else                                                                                           \
      for (int64_t i = 0; i < n; i++)                                                              \
        memcpy(out + i * strides[0], v, N);                                                        \
  }
FILL_LOOP(1)
FILL_LOOP(2)
FILL_LOOP(4)
FILL_LOOP(8)
FILL_LOOP(16)

tpu_status tpu_kernel_fill(const tpu_op_call *call) {
  const tpu_tensor *out = &call->tensors[0];
  fill_value value;
  size_t size = encode(call, out->dtype, value.bytes);
  if (!size)
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "fill is not implemented for %s",
                     tpu_dtype_name(out->dtype));
  value.one_byte = true;
  for (size_t b = 1; b < size; b++)
    value.one_byte &= value.bytes[b] == value.bytes[0];
  tpu_loop_fn loop = size == 1 ? fill_1 : size == 2 ? fill_2 : size == 4 ? fill_4
                   : size == 8 ? fill_8 : fill_16;
  tpu_iter it;
  tpu_iter_init(&it, out->ndim, out->sizes);
  tpu_iter_add_tensor(&it, out);
  tpu_iter_build(&it, 0);
  tpu_iter_run_parallel(&it, loop, &value);
  return TPU_OK;
}
