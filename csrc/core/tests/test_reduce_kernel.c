/* The reduction engine (reduce.c) through the reduce family's kernels: every subset of
 * reduced dimensions of dense and permuted 3-d inputs against a plain reference, in row, column
 * and split modes (a pool of 3 threads forces the splits), dtype conversions, integer wrapping,
 * NaN and ties, empty reductions, complex sums; and the branch-free float16 load and exp. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/engine/engine_simd.h"
#include "drivers/host/engine/engine_pool.h"
#include "tpu_test.h"
#include "tpu_test_host.h"

/* A call of `op` on one input and n_out outputs with compute dtype and two scalars. */
static tpu_status run_reduce(tpu_op_id op, tpu_dtype compute, const tpu_tensor *t, int n_out,
                             tpu_scalar s0, tpu_scalar s1) {
  tpu_op_call *call = tpu_op_call_new(op, 1, n_out);
  if (!call)
    return TPU_ERR_OUT_OF_MEMORY;
  for (int i = 0; i < 1 + n_out; i++)
    call->tensors[i] = t[i];
  call->compute = compute;
  call->scalars[0] = s0;
  call->scalars[1] = s1;
  tpu_status st = tpu_host_kernel(op)(call);
  tpu_op_call_free(call);
  return st;
}

/* Writes logical value v[i] of a row-major [a, b, c] tensor into memory laid out with the
 * dimensions permuted by perm (perm[0] outermost in memory); returns the view. */
static tpu_tensor permuted(void *mem, tpu_dtype dt, const int64_t sizes[3], const int perm[3],
                           const double *v) {
  int64_t strides[3], step = 1;
  for (int k = 2; k >= 0; k--) {
    strides[perm[k]] = step;
    step *= sizes[perm[k]];
  }
  tpu_tensor t = host_view(mem, dt, 3, sizes, strides);
  size_t el = tpu_dtype_size(dt);
  for (int64_t i = 0; i < sizes[0]; i++)
    for (int64_t j = 0; j < sizes[1]; j++)
      for (int64_t k = 0; k < sizes[2]; k++) {
        double x = v[(i * sizes[1] + j) * sizes[2] + k];
        char *p = (char *)mem + (i * strides[0] + j * strides[1] + k * strides[2]) * (int64_t)el;
        float f = (float)x;
        uint16_t h = dt == TPU_BFLOAT16 ? tpu_f32_to_bf16(f) : tpu_f32_to_f16(f);
        if (dt == TPU_FLOAT32)
          memcpy(p, &f, 4);
        else if (dt == TPU_FLOAT64)
          memcpy(p, &x, 8);
        else
          memcpy(p, &h, 2);
      }
  return t;
}

static double read_f(const void *mem, tpu_dtype dt, int64_t i) {
  if (dt == TPU_FLOAT64)
    return ((const double *)mem)[i];
  if (dt == TPU_FLOAT32)
    return ((const float *)mem)[i];
  uint16_t h = ((const uint16_t *)mem)[i];
  return dt == TPU_BFLOAT16 ? tpu_bf16_to_f32(h) : tpu_f16_to_f32(h);
}

enum { SUM, MEAN, MAX, ARGMAX, VAR, NORM2, LSE, PROD, COUNT, NKINDS };

/* Reference value of kind over the elements of one output (the n values in logical order). */
static double reference(int kind, const double *x, int64_t n) {
  double r = kind == PROD ? 1 : kind == MAX ? -INFINITY : 0;
  int64_t at = 0;
  for (int64_t i = 0; i < n; i++) {
    switch (kind) {
    case SUM: case MEAN: case VAR: r += x[i]; break;
    case PROD: r *= x[i]; break;
    case MAX: r = x[i] > r ? x[i] : r; break;
    case ARGMAX: if (x[i] > x[at]) at = i; break;
    case NORM2: r += x[i] * x[i]; break;
    case LSE: r = x[i] > r || i == 0 ? x[i] : r; break;
    case COUNT: r += x[i] != 0; break;
    }
  }
  if (kind == MEAN)
    return r / (double)n;
  if (kind == ARGMAX)
    return (double)at;
  if (kind == NORM2)
    return sqrt(r);
  if (kind == VAR) {
    double m = r / (double)n, s = 0;
    for (int64_t i = 0; i < n; i++)
      s += (x[i] - m) * (x[i] - m);
    return s / (double)(n - 1);
  }
  if (kind == LSE) {
    double s = 0;
    for (int64_t i = 0; i < n; i++)
      s += exp(x[i] - r);
    return log(s) + r;
  }
  return r;
}

