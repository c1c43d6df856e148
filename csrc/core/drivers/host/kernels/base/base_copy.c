/* The COPY kernel (contract in ops/tpu_ops_base.h): one strided iterator walks source and
 * destination; same-dtype copies move bytes, conversions run one loop per (source, destination)
 * dtype pair, generated from per-family loads and stores so that each rule is written once. */
#include <string.h>

#include "drivers/host/kernels/kernels.h"
#include "drivers/host/engine/engine_iter.h"

/* The storage type of each computable dtype. */
#define T_BOOL uint8_t
#define T_UINT8 uint8_t
#define T_INT8 int8_t
#define T_INT16 int16_t
#define T_INT32 int32_t
#define T_INT64 int64_t
#define T_FLOAT16 uint16_t
#define T_BFLOAT16 uint16_t
#define T_FLOAT32 float
#define T_FLOAT64 double
#define T_COMPLEX64 tpu_c64
#define T_COMPLEX128 tpu_c128

/* A load widens a stored element to its family's value type, exactly: int64_t for bool and the
 * integers, float for the 16- and 32-bit floats, double, tpu_c64 or tpu_c128. The conversions
 * below are then written once per family instead of once per dtype. A bool byte is read as a
 * byte, so a value other than 0 or 1 cannot make a _Bool trap. */
#define LOAD_BOOL(x) ((int64_t)((x) != 0))
#define LOAD_UINT8(x) ((int64_t)(x))
#define LOAD_INT8(x) ((int64_t)(x))
#define LOAD_INT16(x) ((int64_t)(x))
#define LOAD_INT32(x) ((int64_t)(x))
#define LOAD_INT64(x) ((int64_t)(x))
#define LOAD_FLOAT16(x) tpu_f16_to_f32(x)
#define LOAD_BFLOAT16(x) tpu_bf16_to_f32(x)
#define LOAD_FLOAT32(x) (x)
#define LOAD_FLOAT64(x) (x)
#define LOAD_COMPLEX64(x) (x)
#define LOAD_COMPLEX128(x) (x)

static inline int64_t re_i64(int64_t v) { return v; }
static inline float re_f32(float v) { return v; }
static inline double re_f64(double v) { return v; }
static inline float re_c64(tpu_c64 v) { return v.re; }
static inline double re_c128(tpu_c128 v) { return v.re; }
static inline float im_c64(tpu_c64 v) { return v.im; }
static inline double im_c128(tpu_c128 v) { return v.im; }
static inline float im_real(double v) { return (void)v, 0.0f; }

/* Real part (the value itself for a real family) and imaginary part (0 for a real family). */
#define REAL(v)                                                                                    \
  _Generic((v), int64_t: re_i64, float: re_f32, double: re_f64, tpu_c64: re_c64,                   \
           tpu_c128: re_c128)(v)
#define IMAG(v) _Generic((v), tpu_c64: im_c64, tpu_c128: im_c128, default: im_real)(v)

/* Float to integer as cvttss2si/cvttsd2si do it. C leaves NaN and out-of-range conversions
 * undefined, so the range is tested before converting. */
static inline int64_t i64_of_i64(int64_t v) { return v; }
static inline int64_t i64_of_f32(float x) {
  return x >= -0x1p63f && x < 0x1p63f ? (int64_t)x : INT64_MIN;
}
static inline int64_t i64_of_f64(double x) {
  return x >= -0x1p63 && x < 0x1p63 ? (int64_t)x : INT64_MIN;
}
static inline int32_t i32_of_i64(int64_t v) { return (int32_t)v; }
static inline int32_t i32_of_f32(float x) {
  return x >= -0x1p31f && x < 0x1p31f ? (int32_t)x : INT32_MIN;
}
static inline int32_t i32_of_f64(double x) {
  return x > -0x1p31 - 1 && x < 0x1p31 ? (int32_t)x : INT32_MIN;
}
#define I64(r) _Generic((r), int64_t: i64_of_i64, float: i64_of_f32, double: i64_of_f64)(r)
#define I32(r) _Generic((r), int64_t: i32_of_i64, float: i32_of_f32, double: i32_of_f64)(r)

