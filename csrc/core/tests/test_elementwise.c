/* The elementwise engine (drivers/host/engine/engine_elementwise.c) through a few of its ops: broadcasting,
 * strided and transposed operands, conversion of inputs and outputs (float16/bfloat16 computed in
 * float and rounded once, promoted integers), scalar operands kept in the call, in-place outputs,
 * bool outputs, integer division by zero, large inputs split over threads and blocks, and its
 * refusals (bad shapes, complex operands, dtypes without a loop). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/engine/engine_elementwise.h"
#include "drivers/host/engine/engine_pool.h"
#include "tpu_test.h"
#include "tpu_test_host.h"

/* Runs `op` with the given inputs then outputs, compute dtype and up to two parameters. */
static tpu_status run(tpu_op_id op, tpu_dtype compute, const tpu_tensor *t, int n_in, int n_out,
                      tpu_scalar s0, tpu_scalar s1) {
  tpu_op_call *call = tpu_op_call_new(op, n_in, n_out);
  if (!call)
    return TPU_ERR_OUT_OF_MEMORY;
  for (int i = 0; i < n_in + n_out; i++)
    call->tensors[i] = t[i];
  call->compute = compute;
  call->scalars[0] = s0;
  call->scalars[1] = s1;
  tpu_status st = tpu_host_kernel(op)(call);
  tpu_op_call_free(call);
  return st;
}

static void test_broadcast_add(void) {
  float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30}, out[6];
  int64_t sa[2] = {2, 3}, sb[1] = {3};
  tpu_tensor t[3] = {host_view(a, TPU_FLOAT32, 2, sa, NULL), host_view(b, TPU_FLOAT32, 1, sb, NULL),
                     host_view(out, TPU_FLOAT32, 2, sa, NULL)};
  CHECK_OK(run(TPU_OP_ADD, TPU_FLOAT32, t, 2, 1, SCALAR_F(2.0), NO_SCALAR));
  for (int i = 0; i < 6; i++)
    CHECK(out[i] == a[i] + 2 * b[i % 3]);
  /* A size-1 dimension repeats too: b as a column [2, 1] against [2, 3]. */
  int64_t col[2] = {2, 1};
  t[1] = host_view(b, TPU_FLOAT32, 2, col, NULL);
  CHECK_OK(run(TPU_OP_ADD, TPU_FLOAT32, t, 2, 1, SCALAR_F(1.0), NO_SCALAR));
  for (int i = 0; i < 6; i++)
    CHECK(out[i] == a[i] + b[i / 3]);
  /* Shapes that do not broadcast are refused. */
  int64_t bad[1] = {2};
  t[1] = host_view(b, TPU_FLOAT32, 1, bad, NULL);
  CHECK(run(TPU_OP_ADD, TPU_FLOAT32, t, 2, 1, SCALAR_F(1.0), NO_SCALAR) == TPU_ERR_VALUE);
}

static void test_transposed_and_strided(void) {
  /* out[i][j] = a[j][i] * b[i][2j]: a transposed, b every other column. */
  int32_t a[12], b[24], out[12];
  for (int i = 0; i < 12; i++)
    a[i] = i + 1;
  for (int i = 0; i < 24; i++)
    b[i] = i - 5;
  int64_t shape[2] = {4, 3}, at[2] = {1, 4}, bs[2] = {6, 2};
  tpu_tensor t[3] = {host_view(a, TPU_INT32, 2, shape, at), host_view(b, TPU_INT32, 2, shape, bs),
                     host_view(out, TPU_INT32, 2, shape, NULL)};
  CHECK_OK(run(TPU_OP_MUL, TPU_INT32, t, 2, 1, NO_SCALAR, NO_SCALAR));
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 3; j++)
      CHECK(out[i * 3 + j] == a[j * 4 + i] * b[i * 6 + j * 2]);
}

