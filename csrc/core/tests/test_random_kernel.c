/* The random family's kernels: UNIFORM, NORMAL and RANDOM (values pinned to the Philox stream,
 * determinism, independence from the output's layout, ranges, and sample moments), and BERNOULLI
 * and DROPOUT drawing from the same stream. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/engine/engine_philox.h"
#include "tpu_test.h"
#include "tpu_test_call.h"

static tpu_status rand_op(tpu_op_id op, tpu_tensor out, tpu_scalar a, tpu_scalar b, uint64_t seed,
                          uint64_t offset) {
  return run_kernel(op, &out, 0, 1, a, b, SCALAR_U(seed), SCALAR_U(offset));
}

static double as_double(tpu_dtype dtype, const char *p) {
  switch (dtype) {
  case TPU_FLOAT16: { uint16_t h; memcpy(&h, p, 2); return tpu_f16_to_f32(h); }
  case TPU_BFLOAT16: { uint16_t h; memcpy(&h, p, 2); return tpu_bf16_to_f32(h); }
  case TPU_FLOAT32: { float f; memcpy(&f, p, 4); return f; }
  default: { double d; memcpy(&d, p, 8); return d; }
  }
}

static void test_stream_layout(void) {
  /* Counter 0, key 0 gives the KAT words 6627e8d5 e169c58d bc57ac4c 9b00dbd8: float32 elements 0-3
   * take one word each, float64 element 0 takes the first two. */
  float f[4];
  double d[1];
  int64_t four = 4, one = 1;
  CHECK_OK(rand_op(TPU_OP_UNIFORM, host_view(f, TPU_FLOAT32, 1, &four, NULL), SCALAR_F(0),
                   SCALAR_F(1), 0, 0));
  CHECK(f[0] == tpu_philox_uniform_f32(0x6627e8d5) && f[3] == tpu_philox_uniform_f32(0x9b00dbd8));
  CHECK_OK(rand_op(TPU_OP_UNIFORM, host_view(d, TPU_FLOAT64, 1, &one, NULL), SCALAR_F(0),
                   SCALAR_F(1), 0, 0));
  CHECK(d[0] == tpu_philox_uniform_f64(0x6627e8d5, 0xe169c58d));
  /* RANDOM with a range of at most 2^32 also takes one word per element. */
  int64_t r[4];
  CHECK_OK(rand_op(TPU_OP_RANDOM, host_view(r, TPU_INT64, 1, &four, NULL), SCALAR_I(-10),
                   SCALAR_U(1000), 0, 0));
  CHECK(r[1] == -10 + (int64_t)(0xe169c58du % 1000));
  /* Seed and offset enter the key and the counter's high half. */
  uint32_t ctr[4] = {1, 0, 7, 0}, key[2] = {5, 0}, w[4];
  tpu_philox4x32_10(ctr, key, w);
  float g[6];
  int64_t six = 6;
  CHECK_OK(rand_op(TPU_OP_UNIFORM, host_view(g, TPU_FLOAT32, 1, &six, NULL), SCALAR_F(0),
                   SCALAR_F(1), 5, 7));
  CHECK(g[5] == tpu_philox_uniform_f32(w[1]));
}

static void test_determinism(void) {
  enum { N = 300 };
  const tpu_op_id ops[3] = {TPU_OP_UNIFORM, TPU_OP_NORMAL, TPU_OP_RANDOM};
  for (int k = 0; k < 3; k++) {
    float a[N], b[N], c[N], d[N];
    int64_t n = N;
    tpu_scalar lo = ops[k] == TPU_OP_RANDOM ? SCALAR_I(0) : SCALAR_F(0);
    tpu_scalar hi = ops[k] == TPU_OP_RANDOM ? SCALAR_U(1 << 24) : SCALAR_F(1);
    CHECK_OK(rand_op(ops[k], host_view(a, TPU_FLOAT32, 1, &n, NULL), lo, hi, 42, 3));
    CHECK_OK(rand_op(ops[k], host_view(b, TPU_FLOAT32, 1, &n, NULL), lo, hi, 42, 3));
    CHECK_OK(rand_op(ops[k], host_view(c, TPU_FLOAT32, 1, &n, NULL), lo, hi, 42, 4));
    CHECK_OK(rand_op(ops[k], host_view(d, TPU_FLOAT32, 1, &n, NULL), lo, hi, 43, 3));
    CHECK(memcmp(a, b, sizeof a) == 0);
    CHECK(memcmp(a, c, sizeof a) != 0 && memcmp(a, d, sizeof a) != 0);
  }
}

