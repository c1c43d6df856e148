/* The GEMM kernel: every dtype against a double-precision reference, transposed and strided
 * operands and outputs, alpha/beta with NaN in an ignored C, summed batches, empty dimensions,
 * the split over threads, the AVX512-BF16 kernel against the portable path, the AVX-512 fp32
 * kernel, the AVX2 few-row fp32 kernel, int_mm on AVX512-VNNI and its portable loop, and the BLAS dispatch through a stand-in CBLAS that checks
 * transposes reach it without copies. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/kernels/matmul/matmul.h"
#include "drivers/host/engine/engine_pool.h"
#include "tpu_test.h"
#include "tpu_test_blas.h"
#include "tpu_test_host.h"

/* A [batch, rows, cols] host view with explicit element strides. */
static tpu_tensor view3(void *mem, tpu_dtype d, int64_t b, int64_t r, int64_t c, int64_t bs,
                        int64_t rs, int64_t cs) {
  const int64_t sizes[3] = {b, r, c}, strides[3] = {bs, rs, cs};
  return host_view(mem, d, 3, sizes, strides);
}

static tpu_status gemm(tpu_tensor a, tpu_tensor b, const tpu_tensor *c, tpu_tensor out,
                       tpu_scalar alpha, tpu_scalar beta) {
  tpu_tensor t[4] = {a, b, c ? *c : out, out};
  int n_in = c ? 3 : 2;
  t[n_in] = out;
  return run_kernel(c ? TPU_OP_ADDMM : TPU_OP_MM, t, n_in, 1, alpha, beta, NO_SCALAR, NO_SCALAR);
}

static double value(int64_t i) { return (double)((i * 7919) % 17) / 8.0 - 1.0; }

/* ref[i][j] = sum_k a[i][k] b[k][j] for row-major doubles. */
static void reference(const double *a, const double *b, double *ref, int64_t m, int64_t n,
                      int64_t k) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0;
      for (int64_t p = 0; p < k; p++)
        s += a[i * k + p] * b[p * n + j];
      ref[i * n + j] = s;
    }
}

/* n floats value(offset), value(offset + 1), ... in a new buffer. */
static float *filled(int64_t n, int64_t offset) {
  float *p = malloc(sizeof(float) * (size_t)n);
  for (int64_t i = 0; p && i < n; i++)
    p[i] = (float)value(i + offset);
  return p;
}

/* One float32 GEMM with A and B stored transposed or not, and a column-major output. */
static void check_f32_layouts(int64_t m, int64_t n, int64_t k, bool ta, bool tb, bool to) {
  float *a = malloc(sizeof(float) * (size_t)(m * k)), *b = malloc(sizeof(float) * (size_t)(k * n));
  float *out = malloc(sizeof(float) * (size_t)(m * n));
  double *ad = malloc(sizeof(double) * (size_t)(m * k));
  double *bd = malloc(sizeof(double) * (size_t)(k * n));
  double *ref = malloc(sizeof(double) * (size_t)(m * n));
  for (int64_t i = 0; i < m * k; i++)
    a[i] = (float)(ad[i] = value(i));
  for (int64_t i = 0; i < k * n; i++)
    b[i] = (float)(bd[i] = value(i + 3));
  /* The same logical values, laid out transposed in memory when asked. */
  double *al = malloc(sizeof(double) * (size_t)(m * k));
  double *bl = malloc(sizeof(double) * (size_t)(k * n));
  for (int64_t i = 0; i < m; i++)
    for (int64_t p = 0; p < k; p++)
      al[i * k + p] = ta ? ad[p * m + i] : ad[i * k + p];
  for (int64_t p = 0; p < k; p++)
    for (int64_t j = 0; j < n; j++)
      bl[p * n + j] = tb ? bd[j * k + p] : bd[p * n + j];
  reference(al, bl, ref, m, n, k);
  CHECK_OK(gemm(view3(a, TPU_FLOAT32, 1, m, k, 0, ta ? 1 : k, ta ? m : 1),
                view3(b, TPU_FLOAT32, 1, k, n, 0, tb ? 1 : n, tb ? k : 1), NULL,
                view3(out, TPU_FLOAT32, 1, m, n, 0, to ? 1 : n, to ? m : 1), SCALAR_F(1),
                SCALAR_F(0)));
  double err = 0;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++)
      err = fmax(err, fabs(out[to ? j * m + i : i * n + j] - ref[i * n + j]));
  CHECK(err < 1e-4 * (double)k);
  free(a), free(b), free(out), free(ad), free(bd), free(ref), free(al), free(bl);
}

