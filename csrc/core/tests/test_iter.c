/* The strided iterator: coalescing, broadcasting, negative strides, reordering, logical order and
 * sub-range iteration, checked against a naive row-major walk. */
#include <stdlib.h>
#include <string.h>

#include "base/tpu_status.h"
#include "drivers/host/engine/engine_iter.h"
#include "tpu_test.h"

/* Inner loop: operand 0 (int32) = operand 1 (int32). */
static void copy_i32(char **data, const int64_t *strides, int64_t n, void *ctx) {
  (void)ctx;
  for (int64_t i = 0; i < n; i++)
    memcpy(data[0] + i * strides[0], data[1] + i * strides[1], 4);
}

/* Inner loop: operand 0 (int32) = the element's flat index. */
static void write_index(char **data, const int64_t *strides, int64_t n, int64_t index, void *ctx) {
  (void)ctx;
  for (int64_t i = 0; i < n; i++) {
    int32_t v = (int32_t)(index + i);
    memcpy(data[0] + i * strides[0], &v, 4);
  }
}

/* Inner loop: appends operand 0's element addresses to a trace. */
typedef struct trace {
  char *addr[512];
  int n;
  int calls;
} trace;

static void record(char **data, const int64_t *strides, int64_t n, void *ctx) {
  trace *t = ctx;
  t->calls++;
  for (int64_t i = 0; i < n && t->n < 512; i++)
    t->addr[t->n++] = data[0] + i * strides[0];
}

static void test_coalesce_contiguous(void) {
  int32_t a[24], b[24];
  const int64_t shape[3] = {2, 3, 4}, strides[3] = {48, 16, 4};
  tpu_iter it;
  tpu_iter_init(&it, 3, shape);
  tpu_iter_add(&it, a, 4, strides);
  tpu_iter_add(&it, b, 4, strides);
  tpu_iter_build(&it, 0);
  CHECK(it.ndim == 1 && it.shape[0] == 24 && it.numel == 24);
  CHECK(it.strides[0][0] == 4 && it.strides[0][1] == 4);
}

static void test_drop_size_one(void) {
  int32_t a[5];
  const int64_t shape[3] = {1, 5, 1}, strides[3] = {12345, 4, -999};
  tpu_iter it;
  tpu_iter_init(&it, 3, shape);
  tpu_iter_add(&it, a, 4, strides);
  tpu_iter_build(&it, 0);
  CHECK(it.ndim == 1 && it.shape[0] == 5 && it.strides[0][0] == 4);
}

static void test_broadcast(void) {
  int32_t out[12], row[4] = {1, 2, 3, 4}, scalar = 7;
  const int64_t shape[2] = {3, 4}, out_strides[2] = {16, 4};
  const int64_t row_strides[2] = {0, 4}, scalar_strides[2] = {0, 0};
  tpu_iter it;
  tpu_iter_init(&it, 2, shape);
  tpu_iter_add(&it, out, 4, out_strides);
  tpu_iter_add(&it, row, 4, row_strides);
  tpu_iter_build(&it, 0);
  CHECK(it.ndim == 2 && it.shape[0] == 4 && it.shape[1] == 3);
  tpu_iter_run(&it, 0, it.numel, copy_i32, NULL);
  for (int i = 0; i < 12; i++)
    CHECK(out[i] == row[i % 4]);
  /* A broadcast scalar merges with everything: one flat run. */
  tpu_iter_init(&it, 2, shape);
  tpu_iter_add(&it, out, 4, out_strides);
  tpu_iter_add(&it, &scalar, 4, scalar_strides);
  tpu_iter_build(&it, 0);
  CHECK(it.ndim == 1 && it.shape[0] == 12 && it.strides[0][1] == 0);
  tpu_iter_run(&it, 0, it.numel, copy_i32, NULL);
  for (int i = 0; i < 12; i++)
    CHECK(out[i] == 7);
}