/* The size of the rounding errors a float computation of kind may make (times the unit
 * roundoff), so a check can be tight without flaking. */
static double error_scale(int kind, const double *x, int64_t n, double want) {
  double abs_sum = 0, sq_sum = 0;
  for (int64_t i = 0; i < n; i++)
    abs_sum += fabs(x[i]), sq_sum += x[i] * x[i];
  switch (kind) {
  case SUM: return 2 * sqrt((double)n) * abs_sum; /* column sums add up to 64 rows in float */
  case MEAN: return 2 * sqrt((double)n) * abs_sum / (double)n;
  case VAR: return 4 * sq_sum / (double)(n > 1 ? n - 1 : 1);
  case NORM2: return 4 * fabs(want) * sqrt((double)n);
  case LSE: return 4 * (1 + fabs(want));
  case PROD: return (double)n * fabs(want);
  default: return 0; /* exact */
  }
}

/* Runs kind over the dimensions in `mask` (bit d = dimension d) of a [a, b, c] input stored in
 * dtype dt with layout perm, and compares each output with the reference within rtol. */
static void check_case(int kind, tpu_dtype dt, const int64_t sz[3], const int perm[3], int mask,
                       double rtol) {
  int64_t n = sz[0] * sz[1] * sz[2];
  double *v = malloc((size_t)n * sizeof *v), *vals = malloc((size_t)n * sizeof *vals);
  for (int64_t i = 0; i < n; i++) {
    double x = sin((double)i * 12.9898) * 43758.5453;
    x = (x - floor(x)) * 4 - 2; /* in [-2, 2) */
    if (kind == PROD)
      x = 1 + x / 64;
    if (kind == COUNT && i % 3 == 0)
      x = 0;
    v[i] = read_f(&(float){(float)x}, TPU_FLOAT32, 0);
  }
  void *mem = malloc((size_t)n * 8);
  tpu_tensor t[3];
  t[0] = permuted(mem, dt, sz, perm, v);
  for (int64_t i = 0; i < n; i++) /* the values as stored */
    v[i] = dt == TPU_FLOAT32 || dt == TPU_FLOAT64 ? v[i]
           : dt == TPU_BFLOAT16                   ? tpu_bf16_to_f32(tpu_f32_to_bf16((float)v[i]))
                                                  : tpu_f16_to_f32(tpu_f32_to_f16((float)v[i]));
  int64_t osz[3];
  for (int d = 0; d < 3; d++)
    osz[d] = mask >> d & 1 ? 1 : sz[d];
  int64_t nout = osz[0] * osz[1] * osz[2];
  tpu_dtype odt = kind == ARGMAX || kind == COUNT ? TPU_INT64 : dt;
  void *out = malloc((size_t)nout * 8);
  t[1] = host_view(out, odt, 3, osz, NULL);
  tpu_op_id op = kind == SUM || kind == MEAN ? TPU_OP_SUM : kind == MAX ? TPU_OP_AMAX
               : kind == ARGMAX ? TPU_OP_ARGMAX : kind == VAR ? TPU_OP_VAR
               : kind == NORM2 ? TPU_OP_NORM : kind == LSE ? TPU_OP_LOGSUMEXP
               : kind == PROD ? TPU_OP_PROD : TPU_OP_COUNT_NONZERO;
  tpu_scalar s0 = kind == MEAN ? SCALAR_I(1) : kind == VAR ? SCALAR_F(1)
                : kind == NORM2 ? SCALAR_F(2) : SCALAR_I(0);
  CHECK_OK(run_reduce(op, dt, t, 1, s0, NO_SCALAR));
  /* Each output's inputs, grouped by output in logical order (a counting sort). */
  int64_t *start = calloc((size_t)nout + 1, sizeof *start);
  for (int pass = 0; pass < 2; pass++) {
    int64_t *fill = pass ? calloc((size_t)nout, sizeof *fill) : NULL;
    for (int64_t a = 0; a < sz[0]; a++)
      for (int64_t b = 0; b < sz[1]; b++)
        for (int64_t c = 0; c < sz[2]; c++) {
          int64_t o = ((mask & 1 ? 0 : a) * osz[1] + (mask & 2 ? 0 : b)) * osz[2] +
                      (mask & 4 ? 0 : c);
          if (pass)
            vals[start[o] + fill[o]++] = v[(a * sz[1] + b) * sz[2] + c];
          else
            start[o + 1]++;
        }
    for (int64_t o = 0; !pass && o < nout; o++)
      start[o + 1] += start[o];
    free(fill);
  }
  for (int64_t o = 0; o < nout; o++) {
    double want = reference(kind, vals + start[o], start[o + 1] - start[o]);
    double got = odt == TPU_INT64 ? (double)((int64_t *)out)[o] : read_f(out, odt, o);
    double tol = rtol * error_scale(kind, vals + start[o], start[o + 1] - start[o], want);
    if (!(fabs(got - want) <= tol) && !(isnan(got) && isnan(want))) {
      fprintf(stderr, "kind %d %s sizes %lld,%lld,%lld perm %d%d%d mask %d out %lld: got %.9g "
              "want %.9g\n", kind, tpu_dtype_name(dt), (long long)sz[0], (long long)sz[1],
              (long long)sz[2], perm[0], perm[1], perm[2], mask, (long long)o, got, want);
      tpu_test_failures++;
      break;
    }
  }
  free(start);
  free(v), free(vals), free(mem), free(out);
}