/* A library that cannot be opened leaves the built-in kernels in charge. */
static void test_missing_library(void) {
  tpu_matmul_set_blas_path("/nonexistent/libopenblas.so");
  CHECK(tpu_matmul_blas() == NULL);
  check_f32_layouts(9, 8, 7, true, false, false);
  tpu_matmul_set_blas_path(NULL);
}

static void test_f32_builtin(void) {
  tpu_matmul_set_blas(NULL);
  tpu_matmul_disable_f32_kernel(true);
  for (int t = 0; t < 8; t++)
    check_f32_layouts(37, 29, 41, t & 1, t & 2, t & 4);
  check_f32_layouts(1, 1, 1, false, false, false);
  tpu_matmul_disable_f32_kernel(false);
}

/* out = 0.5 * A @ B - 2 * C over [2, m, k] @ [2, k, n], A's elements two apart along both
 * dimensions (no BLAS layout). Case 0: no C, a column-major output; 1: summed over the batches
 * (addbmm) with C; 2: C a bias row broadcast over the rows; 3: C a matrix per batch. */
enum { F32_CASES = 4 };
static int64_t f32_case(int64_t m, int64_t n, int64_t k, int variant, float *out) {
  float *a = filled(2 * m * k * 4, 0), *b = filled(2 * k * n, 1), *c = filled(2 * m * n, 2);
  int64_t batches = variant == 1 ? 1 : 2;
  tpu_tensor cv = variant == 2 ? view3(c, TPU_FLOAT32, 2, m, n, 0, 0, 1)
                               : view3(c, TPU_FLOAT32, batches, m, n, m * n, n, 1);
  tpu_tensor ov = variant == 0 ? view3(out, TPU_FLOAT32, 2, m, n, m * n, 1, m)
                               : view3(out, TPU_FLOAT32, batches, m, n, m * n, n, 1);
  tpu_status gemm_status = gemm(view3(a, TPU_FLOAT32, 2, m, k, 4 * m * k, 4 * k, 2),
                                view3(b, TPU_FLOAT32, 2, k, n, k * n, n, 1), variant ? &cv : NULL,
                                ov, SCALAR_F(0.5), SCALAR_F(-2));
  free(a), free(b), free(c);
  CHECK_OK_OR(gemm_status, -1);
  return batches * m * n;
}

/* A GEMM case writing its 2 * m * n outputs (or fewer) to out; returns how many, -1 on failure. */
typedef int64_t (*gemm_case)(int64_t m, int64_t n, int64_t k, int variant, float *out);

/* Every variant of `run` with a kernel (which `disable` switches off) and without it: within 1e-5
 * of each other, and the kernel's bits the same on one thread and on two. */