static void test_reduced_float_rounds_once(void) {
  /* bfloat16 1 + 2^-8 + 2^-9 is not representable: computed in float and rounded once. */
  uint16_t a[2] = {tpu_f32_to_bf16(1.0f), tpu_f32_to_bf16(3.0f)};
  uint16_t b[2] = {tpu_f32_to_bf16(0x1p-8f), tpu_f32_to_bf16(0.5f)}, out[2];
  int64_t n = 2;
  tpu_tensor t[3] = {host_view(a, TPU_BFLOAT16, 1, &n, NULL),
                     host_view(b, TPU_BFLOAT16, 1, &n, NULL),
                     host_view(out, TPU_BFLOAT16, 1, &n, NULL)};
  CHECK_OK(run(TPU_OP_ADD, TPU_BFLOAT16, t, 2, 1, SCALAR_F(1.5), NO_SCALAR));
  CHECK(out[0] == tpu_f32_to_bf16(1.0f + 1.5f * 0x1p-8f));
  CHECK(out[1] == tpu_f32_to_bf16(3.75f));
  /* float16 overflow rounds to infinity. */
  uint16_t h[1] = {tpu_f32_to_f16(60000.0f)}, ho[1];
  int64_t one = 1;
  tpu_tensor th[3] = {host_view(h, TPU_FLOAT16, 1, &one, NULL),
                      host_view(h, TPU_FLOAT16, 1, &one, NULL),
                      host_view(ho, TPU_FLOAT16, 1, &one, NULL)};
  CHECK_OK(run(TPU_OP_MUL, TPU_FLOAT16, th, 2, 1, NO_SCALAR, NO_SCALAR));
  CHECK(ho[0] == 0x7c00);
}

/* A wider output, or a float32 input, of a bfloat16 op still meets the bfloat16 result: the
 * float32 loop result is rounded to bfloat16 before it widens into a float32 output, and a float32
 * input is rounded to bfloat16 before the loop reads it (PyTorch computes in the common dtype). */
static void test_reduced_float_through_float32(void) {
  float x[3] = {1.1f, 2.3f, -0.7f}, y[3] = {0.3f, -1.7f, 2.9f}, out[3];
  uint16_t a[3], sum[3];
  for (int i = 0; i < 3; i++)
    a[i] = tpu_f32_to_bf16(x[i]);
  int64_t n = 3;
  tpu_tensor t[2] = {host_view(a, TPU_BFLOAT16, 1, &n, NULL),
                     host_view(out, TPU_FLOAT32, 1, &n, NULL)};
  CHECK_OK(run(TPU_OP_EXP, TPU_BFLOAT16, t, 1, 1, NO_SCALAR, NO_SCALAR));
  for (int i = 0; i < 3; i++) {
    float want = tpu_bf16_to_f32(tpu_f32_to_bf16(expf(tpu_bf16_to_f32(a[i]))));
    CHECK(fabsf(out[i] - want) <= 0x1p-8f * want); /* a bfloat16 value: within one bf16 ulp */
    CHECK(out[i] == tpu_bf16_to_f32(tpu_f32_to_bf16(out[i])));
  }
  tpu_tensor u[3] = {host_view(a, TPU_BFLOAT16, 1, &n, NULL),
                     host_view(y, TPU_FLOAT32, 1, &n, NULL),
                     host_view(sum, TPU_BFLOAT16, 1, &n, NULL)};
  CHECK_OK(run(TPU_OP_ADD, TPU_BFLOAT16, u, 2, 1, SCALAR_F(-1.0), NO_SCALAR));
  for (int i = 0; i < 3; i++)
    CHECK(sum[i] == tpu_f32_to_bf16(tpu_bf16_to_f32(a[i]) -
                                    tpu_bf16_to_f32(tpu_f32_to_bf16(y[i]))));
}

static void test_promotion_and_scalars(void) {
  /* int32 tensor + float64 scalar, computed in bfloat16: the scalar rounds to bfloat16 first. */
  int32_t a[3] = {1, -2, 300};
  uint16_t out[3];
  int64_t n = 3;
  tpu_op_call *call = tpu_op_call_new(TPU_OP_ADD, 2, 1);
  call->compute = TPU_BFLOAT16;
  call->tensors[0] = host_view(a, TPU_INT32, 1, &n, NULL);
  tpu_op_set_scalar_input(call, 1, 7, SCALAR_F(0.1), true);
  call->tensors[2] = host_view(out, TPU_BFLOAT16, 1, &n, NULL);
  call->scalars[0] = SCALAR_F(1.0);
  CHECK_OK(tpu_host_kernel(TPU_OP_ADD)(call));
  float tenth = tpu_bf16_to_f32(tpu_f32_to_bf16(0.1f));
  for (int i = 0; i < 3; i++)
    CHECK(out[i] == tpu_f32_to_bf16(tpu_bf16_to_f32(tpu_f32_to_bf16((float)a[i])) + tenth));
  /* mul keeps a scalar second operand at float precision for bfloat16 (TPU_EW_OPMATH_SCALAR1). */
  call->op = TPU_OP_MUL;
  CHECK_OK(tpu_host_kernel(TPU_OP_MUL)(call));
  for (int i = 0; i < 3; i++)
    CHECK(out[i] == tpu_f32_to_bf16(tpu_bf16_to_f32(tpu_f32_to_bf16((float)a[i])) * 0.1f));
  tpu_op_call_free(call);
}