/* A family value converted to each destination dtype. */
#define TO_BOOL(v) ((uint8_t)(REAL(v) != 0 || IMAG(v) != 0))
#define TO_UINT8(v) ((uint8_t)I64(REAL(v)))
#define TO_INT8(v) ((int8_t)I32(REAL(v)))
#define TO_INT16(v) ((int16_t)I32(REAL(v)))
#define TO_INT32(v) I32(REAL(v))
#define TO_INT64(v) I64(REAL(v))
#define TO_FLOAT16(v) tpu_f32_to_f16((float)REAL(v))
#define TO_BFLOAT16(v) tpu_f32_to_bf16((float)REAL(v))
#define TO_FLOAT32(v) ((float)REAL(v))
#define TO_FLOAT64(v) ((double)REAL(v))
#define TO_COMPLEX64(v) ((tpu_c64){(float)REAL(v), (float)IMAG(v)})
#define TO_COMPLEX128(v) ((tpu_c128){(double)REAL(v), (double)IMAG(v)})

/* The inner loop converting S to D: operand 0 is the destination, operand 1 the source. Elements
 * move through memcpy, so no alignment is assumed, and the dense case is a separate call with
 * constant strides so the compiler can vectorize it. No restrict: PyTorch allows a copy between
 * two dtypes of one size over exactly the same memory (x.view(torch.int32).copy_(x)). */
#define CAST_LOOP(S, D)                                                                            \
  static inline void cast_run_##S##_##D(char *dst, const char *src, int64_t ds, int64_t ss,       \
                                        int64_t n) {                                               \
    for (int64_t i = 0; i < n; i++) {                                                              \
      T_##S x;                                                                                     \
      memcpy(&x, src + i * ss, sizeof x);                                                          \
      T_##D y = TO_##D(LOAD_##S(x));                                                               \
      memcpy(dst + i * ds, &y, sizeof y);                                                          \
    }                                                                                              \
  }                                                                                                \
  static void cast_##S##_##D(char **data, const int64_t *strides, int64_t n, void *ctx) {          \
    (void)ctx;                                                                                     \
    if (strides[0] == sizeof(T_##D) && strides[1] == sizeof(T_##S))                                \
      cast_run_##S##_##D(data[0], data[1], sizeof(T_##D), sizeof(T_##S), n);                      \
    else                                                                                           \
      cast_run_##S##_##D(data[0], data[1], strides[0], strides[1], n);                             \
  }

/* Every ordered pair of distinct computable dtypes: a row per source, the other eleven after it. */
#define CAST_ROW(X, S, a, b, c, d, e, f, g, h, i, j, k)                                            \
  X(S, a) X(S, b) X(S, c) X(S, d) X(S, e) X(S, f) X(S, g) X(S, h) X(S, i) X(S, j) X(S, k)
#define CAST_PAIRS(X)                                                                              \
  CAST_ROW(X, BOOL, UINT8, INT8, INT16, INT32, INT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64,         \
           COMPLEX64, COMPLEX128)                                                                  \
  CAST_ROW(X, UINT8, BOOL, INT8, INT16, INT32, INT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64,         \
           COMPLEX64, COMPLEX128)                                                                  \
  CAST_ROW(X, INT8, BOOL, UINT8, INT16, INT32, INT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64,         \
           COMPLEX64, COMPLEX128)                                                                  \
  CAST_ROW(X, INT16, BOOL, UINT8, INT8, INT32, INT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64,         \
           COMPLEX64, COMPLEX128)                                                                  \
  CAST_ROW(X, INT32, BOOL, UINT8, INT8, INT16, INT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64,         \
           COMPLEX64, COMPLEX128)                                                                  \
  CAST_ROW(X, INT64, BOOL, UINT8, INT8, INT16, INT32, FLOAT16, BFLOAT16, FLOAT32, FLOAT64,         \
           COMPLEX64, COMPLEX128)                                                                  \
  CAST_ROW(X, FLOAT16, BOOL, UINT8, INT8, INT16, INT32, INT64, BFLOAT16, FLOAT32, FLOAT64,         \
           COMPLEX64, COMPLEX128)                                                                  \
  CAST_ROW(X, BFLOAT16, BOOL, UINT8, INT8, INT16, INT32, INT64, FLOAT16, FLOAT32, FLOAT64,         \
           COMPLEX64, COMPLEX128)                                                                  \
  CAST_ROW(X, FLOAT32, BOOL, UINT8, INT8, INT16, INT32, INT64, FLOAT16, BFLOAT16, FLOAT64,         \
           COMPLEX64, COMPLEX128)                                                                  \
  CAST_ROW(X, FLOAT64, BOOL, UINT8, INT8, INT16, INT32, INT64, FLOAT16, BFLOAT16, FLOAT32,         \
           COMPLEX64, COMPLEX128)                                                                  \
  CAST_ROW(X, COMPLEX64, BOOL, UINT8, INT8, INT16, INT32, INT64, FLOAT16, BFLOAT16, FLOAT32,       \
           FLOAT64, COMPLEX128)                                                                    \
  CAST_ROW(X, COMPLEX128, BOOL, UINT8, INT8, INT16, INT32, INT64, FLOAT16, BFLOAT16, FLOAT32,      \
           FLOAT64, COMPLEX64)

CAST_PAIRS(CAST_LOOP)

#define CAST_ENTRY(S, D) [TPU_##S][TPU_##D] = cast_##S##_##D,
static const tpu_loop_fn cast_loops[TPU_COMPLEX128 + 1][TPU_COMPLEX128 + 1] = {
    CAST_PAIRS(CAST_ENTRY)};

/* Same-dtype copy of N-byte elements: a memcpy when both runs are dense. */
#define COPY_BYTES_LOOP(N)                                                                         \
  static void copy_bytes_##N(char **data, const int64_t *strides, int64_t n, void *ctx) {          \
    (void)ctx;                                                                                     \
    char *restrict dst = data[0];                                                                  \
    const char *restrict src = data[1];                                                            \
    if (strides[0] == N && strides[1] == N) {                                                      \
      memcpy(dst, src, (size_t)n * N);                                                             \
      return;                                                                                      \
    }                                                                                              \
    for (int64_t i = 0; i < n; i++)                                                                \
      memcpy(dst + i * strides[0], src + i * strides[1], N);                                       \
  }
