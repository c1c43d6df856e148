#include "drivers/host/engine/engine_nonfinite.h"

#include <stdatomic.h>
#include <string.h>

#include "drivers/host/engine/engine_simd.h"
#include "drivers/host/engine/engine_iter.h"

/* How a dtype is scanned: `units` floating parts of `part` per element (two for complex), each
 * `width` bytes, non-finite when (bits & mask) == mask. */
typedef struct scan_kind {
  tpu_dtype part;
  int width;
  int units;
  uint64_t mask;
} scan_kind;

static bool kind_of(tpu_dtype dtype, scan_kind *k) {
  switch (dtype) {
  case TPU_FLOAT16: *k = (scan_kind){TPU_FLOAT16, 2, 1, 0x7c00u}; return true;
  case TPU_BFLOAT16: *k = (scan_kind){TPU_BFLOAT16, 2, 1, 0x7f80u}; return true;
  case TPU_FLOAT32: *k = (scan_kind){TPU_FLOAT32, 4, 1, 0x7f800000u}; return true;
  case TPU_FLOAT64: *k = (scan_kind){TPU_FLOAT64, 8, 1, 0x7ff0000000000000u}; return true;
  case TPU_COMPLEX64: *k = (scan_kind){TPU_FLOAT32, 4, 2, 0x7f800000u}; return true;
  case TPU_COMPLEX128: *k = (scan_kind){TPU_FLOAT64, 8, 2, 0x7ff0000000000000u}; return true;
  default: return false;
  }
}

bool tpu_dtype_has_nonfinite(tpu_dtype dtype) {
  scan_kind k;
  return kind_of(dtype, &k);
}

/* Dense runs: branch-free bit tests OR-ed together, so GCC vectorizes them; memcpy reads the bits
 * of each part without breaking aliasing rules. */
#define DENSE_SCAN(NAME, T)                                                                        \
  TPU_SIMD static bool NAME(const unsigned char *restrict p, int64_t n, T mask) {                 \
    T hit = 0;                                                                                     \
    for (int64_t i = 0; i < n; i++) {                                                              \
      T bits;                                                                                      \
      memcpy(&bits, p + i * (int64_t)sizeof(T), sizeof(T));                                        \
      hit |= (T)((bits & mask) == mask);                                                           \
    }                                                                                              \
    return hit != 0;                                                                               \
  }
DENSE_SCAN(dense_u16, uint16_t)
DENSE_SCAN(dense_u32, uint32_t)
DENSE_SCAN(dense_u64, uint64_t)
#undef DENSE_SCAN

static uint64_t part_bits(const unsigned char *p, int width) {
  uint16_t b16;
  uint32_t b32;
  uint64_t b64;
  switch (width) {
  case 2: memcpy(&b16, p, sizeof b16); return b16;
  case 4: memcpy(&b32, p, sizeof b32); return b32;
  default: memcpy(&b64, p, sizeof b64); return b64;
  }
}

static bool part_bad(const unsigned char *p, const scan_kind *k) {
  return (part_bits(p, k->width) & k->mask) == k->mask;
}

static bool dense_bad(const unsigned char *p, int64_t parts, const scan_kind *k) {
  switch (k->width) {
  case 2: return dense_u16(p, parts, (uint16_t)k->mask);
  case 4: return dense_u32(p, parts, (uint32_t)k->mask);
  default: return dense_u64(p, parts, k->mask);
  }
}

typedef struct scan_ctx {
  scan_kind kind;
  atomic_bool found;
} scan_ctx;

static void scan_loop(char **data, const int64_t *strides, int64_t n, void *arg) {
  scan_ctx *c = arg;
  /* Once any thread has found one, the answer is known: skip the rest. */
  if (atomic_load_explicit(&c->found, memory_order_relaxed))
    return;
  const scan_kind *k = &c->kind;
  const unsigned char *p = (const unsigned char *)data[0];
  int64_t elsize = (int64_t)k->width * k->units;
  bool bad = false;
  if (strides[0] == elsize) {
    bad = dense_bad(p, n * k->units, k);
  } else {
    for (int64_t i = 0; i < n && !bad; i++)
      for (int u = 0; u < k->units; u++)
        bad = bad || part_bad(p + i * strides[0] + u * k->width, k);
  }
  if (bad)
    atomic_store_explicit(&c->found, true, memory_order_relaxed);
}

static void build_iter(tpu_iter *it, const tpu_tensor *t, unsigned flags) {
  tpu_iter_init(it, t->ndim, t->ndim ? t->sizes : NULL);
  tpu_iter_add_tensor(it, t);
  tpu_iter_build(it, flags);
}

bool tpu_has_nonfinite(const tpu_tensor *t) {
  scan_ctx c;
  if (!kind_of(t->dtype, &c.kind) || tpu_tensor_numel(t) == 0)
    return false;
  atomic_init(&c.found, false);
  tpu_iter it;
  build_iter(&it, t, 0);
  tpu_iter_run_parallel(&it, scan_loop, &c);
  return atomic_load(&c.found);
}

typedef struct first_ctx {
  scan_kind kind;
  bool found;
  int64_t index;
  double value;
} first_ctx;

static double part_value(const unsigned char *p, tpu_dtype part) {
  uint64_t bits = part_bits(p, (int)tpu_dtype_size(part));
  float f;
  double d;
  switch (part) {
  case TPU_FLOAT16: return tpu_f16_to_f32((uint16_t)bits);
  case TPU_BFLOAT16: return tpu_bf16_to_f32((uint16_t)bits);
  case TPU_FLOAT32: memcpy(&f, p, sizeof f); return f;
  default: memcpy(&d, p, sizeof d); return d;
  }
}

static void first_loop(char **data, const int64_t *strides, int64_t n, int64_t index, void *arg) {
  first_ctx *c = arg;
  const scan_kind *k = &c->kind;
  for (int64_t i = 0; i < n && !c->found; i++) {
    for (int u = 0; u < k->units; u++) {
      const unsigned char *p = (const unsigned char *)data[0] + i * strides[0] + u * k->width;
      if (part_bad(p, k)) {
        c->found = true;
        c->index = index + i;
        c->value = part_value(p, k->part);
        break;
      }
    }
  }
}

bool tpu_first_nonfinite(const tpu_tensor *t, int64_t *index, double *value) {
  first_ctx c = {.found = false};
  if (!kind_of(t->dtype, &c.kind) || tpu_tensor_numel(t) == 0)
    return false;
  tpu_iter it;
  build_iter(&it, t, TPU_ITER_LOGICAL_ORDER);
  tpu_iter_run_indexed(&it, 0, it.numel, first_loop, &c);
  if (c.found) {
    *index = c.index;
    *value = c.value;
  }
  return c.found;
}