static void check_kernel_matches(gemm_case run, int variants, void (*disable)(bool), int64_t m,
                                 int64_t n, int64_t k) {
  int threads = tpu_pool_threads();
  float *got = malloc(sizeof(float) * (size_t)(2 * m * n));
  float *want = malloc(sizeof(float) * (size_t)(2 * m * n));
  for (int variant = 0; variant < variants; variant++) {
    disable(true);
    run(m, n, k, variant, want);
    disable(false);
    tpu_pool_set_threads(2);
    int64_t count = run(m, n, k, variant, got);
    double err = 0;
    for (int64_t i = 0; i < count; i++)
      err = fmax(err, fabs((double)got[i] - want[i]) / (1 + fabs((double)want[i])));
    CHECK(err < 1e-5);
    tpu_pool_set_threads(1);
    run(m, n, k, variant, want);
    CHECK(count <= 0 || memcmp(got, want, sizeof(float) * (size_t)count) == 0);
  }
  tpu_pool_set_threads(threads);
  free(got), free(want);
}

/* The AVX-512 fp32 kernel, where the CPU has one: it takes the GEMM from the BLAS, matches the
 * reference in every layout with K over several blocks and partial register tiles, matches the
 * built-in kernel on odd strides, C (a matrix or a bias row) and summed batches, and gives the
 * same bits on one thread and on two. */
static void test_f32_kernel(void) {
  if (!tpu_matmul_has_f32_kernel()) {
    printf("  (no AVX-512: the fp32 kernel is not used on this CPU)\n");
    return;
  }
  tpu_blas fake = {.sgemm = fake_sgemm, .dgemm = NULL, .name = "fake"};
  tpu_matmul_set_blas(&fake);
  blas_calls = 0;
  for (int t = 0; t < 8; t++)
    check_f32_layouts(100, 70, 1100, t & 1, t & 2, t & 4);
  check_f32_layouts(13, 330, 1000, false, true, false);
  CHECK(blas_calls == 0);
  tpu_matmul_set_blas(NULL);
  check_kernel_matches(f32_case, F32_CASES, tpu_matmul_disable_f32_kernel, 50, 45, 1000);
}

/* out = 0.5 * x @ W^T - 2 * C over two batches, x [m, k] row-major, W [n, k] row-major (the
 * few-row kernel's layout). Variant 0: no C; 1: C a bias row; 2: C a matrix per batch. */
static int64_t few_rows_case(int64_t m, int64_t n, int64_t k, int variant, float *out) {
  float *x = filled(2 * m * k, 0), *w = filled(2 * n * k, 5), *c = filled(2 * m * n, 2);
  tpu_tensor cv = variant == 1 ? view3(c, TPU_FLOAT32, 2, m, n, n, 0, 1)
                               : view3(c, TPU_FLOAT32, 2, m, n, m * n, n, 1);
  tpu_status st = gemm(view3(x, TPU_FLOAT32, 2, m, k, m * k, k, 1),
                       view3(w, TPU_FLOAT32, 2, k, n, n * k, 1, k), variant ? &cv : NULL,
                       view3(out, TPU_FLOAT32, 2, m, n, m * n, n, 1), SCALAR_F(0.5), SCALAR_F(-2));
  free(x), free(w), free(c);
  CHECK_OK_OR(st, -1);
  return 2 * m * n;
}

/* The AVX2 kernel for x @ W^T with few rows, where the CPU has AVX2: it takes those GEMMs from the
 * BLAS (every row count up to 16, W row counts that leave 1 or 2 of a group of three, K with and
 * without a partial vector) and matches the reference; with C it matches the BLAS path, and
 * gives the same bits on one thread and on two. More rows, or B not W^T, still reach the BLAS. */
