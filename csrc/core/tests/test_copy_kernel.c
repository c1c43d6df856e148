/* The COPY kernel: every pair of computable dtypes against torch's own conversions
 * (copy_expected.h), strided, transposed and broadcast views, and the non-computable dtypes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "copy_expected.h"
#include "tpu_test.h"
#include "tpu_test_host.h"

static tpu_status copy(tpu_tensor src, tpu_tensor dst) {
  tpu_tensor t[2] = {src, dst};
  return run_kernel(TPU_OP_COPY, t, 1, 1, NO_SCALAR, NO_SCALAR, NO_SCALAR, NO_SCALAR);
}

static void put(void *p, size_t size, uint64_t lo, uint64_t hi) {
  memcpy(p, &lo, size < 8 ? size : 8);
  if (size == 16)
    memcpy((char *)p + 8, &hi, 8);
}

/* Equal bits, or both NaN: NaN payloads are not a PyTorch semantic (its vectorized and scalar
 * float-to-bfloat16 paths already give different ones). */
static bool same_bits(uint64_t a, uint64_t b, uint64_t exp_mask, uint64_t mant_mask) {
  bool nan_a = (a & exp_mask) == exp_mask && (a & mant_mask) != 0;
  bool nan_b = (b & exp_mask) == exp_mask && (b & mant_mask) != 0;
  return a == b || (nan_a && nan_b);
}

/* Exponent and mantissa masks of each floating format. */
#define F16 0x7c00, 0x3ff
#define BF16 0x7f80, 0x7f
#define F32 0x7f800000, 0x7fffff
#define F64 0x7ff0000000000000, 0xfffffffffffff

static bool same_value(tpu_dtype dtype, const void *got, uint64_t lo, uint64_t hi) {
  uint64_t g[2] = {0, 0};
  memcpy(g, got, tpu_dtype_size(dtype));
  switch (dtype) {
  case TPU_FLOAT16: return same_bits(g[0], lo, F16);
  case TPU_BFLOAT16: return same_bits(g[0], lo, BF16);
  case TPU_FLOAT32: return same_bits(g[0], lo, F32);
  case TPU_FLOAT64: return same_bits(g[0], lo, F64);
  case TPU_COMPLEX64:
    return same_bits(g[0] & 0xffffffff, lo & 0xffffffff, F32) &&
           same_bits(g[0] >> 32, lo >> 32, F32);
  case TPU_COMPLEX128: return same_bits(g[0], lo, F64) && same_bits(g[1], hi, F64);
  default: return g[0] == lo;
  }
}

/* Runs every pair dense, then with a source of stride 2 into a destination of stride -3. */
static void check_pairs(bool strided) {
  for (int s = 0; s <= TPU_COMPLEX128; s++) {
    for (int d = 0; d <= TPU_COMPLEX128; d++) {
      size_t ss = tpu_dtype_size(s), ds = tpu_dtype_size(d);
      char *src = calloc(3 * NV, ss), *dst = calloc(3 * NV, ds);
      int64_t n = NV, sstride = strided ? 2 : 1, dstride = strided ? -3 : 1;
      char *dst0 = strided ? dst + (3 * NV - 1) * ds : dst;
      for (int i = 0; i < NV; i++)
        put(src + i * sstride * ss, ss, inputs[s][i][0], inputs[s][i][1]);
      CHECK_OK(copy(host_view(src, s, 1, &n, &sstride), host_view(dst0, d, 1, &n, &dstride)));
      for (int i = 0; i < NV; i++) {
        uint64_t lo = s == d ? inputs[s][i][0] : expected[s][d][i];
        uint64_t hi = s == d ? inputs[s][i][1] : d == TPU_COMPLEX128 ? expected_hi[s][i] : 0;
        if (!same_value(d, dst0 + i * dstride * (int64_t)ds, lo, hi)) {
          fprintf(stderr, "%s -> %s, value %d: got wrong bits\n", tpu_dtype_name(s),
                  tpu_dtype_name(d), i);
          tpu_test_failures++;
        }
      }
      free(src);
      free(dst);
    }
  }
}

static void test_all_pairs_dense(void) { check_pairs(false); }
static void test_all_pairs_strided(void) { check_pairs(true); }

static void test_transposed(void) {
  float src[12];
  double dst[12];
  for (int i = 0; i < 12; i++)
    src[i] = (float)i + 0.5f;
  /* src is a [4, 3] buffer viewed transposed as [3, 4]. */
  const int64_t sizes[2] = {3, 4}, transposed[2] = {1, 3};
  CHECK_OK(copy(host_view(src, TPU_FLOAT32, 2, sizes, transposed),
                host_view(dst, TPU_FLOAT64, 2, sizes, NULL)));
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 4; c++)
      CHECK(dst[4 * r + c] == src[3 * c + r]);
  /* Same dtype, transposed into transposed: one memcpy-sized run, same layout. */
  float out[12];
  CHECK_OK(copy(host_view(src, TPU_FLOAT32, 2, sizes, transposed),
                host_view(out, TPU_FLOAT32, 2, sizes, transposed)));
  CHECK(memcmp(out, src, sizeof out) == 0);
}