static void test_all_dims_and_layouts(void) {
  static const int perms[3][3] = {{0, 1, 2}, {2, 0, 1}, {1, 2, 0}};
  static const int64_t shapes[3][3] = {{3, 5, 7}, {2, 40, 33}, {4, 1, 600}};
  for (int kind = 0; kind < NKINDS; kind++)
    for (int s = 0; s < 3; s++)
      for (int p = 0; p < 3; p++)
        for (int mask = 0; mask < 8; mask++) {
          check_case(kind, TPU_FLOAT32, shapes[s], perms[p], mask, 0x1p-24);
          if (p == 1)
            check_case(kind, TPU_FLOAT64, shapes[s], perms[p], mask, 0x1p-50);
        }
}

/* Reductions large enough that the engine splits them over the pool (by outputs, or by chunks of
 * the reduced range), and the same bits on every run. */
static void test_parallel_splits(void) {
  static const int64_t shapes[4][3] = {
      {1, 1, 300000}, {3, 1, 100000}, {1, 70000, 5}, {2, 30, 4000}};
  static const int contiguous[3] = {0, 1, 2}, permuted_[3] = {2, 1, 0};
  for (int s = 0; s < 4; s++)
    for (int mask = 1; mask < 8; mask++) {
      check_case(SUM, TPU_FLOAT32, shapes[s], contiguous, mask, 0x1p-24);
      check_case(ARGMAX, TPU_FLOAT32, shapes[s], s == 3 ? permuted_ : contiguous, mask, 0);
      check_case(VAR, TPU_BFLOAT16, shapes[s], contiguous, mask, 0x1p-8);
      check_case(LSE, TPU_FLOAT16, shapes[s], contiguous, mask, 0x1p-11);
    }
  enum { N = 1 << 20 };
  float *x = malloc(N * sizeof *x), out[2];
  for (int i = 0; i < N; i++)
    x[i] = (float)sin(i) * 1000;
  int64_t n = N, one = 1;
  tpu_tensor t[2] = {host_view(x, TPU_FLOAT32, 1, &n, NULL), host_view(&out[0], TPU_FLOAT32, 1,
                                                                          &one, NULL)};
  CHECK_OK(run_reduce(TPU_OP_SUM, TPU_FLOAT32, t, 1, NO_SCALAR, NO_SCALAR));
  t[1].host = &out[1];
  CHECK_OK(run_reduce(TPU_OP_SUM, TPU_FLOAT32, t, 1, NO_SCALAR, NO_SCALAR));
  CHECK(memcmp(&out[0], &out[1], sizeof out[0]) == 0);
  free(x);
}

