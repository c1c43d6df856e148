/* GATHER and SCATTER (with its index_add / index_copy / index_fill forms): values, strided
 * views, every accumulation, deterministic duplicates across thread counts, and index errors
 * found before anything is written. */
#include <stdlib.h>

#include "drivers/host/kernels/index/index_util.h"
#include "drivers/host/engine/engine_pool.h"
#include "tpu_test.h"
#include "tpu_test_call.h"

static tpu_status gather(tpu_tensor self, tpu_tensor index, tpu_tensor out, int64_t dim) {
  tpu_tensor t[3] = {self, index, out};
  tpu_scalar s[1] = {{.i = dim}};
  return run_call(TPU_OP_GATHER, t, 2, 1, s, 1);
}

static tpu_status scatter(tpu_op_id op, tpu_tensor index, tpu_tensor src, tpu_tensor self,
                          int64_t dim, tpu_accum how, double alpha) {
  tpu_tensor t[3] = {index, src, self};
  tpu_scalar s[5] = {{.i = dim}, {.i = how}, {.f = alpha}, {.f = 0}, {.i = (int64_t)alpha}};
  return run_call(op, t, 2, 1, s, 5);
}

static void test_gather(void) {
  float self[6] = {0, 1, 2, 3, 4, 5}, out[4] = {0};
  int64_t idx[4] = {2, 0, 1, 1};
  /* dim 1 of [2, 3] with a [2, 2] index */
  CHECK_OK(gather(mat(self, TPU_FLOAT32, 2, 3), mat(idx, TPU_INT64, 2, 2),
                  mat(out, TPU_FLOAT32, 2, 2), 1));
  CHECK(out[0] == 2 && out[1] == 0 && out[2] == 4 && out[3] == 4);
  /* dim 0 through a transposed self view, int32 index */
  int32_t idx32[3] = {1, 0, 1};
  const int64_t sizes[2] = {3, 2}, strides[2] = {1, 3};
  CHECK_OK(gather(host_view(self, TPU_FLOAT32, 2, sizes, strides),
                  host_view(idx32, TPU_INT32, 2, (const int64_t[2]){1, 2}, NULL),
                  host_view(out, TPU_FLOAT32, 2, (const int64_t[2]){1, 2}, NULL), 0));
  CHECK(out[0] == 1 && out[1] == 3);
}

static void test_gather_errors(void) {
  float self[3] = {1, 2, 3}, out[2] = {-1, -1};
  int64_t bad[2] = {0, 3}, neg[2] = {-1, 0};
  CHECK(gather(vec(self, TPU_FLOAT32, 3), vec(bad, TPU_INT64, 2), vec(out, TPU_FLOAT32, 2), 0) ==
        TPU_ERR_INDEX);
  CHECK(strcmp(tpu_last_error(),
               "gather(): index 3 is out of bounds for dimension 0 with size 3") == 0);
  CHECK(gather(vec(self, TPU_FLOAT32, 3), vec(neg, TPU_INT64, 2), vec(out, TPU_FLOAT32, 2), 0) ==
        TPU_ERR_INDEX);
  /* an index larger than self outside dim is refused, never read past self */
  CHECK(gather(mat(self, TPU_FLOAT32, 1, 3), mat(bad, TPU_INT64, 2, 1), mat(out, TPU_FLOAT32, 2, 1),
               1) == TPU_ERR_VALUE);
}

static void test_scatter_assign_last_wins(void) {
  int16_t self[4] = {9, 9, 9, 9}, src[5] = {1, 2, 3, 4, 5};
  int64_t idx[5] = {1, 3, 1, 0, 1};
  CHECK_OK(scatter(TPU_OP_SCATTER, vec(idx, TPU_INT64, 5), vec(src, TPU_INT16, 5),
                   vec(self, TPU_INT16, 4), 0, TPU_ACCUM_ASSIGN, 1));
  CHECK(self[0] == 4 && self[1] == 5 && self[2] == 9 && self[3] == 2);
}

/* scatter_add of many duplicates: the result is the in-order float sum for any thread count. */
static void test_scatter_add_deterministic(void) {
  enum { N = 100000, ROWS = 7, COLS = 3 };
  float *src = malloc(sizeof(float) * N * COLS), expect[ROWS * COLS] = {0};
  int64_t *idx = malloc(sizeof(int64_t) * N * COLS);
  for (int i = 0; i < N * COLS; i++) {
    src[i] = 1.0f / (float)(1 + i % 97) * (i % 2 ? 1.0f : -3.0f);
    idx[i] = ((int64_t)i * 7919) % ROWS;
  }
  for (int i = 0; i < N; i++)
    for (int c = 0; c < COLS; c++)
      expect[idx[i * COLS + c] * COLS + c] += src[i * COLS + c];
  for (int threads = 1; threads <= 4; threads++) {
    tpu_pool_set_threads(threads);
    float self[ROWS * COLS] = {0};
    CHECK_OK(scatter(TPU_OP_SCATTER, mat(idx, TPU_INT64, N, COLS), mat(src, TPU_FLOAT32, N, COLS),
                     mat(self, TPU_FLOAT32, ROWS, COLS), 0, TPU_ACCUM_ADD, 1));
    CHECK(memcmp(self, expect, sizeof self) == 0);
  }
  free(src);
  free(idx);
}

