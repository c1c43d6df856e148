/* Sort keys (kernels/sort/sort.h): each dtype's elements as unsigned integers of the dtype's width
 * whose integer order is the sort contract's order (ops/tpu_ops_sort.h). */
#include <string.h>

#include "drivers/host/engine/engine_simd.h"
#include "drivers/host/kernels/sort/sort.h"

/* A floating element's key from its bits b, `sign` being the sign bit of its width and `inf`
 * the bits of +inf: negative values count down from just below +-0 (all their bits inverted),
 * positive ones count up from it (the sign bit set), so -inf is smallest and +inf largest; both
 * zeros share one key and every NaN takes the largest, after +inf. Written as selects, which
 * compile without branches: the signs of a row's elements are as good as random. */
static inline uint64_t float_key(uint64_t b, uint64_t sign, uint64_t inf) {
  const uint64_t all = sign | (sign - 1), mag = b & (sign - 1);
  const uint64_t negative = 0 - ((b & sign) != 0);
  uint64_t key = b ^ (sign | (negative & (sign - 1)));
  key = mag == 0 ? sign : key;
  return mag > inf ? all : key;
}

/* Counts go to this many histograms in turn: neighbouring elements mostly share their key's
 * byte, and one histogram would make each count wait for the one before. */
#define COUNT_LANES 4

/* Elements whose keys are computed at a time by a select: a block whose least key cannot enter
 * the prefix, most of them once it has filled, is skipped after one vectorized pass. */
#define SELECT_BLOCK 64

/* Puts {key, index} into best[0..*m), kept in order with ties in input order, growing it to at most
 * k items: once full, the last item makes room. The caller checks the item belongs. */
static inline void select_insert(tpu_sort_item *best, int64_t *m, int64_t k, uint64_t key,
                                 int64_t index) {
  int64_t at = *m < k ? (*m)++ : k - 1;
  for (; at > 0 && best[at - 1].key > key; at--)
    best[at] = best[at - 1];
  best[at] = (tpu_sort_item){key, index};
}

/* Defines the keys of one dtype, keys_<name>: elements read as bits of the unsigned type U, `v`,
 * keyed by the expression KEY. The loader writes every item and keeps it by advancing past it,
 * without a branch. */
#define DEFINE_KEYS(name, U, KEY)                                                                  \
  static int64_t load_##name(tpu_sort_item *items, const char *row, int64_t n, int64_t step,       \
                             uint64_t flip, uint64_t top) {                                        \
    const int shift = 8 * (int)sizeof(U) - 8;                                                      \
    int64_t kept = 0;                                                                              \
    for (int64_t j = 0; j < n; j++) {                                                              \
      U v;                                                                                         \
      memcpy(&v, row + j * step, sizeof v);                                                        \
      const uint64_t key = (KEY) ^ flip;                                                           \
      items[kept].key = key;                                                                       \
      items[kept].index = j;                                                                       \
      kept += (key >> shift) <= top;                                                               \
    }                                                                                              \
    return kept;                                                                                   \
  }                                                                                                \
  static void count_##name(int64_t *counts, const char *row, int64_t n, int64_t step,              \
                           uint64_t flip) {                                                        \
    const int shift = 8 * (int)sizeof(U) - 8;                                                      \
    int64_t lanes[COUNT_LANES][256] = {{0}};                                                       \
    for (int64_t j = 0; j < n; j++) {                                                              \
      U v;                                                                                         \
      memcpy(&v, row + j * step, sizeof v);                                                        \
      lanes[j % COUNT_LANES][((KEY) ^ flip) >> shift]++;                                           \
    }                                                                                              \
    for (int l = 0; l < COUNT_LANES; l++)                                                          \
      for (int d = 0; d < 256; d++)                                                                \
        counts[d] += lanes[l][d];                                                                  \
  }                                                                                                \
  /* The n (at most SELECT_BLOCK) keys of a block into keys; returns the least. */                 \
  TPU_SIMD static U block_##name(U *restrict keys, const char *row, int64_t n, int64_t step,      \
                                 U flip) {                                                         \
    U least = (U) ~(U)0;                                                                           \
    for (int64_t j = 0; j < n; j++) {                                                              \
      U v;                                                                                         \
      memcpy(&v, row + j * step, sizeof v);                                                        \
      const U key = (U)(KEY) ^ flip;                                                               \
      keys[j] = key;                                                                               \
      least = key < least ? key : least;                                                           \
    }                                                                                              \
    return least;                                                                                  \
  }                                                                                                \
  static void select_##name(tpu_sort_item *best, const char *row, int64_t n, int64_t step,        \
                            uint64_t flip, int64_t k) {                                            \
    U keys[SELECT_BLOCK];                                                                          \
    int64_t m = 0;                                                                                 \
    for (int64_t at = 0; at < n; at += SELECT_BLOCK) {                                             \
      const int64_t len = n - at < SELECT_BLOCK ? n - at : SELECT_BLOCK;                           \
      const U least = block_##name(keys, row + at * step, len, step, (U)flip);                     \
      if (m == k && least >= best[k - 1].key)                                                      \
        continue;                                                                                  \
      for (int64_t j = 0; j < len; j++)                                                            \
        if (m < k || keys[j] < best[k - 1].key)                                                    \
          select_insert(best, &m, k, keys[j], at + j);                                             \
    }                                                                                              \
  }                                                                                                \
  static const tpu_sort_keys keys_##name = {load_##name, count_##name, select_##name};

/* Unsigned integers are their own keys; signed ones flip their sign bit, so the most negative
 * value comes first. */
DEFINE_KEYS(u8, uint8_t, (uint64_t)v)
DEFINE_KEYS(i8, uint8_t, (uint64_t)(v ^ 0x80u))
DEFINE_KEYS(i16, uint16_t, (uint64_t)(v ^ 0x8000u))
DEFINE_KEYS(i32, uint32_t, (uint64_t)(v ^ 0x80000000u))
DEFINE_KEYS(i64, uint64_t, v ^ 0x8000000000000000ull)
DEFINE_KEYS(f16, uint16_t, float_key(v, 0x8000u, 0x7c00u))
DEFINE_KEYS(bf16, uint16_t, float_key(v, 0x8000u, 0x7f80u))
DEFINE_KEYS(f32, uint32_t, float_key(v, 0x80000000u, 0x7f800000u))
DEFINE_KEYS(f64, uint64_t, float_key(v, 0x8000000000000000ull, 0x7ff0000000000000ull))

const tpu_sort_keys *tpu_sort_keys_of(tpu_dtype dtype) {
  switch (dtype) {
  case TPU_BOOL:
  case TPU_UINT8: return &keys_u8;
  case TPU_INT8: return &keys_i8;
  case TPU_INT16: return &keys_i16;
  case TPU_INT32: return &keys_i32;
  case TPU_INT64: return &keys_i64;
  case TPU_FLOAT16: return &keys_f16;
  case TPU_BFLOAT16: return &keys_bf16;
  case TPU_FLOAT32: return &keys_f32;
  case TPU_FLOAT64: return &keys_f64;
  default: return NULL;
  }
}