static void test_integers(void) {
  int8_t x[6] = {100, 100, 100, -128, 7, 1};
  int64_t n = 6, one = 1, sum = 0;
  tpu_tensor t[2] = {host_view(x, TPU_INT8, 1, &n, NULL), host_view(&sum, TPU_INT64, 1, &one,
                                                                     NULL)};
  CHECK_OK(run_reduce(TPU_OP_SUM, TPU_INT64, t, 1, NO_SCALAR, NO_SCALAR));
  CHECK(sum == 180); /* promoted: no int8 overflow */
  int8_t wrapped = 0;
  t[1] = host_view(&wrapped, TPU_INT8, 1, &one, NULL);
  CHECK_OK(run_reduce(TPU_OP_SUM, TPU_INT8, t, 1, NO_SCALAR, NO_SCALAR));
  CHECK(wrapped == (int8_t)180);
  int64_t big[3] = {INT64_MAX, 2, 3}, three = 3, prod = 0;
  t[0] = host_view(big, TPU_INT64, 1, &three, NULL);
  t[1] = host_view(&prod, TPU_INT64, 1, &one, NULL);
  CHECK_OK(run_reduce(TPU_OP_PROD, TPU_INT64, t, 1, NO_SCALAR, NO_SCALAR));
  CHECK(prod == (int64_t)((uint64_t)INT64_MAX * 6)); /* wraps, as PyTorch's int64 product */
  int16_t h[5] = {-3, 9, 9, -7, 2}, hmax = 0;
  int64_t five = 5, at = -1;
  t[0] = host_view(h, TPU_INT16, 1, &five, NULL);
  t[1] = host_view(&hmax, TPU_INT16, 1, &one, NULL);
  CHECK_OK(run_reduce(TPU_OP_AMAX, TPU_INT16, t, 1, NO_SCALAR, NO_SCALAR));
  CHECK(hmax == 9);
  tpu_tensor t3[3] = {t[0], t[1], host_view(&at, TPU_INT64, 1, &one, NULL)};
  CHECK_OK(run_reduce(TPU_OP_MIN_DIM, TPU_INT16, t3, 2, NO_SCALAR, NO_SCALAR));
  CHECK(hmax == -7 && at == 3);
  /* float -> int64 compute truncates each element first (sum(x, dtype=int64)). */
  float f[3] = {1.9f, -1.9f, 2.5f};
  int64_t trunc = 0;
  t[0] = host_view(f, TPU_FLOAT32, 1, &three, NULL);
  t[1] = host_view(&trunc, TPU_INT64, 1, &one, NULL);
  CHECK_OK(run_reduce(TPU_OP_SUM, TPU_INT64, t, 1, NO_SCALAR, NO_SCALAR));
  CHECK(trunc == 2);
  uint8_t b[4] = {0, 2, 0, 1}, any = 9, all = 9;
  int64_t four = 4, count = 0;
  t[0] = host_view(b, TPU_BOOL, 1, &four, NULL);
  t[1] = host_view(&any, TPU_BOOL, 1, &one, NULL);
  CHECK_OK(run_reduce(TPU_OP_ANY, TPU_BOOL, t, 1, NO_SCALAR, NO_SCALAR));
  t[1] = host_view(&all, TPU_BOOL, 1, &one, NULL);
  CHECK_OK(run_reduce(TPU_OP_ALL, TPU_BOOL, t, 1, NO_SCALAR, NO_SCALAR));
  t[1] = host_view(&count, TPU_INT64, 1, &one, NULL);
  CHECK_OK(run_reduce(TPU_OP_COUNT_NONZERO, TPU_BOOL, t, 1, NO_SCALAR, NO_SCALAR));
  CHECK(any == 1 && all == 0 && count == 2);
}

/* max/argmax: NaN wins and its first index is taken; ties go to the first index; argmax counts in
 * logical order even when memory order differs. */
