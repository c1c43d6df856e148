/* The random stream in StableHLO (drivers/pjrt/tpu_pjrt_philox.h): Philox4x32-10's rounds on
 * 32-bit lanes, each 32 x 32-bit product computed in 64 bits and split into its halves. */
#include "drivers/pjrt/tpu_pjrt_philox.h"

static tpu_hlo_value u64(tpu_hlo *h, const char *literal, const tpu_hlo_value *like) {
  return tpu_hlo_full(h, TPU_UINT64, literal, like);
}

/* The low and high 32-bit halves of 64-bit x, as uint32. */
static tpu_hlo_value low32(tpu_hlo *h, tpu_hlo_value x) {
  return tpu_hlo_convert(h, tpu_hlo_binary(h, "and", x, u64(h, "4294967295", &x)), TPU_UINT32);
}

static tpu_hlo_value high32(tpu_hlo *h, tpu_hlo_value x) {
  return tpu_hlo_convert(h, tpu_hlo_binary(h, "shift_right_logical", x, u64(h, "32", &x)),
                         TPU_UINT32);
}

/* A runtime 64-bit scalar (seed or offset) as uint64, rank 0. */
static tpu_hlo_value scalar_u64(tpu_hlo *h, tpu_pjrt_scalar_fn scalar, void *ctx, int slot) {
  return tpu_hlo_bitcast(h, scalar(ctx, slot, false), TPU_UINT64, 0, NULL);
}

tpu_hlo_value tpu_pjrt_philox_words(tpu_hlo *h, tpu_pjrt_scalar_fn scalar, void *ctx, int64_t n) {
  int64_t blocks = (n + 3) / 4;
  tpu_hlo_value block = tpu_hlo_iota(h, TPU_UINT64, blocks);
  tpu_hlo_value seed = scalar_u64(h, scalar, ctx, 2), offset = scalar_u64(h, scalar, ctx, 3);
  tpu_hlo_value c[4] = {low32(h, block), high32(h, block),
                        tpu_hlo_splat(h, low32(h, offset), &block),
                        tpu_hlo_splat(h, high32(h, offset), &block)};
  tpu_hlo_value k0 = low32(h, seed), k1 = high32(h, seed);
  tpu_hlo_value m0 = u64(h, "3528531795", &block), m1 = u64(h, "3449720151", &block); /* M0, M1 */
  tpu_hlo_value w0 = tpu_hlo_constant(h, TPU_UINT32, "2654435769");                   /* W0 */
  tpu_hlo_value w1 = tpu_hlo_constant(h, TPU_UINT32, "3144134277");                   /* W1 */
  for (int round = 0; round < 10; round++) {
    tpu_hlo_value p0 = tpu_hlo_binary(h, "multiply", tpu_hlo_convert(h, c[0], TPU_UINT64), m0);
    tpu_hlo_value p1 = tpu_hlo_binary(h, "multiply", tpu_hlo_convert(h, c[2], TPU_UINT64), m1);
    tpu_hlo_value key0 = tpu_hlo_splat(h, k0, &c[0]), key1 = tpu_hlo_splat(h, k1, &c[0]);
    c[0] = tpu_hlo_binary(h, "xor", tpu_hlo_binary(h, "xor", high32(h, p1), c[1]), key0);
    c[2] = tpu_hlo_binary(h, "xor", tpu_hlo_binary(h, "xor", high32(h, p0), c[3]), key1);
    c[1] = low32(h, p1);
    c[3] = low32(h, p0);
    k0 = tpu_hlo_binary(h, "add", k0, w0);
    k1 = tpu_hlo_binary(h, "add", k1, w1);
  }
  /* [blocks, 4], row-major, is the words in order. */
  int64_t dims[2] = {blocks, 4}, along_rows[1] = {0}, along_cols[1] = {1};
  tpu_hlo_value j = tpu_hlo_broadcast(h, tpu_hlo_iota(h, TPU_UINT32, 4), 2, dims, along_cols);
  tpu_hlo_value words = tpu_hlo_broadcast(h, c[3], 2, dims, along_rows);
  for (int k = 2; k >= 0; k--) {
    char index[2] = {(char)('0' + k), 0};
    tpu_hlo_value is_k = tpu_hlo_compare(h, "EQ", j, tpu_hlo_full(h, TPU_UINT32, index, &j));
    words = tpu_hlo_select(h, is_k, tpu_hlo_broadcast(h, c[k], 2, dims, along_rows), words);
  }
  int64_t total = blocks * 4, start = 0;
  words = tpu_hlo_reshape(h, words, 1, &total);
  return tpu_hlo_slice(h, words, &start, &n);
}

tpu_hlo_value tpu_pjrt_philox_uniforms_f32(tpu_hlo *h, tpu_pjrt_scalar_fn scalar, void *ctx,
                                           int64_t n) {
  tpu_hlo_value w = tpu_pjrt_philox_words(h, scalar, ctx, n);
  w = tpu_hlo_binary(h, "and", w, tpu_hlo_full(h, TPU_UINT32, "16777215", &w));
  return tpu_hlo_binary(h, "multiply", tpu_hlo_convert(h, w, TPU_FLOAT32),
                        tpu_hlo_full(h, TPU_FLOAT32, "5.9604644775390625E-8", &w));
}

tpu_hlo_value tpu_pjrt_philox_words64(tpu_hlo *h, tpu_pjrt_scalar_fn scalar, void *ctx,
                                      int64_t n) {
  int64_t pairs[2] = {n, 2}, zero[2] = {0, 0}, lo_end[2] = {n, 1}, hi_start[2] = {0, 1},
          hi_end[2] = {n, 2};
  tpu_hlo_value w = tpu_hlo_reshape(h, tpu_pjrt_philox_words(h, scalar, ctx, 2 * n), 2, pairs);
  tpu_hlo_value lo = tpu_hlo_reshape(h, tpu_hlo_slice(h, w, zero, lo_end), 1, &n);
  tpu_hlo_value hi = tpu_hlo_reshape(h, tpu_hlo_slice(h, w, hi_start, hi_end), 1, &n);
  lo = tpu_hlo_convert(h, lo, TPU_UINT64);
  hi = tpu_hlo_binary(h, "shift_left", tpu_hlo_convert(h, hi, TPU_UINT64), u64(h, "32", &lo));
  return tpu_hlo_binary(h, "or", lo, hi);
}

tpu_hlo_value tpu_pjrt_philox_uniforms_f64(tpu_hlo *h, tpu_pjrt_scalar_fn scalar, void *ctx,
                                           int64_t n) {
  tpu_hlo_value x = tpu_pjrt_philox_words64(h, scalar, ctx, n);
  tpu_hlo_value bits = tpu_hlo_binary(h, "and", x, u64(h, "9007199254740991", &x)); /* 2^53 - 1 */
  return tpu_hlo_binary(h, "multiply", tpu_hlo_convert(h, bits, TPU_FLOAT64),
                        tpu_hlo_full(h, TPU_FLOAT64, "1.1102230246251565E-16", &x));
}
