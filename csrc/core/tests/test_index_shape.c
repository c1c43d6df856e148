/* TRILU and ARANGE: diagonals (including ones far outside the matrix), batches and strided
 * views, in place, and arange's per-dtype arithmetic. */
#include "tpu_test.h"
#include "tpu_test_call.h"

static tpu_status trilu(tpu_tensor self, tpu_tensor out, int64_t k, bool upper) {
  tpu_tensor t[2] = {self, out};
  tpu_scalar s[2] = {{.i = k}, {.i = upper}};
  return run_call(TPU_OP_TRILU, t, 1, 1, s, 2);
}

static void test_tril_triu(void) {
  /* batch of 2 [3, 4] matrices */
  int16_t x[24], out[24];
  for (int i = 0; i < 24; i++)
    x[i] = (int16_t)(i + 1);
  const int64_t sizes[3] = {2, 3, 4};
  for (int upper = 0; upper <= 1; upper++) {
    for (int64_t k = -4; k <= 5; k++) {
      CHECK_OK(trilu(host_view(x, TPU_INT16, 3, sizes, NULL), host_view(out, TPU_INT16, 3, sizes,
                     NULL), k, upper));
      bool ok = true;
      for (int b = 0; b < 2; b++)
        for (int r = 0; r < 3; r++)
          for (int c = 0; c < 4; c++) {
            bool keep = upper ? c - r >= k : c - r <= k;
            int e = 12 * b + 4 * r + c;
            ok &= out[e] == (keep ? x[e] : 0);
          }
      CHECK(ok);
    }
  }
  /* huge diagonals do not overflow */
  CHECK_OK(trilu(host_view(x, TPU_INT16, 3, sizes, NULL), host_view(out, TPU_INT16, 3, sizes, NULL),
                 INT64_MAX, false));
  CHECK(out[3] == x[3]);
  CHECK_OK(trilu(host_view(x, TPU_INT16, 3, sizes, NULL), host_view(out, TPU_INT16, 3, sizes, NULL),
                 INT64_MIN, false));
  CHECK(out[0] == 0 && out[23] == 0);
}

static void test_trilu_strided_in_place(void) {
  /* a transposed [3, 3] view, in place */
  double m[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const int64_t sizes[2] = {3, 3}, strides[2] = {1, 3};
  tpu_tensor v = host_view(m, TPU_FLOAT64, 2, sizes, strides);
  CHECK_OK(trilu(v, v, 0, true));
  /* view[r][c] = m[r + 3c]; triu keeps c >= r, so m[r + 3c] with r > c is zeroed */
  const double expect[9] = {1, 0, 0, 4, 5, 0, 7, 8, 9};
  CHECK(memcmp(m, expect, sizeof m) == 0);
  CHECK(trilu(vec(m, TPU_FLOAT64, 9), vec(m, TPU_FLOAT64, 9), 0, false) == TPU_ERR_VALUE);
}

static tpu_status arange(tpu_tensor out, double start, double step, int64_t istart,
                         int64_t istep) {
  tpu_scalar s[4] = {{.f = start}, {.f = step}, {.i = istart}, {.i = istep}};
  return run_call(TPU_OP_ARANGE, &out, 0, 1, s, 4);
}

static void test_arange(void) {
  float f[10];
  CHECK_OK(arange(vec(f, TPU_FLOAT32, 10), 0.0, 0.1, 0, 0));
  for (int i = 0; i < 10; i++)
    CHECK(f[i] == (float)(0.1 * i)); /* computed in double, rounded once */
  int8_t b[4];
  CHECK_OK(arange(vec(b, TPU_INT8, 4), 0, 0, 126, 1));
  CHECK(b[0] == 126 && b[1] == 127 && b[2] == -128);
  uint16_t h[3];
  CHECK_OK(arange(vec(h, TPU_BFLOAT16, 3), 1.0, 0.5, 0, 0));
  CHECK(tpu_bf16_to_f32(h[2]) == 2.0f);
  double d[3];
  const int64_t two = 2, minus = -2;
  d[1] = 7;
  CHECK_OK(arange(host_view(d + 2, TPU_FLOAT64, 1, &two, &minus), -1.0, 1.0, 0, 0));
  CHECK(d[2] == -1 && d[0] == 0 && d[1] == 7);
  uint8_t flag;
  CHECK(arange(vec(&flag, TPU_BOOL, 1), 0, 1, 0, 1) == TPU_ERR_NOT_IMPLEMENTED);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_tril_triu);
  RUN_TEST(test_trilu_strided_in_place);
  RUN_TEST(test_arange);
  TEST_MAIN_END();
}