static void test_nan_and_ties(void) {
  float x[40];
  for (int i = 0; i < 40; i++)
    x[i] = (float)(i % 7);
  x[13] = NAN;
  x[29] = NAN;
  int64_t n = 40, one = 1, at = -1;
  float m = 0;
  tpu_tensor t[3] = {host_view(x, TPU_FLOAT32, 1, &n, NULL), host_view(&m, TPU_FLOAT32, 1, &one,
                                                                       NULL),
                     host_view(&at, TPU_INT64, 1, &one, NULL)};
  CHECK_OK(run_reduce(TPU_OP_MAX_DIM, TPU_FLOAT32, t, 2, NO_SCALAR, NO_SCALAR));
  CHECK(isnan(m) && at == 13);
  CHECK_OK(run_reduce(TPU_OP_AMIN, TPU_FLOAT32, t, 1, NO_SCALAR, NO_SCALAR));
  CHECK(isnan(m));
  x[13] = x[29] = 1;
  CHECK_OK(run_reduce(TPU_OP_MAX_DIM, TPU_FLOAT32, t, 2, NO_SCALAR, NO_SCALAR));
  CHECK(m == 6 && at == 6);
  t[2] = host_view(&at, TPU_INT64, 1, &one, NULL);
  CHECK_OK(run_reduce(TPU_OP_ARGMIN, TPU_FLOAT32, (tpu_tensor[2]){t[0], t[2]}, 1, NO_SCALAR,
                      NO_SCALAR));
  CHECK(at == 0);
  /* A [4, 10] view of x stored transposed: the index counts in the logical order. */
  const int64_t sizes[2] = {4, 10}, strides[2] = {1, 4}, ones[2] = {1, 1};
  int64_t at2 = -1;
  tpu_tensor tt[2] = {host_view(x, TPU_FLOAT32, 2, sizes, strides),
                      host_view(&at2, TPU_INT64, 2, ones, NULL)};
  CHECK_OK(run_reduce(TPU_OP_ARGMAX, TPU_FLOAT32, tt, 1, NO_SCALAR, NO_SCALAR));
  int64_t want = -1;
  for (int64_t i = 0; i < 4 && want < 0; i++)
    for (int64_t j = 0; j < 10 && want < 0; j++)
      if (x[j * 4 + i] == 6)
        want = i * 10 + j;
  CHECK(at2 == want);
}

static void test_empty_and_conversions(void) {
  float none[1] = {0}, s = 7;
  int64_t zero = 0, one = 1;
  tpu_tensor t[2] = {host_view(none, TPU_FLOAT32, 1, &zero, NULL),
                     host_view(&s, TPU_FLOAT32, 1, &one, NULL)};
  CHECK_OK(run_reduce(TPU_OP_SUM, TPU_FLOAT32, t, 1, NO_SCALAR, NO_SCALAR));
  CHECK(s == 0);
  CHECK_OK(run_reduce(TPU_OP_PROD, TPU_FLOAT32, t, 1, NO_SCALAR, NO_SCALAR));
  CHECK(s == 1);
  CHECK_OK(run_reduce(TPU_OP_SUM, TPU_FLOAT32, t, 1, SCALAR_I(1), NO_SCALAR));
  CHECK(isnan(s)); /* mean of nothing */
  CHECK(run_reduce(TPU_OP_AMAX, TPU_FLOAT32, t, 1, NO_SCALAR, NO_SCALAR) == TPU_ERR_INDEX);
  /* bfloat16 in, float32 out; float64 in, float32 compute (rounded before summing). */
  uint16_t bf[3] = {tpu_f32_to_bf16(1.5f), tpu_f32_to_bf16(-0.25f), tpu_f32_to_bf16(3.0f)};
  int64_t three = 3;
  t[0] = host_view(bf, TPU_BFLOAT16, 1, &three, NULL);
  CHECK_OK(run_reduce(TPU_OP_SUM, TPU_FLOAT32, t, 1, NO_SCALAR, NO_SCALAR));
  CHECK(s == 4.25f);
  double d[2] = {1 + 0x1p-40, 1 + 0x1p-40};
  int64_t two = 2;
  double ds = 0;
  t[0] = host_view(d, TPU_FLOAT64, 1, &two, NULL);
  t[1] = host_view(&ds, TPU_FLOAT64, 1, &one, NULL);
  CHECK_OK(run_reduce(TPU_OP_SUM, TPU_FLOAT64, t, 1, NO_SCALAR, NO_SCALAR));
  CHECK(ds == 2 + 0x1p-39);
  t[1] = host_view(&s, TPU_FLOAT32, 1, &one, NULL);
  CHECK_OK(run_reduce(TPU_OP_SUM, TPU_FLOAT32, t, 1, NO_SCALAR, NO_SCALAR));
  CHECK(s == 2.0f);
  /* Norms: p = 1, inf, 0, 3, of a complex64 input (|z|). */
  float z[4] = {3, 4, 0, -1}; /* 3+4i, -i */
  t[0] = host_view(z, TPU_COMPLEX64, 1, &two, NULL);
  const double ps[4] = {1, INFINITY, 0, 3}, want[4] = {6, 5, 2, cbrt(126)};
  for (int i = 0; i < 4; i++) {
    CHECK_OK(run_reduce(TPU_OP_NORM, TPU_FLOAT32, t, 1, SCALAR_F(ps[i]), NO_SCALAR));
    CHECK(fabs(s - want[i]) < 1e-5);
  }
}