/* The same logical elements, whatever the layout: a dense [rows, cols] output against a
 * column-major one, and a flat one against every-third-element storage. Odd column counts start
 * inner runs mid Box-Muller pair and mid Philox block; 300 elements cross the kernel's chunks. */
static void check_layouts(tpu_op_id op, tpu_dtype dtype, tpu_scalar a, tpu_scalar b) {
  enum { ROWS = 20, COLS = 15, N = ROWS * COLS };
  size_t size = tpu_dtype_size(dtype);
  char *dense = calloc(N, size), *cm = calloc(N, size), *spaced = calloc(3 * N, size);
  const int64_t sizes[2] = {ROWS, COLS}, col_major[2] = {1, ROWS};
  int64_t n = N, three = 3;
  CHECK_OK(rand_op(op, host_view(dense, dtype, 2, sizes, NULL), a, b, 9, 1));
  CHECK_OK(rand_op(op, host_view(cm, dtype, 2, sizes, col_major), a, b, 9, 1));
  CHECK_OK(rand_op(op, host_view(spaced, dtype, 1, &n, &three), a, b, 9, 1));
  int bad = 0;
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < COLS; c++) {
      int i = r * COLS + c;
      bad += memcmp(dense + i * size, cm + (c * ROWS + r) * size, size) != 0;
      bad += memcmp(dense + i * size, spaced + 3 * i * size, size) != 0;
    }
  if (bad) {
    fprintf(stderr, "%s %s: %d elements depend on the layout\n", tpu_op_name(op),
            tpu_dtype_name(dtype), bad);
    tpu_test_failures++;
  }
  free(dense);
  free(cm);
  free(spaced);
}

static void test_layout_invariance(void) {
  const tpu_dtype floats[4] = {TPU_FLOAT32, TPU_FLOAT64, TPU_FLOAT16, TPU_BFLOAT16};
  for (int k = 0; k < 4; k++) {
    check_layouts(TPU_OP_UNIFORM, floats[k], SCALAR_F(-1), SCALAR_F(1));
    check_layouts(TPU_OP_NORMAL, floats[k], SCALAR_F(0), SCALAR_F(1));
    check_layouts(TPU_OP_RANDOM, floats[k], SCALAR_I(0), SCALAR_U(256));
  }
  check_layouts(TPU_OP_RANDOM, TPU_INT64, SCALAR_I(0), SCALAR_U(0));
  check_layouts(TPU_OP_RANDOM, TPU_INT8, SCALAR_I(-128), SCALAR_U(256));
}

enum { BIG = 200000 };

/* Mean and variance of BIG values of `dtype`, checking each lies in [lo, hi). */
static void moments(tpu_dtype dtype, const char *buf, double lo, double hi, double *mean,
                    double *var) {
  double sum = 0, sq = 0;
  int outside = 0;
  for (int i = 0; i < BIG; i++) {
    double v = as_double(dtype, buf + i * tpu_dtype_size(dtype));
    outside += !(v >= lo && v < hi);
    sum += v;
    sq += v * v;
  }
  CHECK(outside == 0);
  *mean = sum / BIG;
  *var = sq / BIG - *mean * *mean;
}

static void test_uniform_range_and_moments(void) {
  const tpu_dtype floats[4] = {TPU_FLOAT32, TPU_FLOAT64, TPU_FLOAT16, TPU_BFLOAT16};
  char *buf = malloc(BIG * 8);
  int64_t n = BIG;
  for (int k = 0; k < 4; k++) {
    double mean, var;
    CHECK_OK(rand_op(TPU_OP_UNIFORM, host_view(buf, floats[k], 1, &n, NULL), SCALAR_F(-3),
                     SCALAR_F(5), 1, 0));
    moments(floats[k], buf, -3, 5, &mean, &var);
    CHECK(fabs(mean - 1) < 0.05 && fabs(var - 64.0 / 12) < 0.1);
    /* [1, 2) in float16 rounds u = 1 - 2^-11 .. 1 - 2^-24 up to 2: those must become 1. */
    CHECK_OK(rand_op(TPU_OP_UNIFORM, host_view(buf, floats[k], 1, &n, NULL), SCALAR_F(1),
                     SCALAR_F(2), 1, 0));
    moments(floats[k], buf, 1, 2, &mean, &var);
    CHECK(fabs(mean - 1.5) < 0.01);
  }
  free(buf);
}

