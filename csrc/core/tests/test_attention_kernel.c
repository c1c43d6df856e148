/* The SDPA kernels against a double-precision reference: forward (out, logsumexp) and backward
 * (grad_q, grad_k, grad_v, grad_mask), over the block boundaries of both kernels, causal and not,
 * masks that broadcast, boolean masks, rows that see no key, grouped-query heads, strided
 * operands, bfloat16 and float16, one and several threads, with the built-in GEMM and through a
 * stand-in BLAS. */
#include <math.h>
#include <stdlib.h>

#include "drivers/host/kernels/matmul/matmul.h"
#include "drivers/host/engine/engine_pool.h"
#include "tpu_test.h"
#include "tpu_test_blas.h"
#include "tpu_test_call.h"

typedef struct problem {
  int64_t B, Hq, Hkv, L, S, D, Dv;
  bool causal;
  int mask; /* 0 none, 1 float [1, Hq, L, S] broadcast over B, 2 bool [B, 1, L, S] */
  tpu_dtype dtype;
  bool transposed; /* q, k, v stored [B, L, H, D] */
} problem;

static float randf(unsigned *state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)((*state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* A tensor's values as float (rounded through its dtype) plus its storage. */
typedef struct arr {
  float *val;
  void *mem;
  tpu_tensor t;
} arr;

static float round_to(tpu_dtype dtype, float x) {
  if (dtype == TPU_BFLOAT16)
    return tpu_bf16_to_f32(tpu_f32_to_bf16(x));
  if (dtype == TPU_FLOAT16)
    return tpu_f16_to_f32(tpu_f32_to_f16(x));
  return x;
}

static void put(void *mem, tpu_dtype dtype, int64_t at, float x) {
  if (dtype == TPU_FLOAT32)
    ((float *)mem)[at] = x;
  else if (dtype == TPU_BFLOAT16)
    ((uint16_t *)mem)[at] = tpu_f32_to_bf16(x);
  else if (dtype == TPU_FLOAT16)
    ((uint16_t *)mem)[at] = tpu_f32_to_f16(x);
  else
    ((uint8_t *)mem)[at] = x != 0.0f;
}

static float get(const void *mem, tpu_dtype dtype, int64_t at) {
  if (dtype == TPU_FLOAT32)
    return ((const float *)mem)[at];
  if (dtype == TPU_BFLOAT16)
    return tpu_bf16_to_f32(((const uint16_t *)mem)[at]);
  return tpu_f16_to_f32(((const uint16_t *)mem)[at]);
}

/* A [n0, n1, n2, n3] tensor, stored [n0, n2, n1, n3] when transposed; random values unless
 * `seed` is NULL (zeros). */
static arr make(tpu_dtype dtype, int64_t n0, int64_t n1, int64_t n2, int64_t n3, bool transposed,
                unsigned *seed) {
  arr a;
  int64_t n = n0 * n1 * n2 * n3, sizes[4] = {n0, n1, n2, n3};
  int64_t strides[4] = {n1 * n2 * n3, n2 * n3, n3, 1};
  if (transposed) {
    strides[1] = n3;
    strides[2] = n1 * n3;
  }
  a.val = calloc((size_t)n + 1, sizeof(float));
  a.mem = calloc((size_t)n + 1, 4);
  a.t = host_view(a.mem, dtype, 4, sizes, strides);
  for (int64_t i0 = 0; i0 < n0; i0++)
    for (int64_t i1 = 0; i1 < n1; i1++)
      for (int64_t i2 = 0; i2 < n2; i2++)
        for (int64_t i3 = 0; i3 < n3; i3++) {
          int64_t logical = ((i0 * n1 + i1) * n2 + i2) * n3 + i3;
          int64_t at = i0 * strides[0] + i1 * strides[1] + i2 * strides[2] + i3;
          float x = seed ? round_to(dtype, randf(seed)) : 0.0f;
          a.val[logical] = x;
          put(a.mem, dtype, at, x);
        }
  return a;
}

static float at4(const arr *a, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  const tpu_tensor *t = &a->t;
  return get(a->mem, t->dtype,
             i0 * t->strides[0] + i1 * t->strides[1] + i2 * t->strides[2] + i3 * t->strides[3]);
}

static void drop(arr *a) {
  free(a->val);
  free(a->mem);
}

/* The additive mask value of (b, h, i, j) including the causal cut, as the reference sees it. */
static double mask_value(const problem *p, const arr *mask, int64_t b, int64_t h, int64_t i,
                         int64_t j) {
  if (p->causal && j > i)
    return -INFINITY;
  if (p->mask == 1)
    return mask->val[(h * p->L + i) * p->S + j];
  if (p->mask == 2)
    return mask->val[(b * p->L + i) * p->S + j] != 0.0f ? 0.0 : -INFINITY;
  return 0.0;
}

/* Reference probabilities of row (b, h, i) into prob[S]; returns the logsumexp (0 for a row that
 * sees no key, whose probabilities are then 0). */
static double ref_row(const problem *p, const arr *q, const arr *k, const arr *mask, double scale,
                      int64_t b, int64_t h, int64_t i, double *prob) {
  int64_t hk = h / (p->Hq / p->Hkv);
  double mx = -INFINITY, sum = 0.0;
  for (int64_t j = 0; j < p->S; j++) {
    double s = 0.0;
    for (int64_t c = 0; c < p->D; c++)
      s += (double)q->val[((b * p->Hq + h) * p->L + i) * p->D + c] *
           k->val[((b * p->Hkv + hk) * p->S + j) * p->D + c];
    prob[j] = s * scale + mask_value(p, mask, b, h, i, j);
    mx = prob[j] > mx ? prob[j] : mx;
  }
  if (mx == -INFINITY) {
    for (int64_t j = 0; j < p->S; j++)
      prob[j] = 0.0;
    return 0.0;
  }
  for (int64_t j = 0; j < p->S; j++)
    sum += prob[j] = exp(prob[j] - mx);
  for (int64_t j = 0; j < p->S; j++)
    prob[j] /= sum;
  return mx + log(sum);
}

static bool close_to(double got, double want, double tol) {
  return fabs(got - want) <= tol * (1.0 + fabs(want));
}

/* Runs forward and backward on `p` and checks both against the reference. */
static void check_problem(const problem *p) {
  unsigned seed = 12345u + (unsigned)(p->L * 7 + p->S * 13 + p->D);
  double scale = 1.0 / sqrt((double)p->D);
  arr q = make(p->dtype, p->B, p->Hq, p->L, p->D, p->transposed, &seed);
  arr k = make(p->dtype, p->B, p->Hkv, p->S, p->D, p->transposed, &seed);
  arr v = make(p->dtype, p->B, p->Hkv, p->S, p->Dv, p->transposed, &seed);
  arr go = make(p->dtype, p->B, p->Hq, p->L, p->Dv, false, &seed);
  arr out = make(p->dtype, p->B, p->Hq, p->L, p->Dv, false, NULL);
  arr lse = make(TPU_FLOAT32, p->B, p->Hq, p->L, 1, false, NULL);
  arr mask = {0};
  tpu_tensor mask_view;
  if (p->mask == 1) {
    mask = make(TPU_FLOAT32, 1, p->Hq, p->L, p->S, false, &seed);
    for (int64_t i = 0; i < p->Hq * p->L * p->S; i++) /* some -inf, and row 3 all -inf */
      if (mask.val[i] > 0.6f || (i / p->S) % p->L == 3)
        ((float *)mask.mem)[i] = mask.val[i] = -INFINITY;
    mask_view = mask.t;
    mask_view.sizes[0] = p->B;
    mask_view.strides[0] = 0;
  } else if (p->mask == 2) {
    mask = make(TPU_BOOL, p->B, 1, p->L, p->S, false, &seed);
    for (int64_t i = 0; i < p->B * p->L * p->S; i++) { /* a third false, row 5 all false */
      bool keep = mask.val[i] > -0.4f && (i / p->S) % p->L != 5;
      ((uint8_t *)mask.mem)[i] = keep;
      mask.val[i] = keep;
    }
    mask_view = mask.t;
    mask_view.sizes[1] = p->Hq;
    mask_view.strides[1] = 0;
  }
  lse.t.ndim = 3;
  tpu_scalar sc[2] = {SCALAR_F(scale), SCALAR_I(p->causal ? TPU_SDPA_CAUSAL : 0)};
  int n_in = p->mask ? 4 : 3;
  tpu_tensor fwd[6] = {q.t, k.t, v.t, mask_view, out.t, lse.t};
  if (!p->mask) {
    fwd[3] = out.t;
    fwd[4] = lse.t;
  }
  CHECK_OK(run_call(TPU_OP_SDPA, fwd, n_in, 2, sc, 2));

  /* Backward; the mask gradient only for an additive mask. */
  arr dq = make(p->dtype, p->B, p->Hq, p->L, p->D, false, NULL);
  arr dk = make(p->dtype, p->B, p->Hkv, p->S, p->D, false, NULL);
  arr dv = make(p->dtype, p->B, p->Hkv, p->S, p->Dv, false, NULL);
  arr dm = make(TPU_FLOAT32, p->B, p->Hq, p->L, p->S, false, NULL);
  for (int64_t i = 0; i < p->B * p->Hq * p->L * p->S; i++)
    ((float *)dm.mem)[i] = NAN; /* every element must be written */
  tpu_tensor bwd[11] = {go.t, q.t, k.t, v.t, out.t, lse.t};
  int n_bin = 6, n_bout = 3;
  if (p->mask)
    bwd[n_bin++] = mask_view;
  bwd[n_bin] = dq.t;
  bwd[n_bin + 1] = dk.t;
  bwd[n_bin + 2] = dv.t;
  if (p->mask == 1)
    bwd[n_bin + n_bout++] = dm.t;
  CHECK_OK(run_call(TPU_OP_SDPA_BACKWARD, bwd, n_bin, n_bout, sc, 2));

  double tol = p->dtype == TPU_FLOAT32 ? 2e-5 : p->dtype == TPU_BFLOAT16 ? 2e-2 : 4e-3;
  double *prob = calloc((size_t)p->S + 1, sizeof(double));
  double *gq = calloc((size_t)(p->B * p->Hq * p->L * p->D) + 1, sizeof(double));
  double *gk = calloc((size_t)(p->B * p->Hkv * p->S * p->D) + 1, sizeof(double));
  double *gv = calloc((size_t)(p->B * p->Hkv * p->S * p->Dv) + 1, sizeof(double));
  int bad = 0;
  for (int64_t b = 0; b < p->B; b++)
    for (int64_t h = 0; h < p->Hq; h++)
      for (int64_t i = 0; i < p->L; i++) {
        int64_t hk = h / (p->Hq / p->Hkv), row = (b * p->Hq + h) * p->L + i;
        double l = ref_row(p, &q, &k, &mask, scale, b, h, i, prob);
        bad += !close_to(((float *)lse.mem)[row], l, tol);
        /* out, and delta = rowsum(go * out) from the kernel's rounded out, as PyTorch. */
        double delta = 0.0;
        for (int64_t c = 0; c < p->Dv; c++) {
          double o = 0.0;
          for (int64_t j = 0; j < p->S; j++)
            o += prob[j] * v.val[((b * p->Hkv + hk) * p->S + j) * p->Dv + c];
          float got = at4(&out, b, h, i, c);
          bad += !close_to(got, o, tol);
          delta += (double)got * go.val[row * p->Dv + c];
        }
        for (int64_t j = 0; j < p->S; j++) {
          double dp = 0.0;
          for (int64_t c = 0; c < p->Dv; c++) {
            double g = go.val[row * p->Dv + c];
            dp += g * v.val[((b * p->Hkv + hk) * p->S + j) * p->Dv + c];
            gv[((b * p->Hkv + hk) * p->S + j) * p->Dv + c] += prob[j] * g;
          }
          double ds = prob[j] * (dp - delta);
          if (p->mask == 1)
            bad += !close_to(((float *)dm.mem)[row * p->S + j], ds, tol);
          for (int64_t c = 0; c < p->D; c++) {
            gq[row * p->D + c] += ds * scale * k.val[((b * p->Hkv + hk) * p->S + j) * p->D + c];
            gk[((b * p->Hkv + hk) * p->S + j) * p->D + c] += ds * scale * q.val[row * p->D + c];
          }
        }
      }
  double gtol = p->dtype == TPU_FLOAT32 ? 1e-4 : tol * 4;
  for (int64_t i = 0; i < p->B * p->Hq * p->L * p->D; i++)
    bad += !close_to(get(dq.mem, p->dtype, i), gq[i], gtol);
  for (int64_t i = 0; i < p->B * p->Hkv * p->S * p->D; i++)
    bad += !close_to(get(dk.mem, p->dtype, i), gk[i], gtol);
  for (int64_t i = 0; i < p->B * p->Hkv * p->S * p->Dv; i++)
    bad += !close_to(get(dv.mem, p->dtype, i), gv[i], gtol);
  if (bad)
    fprintf(stderr, "  %d mismatches: B%lld Hq%lld Hkv%lld L%lld S%lld D%lld Dv%lld causal %d "
                    "mask %d dtype %s transposed %d\n",
            bad, (long long)p->B, (long long)p->Hq, (long long)p->Hkv, (long long)p->L,
            (long long)p->S, (long long)p->D, (long long)p->Dv, p->causal, p->mask,
            tpu_dtype_name(p->dtype), p->transposed);
  CHECK(bad == 0);
  free(prob), free(gq), free(gk), free(gv);
  drop(&q), drop(&k), drop(&v), drop(&go), drop(&out), drop(&lse), drop(&dq), drop(&dk);
  drop(&dv), drop(&dm);
  if (p->mask)
    drop(&mask);
}

/* Shapes across both kernels' blocks (64 queries; 256 and 128 keys). */
static void check_shapes(tpu_dtype dtype) {
  const problem shapes[] = {
      {1, 1, 1, 5, 7, 8, 8, false, 0, 0, false},
      {2, 4, 2, 70, 300, 24, 40, false, 0, 0, false},
      {2, 4, 2, 70, 300, 24, 40, true, 0, 0, false},
      {1, 2, 1, 130, 129, 16, 16, true, 1, 0, false},
      {2, 3, 3, 66, 140, 32, 32, false, 2, 0, true},
      {1, 2, 2, 200, 60, 8, 12, true, 2, 0, false},
      {1, 2, 1, 9, 300, 8, 8, false, 1, 0, true},
  };
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    problem p = shapes[s];
    p.dtype = dtype;
    check_problem(&p);
  }
}

static void test_f32_builtin(void) {
  tpu_matmul_set_blas(NULL);
  check_shapes(TPU_FLOAT32);
}

static void test_half_types(void) {
  tpu_matmul_set_blas(NULL);
  check_shapes(TPU_BFLOAT16);
  check_shapes(TPU_FLOAT16);
}

static void test_blas_and_threads(void) {
  tpu_blas fake = {.sgemm = fake_sgemm, .dgemm = NULL, .name = "fake"};
  tpu_matmul_set_blas(&fake);
  int threads = tpu_pool_threads();
  for (int t = 1; t <= 4; t += 3) {
    tpu_pool_set_threads(t);
    blas_calls = 0;
    check_shapes(TPU_FLOAT32);
    CHECK(blas_calls > 0);
  }
  tpu_pool_set_threads(threads);
  tpu_matmul_set_blas(NULL);
}

/* Views that do not fit the layout are refused, not read. */
static void test_bad_calls(void) {
  float mem[64] = {0};
  int64_t s4[4] = {1, 2, 2, 4}, k4[4] = {1, 3, 2, 4}, l3[3] = {1, 2, 2};
  tpu_tensor q = host_view(mem, TPU_FLOAT32, 4, s4, NULL);
  tpu_tensor k3 = host_view(mem, TPU_FLOAT32, 4, k4, NULL); /* 3 heads do not divide 2 */
  tpu_tensor lse = host_view(mem, TPU_FLOAT32, 3, l3, NULL);
  tpu_tensor qi = host_view(mem, TPU_INT32, 4, s4, NULL);
  tpu_scalar sc[2] = {SCALAR_F(1.0), SCALAR_I(0)};
  tpu_tensor heads[5] = {q, k3, k3, q, lse};
  CHECK(run_call(TPU_OP_SDPA, heads, 3, 2, sc, 2) == TPU_ERR_VALUE);
  tpu_tensor ints[5] = {qi, qi, qi, qi, lse};
  CHECK(run_call(TPU_OP_SDPA, ints, 3, 2, sc, 2) == TPU_ERR_TYPE);
  tpu_tensor short_lse[5] = {q, q, q, q, q};
  CHECK(run_call(TPU_OP_SDPA, short_lse, 3, 2, sc, 2) == TPU_ERR_VALUE);
  tpu_tensor bwd[9] = {q, q, q, q, q, lse, q, q, q};
  CHECK(run_call(TPU_OP_SDPA_BACKWARD, bwd, 6, 3, sc, 2) == TPU_OK);
  CHECK(run_call(TPU_OP_SDPA_BACKWARD, bwd, 5, 3, sc, 2) == TPU_ERR_VALUE);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_f32_builtin);
  RUN_TEST(test_half_types);
  RUN_TEST(test_blas_and_threads);
  RUN_TEST(test_bad_calls);
  TEST_MAIN_END();
}