static void test_small_f32_kernel(void) {
  if (!tpu_matmul_has_small_f32_kernel()) {
    printf("  (no AVX2: the few-row fp32 kernel is not used on this CPU)\n");
    return;
  }
  tpu_blas fake = {.sgemm = fake_sgemm, .dgemm = NULL, .name = "fake"};
  tpu_matmul_set_blas(&fake);
  tpu_matmul_disable_f32_kernel(true); /* the AVX-512 kernel would take the larger ones */
  blas_calls = 0;
  const int64_t rows[] = {1, 2, 3, 4, 5, 7, 16}, cols[] = {1, 2, 3, 25, 50}, ks[] = {1, 7, 8, 9, 300};
  for (int a = 0; a < 7; a++)
    for (int b = 0; b < 5; b++)
      for (int c = 0; c < 5; c++)
        check_f32_layouts(rows[a], cols[b], ks[c], false, true, false);
  CHECK(blas_calls == 0);
  check_f32_layouts(17, 50, 300, false, true, false);
  check_f32_layouts(16, 50, 300, false, false, false);
  check_f32_layouts(3, 5, 4097, false, true, false);
  CHECK(blas_calls == 3);
  tpu_matmul_set_blas(NULL);
  check_kernel_matches(few_rows_case, 3, tpu_matmul_disable_small_f32_kernel, 13, 700, 301);
  tpu_matmul_disable_f32_kernel(false);
}

static void test_blas_dispatch(void) {
  tpu_blas fake = {.sgemm = fake_sgemm, .dgemm = NULL, .name = "fake"};
  tpu_matmul_set_blas(&fake);
  int threads = tpu_pool_threads();
  tpu_pool_set_threads(1);
  for (int t = 0; t < 8; t++) {
    blas_calls = blas_transposes = 0;
    check_f32_layouts(23, 19, 17, t & 1, t & 2, t & 4);
    CHECK(blas_calls == 1);
    /* A column-major output swaps the operands and flips both transposes. */
    int expect = (t & 4) ? 2 - ((t & 1) != 0) - ((t & 2) != 0) : ((t & 1) != 0) + ((t & 2) != 0);
    CHECK(blas_transposes == expect);
  }
  /* A strided (non-BLAS) A is copied, then still goes to the BLAS as a dense matrix. */
  float a[4 * 6], b[3 * 2], out[4], ref[4] = {0};
  for (int i = 0; i < 24; i++)
    a[i] = (float)i;
  for (int i = 0; i < 6; i++)
    b[i] = (float)(i - 2);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      for (int p = 0; p < 3; p++)
        ref[i * 2 + j] += a[i * 12 + p * 2] * b[p * 2 + j];
  blas_calls = 0;
  CHECK_OK(gemm(view3(a, TPU_FLOAT32, 1, 2, 3, 0, 12, 2), view3(b, TPU_FLOAT32, 1, 3, 2, 0, 2, 1),
                NULL, view3(out, TPU_FLOAT32, 1, 2, 2, 0, 2, 1), SCALAR_F(1), SCALAR_F(0)));
  CHECK(blas_calls == 1);
  for (int i = 0; i < 4; i++)
    CHECK(out[i] == ref[i]);
  tpu_pool_set_threads(threads);
  tpu_matmul_set_blas(NULL);
}

/* addmm semantics: beta == 0 ignores NaN in C; alpha and beta scale; C broadcasts. */
static void test_alpha_beta(void) {
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1}, nan_c[4], out[4];
  for (int i = 0; i < 4; i++)
    nan_c[i] = NAN;
  tpu_tensor c = view3(nan_c, TPU_FLOAT32, 1, 2, 2, 0, 2, 1);
  CHECK_OK(gemm(view3(a, TPU_FLOAT32, 1, 2, 3, 0, 3, 1), view3(b, TPU_FLOAT32, 1, 3, 2, 0, 2, 1),
                &c, view3(out, TPU_FLOAT32, 1, 2, 2, 0, 2, 1), SCALAR_F(2), SCALAR_F(0)));
  const float ab[4] = {4, 5, 10, 11};
  for (int i = 0; i < 4; i++)
    CHECK(out[i] == 2 * ab[i]);
  float row[2] = {10, 20};
  tpu_tensor bias = view3(row, TPU_FLOAT32, 1, 2, 2, 0, 0, 1); /* a row broadcast over M */
  CHECK_OK(gemm(view3(a, TPU_FLOAT32, 1, 2, 3, 0, 3, 1), view3(b, TPU_FLOAT32, 1, 3, 2, 0, 2, 1),
                &bias, view3(out, TPU_FLOAT32, 1, 2, 2, 0, 2, 1), SCALAR_F(1), SCALAR_F(0.5)));
  for (int i = 0; i < 4; i++)
    CHECK(out[i] == ab[i] + 0.5f * row[i % 2]);
  /* K == 0: out = beta * C. */
  CHECK_OK(gemm(view3(a, TPU_FLOAT32, 1, 2, 0, 0, 1, 1), view3(b, TPU_FLOAT32, 1, 0, 2, 0, 2, 1),
                &bias, view3(out, TPU_FLOAT32, 1, 2, 2, 0, 2, 1), SCALAR_F(1), SCALAR_F(3)));
  for (int i = 0; i < 4; i++)
    CHECK(out[i] == 3 * row[i % 2]);
}

