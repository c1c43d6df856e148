/* The FILL kernel: the scalar converted once per dtype (values checked against torch 2.13's
 * fill_), then written through dense, strided and 0-d views. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tpu_test.h"
#include "tpu_test_host.h"

static tpu_status fill(tpu_tensor out, tpu_scalar v0, tpu_scalar v1) {
  return run_kernel(TPU_OP_FILL, &out, 0, 1, v0, v1, NO_SCALAR, NO_SCALAR);
}

/* Fills 3 dense elements of `dtype` and checks each holds `expected` (little-endian bits). */
static void check_fill(tpu_dtype dtype, tpu_scalar v0, tpu_scalar v1, uint64_t lo, uint64_t hi) {
  unsigned char buf[3 * 16];
  int64_t n = 3;
  memset(buf, 0xa5, sizeof buf);
  CHECK_OK(fill(host_view(buf, dtype, 1, &n, NULL), v0, v1));
  size_t size = tpu_dtype_size(dtype);
  for (int i = 0; i < 3; i++) {
    uint64_t got[2] = {0, 0};
    memcpy(got, buf + i * size, size);
    if (got[0] != lo || got[1] != hi) {
      fprintf(stderr, "fill %s: got %#llx %#llx\n", tpu_dtype_name(dtype),
              (unsigned long long)got[0], (unsigned long long)got[1]);
      tpu_test_failures++;
    }
  }
}

static void test_values(void) {
  check_fill(TPU_BOOL, SCALAR_I(5), NO_SCALAR, 1, 0);
  check_fill(TPU_BOOL, SCALAR_I(0), NO_SCALAR, 0, 0);
  check_fill(TPU_UINT8, SCALAR_I(255), NO_SCALAR, 0xff, 0);
  check_fill(TPU_INT8, SCALAR_I(-1), NO_SCALAR, 0xff, 0);
  check_fill(TPU_INT16, SCALAR_I(70000), NO_SCALAR, 4464, 0); /* wraps */
  check_fill(TPU_INT32, SCALAR_I(-2), NO_SCALAR, 0xfffffffe, 0);
  check_fill(TPU_INT64, SCALAR_I(INT64_MIN), NO_SCALAR, 0x8000000000000000, 0);
  check_fill(TPU_UINT16, SCALAR_I(65535), NO_SCALAR, 0xffff, 0);
  check_fill(TPU_UINT32, SCALAR_I(0x12345678), NO_SCALAR, 0x12345678, 0);
  check_fill(TPU_UINT64, SCALAR_U(UINT64_MAX), NO_SCALAR, UINT64_MAX, 0);
  /* torch.zeros(3, dtype=torch.float16).fill_(1 + 2**-11 + 2**-40) is 1.0: through float. */
  check_fill(TPU_FLOAT16, SCALAR_F(1 + 0x1p-11 + 0x1p-40), NO_SCALAR, 0x3c00, 0);
  check_fill(TPU_FLOAT16, SCALAR_F(65520.0), NO_SCALAR, 0x7c00, 0); /* rounds to inf */
  check_fill(TPU_BFLOAT16, SCALAR_F(1 + 0x1p-8 + 0x1p-40), NO_SCALAR, 0x3f80, 0);
  check_fill(TPU_BFLOAT16, SCALAR_F(-2.7), NO_SCALAR, 0xc02d, 0);
  check_fill(TPU_FLOAT32, SCALAR_F(2.5), NO_SCALAR, 0x40200000, 0);
  check_fill(TPU_FLOAT32, SCALAR_F(1e300), NO_SCALAR, 0x7f800000, 0);
  check_fill(TPU_FLOAT64, SCALAR_F(-0.0), NO_SCALAR, 0x8000000000000000, 0);
  check_fill(TPU_COMPLEX64, SCALAR_F(1.5), SCALAR_F(-2.0), 0xc00000003fc00000, 0);
  check_fill(TPU_COMPLEX128, SCALAR_F(0.5), SCALAR_F(3.0), 0x3fe0000000000000,
             0x4008000000000000);
}

static void test_strided_views(void) {
  int32_t buf[12];
  for (int i = 0; i < 12; i++)
    buf[i] = -1;
  /* Column 1 of a [3, 4] matrix, and a transposed [2, 2] block: neighbours stay untouched. */
  int64_t three = 3, four = 4;
  CHECK_OK(fill(host_view(&buf[1], TPU_INT32, 1, &three, &four), SCALAR_I(7), NO_SCALAR));
  for (int i = 0; i < 12; i++)
    CHECK(buf[i] == (i % 4 == 1 ? 7 : -1));
  double d[6] = {0};
  const int64_t sizes[2] = {2, 3}, transposed[2] = {1, 2};
  CHECK_OK(fill(host_view(d, TPU_FLOAT64, 2, sizes, transposed), SCALAR_F(0.25), NO_SCALAR));
  for (int i = 0; i < 6; i++)
    CHECK(d[i] == 0.25);
}

static void test_memset_and_patterns(void) {
  enum { N = 1000 };
  float *f = malloc(N * sizeof *f);
  int64_t n = N;
  memset(f, 0x7f, N * sizeof *f);
  CHECK_OK(fill(host_view(f, TPU_FLOAT32, 1, &n, NULL), SCALAR_F(0.0), NO_SCALAR));
  for (int i = 0; i < N; i++)
    CHECK(f[i] == 0.0f && !signbit(f[i]));
  CHECK_OK(fill(host_view(f, TPU_FLOAT32, 1, &n, NULL), SCALAR_F(-3.5), NO_SCALAR));
  for (int i = 0; i < N; i++)
    CHECK(f[i] == -3.5f);
  CHECK_OK(fill(host_view(f, TPU_INT32, 1, &n, NULL), SCALAR_I(0x01010101), NO_SCALAR));
  int32_t v;
  memcpy(&v, &f[N - 1], 4);
  CHECK(v == 0x01010101);
  free(f);
}

static void test_zero_dim_empty_and_unsupported(void) {
  int16_t x = 0;
  CHECK_OK(fill(host_view(&x, TPU_INT16, 0, NULL, NULL), SCALAR_I(-300), NO_SCALAR));
  CHECK(x == -300);
  int64_t sizes[2] = {0, 5};
  CHECK_OK(fill(host_view(&x, TPU_INT16, 2, sizes, NULL), SCALAR_I(1), NO_SCALAR));
  CHECK(x == -300);
  uint8_t f8 = 0;
  CHECK(fill(host_view(&f8, TPU_FLOAT8_E5M2, 0, NULL, NULL), SCALAR_F(1.0), NO_SCALAR) ==
        TPU_ERR_NOT_IMPLEMENTED);
  CHECK(strstr(tpu_last_error(), "float8_e5m2") != NULL && f8 == 0);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_values);
  RUN_TEST(test_strided_views);
  RUN_TEST(test_memset_and_patterns);
  RUN_TEST(test_zero_dim_empty_and_unsupported);
  TEST_MAIN_END();
}
