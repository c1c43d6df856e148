/* The INDEX_SELECT kernel: dense and strided layouts, every element size, 0-d tensors, and index
 * errors found before anything is written. */
#include <stdlib.h>
#include <string.h>

#include "tpu_test.h"
#include "tpu_test_host.h"

static tpu_status index_select(tpu_tensor self, tpu_tensor index, tpu_tensor out, int64_t dim) {
  tpu_tensor t[3] = {self, index, out};
  return run_kernel(TPU_OP_INDEX_SELECT, t, 2, 1, SCALAR_I(dim), NO_SCALAR, NO_SCALAR, NO_SCALAR);
}

static void test_rows(void) {
  float self[15], out[12];
  for (int i = 0; i < 15; i++)
    self[i] = (float)i;
  int64_t idx[4] = {4, 0, 0, 2}, n = 4;
  const int64_t self_sizes[2] = {5, 3}, out_sizes[2] = {4, 3};
  CHECK_OK(index_select(host_view(self, TPU_FLOAT32, 2, self_sizes, NULL),
                        host_view(idx, TPU_INT64, 1, &n, NULL),
                        host_view(out, TPU_FLOAT32, 2, out_sizes, NULL), 0));
  for (int r = 0; r < 4; r++)
    for (int c = 0; c < 3; c++)
      CHECK(out[3 * r + c] == self[3 * idx[r] + c]);
}

static void test_columns_strided(void) {
  /* self: a [3, 4] view, transposed, of a [4, 3] buffer; index int32 with stride 2; dim -1. */
  int16_t self[12], out[6];
  for (int i = 0; i < 12; i++)
    self[i] = (int16_t)(100 + i);
  int32_t idx[4] = {3, 99, 1, 99};
  int64_t n = 2, two = 2;
  const int64_t self_sizes[2] = {3, 4}, transposed[2] = {1, 3}, out_sizes[2] = {3, 2};
  CHECK_OK(index_select(host_view(self, TPU_INT16, 2, self_sizes, transposed),
                        host_view(idx, TPU_INT32, 1, &n, &two),
                        host_view(out, TPU_INT16, 2, out_sizes, NULL), -1));
  for (int r = 0; r < 3; r++) {
    CHECK(out[2 * r] == self[r + 3 * 3]);
    CHECK(out[2 * r + 1] == self[r + 3 * 1]);
  }
}

/* dim 1 of a [2, 3, 2] tensor for element sizes 1, 8 and 16. */
static void check_element_size(tpu_dtype dtype) {
  size_t size = tpu_dtype_size(dtype);
  unsigned char *self = malloc(12 * size), *out = malloc(8 * size);
  for (size_t i = 0; i < 12 * size; i++)
    self[i] = (unsigned char)i;
  int64_t idx[2] = {2, 0}, n = 2;
  const int64_t self_sizes[3] = {2, 3, 2}, out_sizes[3] = {2, 2, 2};
  CHECK_OK(index_select(host_view(self, dtype, 3, self_sizes, NULL),
                        host_view(idx, TPU_INT64, 1, &n, NULL),
                        host_view(out, dtype, 3, out_sizes, NULL), 1));
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++)
      for (int c = 0; c < 2; c++)
        CHECK(memcmp(out + ((a * 2 + b) * 2 + c) * size,
                     self + ((a * 3 + idx[b]) * 2 + c) * size, size) == 0);
  free(self);
  free(out);
}

static void test_element_sizes(void) {
  check_element_size(TPU_BOOL);
  check_element_size(TPU_FLOAT64);
  check_element_size(TPU_COMPLEX128);
  check_element_size(TPU_FLOAT8_E4M3FN);
}

static void test_zero_dim(void) {
  double self = 2.5, out = 0;
  int64_t zero = 0, one = 1;
  /* A 0-d self with a 0-d or one-element index gives a 0-d output. */
  CHECK_OK(index_select(host_view(&self, TPU_FLOAT64, 0, NULL, NULL),
                        host_view(&zero, TPU_INT64, 0, NULL, NULL),
                        host_view(&out, TPU_FLOAT64, 0, NULL, NULL), 0));
  CHECK(out == 2.5);
  CHECK(index_select(host_view(&self, TPU_FLOAT64, 0, NULL, NULL),
                     host_view(&one, TPU_INT64, 1, &one, NULL),
                     host_view(&out, TPU_FLOAT64, 0, NULL, NULL), 0) == TPU_ERR_INDEX);
  /* A 0-d index into a matrix keeps the dimension with size 1. */
  int32_t m[6] = {0, 1, 2, 3, 4, 5}, col[2];
  int32_t two = 2;
  const int64_t sizes[2] = {2, 3}, out_sizes[2] = {2, 1};
  CHECK_OK(index_select(host_view(m, TPU_INT32, 2, sizes, NULL),
                        host_view(&two, TPU_INT32, 0, NULL, NULL),
                        host_view(col, TPU_INT32, 2, out_sizes, NULL), 1));
  CHECK(col[0] == 2 && col[1] == 5);
}