static void test_bool_outputs_and_conversion(void) {
  double a[4] = {1, NAN, -0.0, 2}, b[4] = {1, NAN, 0.0, 3};
  uint8_t eq[4];
  float eqf[4];
  int64_t n = 4;
  tpu_tensor t[3] = {host_view(a, TPU_FLOAT64, 1, &n, NULL), host_view(b, TPU_FLOAT64, 1, &n, NULL),
                     host_view(eq, TPU_BOOL, 1, &n, NULL)};
  CHECK_OK(run(TPU_OP_EQ, TPU_FLOAT64, t, 2, 1, NO_SCALAR, NO_SCALAR));
  CHECK(eq[0] == 1 && eq[1] == 0 && eq[2] == 1 && eq[3] == 0);
  t[2] = host_view(eqf, TPU_FLOAT32, 1, &n, NULL); /* a bool result stored as float */
  CHECK_OK(run(TPU_OP_EQ, TPU_FLOAT64, t, 2, 1, NO_SCALAR, NO_SCALAR));
  CHECK(eqf[0] == 1.0f && eqf[1] == 0.0f && eqf[2] == 1.0f && eqf[3] == 0.0f);
}

static void test_inplace_and_where(void) {
  float x[5] = {-1, 2, -3, 4, -5};
  uint8_t mask[5] = {1, 0, 1, 0, 0};
  int64_t n = 5;
  tpu_op_call *call = tpu_op_call_new(TPU_OP_WHERE, 3, 1);
  call->compute = TPU_FLOAT32;
  call->tensors[0] = host_view(mask, TPU_BOOL, 1, &n, NULL);
  tpu_op_set_scalar_input(call, 1, 7, SCALAR_I(9), false); /* an integer value, converted to float */
  call->tensors[2] = host_view(x, TPU_FLOAT32, 1, &n, NULL);
  call->tensors[3] = call->tensors[2]; /* masked_fill_: the output is input 2 */
  CHECK_OK(tpu_host_kernel(TPU_OP_WHERE)(call));
  tpu_op_call_free(call);
  float expect[5] = {9, 2, 9, 4, -5};
  CHECK(memcmp(x, expect, sizeof x) == 0);
}

static void test_integer_division(void) {
  int64_t a[4] = {7, -7, INT64_MIN, 5}, b[4] = {2, 2, -1, 0}, out[4];
  int64_t n = 3;
  tpu_tensor t[3] = {host_view(a, TPU_INT64, 1, &n, NULL), host_view(b, TPU_INT64, 1, &n, NULL),
                     host_view(out, TPU_INT64, 1, &n, NULL)};
  CHECK_OK(run(TPU_OP_DIV_FLOOR, TPU_INT64, t, 2, 1, NO_SCALAR, NO_SCALAR));
  CHECK(out[0] == 3 && out[1] == -4 && out[2] == INT64_MIN); /* INT64_MIN / -1 wraps */
  CHECK_OK(run(TPU_OP_REMAINDER, TPU_INT64, t, 2, 1, NO_SCALAR, NO_SCALAR));
  CHECK(out[0] == 1 && out[1] == 1 && out[2] == 0);
  n = 4;
  for (int i = 0; i < 3; i++)
    t[i].sizes[0] = 4;
  CHECK(run(TPU_OP_DIV_TRUNC, TPU_INT64, t, 2, 1, NO_SCALAR, NO_SCALAR) == TPU_ERR_RUNTIME);
  CHECK(strstr(tpu_last_error(), "ZeroDivisionError") != NULL);
}

/* Integer powers with the most negative exponent (found by fuzz_graph): -1 to an even power is 1,
 * without negating the exponent (which overflows); other bases give 0, 1 stays 1. */
