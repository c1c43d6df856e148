/* The nn family's kernels: embedding backward (padding, frequency scaling, duplicates summed in
 * order for any thread count), nll_loss and mse_loss forward and backward. */
#include <math.h>
#include <stdlib.h>

#include "drivers/host/engine/engine_pool.h"
#include "tpu_test.h"
#include "tpu_test_call.h"

static void test_embedding_backward(void) {
  enum { N = 50000, V = 6, D = 5 };
  float *grad = malloc(sizeof(float) * N * D), expect[V * D] = {0}, gw[V * D];
  int64_t *idx = malloc(sizeof(int64_t) * N), counts[V];
  int64_t freq[V] = {0};
  for (int n = 0; n < N; n++) {
    idx[n] = (n * 13) % V;
    freq[idx[n]]++;
    for (int d = 0; d < D; d++)
      grad[n * D + d] = 1.0f / (float)(1 + (n + d) % 53);
  }
  for (int n = 0; n < N; n++)
    for (int d = 0; d < D; d++)
      if (idx[n] != 2)
        expect[idx[n] * D + d] += grad[n * D + d] * (float)(1.0 / (double)freq[idx[n]]);
  for (int threads = 1; threads <= 3; threads++) {
    tpu_pool_set_threads(threads);
    tpu_tensor t[4] = {mat(grad, TPU_FLOAT32, N, D), vec(idx, TPU_INT64, N),
                       mat(gw, TPU_FLOAT32, V, D), vec(counts, TPU_INT64, V)};
    tpu_scalar s[2] = {{.i = 2}, {.i = 1}};
    CHECK_OK(run_call(TPU_OP_EMBEDDING_BACKWARD, t, 2, 2, s, 2));
    CHECK(memcmp(gw, expect, sizeof gw) == 0);
  }
  /* an index out of range (other than padding_idx) is refused before writing */
  idx[7] = V;
  gw[0] = 42;
  tpu_tensor t[3] = {mat(grad, TPU_FLOAT32, N, D), vec(idx, TPU_INT64, N),
                     mat(gw, TPU_FLOAT32, V, D)};
  tpu_scalar s[2] = {{.i = -1}, {.i = 0}};
  CHECK(run_call(TPU_OP_EMBEDDING_BACKWARD, t, 2, 1, s, 2) == TPU_ERR_INDEX);
  CHECK(gw[0] == 42);
  idx[7] = -1; /* equal to padding_idx: skipped, as on PyTorch CPU */
  CHECK_OK(run_call(TPU_OP_EMBEDDING_BACKWARD, t, 2, 1, s, 2));
  free(grad);
  free(idx);
}

static void test_nll_loss(void) {
  /* input [3, 4, 1], targets {1, -100 (ignored), 3}, weights */
  float in[12] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f, 1.0f, 1.1f, 1.2f};
  int64_t target[3] = {1, -100, 3};
  float w[4] = {1, 2, 3, 4}, out, total;
  const int64_t isz[3] = {3, 4, 1};
  tpu_tensor t[5] = {host_view(in, TPU_FLOAT32, 3, isz, NULL), mat(target, TPU_INT64, 3, 1),
                     vec(w, TPU_FLOAT32, 4), host_view(&out, TPU_FLOAT32, 0, NULL, NULL),
                     host_view(&total, TPU_FLOAT32, 0, NULL, NULL)};
  tpu_scalar s[2] = {{.i = 1}, {.i = -100}};
  CHECK_OK(run_call(TPU_OP_NLL_LOSS, t, 3, 2, s, 2));
  CHECK(total == 6.0f);
  CHECK(fabsf(out - (-(0.2f * 2 + 1.2f * 4) / 6)) < 1e-6f);
  /* backward of the mean: -w[t] * grad / total at the target, 0 elsewhere */
  float go = 3.0f, gi[12];
  tpu_tensor b[5] = {host_view(&go, TPU_FLOAT32, 0, NULL, NULL), mat(target, TPU_INT64, 3, 1),
                     host_view(&total, TPU_FLOAT32, 0, NULL, NULL), vec(w, TPU_FLOAT32, 4),
                     host_view(gi, TPU_FLOAT32, 3, isz, NULL)};
  CHECK_OK(run_call(TPU_OP_NLL_LOSS_BACKWARD, b, 4, 1, s, 2));
  CHECK(gi[1] == -1.0f && gi[11] == -2.0f && gi[0] == 0 && gi[5] == 0);
  /* a target out of range */
  target[2] = 4;
  CHECK(run_call(TPU_OP_NLL_LOSS, t, 3, 2, s, 2) == TPU_ERR_INDEX);
  CHECK(strcmp(tpu_last_error(), "Target 4 is out of bounds.") == 0);
}

static void test_mse_loss(void) {
  uint16_t a[3], b[3], out[3], sum;
  const float av[3] = {1.0f, 2.5f, -3.0f}, bv[3] = {0.5f, 2.5f, 1.0f};
  for (int i = 0; i < 3; i++) {
    a[i] = tpu_f32_to_bf16(av[i]);
    b[i] = tpu_f32_to_bf16(bv[i]);
  }
  tpu_tensor t[3] = {vec(a, TPU_BFLOAT16, 3), vec(b, TPU_BFLOAT16, 3), vec(out, TPU_BFLOAT16, 3)};
  tpu_scalar s[1] = {{.i = 0}};
  CHECK_OK(run_call(TPU_OP_MSE_LOSS, t, 2, 1, s, 1));
  CHECK(tpu_bf16_to_f32(out[0]) == 0.25f && tpu_bf16_to_f32(out[2]) == 16.0f);
  t[2] = host_view(&sum, TPU_BFLOAT16, 0, NULL, NULL);
  s[0].i = 2;
  CHECK_OK(run_call(TPU_OP_MSE_LOSS, t, 2, 1, s, 1));
  CHECK(tpu_bf16_to_f32(sum) == 16.25f);
  double go[2] = {1, 1}, x[2] = {3, 1}, y[2] = {1, 1}, gi[2];
  tpu_tensor g[4] = {vec(go, TPU_FLOAT64, 2), vec(x, TPU_FLOAT64, 2), vec(y, TPU_FLOAT64, 2),
                     vec(gi, TPU_FLOAT64, 2)};
  tpu_scalar norm = {.f = 1.0};
  CHECK_OK(run_call(TPU_OP_MSE_LOSS_BACKWARD, g, 3, 1, &norm, 1));
  CHECK(gi[0] == 2.0 && gi[1] == 0.0);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_embedding_backward);
  RUN_TEST(test_nll_loss);
  RUN_TEST(test_mse_loss);
  TEST_MAIN_END();
}
