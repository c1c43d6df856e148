/* The pooling kernels on small hand-checked cases: max pooling (padding, dilation, a NaN that
 * wins, integer dtypes) and its backward through the indices (overlapping windows, a bad index),
 * average pooling (padding counted or not, a divisor override of either sign, int64), and the
 * adaptive forms. */
#include <math.h>
#include <string.h>

#include "tpu_test.h"
#include "tpu_test_call.h"

/* A [1, 1, h, w] host view. */
static tpu_tensor plane(void *mem, tpu_dtype d, int64_t h, int64_t w) {
  const int64_t sizes[4] = {1, 1, h, w};
  return host_view(mem, d, 4, sizes, NULL);
}

typedef struct pool_args {
  int64_t k[2], s[2], p[2], dil[2];
  uint64_t mode;
  int64_t divisor;
} pool_args;

static void scalars_of(const pool_args *a, tpu_scalar s[6]) {
  s[0] = SCALAR_U(tpu_conv_pack(1, a->k[0], a->k[1]));
  s[1] = SCALAR_U(tpu_conv_pack(1, a->s[0], a->s[1]));
  s[2] = SCALAR_U(tpu_conv_pack(0, a->p[0], a->p[1]));
  s[3] = SCALAR_U(tpu_conv_pack(1, a->dil[0], a->dil[1]));
  s[4] = SCALAR_U(a->mode);
  s[5] = SCALAR_I(a->divisor);
}

static tpu_status pool(const pool_args *a, tpu_tensor x, tpu_tensor y, const tpu_tensor *idx) {
  tpu_scalar s[6];
  scalars_of(a, s);
  tpu_tensor t[3] = {x, y, idx ? *idx : y};
  return run_call(TPU_OP_POOL, t, 1, idx ? 2 : 1, s, 6);
}

static tpu_status pool_backward(const pool_args *a, tpu_tensor dy, const tpu_tensor *idx,
                                tpu_tensor dx) {
  tpu_scalar s[6];
  scalars_of(a, s);
  tpu_tensor t[3] = {dy, idx ? *idx : dx, dx};
  t[idx ? 2 : 1] = dx;
  return run_call(TPU_OP_POOL_BACKWARD, t, idx ? 2 : 1, 1, s, 6);
}

static const float X16[16] = {1, 5, 2, 0, 3, 4, 8, 7, -1, -2, -3, -4, 9, 6, 0, 1};

static void test_max_pool(void) {
  /* 2x2, stride 2 */
  pool_args a = {{2, 2}, {2, 2}, {0, 0}, {1, 1}, TPU_POOL_MAX, 0};
  float x[16], y[4];
  int64_t idx[4];
  memcpy(x, X16, sizeof x);
  tpu_tensor it = plane(idx, TPU_INT64, 2, 2);
  CHECK_OK(pool(&a, plane(x, TPU_FLOAT32, 4, 4), plane(y, TPU_FLOAT32, 2, 2), &it));
  CHECK(y[0] == 5 && y[1] == 8 && y[2] == 9 && y[3] == 1);
  CHECK(idx[0] == 1 && idx[1] == 6 && idx[2] == 12 && idx[3] == 15);
  /* a NaN wins its window */
  x[5] = NAN;
  CHECK_OK(pool(&a, plane(x, TPU_FLOAT32, 4, 4), plane(y, TPU_FLOAT32, 2, 2), &it));
  CHECK(isnan(y[0]) && idx[0] == 5);
  /* padding 1, dilation 2, kernel 2: window rows {oh * 2 - 1, oh * 2 + 1} */
  pool_args b = {{2, 2}, {2, 2}, {1, 1}, {2, 2}, TPU_POOL_MAX, 0};
  memcpy(x, X16, sizeof x);
  CHECK_OK(pool(&b, plane(x, TPU_FLOAT32, 4, 4), plane(y, TPU_FLOAT32, 2, 2), &it));
  /* (0,0): only (1,1) = 4; (0,1): (1,1), (1,3) -> 7 at 7; (1,0): (1,1), (3,1) -> 6 at 13 */
  CHECK(y[0] == 4 && idx[0] == 5 && y[1] == 7 && idx[1] == 7 && y[2] == 6 && idx[2] == 13);
  CHECK(y[3] == 7 && idx[3] == 7);
  /* int32 keeps exact values */
  int32_t xi[16], yi[4];
  for (int i = 0; i < 16; i++)
    xi[i] = (int32_t)X16[i] * 100000000;
  CHECK_OK(pool(&a, plane(xi, TPU_INT32, 4, 4), plane(yi, TPU_INT32, 2, 2), &it));
  CHECK(yi[0] == 500000000 && yi[2] == 900000000 && idx[1] == 6);
}

static void test_max_pool_backward(void) {
  /* kernel 3, stride 1 on 4x4: overlapping windows share a max */
  pool_args a = {{3, 3}, {1, 1}, {0, 0}, {1, 1}, TPU_POOL_MAX, 0};
  double x[16], y[4], dy[4] = {1, 2, 3, 4}, dx[16];
  int64_t idx[4];
  for (int i = 0; i < 16; i++)
    x[i] = X16[i];
  tpu_tensor it = plane(idx, TPU_INT64, 2, 2);
  CHECK_OK(pool(&a, plane(x, TPU_FLOAT64, 4, 4), plane(y, TPU_FLOAT64, 2, 2), &it));
  CHECK(y[0] == 8 && y[1] == 8 && y[2] == 9 && y[3] == 8);
  CHECK_OK(pool_backward(&a, plane(dy, TPU_FLOAT64, 2, 2), &it, plane(dx, TPU_FLOAT64, 4, 4)));
  CHECK(dx[6] == 1 + 2 + 4 && dx[12] == 3);
  double total = 0;
  for (int i = 0; i < 16; i++)
    total += dx[i];
  CHECK(total == 10);
  idx[2] = 16;
  CHECK(pool_backward(&a, plane(dy, TPU_FLOAT64, 2, 2), &it, plane(dx, TPU_FLOAT64, 4, 4)) ==
        TPU_ERR_INDEX);
}

