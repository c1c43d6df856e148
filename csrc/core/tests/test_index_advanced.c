/* INDEX and INDEX_PUT: several index tensors, negative indices, broadcast values, accumulation
 * of duplicates in a fixed order for any thread count, and index errors before any write. */
#include <stdlib.h>

#include "drivers/host/engine/engine_pool.h"
#include "tpu_test.h"
#include "tpu_test_call.h"

/* x: [3, 4] float32 (x[r][c] = 10 r + c); indices i (rows) and j (cols), both of n elements. */
static tpu_status index_rc(float *x, int64_t *i, int64_t *j, int64_t n, float *out,
                           int64_t *offsets) {
  /* src: x restrided to I = [n], stride 0; "along" views carry each indexed dimension */
  const int64_t zero = 0, one = 1, four = 4, three = 3;
  tpu_tensor t[7] = {
      host_view(x, TPU_FLOAT32, 1, &n, &zero),
      vec(i, TPU_INT64, n), vec(j, TPU_INT64, n),
      host_view(x, TPU_FLOAT32, 1, &three, &four), host_view(x, TPU_FLOAT32, 1, &four, &one),
      vec(offsets, TPU_INT64, n), vec(out, TPU_FLOAT32, n)};
  tpu_scalar s[1] = {{.i = 0}};
  return run_call(TPU_OP_INDEX, t, 5, 2, s, 1);
}

static void test_index_two_tensors(void) {
  float x[12], out[3];
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 4; c++)
      x[4 * r + c] = (float)(10 * r + c);
  int64_t i[3] = {2, -1, 0}, j[3] = {3, 0, -4}, offsets[3];
  CHECK_OK(index_rc(x, i, j, 3, out, offsets));
  CHECK(out[0] == 23 && out[1] == 20 && out[2] == 0);
  int64_t bad[3] = {0, 3, 0};
  CHECK(index_rc(x, bad, j, 3, out, offsets) == TPU_ERR_INDEX);
  CHECK(strcmp(tpu_last_error(), "index 3 is out of bounds for dimension 0 with size 3") == 0);
  int64_t low[3] = {0, 0, -5};
  CHECK(index_rc(x, i, low, 3, out, offsets) == TPU_ERR_INDEX);
  CHECK(strcmp(tpu_last_error(), "index -5 is out of bounds for dimension 1 with size 4") == 0);
}

/* x[idx] += v for x [rows, cols], idx [n] (int32), v [n, cols]: B = 0 dims, I = [n], A = [cols]. */
static tpu_status put_rows(float *x, int64_t rows, int64_t cols, int32_t *idx, int64_t n,
                           float *v, bool accumulate, int64_t *offsets) {
  const int64_t big[2] = {n, cols}, self_strides[2] = {0, 1};
  tpu_tensor t[5] = {mat(v, TPU_FLOAT32, n, cols), vec(idx, TPU_INT32, n),
                     host_view(x, TPU_FLOAT32, 1, &rows, &cols), vec(offsets, TPU_INT64, n),
                     host_view(x, TPU_FLOAT32, 2, big, self_strides)};
  tpu_scalar s[2] = {{.i = 0}, {.i = accumulate}};
  return run_call(TPU_OP_INDEX_PUT, t, 3, 2, s, 2);
}

static void test_put_accumulate_deterministic(void) {
  enum { N = 60000, ROWS = 5, COLS = 3 };
  float *v = malloc(sizeof(float) * N * COLS), expect[ROWS * COLS] = {0};
  int32_t *idx = malloc(sizeof(int32_t) * N);
  int64_t *offsets = malloc(sizeof(int64_t) * N);
  for (int n = 0; n < N; n++) {
    idx[n] = (int32_t)((n * 31) % ROWS) - (n % 2 ? ROWS : 0); /* negative ones wrap */
    for (int c = 0; c < COLS; c++)
      v[n * COLS + c] = 1.0f / (float)(1 + (n + c) % 89);
  }
  for (int n = 0; n < N; n++)
    for (int c = 0; c < COLS; c++)
      expect[(idx[n] + ROWS) % ROWS * COLS + c] += v[n * COLS + c];
  for (int threads = 1; threads <= 3; threads++) {
    tpu_pool_set_threads(threads);
    float x[ROWS * COLS] = {0};
    CHECK_OK(put_rows(x, ROWS, COLS, idx, N, v, true, offsets));
    CHECK(memcmp(x, expect, sizeof x) == 0);
  }
  free(v);
  free(idx);
  free(offsets);
}

static void test_put_assign_and_errors(void) {
  float x[6] = {0}, v[9] = {1, 1, 1, 2, 2, 2, 3, 3, 3};
  int32_t idx[3] = {1, 0, 1};
  int64_t offsets[3];
  CHECK_OK(put_rows(x, 2, 3, idx, 3, v, false, offsets));
  CHECK(x[0] == 2 && x[3] == 3 && x[5] == 3); /* the last duplicate wins */
  int32_t bad[3] = {0, 2, 1};
  float before[6];
  memcpy(before, x, sizeof x);
  CHECK(put_rows(x, 2, 3, bad, 3, v, true, offsets) == TPU_ERR_INDEX);
  CHECK(memcmp(before, x, sizeof x) == 0);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_index_two_tensors);
  RUN_TEST(test_put_accumulate_deterministic);
  RUN_TEST(test_put_assign_and_errors);
  TEST_MAIN_END();
}