static void test_complex_sum_and_mean(void) {
  double z[6] = {1, 2, 3, -4, 0.5, 0.25}, out[2];
  int64_t three = 3, one = 1;
  tpu_tensor t[2] = {host_view(z, TPU_COMPLEX128, 1, &three, NULL),
                     host_view(out, TPU_COMPLEX128, 1, &one, NULL)};
  CHECK_OK(run_reduce(TPU_OP_SUM, TPU_COMPLEX128, t, 1, NO_SCALAR, NO_SCALAR));
  CHECK(out[0] == 4.5 && out[1] == -1.75);
  CHECK_OK(run_reduce(TPU_OP_SUM, TPU_COMPLEX128, t, 1, SCALAR_I(1), NO_SCALAR));
  CHECK(out[0] == 1.5 && out[1] == -1.75 / 3);
  CHECK(run_reduce(TPU_OP_PROD, TPU_COMPLEX128, t, 1, NO_SCALAR, NO_SCALAR) ==
        TPU_ERR_NOT_IMPLEMENTED);
}

/* CUMSUM along each dimension of a [3, 4, 130] float32 tensor (row and column scans), float32
 * accumulating in double, bfloat16 in float, int8 into int64, and complex parts. */
static void test_cumsum(void) {
  enum { A = 3, B = 4, C = 130, N = A * B * C };
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  for (int i = 0; i < N; i++)
    x[i] = (float)((i * 7919) % 23) - 11.5f;
  const int64_t sizes[3] = {A, B, C};
  for (int dim = 0; dim < 3; dim++) {
    tpu_tensor t[2] = {host_view(x, TPU_FLOAT32, 3, sizes, NULL),
                       host_view(y, TPU_FLOAT32, 3, sizes, NULL)};
    CHECK_OK(run_reduce(TPU_OP_CUMSUM, TPU_FLOAT32, t, 1, SCALAR_I(dim), NO_SCALAR));
    int64_t st[3] = {B * C, C, 1};
    int bad = 0;
    for (int64_t i = 0; i < N; i++) {
      int64_t pos = i / st[dim] % sizes[dim];
      double want = 0;
      for (int64_t k = 0; k <= pos; k++)
        want += x[i - (pos - k) * st[dim]];
      bad += y[i] != (float)want;
    }
    CHECK(bad == 0);
  }
  uint16_t bf[4] = {tpu_f32_to_bf16(256), tpu_f32_to_bf16(1), tpu_f32_to_bf16(1),
                    tpu_f32_to_bf16(1)}, by[4];
  int64_t four = 4;
  tpu_tensor t[2] = {host_view(bf, TPU_BFLOAT16, 1, &four, NULL),
                     host_view(by, TPU_BFLOAT16, 1, &four, NULL)};
  CHECK_OK(run_reduce(TPU_OP_CUMSUM, TPU_BFLOAT16, t, 1, SCALAR_I(0), NO_SCALAR));
  /* The float running sum is 257, 258, 259; each rounds to bfloat16 on its own. */
  CHECK(by[1] == tpu_f32_to_bf16(257) && by[2] == tpu_f32_to_bf16(258) &&
        by[3] == tpu_f32_to_bf16(259));
  int8_t i8[3] = {127, 127, -1};
  int64_t i64[3], three = 3;
  t[0] = host_view(i8, TPU_INT8, 1, &three, NULL);
  t[1] = host_view(i64, TPU_INT64, 1, &three, NULL);
  CHECK_OK(run_reduce(TPU_OP_CUMSUM, TPU_INT64, t, 1, SCALAR_I(0), NO_SCALAR));
  CHECK(i64[0] == 127 && i64[1] == 254 && i64[2] == 253);
  float z[6] = {1, -1, 2, 0.5f, 3, 0}, zy[6];
  t[0] = host_view(z, TPU_COMPLEX64, 1, &three, NULL);
  t[1] = host_view(zy, TPU_COMPLEX64, 1, &three, NULL);
  CHECK_OK(run_reduce(TPU_OP_CUMSUM, TPU_COMPLEX64, t, 1, SCALAR_I(0), NO_SCALAR));
  CHECK(zy[4] == 6 && zy[5] == -0.5f && zy[2] == 3 && zy[3] == -0.5f);
  free(x), free(y);
}

