/* What the libFuzzer targets of the core share: reading the fuzzer's bytes as numbers, and
 * failing loudly. Every target reads its input front to back with these; once the bytes run out
 * every read returns 0, so any input, even an empty one, decodes to something. */
#ifndef TPU_FUZZ_UTIL_H
#define TPU_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct fuzz_in {
  const uint8_t *p;
  size_t n;
} fuzz_in;

static inline uint8_t take_u8(fuzz_in *in) {
  if (!in->n)
    return 0;
  in->n--;
  return *in->p++;
}

/* A value in [0, n) (n > 0). */
static inline unsigned take_below(fuzz_in *in, unsigned n) { return take_u8(in) % n; }

static inline uint64_t take_u64(fuzz_in *in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v = v << 8 | take_u8(in);
  return v;
}

/* An int64 that is mostly small, often one of the values where byte and element arithmetic
 * overflows, sometimes any 64 bits: the mix that finds overflow bugs in view arithmetic. */
static inline int64_t take_i64(fuzz_in *in) {
  static const int64_t edges[] = {
      INT64_MAX,          INT64_MIN,           INT64_MAX / 2,       -(INT64_MAX / 2),
      INT64_MAX / 2 + 1,  INT64_MAX / 4,       INT64_MAX / 8 + 1,   INT64_MAX / 16,
      (int64_t)1 << 62,   (int64_t)1 << 61,    (int64_t)1 << 32,    (int64_t)1 << 31,
      ((int64_t)1 << 31) - 1, (int64_t)1 << 40, ((int64_t)1 << 40) + 1, 3074457345618258603,
  };
  uint8_t sel = take_u8(in);
  switch (sel >> 6) {
  case 0: return sel & 31;           /* 0..31 */
  case 1: return -(int64_t)(sel & 31); /* 0..-31 */
  case 2: {
    int64_t e = edges[sel & 15];
    return sel & 16 ? (e == INT64_MIN ? e : -e) : e;
  }
  default: return (int64_t)take_u64(in);
  }
}

/* Reports a broken invariant and aborts, which libFuzzer records as a crash with its input. */
#define FUZZ_REQUIRE(cond, ...)                                                                    \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);                                   \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
      abort();                                                                                     \
    }                                                                                              \
  } while (0)

#endif