static void test_integer_pow_extreme_exponent(void) {
  int64_t a[3] = {-1, 1, 2}, b[3] = {INT64_MIN, INT64_MIN, INT64_MIN}, out[3];
  int64_t n = 3;
  tpu_tensor t[3] = {host_view(a, TPU_INT64, 1, &n, NULL), host_view(b, TPU_INT64, 1, &n, NULL),
                     host_view(out, TPU_INT64, 1, &n, NULL)};
  CHECK_OK(run(TPU_OP_POW, TPU_INT64, t, 2, 1, NO_SCALAR, NO_SCALAR));
  CHECK(out[0] == 1 && out[1] == 1 && out[2] == 0);
}

/* Views without elements may have any strides (tpu_tensor_check accepts them): the engine must
 * not multiply them into byte strides, which overflows (UBSan). */
static void test_empty_views_any_strides(void) {
  float x, out;
  const int64_t sizes[2] = {0, 3}, huge[2] = {INT64_MAX / 3, 1};
  tpu_tensor t[3] = {host_view(&x, TPU_FLOAT32, 2, sizes, huge),
                     host_view(&x, TPU_FLOAT32, 2, sizes, NULL),
                     host_view(&out, TPU_FLOAT32, 2, sizes, huge)};
  CHECK_OK(run(TPU_OP_ADD, TPU_FLOAT32, t, 2, 1, SCALAR_F(1), NO_SCALAR));
}

static void test_large_buffered_parallel(void) {
  /* Enough elements for several threads and blocks: int16 promoted to float32 with a broadcast
   * float64 row, converted inside the buffered path, and stored as float32. */
  enum { ROWS = 200, COLS = 1000 };
  int16_t *a = malloc(sizeof(int16_t) * ROWS * COLS);
  double row[COLS];
  float *out = malloc(sizeof(float) * ROWS * COLS);
  for (int i = 0; i < ROWS * COLS; i++)
    a[i] = (int16_t)(i % 1000 - 500);
  for (int j = 0; j < COLS; j++)
    row[j] = j * 0.25;
  int64_t shape[2] = {ROWS, COLS}, rs[1] = {COLS};
  tpu_tensor t[3] = {host_view(a, TPU_INT16, 2, shape, NULL),
                     host_view(row, TPU_FLOAT64, 1, rs, NULL),
                     host_view(out, TPU_FLOAT32, 2, shape, NULL)};
  tpu_pool_set_threads(2);
  CHECK_OK(run(TPU_OP_MUL, TPU_FLOAT32, t, 2, 1, NO_SCALAR, NO_SCALAR));
  int bad = 0;
  for (int i = 0; i < ROWS * COLS; i++)
    bad += out[i] != (float)a[i] * (float)row[i % COLS];
  CHECK(bad == 0);
  free(a);
  free(out);
}

static void test_refusals(void) {
  float a[2] = {1, 2}, out[2];
  int64_t n = 2;
  tpu_tensor t[3] = {host_view(a, TPU_FLOAT32, 1, &n, NULL),
                     host_view(a, TPU_COMPLEX64, 1, &n, NULL),
                     host_view(out, TPU_FLOAT32, 1, &n, NULL)};
  CHECK(run(TPU_OP_ADD, TPU_FLOAT32, t, 2, 1, NO_SCALAR, NO_SCALAR) == TPU_ERR_NOT_IMPLEMENTED);
  t[1] = t[0];
  CHECK(run(TPU_OP_BITWISE_AND, TPU_FLOAT32, t, 2, 1, NO_SCALAR, NO_SCALAR) ==
        TPU_ERR_NOT_IMPLEMENTED);
  CHECK(!tpu_ew_supports(TPU_OP_BITWISE_AND, TPU_FLOAT32));
  CHECK(tpu_ew_supports(TPU_OP_BITWISE_AND, TPU_INT8));
  CHECK(tpu_ew_supports(TPU_OP_GELU, TPU_BFLOAT16));
  CHECK(!tpu_ew_supports(TPU_OP_COPY, TPU_FLOAT32));
  CHECK(tpu_ew_loop_dtype(TPU_FLOAT16) == TPU_FLOAT32 && tpu_ew_loop_dtype(TPU_INT8) == TPU_INT8);
}