static void test_negative_strides(void) {
  int32_t in[6] = {0, 1, 2, 3, 4, 5}, out[6];
  /* in viewed as [2, 3] flipped in both dimensions: element [0, 0] is in[5]. */
  const int64_t shape[2] = {2, 3}, out_strides[2] = {12, 4}, in_strides[2] = {-12, -4};
  tpu_iter it;
  tpu_iter_init(&it, 2, shape);
  tpu_iter_add(&it, out, 4, out_strides);
  tpu_iter_add(&it, &in[5], 4, in_strides);
  tpu_iter_build(&it, 0);
  CHECK(it.ndim == 1 && it.strides[0][1] == -4); /* still coalescable */
  tpu_iter_run(&it, 0, it.numel, copy_i32, NULL);
  for (int i = 0; i < 6; i++)
    CHECK(out[i] == 5 - i);
}

static void test_reorder(void) {
  /* Output column-major [3, 4]: the innermost loop must run down its columns. */
  int32_t out[12], in[12];
  for (int i = 0; i < 12; i++)
    in[i] = i;
  const int64_t shape[2] = {3, 4}, out_strides[2] = {4, 12}, in_strides[2] = {16, 4};
  tpu_iter it;
  tpu_iter_init(&it, 2, shape);
  tpu_iter_add(&it, out, 4, out_strides);
  tpu_iter_add(&it, in, 4, in_strides);
  tpu_iter_build(&it, 0);
  CHECK(it.ndim == 2 && it.shape[0] == 3 && it.strides[0][0] == 4 && it.strides[0][1] == 16);
  trace t = {.n = 0};
  tpu_iter_run(&it, 0, it.numel, record, &t);
  CHECK(t.n == 12 && t.calls == 4);
  for (int i = 0; i < t.n; i++)
    CHECK(t.addr[i] == (char *)&out[i]); /* memory order of the output */
  tpu_iter_run(&it, 0, it.numel, copy_i32, NULL);
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 4; c++)
      CHECK(out[r + 3 * c] == in[4 * r + c]);
  /* A transposed output that matches a transposed input coalesces back into one run. */
  const int64_t both[2] = {4, 12};
  tpu_iter_init(&it, 2, shape);
  tpu_iter_add(&it, out, 4, both);
  tpu_iter_add(&it, in, 4, both);
  tpu_iter_build(&it, 0);
  CHECK(it.ndim == 1 && it.shape[0] == 12);
}

static void test_logical_order(void) {
  int32_t out[12];
  const int64_t shape[2] = {3, 4}, strides[2] = {4, 12}; /* column-major */
  tpu_iter it;
  tpu_iter_init(&it, 2, shape);
  tpu_iter_add(&it, out, 4, strides);
  tpu_iter_build(&it, TPU_ITER_LOGICAL_ORDER);
  CHECK(it.ndim == 2 && it.shape[0] == 4);
  tpu_iter_run_indexed(&it, 0, it.numel, write_index, NULL);
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 4; c++)
      CHECK(out[r + 3 * c] == 4 * r + c);
  /* Coalescing keeps the flat index logical: a [2, 1, 3, 2] contiguous view is one run. */
  int32_t dense[12];
  const int64_t shape4[4] = {2, 1, 3, 2}, strides4[4] = {24, 4, 8, 4};
  tpu_iter_init(&it, 4, shape4);
  tpu_iter_add(&it, dense, 4, strides4);
  tpu_iter_build(&it, TPU_ITER_LOGICAL_ORDER);
  CHECK(it.ndim == 1);
  tpu_iter_run_indexed(&it, 5, 9, write_index, NULL);
  for (int i = 5; i < 9; i++)
    CHECK(dense[i] == i);
}