/* Integers wrap like the dtype's arithmetic; summed batches (addbmm) add every batch. */
static void test_int8_wrap_and_batches(void) {
  int8_t a[2 * 300], b[2 * 300], out[1];
  for (int i = 0; i < 600; i++)
    a[i] = b[i] = 100;
  CHECK_OK(gemm(view3(a, TPU_INT8, 2, 1, 300, 300, 300, 1),
                view3(b, TPU_INT8, 2, 300, 1, 300, 1, 1), NULL,
                view3(out, TPU_INT8, 1, 1, 1, 0, 1, 1), SCALAR_I(1), SCALAR_I(0)));
  CHECK(out[0] == (int8_t)(uint8_t)((2u * 300u * 10000u) & 0xffu));
  int64_t la[4] = {1, 2, 3, 4}, lb[4] = {5, 6, 7, 8}, lc[4] = {1, 1, 1, 1}, lo[4];
  tpu_tensor c = view3(lc, TPU_INT64, 1, 2, 2, 0, 2, 1);
  CHECK_OK(gemm(view3(la, TPU_INT64, 1, 2, 2, 0, 2, 1), view3(lb, TPU_INT64, 1, 2, 2, 0, 2, 1), &c,
                view3(lo, TPU_INT64, 1, 2, 2, 0, 2, 1), SCALAR_I(2), SCALAR_I(-3)));
  const int64_t expect[4] = {2 * 19 - 3, 2 * 22 - 3, 2 * 43 - 3, 2 * 50 - 3};
  for (int i = 0; i < 4; i++)
    CHECK(lo[i] == expect[i]);
}

static void test_complex(void) {
  double _Complex a[2] = {1 + 2 * I, 3 - I}, b[2] = {2 - I, I}, out[1];
  CHECK_OK(gemm(view3(a, TPU_COMPLEX128, 1, 1, 2, 0, 2, 1),
                view3(b, TPU_COMPLEX128, 1, 2, 1, 0, 1, 1), NULL,
                view3(out, TPU_COMPLEX128, 1, 1, 1, 0, 1, 1), SCALAR_F(1), SCALAR_F(0)));
  CHECK(out[0] == (1 + 2 * I) * (2 - I) + (3 - I) * I);
}

/* bf16 and fp16 against the double reference (operands exact in bf16), on both bf16 paths, with
 * a batch, odd K spanning several K blocks, and two threads splitting M. `flipped` false: A
 * row-major, B stored transposed; true: A stored transposed (a weight gradient's dy^T), B
 * row-major. */