static void test_normal_moments(void) {
  const tpu_dtype floats[4] = {TPU_FLOAT32, TPU_FLOAT64, TPU_FLOAT16, TPU_BFLOAT16};
  char *buf = malloc(BIG * 8);
  int64_t n = BIG;
  for (int k = 0; k < 4; k++) {
    double mean, var;
    CHECK_OK(rand_op(TPU_OP_NORMAL, host_view(buf, floats[k], 1, &n, NULL), SCALAR_F(2),
                     SCALAR_F(3), 7, 0));
    moments(floats[k], buf, -INFINITY, INFINITY, &mean, &var);
    CHECK(fabs(mean - 2) < 0.05 && fabs(sqrt(var) - 3) < 0.05);
  }
  free(buf);
}

static void test_random_ranges(void) {
  enum { N = 4096 };
  int64_t n = N;
  int64_t *v = malloc(N * sizeof *v);
  /* [-5, 5): every value appears. */
  CHECK_OK(rand_op(TPU_OP_RANDOM, host_view(v, TPU_INT64, 1, &n, NULL), SCALAR_I(-5),
                   SCALAR_U(10), 3, 0));
  int seen[10] = {0}, outside = 0;
  for (int i = 0; i < N; i++) {
    if (v[i] < -5 || v[i] >= 5)
      outside++;
    else
      seen[v[i] + 5] = 1;
  }
  CHECK(outside == 0);
  for (int k = 0; k < 10; k++)
    CHECK(seen[k]);
  /* A range over 2^32 uses 64-bit draws; the full range (0) covers both signs. */
  CHECK_OK(rand_op(TPU_OP_RANDOM, host_view(v, TPU_INT64, 1, &n, NULL), SCALAR_I(0),
                   SCALAR_U(UINT64_C(1) << 40), 3, 0));
  int high = 0;
  for (int i = 0; i < N; i++) {
    CHECK(v[i] >= 0 && v[i] < (INT64_C(1) << 40));
    high += v[i] >= (INT64_C(1) << 32);
  }
  CHECK(high > N / 2);
  CHECK_OK(rand_op(TPU_OP_RANDOM, host_view(v, TPU_INT64, 1, &n, NULL), SCALAR_I(0), SCALAR_U(0),
                   3, 0));
  int negative = 0;
  for (int i = 0; i < N; i++)
    negative += v[i] < 0;
  CHECK(negative > N / 4 && negative < 3 * N / 4);
  /* uint8 over its full range, bool over {0, 1}, float32 over [0, 2^24]. */
  uint8_t *u8 = (uint8_t *)v;
  CHECK_OK(rand_op(TPU_OP_RANDOM, host_view(u8, TPU_UINT8, 1, &n, NULL), SCALAR_I(0),
                   SCALAR_U(256), 3, 0));
  int max = 0;
  for (int i = 0; i < N; i++)
    max = u8[i] > max ? u8[i] : max;
  CHECK(max == 255);
  CHECK_OK(rand_op(TPU_OP_RANDOM, host_view(u8, TPU_BOOL, 1, &n, NULL), SCALAR_I(0), SCALAR_U(2),
                   3, 0));
  int ones = 0;
  for (int i = 0; i < N; i++) {
    CHECK(u8[i] <= 1);
    ones += u8[i];
  }
  CHECK(ones > N / 4 && ones < 3 * N / 4);
  float *f = (float *)v;
  CHECK_OK(rand_op(TPU_OP_RANDOM, host_view(f, TPU_FLOAT32, 1, &n, NULL), SCALAR_I(0),
                   SCALAR_U((1 << 24) + 1), 3, 0));
  for (int i = 0; i < N; i++)
    CHECK(f[i] >= 0 && f[i] <= 0x1p24f && f[i] == floorf(f[i]));
  free(v);
}