static void test_simd_helpers(void) {
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float a = tpu_f16_to_f32((uint16_t)h), b = tpu_f16_to_f32_simd((uint16_t)h);
    bad += memcmp(&a, &b, sizeof a) != 0;
  }
  CHECK(bad == 0);
  int64_t worst = 0;
  for (double x = -86.6; x < 90; x += 0.0137) {
    float want = (float)exp((double)(float)x), got = tpu_expf_simd((float)x);
    int64_t ulps = llabs((int64_t)tpu_f32_bits(want) - (int64_t)tpu_f32_bits(got));
    worst = ulps > worst ? ulps : worst;
  }
  CHECK(worst <= 2);
  float sub = tpu_expf_simd(-100.0f), sub_want = (float)exp(-100.0); /* subnormal, as libm's */
  CHECK(sub > 0 && fabsf(sub - sub_want) <= 1e-3f * sub_want && tpu_expf_simd(-1000) == 0);
  CHECK(tpu_expf_simd(88.72f) < INFINITY && isinf(tpu_expf_simd(88.7229f)));
  CHECK(tpu_expf_simd(-INFINITY) == 0 && isinf(tpu_expf_simd(INFINITY)));
  CHECK(isnan(tpu_expf_simd(NAN)) && tpu_expf_simd(0) == 1 && isinf(tpu_expf_simd(89)));

  /* ln and ln(1 + x) against libm in double, rounded: every binade from subnormals to the
   * largest float, and x near 0 for log1p, where ln(1 + x) ~ x must keep its digits. */
  int64_t worst_log = 0, worst_log1p = 0;
  for (double d = 0x1p-149; d < 3e38; d *= 1.0137) {
    float x = (float)d;
    float want = (float)log((double)x), got = tpu_logf_simd(x);
    int64_t ulps = llabs((int64_t)tpu_f32_bits(want) - (int64_t)tpu_f32_bits(got));
    worst_log = ulps > worst_log ? ulps : worst_log;
    for (int sign = -1; sign <= 1 && x < 1; sign += 2) {
      float y = (float)sign * x;
      float want1 = (float)log1p((double)y), got1 = tpu_log1pf_simd(y);
      int64_t u = llabs((int64_t)tpu_f32_bits(want1) - (int64_t)tpu_f32_bits(got1));
      worst_log1p = u > worst_log1p ? u : worst_log1p;
    }
  }
  CHECK(worst_log <= 2 && worst_log1p <= 3);
  CHECK(tpu_logf_simd(1) == 0 && tpu_logf_simd(INFINITY) == INFINITY);
  CHECK(tpu_logf_simd(0) == -INFINITY && tpu_logf_simd(-0.0f) == -INFINITY);
  CHECK(isnan(tpu_logf_simd(-1)) && isnan(tpu_logf_simd(NAN)) && isnan(tpu_logf_simd(-INFINITY)));
  CHECK(tpu_log1pf_simd(-1) == -INFINITY && tpu_log1pf_simd(INFINITY) == INFINITY);
  CHECK(isnan(tpu_log1pf_simd(-2)) && isnan(tpu_log1pf_simd(NAN)) && tpu_log1pf_simd(1e-30f) == 1e-30f);
  CHECK(fabsf(tpu_log1pf_simd(3e38f) - (float)log1p(3e38)) <= 1e-5f * 89);
}

int main(void) {
  TEST_MAIN_BEGIN();
  tpu_pool_set_threads(3);
  RUN_TEST(test_simd_helpers);
  RUN_TEST(test_all_dims_and_layouts);
  RUN_TEST(test_parallel_splits);
  RUN_TEST(test_integers);
  RUN_TEST(test_nan_and_ties);
  RUN_TEST(test_empty_and_conversions);
  RUN_TEST(test_complex_sum_and_mean);
  RUN_TEST(test_cumsum);
  TEST_MAIN_END();
}