static void check_half(tpu_dtype d, int64_t m, int64_t n, int64_t k, bool flipped) {
  uint16_t *a = malloc(2 * (size_t)(2 * m * k)), *b = malloc(2 * (size_t)(2 * k * n));
  uint16_t *out = malloc(2 * (size_t)(2 * m * n));
  double *ad = malloc(8 * (size_t)(m * k)), *bd = malloc(8 * (size_t)(k * n)),
         *ref = malloc(8 * (size_t)(m * n));
  uint16_t (*from_f32)(float) = d == TPU_BFLOAT16 ? tpu_f32_to_bf16 : tpu_f32_to_f16;
  float (*to_f32)(uint16_t) = d == TPU_BFLOAT16 ? tpu_bf16_to_f32 : tpu_f16_to_f32;
  /* Element strides (rows, cols) of A [m, k] and B [k, n]. */
  int64_t ars = flipped ? 1 : k, acs = flipped ? m : 1, brs = flipped ? n : 1, bcs = flipped ? 1 : k;
  for (int64_t bi = 0; bi < 2; bi++) {
    for (int64_t i = 0; i < m; i++)
      for (int64_t p = 0; p < k; p++)
        a[bi * m * k + i * ars + p * acs] = from_f32((float)(ad[i * k + p] = value(i * k + p + bi)));
    for (int64_t p = 0; p < k; p++)
      for (int64_t j = 0; j < n; j++)
        b[bi * k * n + p * brs + j * bcs] =
            from_f32((float)(bd[p * n + j] = value(p * n + j + 5 * bi)));
    reference(ad, bd, ref, m, n, k);
    CHECK_OK(gemm(view3(a + bi * m * k, d, 1, m, k, 0, ars, acs),
                  view3(b + bi * k * n, d, 1, k, n, 0, brs, bcs), NULL,
                  view3(out + bi * m * n, d, 1, m, n, 0, n, 1), SCALAR_F(1), SCALAR_F(0)));
    double err = 0;
    for (int64_t i = 0; i < m * n; i++)
      err = fmax(err, fabs(to_f32(out[bi * m * n + i]) - ref[i]) / (1 + fabs(ref[i])));
    CHECK(err < 1e-2);
  }
  /* The batched form gives the same bits as the two single GEMMs. */
  uint16_t *batched = malloc(2 * (size_t)(2 * m * n));
  CHECK_OK(gemm(view3(a, d, 2, m, k, m * k, ars, acs), view3(b, d, 2, k, n, k * n, brs, bcs), NULL,
                view3(batched, d, 2, m, n, m * n, n, 1), SCALAR_F(1), SCALAR_F(0)));
  CHECK(memcmp(batched, out, 2 * (size_t)(2 * m * n)) == 0);
  free(a), free(b), free(out), free(ad), free(bd), free(ref), free(batched);
}

static void test_half(void) {
  int threads = tpu_pool_threads();
  tpu_pool_set_threads(2);
  for (int pass = 0; pass < 2; pass++) {
    tpu_matmul_disable_bf16_kernel(pass == 1);
    for (int flipped = 0; flipped < 2; flipped++) {
      check_half(TPU_BFLOAT16, 97, 70, 1100, flipped);
      check_half(TPU_BFLOAT16, 5, 3, 7, flipped);
    }
  }
  tpu_matmul_disable_bf16_kernel(false);
  check_half(TPU_FLOAT16, 33, 40, 65, false);
  tpu_pool_set_threads(threads);
}

/* int_mm: int8 or uint8 [m, k] @ int8 [k, n] -> int32 against an int64 reference, on the AVX512-VNNI
 * kernel and the portable loop, with A and B row-major or stored transposed, a column-major
 * output, K not a multiple of 4, rows and columns that leave partial register tiles, and the
 * extremes of int8 (-128 * -128 summed K times). */