COPY_BYTES_LOOP(1)
COPY_BYTES_LOOP(2)
COPY_BYTES_LOOP(4)
COPY_BYTES_LOOP(8)
COPY_BYTES_LOOP(16)

static tpu_loop_fn copy_bytes_loop(size_t elsize) {
  switch (elsize) {
  case 1: return copy_bytes_1;
  case 2: return copy_bytes_2;
  case 4: return copy_bytes_4;
  case 8: return copy_bytes_8;
  default: return copy_bytes_16;
  }
}

/* True when both operands name the same elements: copying would change nothing, and the byte
 * loops' memcpy may not be given overlapping memory. */
static bool same_memory(const tpu_iter *it) {
  if (it->data[0] != it->data[1])
    return false;
  for (int d = 0; d < it->ndim; d++)
    if (it->strides[d][0] != it->strides[d][1])
      return false;
  return true;
}

tpu_status tpu_kernel_copy(const tpu_op_call *call) {
  const tpu_tensor *src = &call->tensors[0], *dst = &call->tensors[1];
  if (!tpu_tensor_same_sizes(src, dst))
    return tpu_error(TPU_ERR_VALUE, "copy: source and destination sizes differ");
  tpu_loop_fn loop;
  if (src->dtype == dst->dtype) {
    loop = copy_bytes_loop(tpu_dtype_size(dst->dtype));
  } else if (tpu_dtype_is_computable(src->dtype) && tpu_dtype_is_computable(dst->dtype)) {
    loop = cast_loops[src->dtype][dst->dtype];
  } else {
    tpu_dtype other = tpu_dtype_is_computable(src->dtype) ? dst->dtype : src->dtype;
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED,
                     "copy from %s to %s is not implemented: %s is only copied to and from %s",
                     tpu_dtype_name(src->dtype), tpu_dtype_name(dst->dtype),
                     tpu_dtype_name(other), tpu_dtype_name(other));
  }
  tpu_iter it;
  tpu_iter_init(&it, dst->ndim, dst->sizes);
  tpu_iter_add_tensor(&it, dst);
  tpu_iter_add_tensor(&it, src);
  tpu_iter_build(&it, 0);
  if (src->dtype == dst->dtype && same_memory(&it))
    return TPU_OK;
  tpu_iter_run_parallel(&it, loop, NULL);
  return TPU_OK;
}

tpu_loop_fn tpu_cast_loop(tpu_dtype src, tpu_dtype dst) {
  if (src == dst || !tpu_dtype_is_computable(src) || !tpu_dtype_is_computable(dst))
    return NULL;
  return cast_loops[src][dst];
}