static void test_math_special_values(void) {
  float x[6] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.0f}, out[6];
  int64_t n = 6;
  tpu_tensor t[2] = {host_view(x, TPU_FLOAT32, 1, &n, NULL),
                     host_view(out, TPU_FLOAT32, 1, &n, NULL)};
  CHECK_OK(run(TPU_OP_EXP, TPU_FLOAT32, t, 1, 1, NO_SCALAR, NO_SCALAR));
  CHECK(out[0] == 1 && out[1] == 1 && isinf(out[2]) && out[3] == 0 && isnan(out[4]));
  CHECK(fabsf(out[5] - expf(88.0f)) <= 2.5e-7f * expf(88.0f));
  CHECK_OK(run(TPU_OP_TANH, TPU_FLOAT32, t, 1, 1, NO_SCALAR, NO_SCALAR));
  CHECK(out[0] == 0 && signbit(out[1]) && out[2] == 1 && out[3] == -1 && isnan(out[4]));
  CHECK_OK(run(TPU_OP_ERF, TPU_FLOAT32, t, 1, 1, NO_SCALAR, NO_SCALAR));
  CHECK(out[0] == 0 && out[2] == 1 && out[3] == -1 && isnan(out[4]));
  for (int i = -40; i <= 40; i++) {
    float v = i * 0.1f, e = 0;
    int64_t one = 1;
    tpu_tensor u[2] = {host_view(&v, TPU_FLOAT32, 1, &one, NULL),
                       host_view(&e, TPU_FLOAT32, 1, &one, NULL)};
    CHECK_OK(run(TPU_OP_ERF, TPU_FLOAT32, u, 1, 1, NO_SCALAR, NO_SCALAR));
    CHECK(fabs(e - erf(v)) <= 3e-7);
  }
}

/* A NaN made from a number is positive (CUDA's default NaN) whatever x86 or libm gave; a NaN
 * input stays the function's own result (sqrt, an x86 instruction, keeps its sign). */
static void test_domain_nan_is_positive(void) {
  const tpu_op_id ops[] = {TPU_OP_LOG2, TPU_OP_SQRT, TPU_OP_LOG, TPU_OP_ASIN, TPU_OP_LOG10};
  for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
    float x[3] = {-2.0f, -4.0f, -NAN}, out[3];
    double xd[3] = {-2.0, -4.0, -(double)NAN}, outd[3];
    int64_t n = 3;
    tpu_tensor t[2] = {host_view(x, TPU_FLOAT32, 1, &n, NULL),
                       host_view(out, TPU_FLOAT32, 1, &n, NULL)};
    CHECK_OK(run(ops[k], TPU_FLOAT32, t, 1, 1, NO_SCALAR, NO_SCALAR));
    CHECK(isnan(out[0]) && !signbit(out[0]) && isnan(out[1]) && !signbit(out[1]));
    CHECK(isnan(out[2]) && (ops[k] != TPU_OP_SQRT || signbit(out[2])));
    tpu_tensor u[2] = {host_view(xd, TPU_FLOAT64, 1, &n, NULL),
                       host_view(outd, TPU_FLOAT64, 1, &n, NULL)};
    CHECK_OK(run(ops[k], TPU_FLOAT64, u, 1, 1, NO_SCALAR, NO_SCALAR));
    CHECK(isnan(outd[0]) && !signbit(outd[0]) && isnan(outd[1]) && !signbit(outd[1]));
    CHECK(isnan(outd[2]) && (ops[k] != TPU_OP_SQRT || signbit(outd[2])));
  }
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_broadcast_add);
  RUN_TEST(test_transposed_and_strided);
  RUN_TEST(test_reduced_float_rounds_once);
  RUN_TEST(test_reduced_float_through_float32);
  RUN_TEST(test_promotion_and_scalars);
  RUN_TEST(test_bool_outputs_and_conversion);
  RUN_TEST(test_inplace_and_where);
  RUN_TEST(test_integer_division);
  RUN_TEST(test_integer_pow_extreme_exponent);
  RUN_TEST(test_empty_views_any_strides);
  RUN_TEST(test_large_buffered_parallel);
  RUN_TEST(test_refusals);
  RUN_TEST(test_math_special_values);
  RUN_TEST(test_domain_nan_is_positive);
  TEST_MAIN_END();
}
