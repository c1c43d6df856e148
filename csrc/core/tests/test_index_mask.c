/* NONZERO_COUNT, NONZERO, MASKED_SELECT and MASKED_SCATTER: PyTorch's notion of nonzero
 * (NaN counts, -0.0 does not), row-major order through strided views, results independent of
 * the thread count, and a short masked_scatter source refused before writing. */
#include <math.h>
#include <stdlib.h>

#include "drivers/host/engine/engine_pool.h"
#include "tpu_test.h"
#include "tpu_test_call.h"

static int64_t count(tpu_tensor t) {
  int64_t n = -1;
  tpu_tensor ts[2] = {t, host_view(&n, TPU_INT64, 0, NULL, NULL)};
  CHECK_OK_OR(run_call(TPU_OP_NONZERO_COUNT, ts, 1, 1, NULL, 0), -1);
  return n;
}

static void test_nonzero_values(void) {
  float f[6] = {0.0f, -0.0f, NAN, 1.0f, 0.0f, -2.0f};
  CHECK(count(vec(f, TPU_FLOAT32, 6)) == 3);
  uint16_t h[3] = {0x8000, 0x0001, 0x0000}; /* -0.0, the smallest subnormal, 0.0 */
  CHECK(count(vec(h, TPU_FLOAT16, 3)) == 1);
  double c[4] = {0, 0, 0, -1}; /* complex: 0, -i */
  CHECK(count(vec(c, TPU_COMPLEX128, 2)) == 1);
  uint8_t b[3] = {2, 0, 1};
  CHECK(count(vec(b, TPU_BOOL, 3)) == 2);
  double zero = 0;
  CHECK(count(host_view(&zero, TPU_FLOAT64, 0, NULL, NULL)) == 0);
}

static void test_nonzero_coordinates(void) {
  /* a [3, 2] transposed view of a [2, 3] buffer: row-major order of the view */
  int32_t x[6] = {1, 0, 2, 0, 3, 4};
  const int64_t sizes[2] = {3, 2}, strides[2] = {1, 3};
  tpu_tensor v = host_view(x, TPU_INT32, 2, sizes, strides);
  CHECK(count(v) == 4);
  /* output [4, 2] column-major, as PyTorch allocates it */
  int64_t out[8];
  const int64_t osz[2] = {4, 2}, ostr[2] = {1, 4};
  tpu_tensor t[2] = {v, host_view(out, TPU_INT64, 2, osz, ostr)};
  CHECK_OK(run_call(TPU_OP_NONZERO, t, 1, 1, NULL, 0));
  const int64_t rows[4] = {0, 1, 2, 2}, cols[4] = {0, 1, 0, 1};
  for (int k = 0; k < 4; k++)
    CHECK(out[k] == rows[k] && out[4 + k] == cols[k]);
  /* a wrong count is refused */
  tpu_tensor bad[2] = {v, host_view(out, TPU_INT64, 2, (const int64_t[2]){3, 2}, NULL)};
  CHECK(run_call(TPU_OP_NONZERO, bad, 1, 1, NULL, 0) == TPU_ERR_RUNTIME);
}

static void test_select_and_scatter_large(void) {
  enum { N = 200003 };
  uint8_t *mask = malloc(N);
  float *x = malloc(sizeof(float) * N), *sel = malloc(sizeof(float) * N);
  int64_t n = 0;
  for (int i = 0; i < N; i++) {
    mask[i] = (uint8_t)((i * 7) % 11 < 4);
    x[i] = (float)i;
    n += mask[i];
  }
  for (int threads = 1; threads <= 3; threads++) {
    tpu_pool_set_threads(threads);
    CHECK(count(vec(mask, TPU_BOOL, N)) == n);
    tpu_tensor t[3] = {vec(x, TPU_FLOAT32, N), vec(mask, TPU_BOOL, N), vec(sel, TPU_FLOAT32, n)};
    CHECK_OK(run_call(TPU_OP_MASKED_SELECT, t, 2, 1, NULL, 0));
    int64_t k = 0;
    bool ok = true;
    for (int i = 0; i < N; i++)
      if (mask[i])
        ok &= sel[k++] == (float)i;
    CHECK(ok);
    /* scatter them back, negated, into a zeroed tensor */
    float *y = calloc(N, sizeof(float));
    for (int64_t i = 0; i < n; i++)
      sel[i] = -sel[i];
    tpu_tensor s[3] = {vec(mask, TPU_BOOL, N), vec(sel, TPU_FLOAT32, n), vec(y, TPU_FLOAT32, N)};
    CHECK_OK(run_call(TPU_OP_MASKED_SCATTER, s, 2, 1, NULL, 0));
    ok = true;
    for (int i = 0; i < N; i++)
      ok &= y[i] == (mask[i] ? -(float)i : 0.0f);
    CHECK(ok);
    free(y);
    for (int64_t i = 0; i < n; i++)
      sel[i] = -sel[i];
  }
  free(mask);
  free(x);
  free(sel);
}

static void test_masked_scatter_short_source(void) {
  uint8_t mask[3] = {1, 1, 1};
  double self[3] = {0, 0, 0}, src[2] = {1, 2};
  tpu_tensor s[3] = {vec(mask, TPU_BOOL, 3), vec(src, TPU_FLOAT64, 2), vec(self, TPU_FLOAT64, 3)};
  CHECK(run_call(TPU_OP_MASKED_SCATTER, s, 2, 1, NULL, 0) == TPU_ERR_RUNTIME);
  CHECK(self[0] == 0 && self[1] == 0);
  float fmask[3] = {1, 0, 1};
  tpu_tensor f[3] = {vec(fmask, TPU_FLOAT32, 3), vec(src, TPU_FLOAT64, 2),
                     vec(self, TPU_FLOAT64, 3)};
  CHECK(run_call(TPU_OP_MASKED_SCATTER, f, 2, 1, NULL, 0) == TPU_ERR_TYPE);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_nonzero_values);
  RUN_TEST(test_nonzero_coordinates);
  RUN_TEST(test_select_and_scatter_large);
  RUN_TEST(test_masked_scatter_short_source);
  TEST_MAIN_END();
}