static void test_empty_and_scalar(void) {
  int32_t a = 3, b = 9;
  const int64_t empty_shape[2] = {4, 0}, strides[2] = {4, 4};
  tpu_iter it;
  tpu_iter_init(&it, 2, empty_shape);
  tpu_iter_add(&it, &a, 4, strides);
  tpu_iter_build(&it, 0);
  trace t = {.n = 0};
  tpu_iter_run(&it, 0, it.numel, record, &t);
  CHECK(it.numel == 0 && t.calls == 0);
  tpu_iter_init(&it, 0, NULL);
  tpu_iter_add(&it, &a, 4, NULL);
  tpu_iter_add(&it, &b, 4, NULL);
  tpu_iter_build(&it, 0);
  CHECK(it.numel == 1 && it.ndim == 1);
  tpu_iter_run(&it, 0, 1, copy_i32, NULL);
  CHECK(a == 9);
  /* A view without elements may have any strides (tpu_tensor_check accepts it); they must not be
   * multiplied into byte strides, which overflows (found by fuzz_iter). */
  tpu_tensor empty = {.host = &a, .dtype = TPU_COMPLEX64, .ndim = 2, .sizes = {3, 0},
                      .strides = {INT64_MAX / 3, INT64_MAX}};
  tpu_iter_init(&it, 2, empty.sizes);
  tpu_iter_add_tensor(&it, &empty);
  tpu_iter_build(&it, 0);
  t.calls = 0;
  tpu_iter_run(&it, 0, it.numel, record, &t);
  CHECK(it.numel == 0 && t.calls == 0);
}

/* Random views checked against a naive walk, run whole and in every chunk size up to 7. */
static uint64_t lcg_state = 12345;
static int64_t lcg(int64_t n) {
  lcg_state = lcg_state * 6364136223846793005u + 1442695040888963407u;
  return (int64_t)((lcg_state >> 33) % (uint64_t)n);
}

static void test_random_views(void) {
  enum { POOL = 4096 };
  int32_t *in = malloc(POOL * sizeof *in), *out = malloc(POOL * sizeof *out);
  int32_t *ref = malloc(POOL * sizeof *ref);
  for (int i = 0; i < POOL; i++)
    in[i] = i;
  for (int round = 0; round < 300; round++) {
    int ndim = (int)lcg(5);
    int64_t shape[4], out_strides[4], in_strides[4], numel = 1;
    for (int d = 0; d < ndim; d++) {
      shape[d] = lcg(8) == 0 ? 1 : 1 + lcg(5);
      numel *= shape[d];
    }
    /* Output: dense in a random dimension order (no two elements share memory). */
    int perm[4] = {0, 1, 2, 3};
    for (int d = ndim - 1; d > 0; d--) {
      int j = (int)lcg(d + 1), tmp = perm[d];
      perm[d] = perm[j];
      perm[j] = tmp;
    }
    int64_t step = 1;
    for (int k = ndim - 1; k >= 0; k--) {
      out_strides[perm[k]] = step * 4;
      step *= shape[perm[k]];
    }
    /* Input: any strides in [-6, 6] elements (0 is a broadcast), started mid-pool. */
    int64_t base = POOL / 2;
    for (int d = 0; d < ndim; d++)
      in_strides[d] = (lcg(13) - 6) * 4;
    tpu_iter it;
    tpu_iter_init(&it, ndim, shape);
    tpu_iter_add(&it, out, 4, out_strides);
    tpu_iter_add(&it, &in[base], 4, in_strides);
    tpu_iter_build(&it, 0);
    CHECK(it.numel == numel);
    /* The naive walk: logical index -> both addresses. */
    memset(ref, 0xff, POOL * sizeof *ref);
    for (int64_t i = 0; i < numel; i++) {
      int64_t rest = i, o = 0, s = base * 4;
      for (int d = ndim - 1; d >= 0; d--) {
        o += rest % shape[d] * out_strides[d];
        s += rest % shape[d] * in_strides[d];
        rest /= shape[d];
      }
      ref[o / 4] = in[s / 4];
    }
    for (int64_t chunk = 0; chunk <= 7; chunk++) {
      memset(out, 0xff, POOL * sizeof *out);
      if (chunk == 0)
        tpu_iter_run(&it, 0, it.numel, copy_i32, NULL);
      else
        for (int64_t b = 0; b < it.numel; b += chunk)
          tpu_iter_run(&it, b, b + chunk, copy_i32, NULL);
      CHECK(memcmp(out, ref, POOL * sizeof *out) == 0);
    }
  }
  free(in);
  free(out);
  free(ref);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_coalesce_contiguous);
  RUN_TEST(test_drop_size_one);
  RUN_TEST(test_broadcast);
  RUN_TEST(test_negative_strides);
  RUN_TEST(test_reorder);
  RUN_TEST(test_logical_order);
  RUN_TEST(test_empty_and_scalar);
  RUN_TEST(test_random_views);
  TEST_MAIN_END();
}