static void check_int_mm(int64_t m, int64_t n, int64_t k, bool ta, bool tb, bool to,
                         bool a_unsigned) {
  int8_t *a = malloc((size_t)(m * k) + 1), *b = malloc((size_t)(k * n) + 1);
  int32_t *out = malloc(sizeof(int32_t) * (size_t)(m * n) + 1);
  int64_t ars = ta ? 1 : k, acs = ta ? m : 1, brs = tb ? 1 : n, bcs = tb ? k : 1;
  int64_t ors = to ? 1 : n, ocs = to ? m : 1;
  for (int64_t i = 0; i < m; i++)
    for (int64_t p = 0; p < k; p++)
      a[i * ars + p * acs] = (int8_t)(i == 0 ? -128 : (i * 31 + p * 17) % 256 - 128);
  for (int64_t p = 0; p < k; p++)
    for (int64_t j = 0; j < n; j++)
      b[p * brs + j * bcs] = (int8_t)(j == 0 ? -128 : (p * 13 + j * 29 + 7) % 256 - 128);
  tpu_tensor t[3] = {view3(a, a_unsigned ? TPU_UINT8 : TPU_INT8, 1, m, k, 0, ars, acs),
                     view3(b, TPU_INT8, 1, k, n, 0, brs, bcs),
                     view3(out, TPU_INT32, 1, m, n, 0, ors, ocs)};
  CHECK_OK(run_kernel(TPU_OP_INT_MM, t, 2, 1, NO_SCALAR, NO_SCALAR, NO_SCALAR, NO_SCALAR));
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      int64_t s = 0;
      for (int64_t p = 0; p < k; p++)
        s += (a_unsigned ? (int64_t)(uint8_t)a[i * ars + p * acs] : a[i * ars + p * acs]) *
             b[p * brs + j * bcs];
      CHECK(out[i * ors + j * ocs] == (int32_t)s);
    }
  free(a), free(b), free(out);
}

static void test_int_mm(void) {
  int threads = tpu_pool_threads();
  tpu_pool_set_threads(2);
  for (int pass = 0; pass < 2; pass++) {
    tpu_matmul_disable_int8_kernel(pass == 1);
    for (int layout = 0; layout < 8; layout++)
      check_int_mm(29, 45, 1027, layout & 1, layout & 2, layout & 4, false);
    check_int_mm(29, 45, 1027, false, false, false, true);
    check_int_mm(100, 70, 3, false, false, false, true);
    check_int_mm(1, 1, 1, false, true, false, false);
    check_int_mm(4, 5, 0, false, false, false, false); /* an empty sum: zeros */
  }
  tpu_matmul_disable_int8_kernel(false);
  tpu_pool_set_threads(threads);
}

static void test_errors(void) {
  float a[4], b[4], out[4];
  CHECK(gemm(view3(a, TPU_FLOAT32, 1, 2, 2, 0, 2, 1), view3(b, TPU_FLOAT32, 1, 1, 2, 0, 2, 1), NULL,
             view3(out, TPU_FLOAT32, 1, 2, 2, 0, 2, 1), SCALAR_F(1), SCALAR_F(0)) == TPU_ERR_VALUE);
  CHECK(gemm(view3(a, TPU_FLOAT32, 1, 2, 2, 0, 2, 1), view3(b, TPU_FLOAT64, 1, 2, 1, 0, 1, 1), NULL,
             view3(out, TPU_FLOAT32, 1, 2, 1, 0, 1, 1), SCALAR_F(1), SCALAR_F(0)) == TPU_ERR_TYPE);
  CHECK(gemm(view3(a, TPU_BOOL, 1, 2, 2, 0, 2, 1), view3(b, TPU_BOOL, 1, 2, 2, 0, 2, 1), NULL,
             view3(out, TPU_BOOL, 1, 2, 2, 0, 2, 1), SCALAR_I(1), SCALAR_I(0)) == TPU_ERR_TYPE);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_missing_library);
  RUN_TEST(test_f32_builtin);
  RUN_TEST(test_f32_kernel);
  RUN_TEST(test_small_f32_kernel);
  RUN_TEST(test_blas_dispatch);
  RUN_TEST(test_alpha_beta);
  RUN_TEST(test_int8_wrap_and_batches);
  RUN_TEST(test_complex);
  RUN_TEST(test_int_mm);
  RUN_TEST(test_half);
  RUN_TEST(test_errors);
  TEST_MAIN_END();
}