/* index_add: a 1-d index spread over the source's sizes (stride 0 outside dim), with alpha. */
static void test_index_add_broadcast_index(void) {
  double self[6] = {0}, src[6] = {1, 2, 3, 4, 5, 6};
  int32_t idx[3] = {2, 0, 2};
  const int64_t sizes[2] = {2, 3}, istrides[2] = {0, 1};
  CHECK_OK(scatter(TPU_OP_INDEX_ADD, host_view(idx, TPU_INT32, 2, sizes, istrides),
                   mat(src, TPU_FLOAT64, 2, 3), mat(self, TPU_FLOAT64, 2, 3), 1, TPU_ACCUM_ADD,
                   2));
  CHECK(self[0] == 4 && self[1] == 0 && self[2] == 8 && self[3] == 10 && self[5] == 20);
}

static void test_scatter_value_and_dtypes(void) {
  /* a scalar value: a src view with stride 0 */
  uint16_t bf[3] = {0, 0, 0}, one = tpu_f32_to_bf16(1.0f);
  int64_t idx[2] = {2, 2};
  const int64_t two = 2, zero = 0;
  CHECK_OK(scatter(TPU_OP_INDEX_FILL, vec(idx, TPU_INT64, 2), host_view(&one, TPU_BFLOAT16, 1, &two, &zero),
                   vec(bf, TPU_BFLOAT16, 3), 0, TPU_ACCUM_ASSIGN, 1));
  CHECK(bf[2] == one && bf[0] == 0);
  /* bfloat16 adds round after every step, as PyTorch CPU's in-place add does */
  uint16_t acc = tpu_f32_to_bf16(256.0f), ones[2] = {one, one};
  int64_t z[2] = {0, 0};
  CHECK_OK(scatter(TPU_OP_SCATTER, vec(z, TPU_INT64, 2), vec(ones, TPU_BFLOAT16, 2),
                   vec(&acc, TPU_BFLOAT16, 1), 0, TPU_ACCUM_ADD, 1));
  CHECK(tpu_bf16_to_f32(acc) == 256.0f);
  /* integers wrap, bool adds as or and multiplies as and */
  int8_t i8 = 120, add[2] = {5, 5};
  CHECK_OK(scatter(TPU_OP_SCATTER, vec(z, TPU_INT64, 2), vec(add, TPU_INT8, 2),
                   vec(&i8, TPU_INT8, 1), 0, TPU_ACCUM_ADD, 1));
  CHECK(i8 == (int8_t)-126);
  uint8_t b[2] = {0, 1}, bsrc[2] = {1, 0};
  int64_t i01[2] = {0, 1};
  CHECK_OK(scatter(TPU_OP_SCATTER, vec(i01, TPU_INT64, 2), vec(bsrc, TPU_BOOL, 2),
                   vec(b, TPU_BOOL, 2), 0, TPU_ACCUM_MUL, 1));
  CHECK(b[0] == 0 && b[1] == 0);
  CHECK_OK(scatter(TPU_OP_SCATTER, vec(i01, TPU_INT64, 2), vec(bsrc, TPU_BOOL, 2),
                   vec(b, TPU_BOOL, 2), 0, TPU_ACCUM_ADD, 1));
  CHECK(b[0] == 1 && b[1] == 0);
  /* complex multiply */
  float c[2] = {1, 2}, m[2] = {3, -1};
  CHECK_OK(scatter(TPU_OP_SCATTER, vec(z, TPU_INT64, 1), vec(m, TPU_COMPLEX64, 1),
                   vec(c, TPU_COMPLEX64, 1), 0, TPU_ACCUM_MUL, 1));
  CHECK(c[0] == 5 && c[1] == 5);
  /* storage-only dtypes are only assigned */
  uint32_t u = 0;
  CHECK(scatter(TPU_OP_SCATTER, vec(z, TPU_INT64, 1), vec(&u, TPU_UINT32, 1),
                vec(&u, TPU_UINT32, 1), 0, TPU_ACCUM_ADD, 1) == TPU_ERR_NOT_IMPLEMENTED);
}

static void test_scatter_errors_write_nothing(void) {
  float self[3] = {1, 2, 3}, src[3] = {7, 7, 7};
  int64_t idx[3] = {0, 5, 1};
  CHECK(scatter(TPU_OP_INDEX_ADD, vec(idx, TPU_INT64, 3), vec(src, TPU_FLOAT32, 3),
                vec(self, TPU_FLOAT32, 3), 0, TPU_ACCUM_ADD, 1) == TPU_ERR_INDEX);
  CHECK(strcmp(tpu_last_error(),
               "index_add(): index 5 is out of bounds for dimension 0 with size 3") == 0);
  CHECK(self[0] == 1 && self[1] == 2 && self[2] == 3);
  /* src smaller than index */
  CHECK(scatter(TPU_OP_SCATTER, vec(idx, TPU_INT64, 3), vec(src, TPU_FLOAT32, 2),
                vec(self, TPU_FLOAT32, 3), 0, TPU_ACCUM_ASSIGN, 1) == TPU_ERR_VALUE);
  double fidx = 0;
  CHECK(scatter(TPU_OP_SCATTER, vec(&fidx, TPU_FLOAT64, 1), vec(src, TPU_FLOAT32, 1),
                vec(self, TPU_FLOAT32, 3), 0, TPU_ACCUM_ASSIGN, 1) == TPU_ERR_TYPE);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_gather);
  RUN_TEST(test_gather_errors);
  RUN_TEST(test_scatter_assign_last_wins);
  RUN_TEST(test_scatter_add_deterministic);
  RUN_TEST(test_index_add_broadcast_index);
  RUN_TEST(test_scatter_value_and_dtypes);
  RUN_TEST(test_scatter_errors_write_nothing);
  TEST_MAIN_END();
}