static void test_out_of_bounds(void) {
  float self[5] = {0, 1, 2, 3, 4}, out[3] = {-1, -1, -1};
  int64_t five = 5, three = 3;
  int64_t bad[3] = {1, 7, 2}, negative[3] = {0, -1, 0};
  tpu_status st = index_select(host_view(self, TPU_FLOAT32, 1, &five, NULL),
                               host_view(bad, TPU_INT64, 1, &three, NULL),
                               host_view(out, TPU_FLOAT32, 1, &three, NULL), 0);
  CHECK(st == TPU_ERR_INDEX);
  CHECK(strcmp(tpu_last_error(),
               "index_select(): index 7 is out of bounds for dimension 0 with size 5") == 0);
  CHECK(out[0] == -1 && out[2] == -1); /* nothing written */
  CHECK(index_select(host_view(self, TPU_FLOAT32, 1, &five, NULL),
                     host_view(negative, TPU_INT64, 1, &three, NULL),
                     host_view(out, TPU_FLOAT32, 1, &three, NULL), 0) == TPU_ERR_INDEX);
  /* An empty self still checks its indices, as PyTorch CPU does. */
  const int64_t empty[2] = {0, 5}, empty_out[2] = {0, 1};
  int64_t one = 1;
  int64_t seven = 7, two = 2;
  CHECK(index_select(host_view(self, TPU_FLOAT32, 2, empty, NULL),
                     host_view(&seven, TPU_INT64, 1, &one, NULL),
                     host_view(out, TPU_FLOAT32, 2, empty_out, NULL), 1) == TPU_ERR_INDEX);
  CHECK_OK(index_select(host_view(self, TPU_FLOAT32, 2, empty, NULL),
                        host_view(&two, TPU_INT64, 1, &one, NULL),
                        host_view(out, TPU_FLOAT32, 2, empty_out, NULL), 1));
  /* An empty index selects nothing from anything. */
  int64_t none = 0;
  CHECK_OK(index_select(host_view(self, TPU_FLOAT32, 1, &five, NULL),
                        host_view(bad, TPU_INT64, 1, &none, NULL),
                        host_view(out, TPU_FLOAT32, 1, &none, NULL), 0));
}

static void test_bad_calls(void) {
  float self[4] = {0}, out[2];
  double fidx[2] = {0, 1};
  int64_t idx2d[2] = {0, 1}, four = 4, two = 2, shape2d[2] = {1, 2};
  CHECK(index_select(host_view(self, TPU_FLOAT32, 1, &four, NULL),
                     host_view(fidx, TPU_FLOAT64, 1, &two, NULL),
                     host_view(out, TPU_FLOAT32, 1, &two, NULL), 0) == TPU_ERR_TYPE);
  CHECK(index_select(host_view(self, TPU_FLOAT32, 1, &four, NULL),
                     host_view(idx2d, TPU_INT64, 2, shape2d, NULL),
                     host_view(out, TPU_FLOAT32, 1, &two, NULL), 0) == TPU_ERR_INDEX);
  CHECK(index_select(host_view(self, TPU_FLOAT32, 1, &four, NULL),
                     host_view(idx2d, TPU_INT64, 1, &two, NULL),
                     host_view(out, TPU_FLOAT32, 1, &four, NULL), 0) == TPU_ERR_VALUE);
  CHECK(index_select(host_view(self, TPU_FLOAT32, 1, &four, NULL),
                     host_view(idx2d, TPU_INT64, 1, &two, NULL),
                     host_view(out, TPU_FLOAT32, 1, &two, NULL), 1) == TPU_ERR_INDEX);
  CHECK(index_select(host_view(self, TPU_FLOAT32, 1, &four, NULL),
                     host_view(idx2d, TPU_INT64, 1, &two, NULL),
                     host_view(out, TPU_INT32, 1, &two, NULL), 0) == TPU_ERR_VALUE);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_rows);
  RUN_TEST(test_columns_strided);
  RUN_TEST(test_element_sizes);
  RUN_TEST(test_zero_dim);
  RUN_TEST(test_out_of_bounds);
  RUN_TEST(test_bad_calls);
  TEST_MAIN_END();
}