static void test_unsigned_and_unsupported_dtypes(void) {
  int32_t i32[2];
  uint32_t u32[2];
  float complex_buf[4];
  int64_t two = 2;
  CHECK_OK(rand_op(TPU_OP_RANDOM, host_view(u32, TPU_UINT32, 1, &two, NULL), SCALAR_I(4000000000),
                   SCALAR_U(10), 0, 0));
  CHECK(u32[0] >= 4000000000u && u32[0] < 4000000010u && u32[1] >= 4000000000u);
  CHECK(rand_op(TPU_OP_UNIFORM, host_view(i32, TPU_INT32, 1, &two, NULL), SCALAR_F(0),
                SCALAR_F(1), 0, 0) == TPU_ERR_NOT_IMPLEMENTED);
  CHECK(strstr(tpu_last_error(), "uniform") && strstr(tpu_last_error(), "int32"));
  CHECK(rand_op(TPU_OP_NORMAL, host_view(complex_buf, TPU_COMPLEX64, 1, &two, NULL), SCALAR_F(0),
                SCALAR_F(1), 0, 0) == TPU_ERR_NOT_IMPLEMENTED);
  CHECK(rand_op(TPU_OP_RANDOM, host_view(complex_buf, TPU_COMPLEX64, 1, &two, NULL), SCALAR_I(0),
                SCALAR_U(10), 0, 0) == TPU_ERR_NOT_IMPLEMENTED);
}

/* Bernoulli(p) of element i is uniform_'s element i compared with p. */
static void test_bernoulli_matches_uniform(void) {
  enum { N = 1000 };
  float u[N];
  uint8_t b[N];
  double p[N];
  tpu_scalar s[4] = {{.f = 0}, {.f = 1}, {.u = 1234}, {.u = 7}};
  tpu_tensor ut = vec(u, TPU_FLOAT32, N);
  CHECK_OK(run_call(TPU_OP_UNIFORM, &ut, 0, 1, s, 4));
  s[0].f = 0.3;
  tpu_tensor bt = vec(b, TPU_BOOL, N);
  CHECK_OK(run_call(TPU_OP_BERNOULLI, &bt, 0, 1, s, 4));
  bool ok = true;
  for (int i = 0; i < N; i++)
    ok &= b[i] == ((double)u[i] < 0.3);
  CHECK(ok);
  /* a p tensor, element by element; an out-of-range p is an error */
  for (int i = 0; i < N; i++)
    p[i] = (double)(i % 10) / 9.0;
  int64_t out[N];
  tpu_tensor pt[2] = {vec(p, TPU_FLOAT64, N), vec(out, TPU_INT64, N)};
  CHECK_OK(run_call(TPU_OP_BERNOULLI, pt, 1, 1, s, 4));
  ok = true;
  for (int i = 0; i < N; i++)
    ok &= out[i] == ((double)u[i] < p[i]);
  CHECK(ok);
  p[5] = 1.5;
  CHECK(run_call(TPU_OP_BERNOULLI, pt, 1, 1, s, 4) == TPU_ERR_RUNTIME);
}

static void test_dropout(void) {
  enum { N = 4096 };
  float x[N], out[N], back[N];
  uint8_t mask[N];
  for (int i = 0; i < N; i++)
    x[i] = (float)i - 100.0f;
  x[3] = NAN;
  tpu_scalar s[4] = {{.f = 0.75}, {.f = 1 / 0.75}, {.u = 99}, {.u = 0}};
  tpu_tensor t[3] = {vec(x, TPU_FLOAT32, N), vec(out, TPU_FLOAT32, N), vec(mask, TPU_BOOL, N)};
  CHECK_OK(run_call(TPU_OP_DROPOUT, t, 1, 2, s, 4));
  int kept = 0;
  bool ok = true;
  for (int i = 0; i < N; i++) {
    kept += mask[i];
    float expect = x[i] * (mask[i] ? 1.0f : 0.0f) * (float)(1 / 0.75);
    ok &= out[i] == expect || (isnan(out[i]) && isnan(expect));
  }
  CHECK(ok);
  CHECK(kept > N * 0.72 && kept < N * 0.78);
  tpu_tensor b[3] = {vec(out, TPU_FLOAT32, N), vec(mask, TPU_BOOL, N), vec(back, TPU_FLOAT32, N)};
  CHECK_OK(run_call(TPU_OP_DROPOUT_BACKWARD, b, 2, 1, s + 1, 1));
  CHECK(back[10] == out[10] * (mask[10] ? 1.0f : 0.0f) * (float)(1 / 0.75));
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_stream_layout);
  RUN_TEST(test_determinism);
  RUN_TEST(test_layout_invariance);
  RUN_TEST(test_uniform_range_and_moments);
  RUN_TEST(test_normal_moments);
  RUN_TEST(test_random_ranges);
  RUN_TEST(test_unsigned_and_unsupported_dtypes);
  RUN_TEST(test_bernoulli_matches_uniform);
  RUN_TEST(test_dropout);
  TEST_MAIN_END();
}