static void test_broadcast(void) {
  int32_t row[4] = {1, -2, 3, -4};
  int64_t out[12];
  const int64_t sizes[2] = {3, 4}, bcast[2] = {0, 1};
  CHECK_OK(copy(host_view(row, TPU_INT32, 2, sizes, bcast),
                host_view(out, TPU_INT64, 2, sizes, NULL)));
  for (int i = 0; i < 12; i++)
    CHECK(out[i] == row[i % 4]);
  int32_t same[12];
  CHECK_OK(copy(host_view(row, TPU_INT32, 2, sizes, bcast),
                host_view(same, TPU_INT32, 2, sizes, NULL)));
  for (int i = 0; i < 12; i++)
    CHECK(same[i] == row[i % 4]);
}

static void test_same_dtype_strided(void) {
  double complex_src[8], complex_dst[4]; /* complex128: 16-byte elements, every other one */
  for (int i = 0; i < 8; i++)
    complex_src[i] = i;
  int64_t n = 2, every_other = 2;
  CHECK_OK(copy(host_view(complex_src, TPU_COMPLEX128, 1, &n, &every_other),
                host_view(complex_dst, TPU_COMPLEX128, 1, &n, NULL)));
  CHECK(complex_dst[0] == 0 && complex_dst[1] == 1 && complex_dst[2] == 4 && complex_dst[3] == 5);
  /* Copying a view onto itself changes nothing. */
  CHECK_OK(copy(host_view(complex_src, TPU_COMPLEX128, 1, &n, &every_other),
                host_view(complex_src, TPU_COMPLEX128, 1, &n, &every_other)));
  CHECK(complex_src[4] == 4);
  /* A bfloat16 NaN keeps its exact bits in a same-dtype copy. */
  uint16_t nan_bits[2] = {0xffff, 0x7f81}, out[2];
  n = 2;
  CHECK_OK(copy(host_view(nan_bits, TPU_BFLOAT16, 1, &n, NULL),
                host_view(out, TPU_BFLOAT16, 1, &n, NULL)));
  CHECK(out[0] == 0xffff && out[1] == 0x7f81);
}

static void test_zero_dim_and_empty(void) {
  float x = 2.75f;
  int8_t y = 0;
  CHECK_OK(copy(host_view(&x, TPU_FLOAT32, 0, NULL, NULL), host_view(&y, TPU_INT8, 0, NULL, NULL)));
  CHECK(y == 2);
  int64_t sizes[2] = {3, 0};
  CHECK_OK(
      copy(host_view(&x, TPU_FLOAT32, 2, sizes, NULL), host_view(&y, TPU_INT8, 2, sizes, NULL)));
  CHECK(y == 2);
}

static void test_non_computable(void) {
  uint8_t f8[4] = {0x38, 0x40, 0x7f, 0x00}, f8_out[4] = {0};
  float f32[4] = {0};
  int64_t n = 4;
  tpu_status st = copy(host_view(f8, TPU_FLOAT8_E4M3FN, 1, &n, NULL),
                       host_view(f32, TPU_FLOAT32, 1, &n, NULL));
  CHECK(st == TPU_ERR_NOT_IMPLEMENTED);
  CHECK(strstr(tpu_last_error(), "float8_e4m3fn") != NULL);
  CHECK(copy(host_view(f32, TPU_FLOAT32, 1, &n, NULL), host_view(f8, TPU_UINT32, 1, &n, NULL)) ==
        TPU_ERR_NOT_IMPLEMENTED);
  CHECK(f8[0] == 0x38); /* nothing written */
  CHECK_OK(copy(host_view(f8, TPU_FLOAT8_E4M3FN, 1, &n, NULL),
                host_view(f8_out, TPU_FLOAT8_E4M3FN, 1, &n, NULL)));
  CHECK(memcmp(f8, f8_out, 4) == 0);
  uint64_t big[3] = {UINT64_MAX, 1, 2}, big_out[2];
  int64_t two = 2, back = -1;
  CHECK_OK(copy(host_view(&big[1], TPU_UINT64, 1, &two, &back),
                host_view(big_out, TPU_UINT64, 1, &two, NULL)));
  CHECK(big_out[0] == 1 && big_out[1] == UINT64_MAX);
}

static void test_size_mismatch(void) {
  float a[4], b[4];
  int64_t four = 4, two[2] = {2, 2};
  CHECK(copy(host_view(a, TPU_FLOAT32, 1, &four, NULL), host_view(b, TPU_FLOAT32, 2, two, NULL)) ==
        TPU_ERR_VALUE);
}

static void test_kernel_table(void) {
  for (int op = 0; op < TPU_OP_COUNT; op++)
    CHECK(tpu_host_kernel(op) != NULL);
  CHECK(tpu_host_kernel(TPU_OP_COUNT) == NULL);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_all_pairs_dense);
  RUN_TEST(test_all_pairs_strided);
  RUN_TEST(test_transposed);
  RUN_TEST(test_broadcast);
  RUN_TEST(test_same_dtype_strided);
  RUN_TEST(test_zero_dim_and_empty);
  RUN_TEST(test_non_computable);
  RUN_TEST(test_size_mismatch);
  RUN_TEST(test_kernel_table);
  TEST_MAIN_END();
}
