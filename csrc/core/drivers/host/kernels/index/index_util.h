/* Helpers shared by the host kernels of the index family and others (nn, conv, rnn, random):
 * reading index values, the accumulating element loops that scatter-style kernels apply along runs,
 * splitting a scatter's work over the pool, and finding the first index out of range for an error
 * message. */
#ifndef TPU_HOST_KERNELS_INDEX_UTIL_H
#define TPU_HOST_KERNELS_INDEX_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "drivers/host/engine/engine_iter.h"
#include "ops/tpu_op.h"
#include "tensor/tpu_tensor.h"

/* An index element of `size` bytes: int64, int32, or uint8 (nll_loss targets). */
static inline int64_t tpu_index_load(const char *p, int64_t size) {
  if (size == 8) {
    int64_t v;
    memcpy(&v, p, sizeof v);
    return v;
  }
  if (size == 4) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
  }
  return (unsigned char)*p;
}

/* True for the dtypes an index tensor may have here. */
static inline bool tpu_index_dtype_ok(tpu_dtype dtype) {
  return dtype == TPU_INT64 || dtype == TPU_INT32;
}

/* Stores v rounded to a floating dtype; float16 and bfloat16 round through float, as c10 does. */
static inline void tpu_real_store(char *p, tpu_dtype dtype, double v) {
  if (dtype == TPU_FLOAT64) {
    memcpy(p, &v, sizeof v);
  } else if (dtype == TPU_FLOAT32) {
    float f = (float)v;
    memcpy(p, &f, sizeof f);
  } else {
    uint16_t h = dtype == TPU_FLOAT16 ? tpu_f32_to_f16((float)v) : tpu_f32_to_bf16((float)v);
    memcpy(p, &h, sizeof h);
  }
}

/* v rounded to a floating dtype and widened back: the value an ATen op on that dtype sees after
 * one rounding step. */
static inline double tpu_real_round(tpu_dtype dtype, double v) {
  char buf[8];
  tpu_real_store(buf, dtype, v);
  return tpu_real_load(buf, dtype);
}

/* The alpha of TPU_ACCUM_ADD, read as re (+ im i) for floating and complex dtypes, as i for
 * integers and bool. A complex add with alpha 1 adds src as is, as PyTorch's add_ and scatter_add
 * do; another alpha, or any alpha with `always_scale` (PyTorch's index_add_ of a 1-d self, which
 * multiplies even by 1), multiplies src by it as a complex product, where an infinite part times
 * 0 makes the other part NaN. */
typedef struct tpu_accum_alpha {
  double re, im;
  int64_t i;
  bool always_scale;
} tpu_accum_alpha;

/* Applies dst[k] = dst[k] op src[k] for k < n, elements k * dst_stride and k * src_stride bytes
 * apart. dst and src never overlap; dst_stride may be 0 (the same element n times, in order).
 * Arithmetic is PyTorch CPU's: integers wrap, bool adds as `or` and multiplies as `and`, float16
 * and bfloat16 compute in float and round once per element and step. */
typedef void (*tpu_accum_fn)(char *dst, int64_t dst_stride, const char *src, int64_t src_stride,
                             int64_t n, const tpu_accum_alpha *alpha);

/* The loop of `op` for `dtype`; NULL when the dtype cannot be combined that way (ASSIGN takes any
 * dtype: it moves bytes). */
tpu_accum_fn tpu_accum_loop(tpu_dtype dtype, tpu_accum op);

/* Runs `loop` over [0, it->numel) split over the pool, each chunk at least `grain` elements:
 * for kernels whose elements each carry a lot of work (a scatter walks a whole dimension per
 * element), so that small iteration spaces still run in parallel. */
void tpu_iter_run_grain(const tpu_iter *it, int64_t grain, tpu_loop_fn loop, void *ctx);

/* True when some element of the int32/int64 `index` view lies outside [lo, hi); in parallel. */
bool tpu_index_any_bad(const tpu_tensor *index, int64_t lo, int64_t hi);

/* The first element (in row-major order) of the int32/int64 `index` view outside [lo, hi);
 * returns false when there is none. For error messages: it runs serially. */
bool tpu_index_find_bad(const tpu_tensor *index, int64_t lo, int64_t hi, int64_t *value);

/* Sets every element of `t` to all-zero bytes (0 in every dtype), in parallel. */
void tpu_zero_fill(const tpu_tensor *t);

/* The sizes and byte strides of a view, a 0-d view read as one dimension of size 1. Strides of
 * size-1 dimensions become 0: they are never used and may be anything. Returns the rank. */
int tpu_view_shape(const tpu_tensor *t, int64_t *sizes, int64_t *byte_strides);

#endif