static void test_avg_pool(void) {
  /* 3x3 input, kernel 2, stride 2, padding 1: windows of 1, 2, 2 and 4 real elements */
  double x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, y[4], dy[4] = {4, 4, 4, 4}, dx[9];
  pool_args a = {{2, 2}, {2, 2}, {1, 1}, {1, 1}, TPU_POOL_AVG | TPU_POOL_COUNT_PAD, 0};
  CHECK_OK(pool(&a, plane(x, TPU_FLOAT64, 3, 3), plane(y, TPU_FLOAT64, 2, 2), NULL));
  CHECK(y[0] == 1.0 / 4 && y[1] == 5.0 / 4 && y[2] == 11.0 / 4 && y[3] == 28.0 / 4);
  a.mode = TPU_POOL_AVG;
  CHECK_OK(pool(&a, plane(x, TPU_FLOAT64, 3, 3), plane(y, TPU_FLOAT64, 2, 2), NULL));
  CHECK(y[0] == 1 && y[1] == 2.5 && y[2] == 5.5 && y[3] == 7);
  CHECK_OK(pool_backward(&a, plane(dy, TPU_FLOAT64, 2, 2), NULL, plane(dx, TPU_FLOAT64, 3, 3)));
  CHECK(dx[0] == 4 && dx[1] == 2 && dx[4] == 1 && dx[8] == 1);
  a.divisor = 3;
  CHECK_OK(pool(&a, plane(x, TPU_FLOAT64, 3, 3), plane(y, TPU_FLOAT64, 2, 2), NULL));
  CHECK(y[3] == 28.0 / 3);
  /* a negative override divides as PyTorch's does, forward and backward */
  a.divisor = -2;
  CHECK_OK(pool(&a, plane(x, TPU_FLOAT64, 3, 3), plane(y, TPU_FLOAT64, 2, 2), NULL));
  CHECK(y[0] == -0.5 && y[3] == -14);
  CHECK_OK(pool_backward(&a, plane(dy, TPU_FLOAT64, 2, 2), NULL, plane(dx, TPU_FLOAT64, 3, 3)));
  CHECK(dx[0] == -2 && dx[4] == -2);
  /* int64 divides as integers, truncating; INT64_MIN / -1 wraps */
  int64_t xi[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, yi[4];
  a.divisor = 0;
  CHECK_OK(pool(&a, plane(xi, TPU_INT64, 3, 3), plane(yi, TPU_INT64, 2, 2), NULL));
  CHECK(yi[0] == 1 && yi[1] == 2 && yi[2] == 5 && yi[3] == 7);
  a.divisor = -3;
  CHECK_OK(pool(&a, plane(xi, TPU_INT64, 3, 3), plane(yi, TPU_INT64, 2, 2), NULL));
  CHECK(yi[0] == 0 && yi[1] == -1 && yi[2] == -3 && yi[3] == -9);
  int64_t xmin[1] = {INT64_MIN}, ymin[1];
  pool_args one = {{1, 1}, {1, 1}, {0, 0}, {1, 1}, TPU_POOL_AVG, -1};
  CHECK_OK(pool(&one, plane(xmin, TPU_INT64, 1, 1), plane(ymin, TPU_INT64, 1, 1), NULL));
  CHECK(ymin[0] == INT64_MIN);
  a.divisor = 0;
  /* average pooling refuses int32; max pooling's backward refuses integers */
  int32_t x32[9] = {0}, y32[4];
  CHECK(pool(&a, plane(x32, TPU_INT32, 3, 3), plane(y32, TPU_INT32, 2, 2), NULL) ==
        TPU_ERR_VALUE);
}

static void test_adaptive(void) {
  /* 1x5 -> 1x3: windows [0, 2), [1, 4), [3, 5) */
  float x[5] = {1, 2, 3, 4, 6}, y[3], dy[3] = {2, 3, 4}, dx[5];
  int64_t idx[3];
  pool_args a = {{1, 1}, {1, 1}, {0, 0}, {1, 1}, TPU_POOL_ADAPTIVE_AVG, 0};
  CHECK_OK(pool(&a, plane(x, TPU_FLOAT32, 1, 5), plane(y, TPU_FLOAT32, 1, 3), NULL));
  CHECK(y[0] == 1.5f && y[1] == 3 && y[2] == 5);
  CHECK_OK(pool_backward(&a, plane(dy, TPU_FLOAT32, 1, 3), NULL, plane(dx, TPU_FLOAT32, 1, 5)));
  CHECK(dx[0] == 1 && dx[1] == 2 && dx[3] == 3);
  a.mode = TPU_POOL_ADAPTIVE_MAX;
  tpu_tensor it = plane(idx, TPU_INT64, 1, 3);
  CHECK_OK(pool(&a, plane(x, TPU_FLOAT32, 1, 5), plane(y, TPU_FLOAT32, 1, 3), &it));
  CHECK(y[0] == 2 && y[1] == 4 && y[2] == 6 && idx[0] == 1 && idx[1] == 3 && idx[2] == 4);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_max_pool);
  RUN_TEST(test_max_pool_backward);
  RUN_TEST(test_avg_pool);
  RUN_TEST(test_adaptive);
  TEST_MAIN_END();
}
