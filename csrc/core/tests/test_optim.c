/* Optimizer and gradient-scaler kernels against the formulas of PyTorch's plain implementations. */
#include <math.h>
#include <stdlib.h>

#include "tpu_test.h"
#include "tpu_test_host.h"

static tpu_status run(tpu_op_id op, const tpu_tensor *tensors, int n_in, int n_out,
                      const tpu_scalar *scalars, int n_scalars) {
  tpu_op_call *call = tpu_op_call_new(op, n_in, n_out);
  for (int i = 0; i < n_in + n_out; i++)
    call->tensors[i] = tensors[i];
  for (int i = 0; i < n_scalars; i++)
    call->scalars[i] = scalars[i];
  tpu_status st = tpu_host_kernel(op)(call);
  tpu_op_call_free(call);
  return st;
}

static tpu_tensor vec(float *mem, int64_t n) { return host_view(mem, TPU_FLOAT32, 1, &n, NULL); }

static void test_adamw_matches_formula(void) {
  enum { N = 100003 }; /* large enough to split over threads */
  float *p = malloc(N * sizeof *p), *g = malloc(N * sizeof *g), *m = calloc(N, sizeof *m),
        *v = calloc(N, sizeof *v);
  for (int i = 0; i < N; i++) {
    p[i] = (float)sin(i);
    g[i] = (float)cos(i * 0.5);
  }
  float step = 3.0f;
  tpu_tensor t[5] = {vec(&step, 1), vec(p, N), vec(g, N), vec(m, N), vec(v, N)};
  tpu_scalar s[6] = {{.f = 1e-2}, {.f = 0.9}, {.f = 0.999}, {.f = 0.1}, {.f = 1e-8},
                     {.u = TPU_ADAM_DECOUPLED}};
  CHECK_OK(run(TPU_OP_FUSED_ADAM, t, 1, 4, s, 6));
  int ok = 1;
  for (int i = 0; i < N; i += 997) {
    double p0 = sin(i), g0 = (float)cos(i * 0.5);
    double p1 = p0 * (1 - 1e-2 * 0.1), m1 = 0.1 * g0, v1 = 0.001 * g0 * g0;
    double denom = sqrt(v1) / sqrt(1 - pow(0.999, 3)) + 1e-8;
    double expected = p1 - 1e-2 / (1 - pow(0.9, 3)) * m1 / denom;
    ok &= fabs(p[i] - expected) < 1e-5 && fabs(m[i] - m1) < 1e-6;
  }
  CHECK(ok);
  free(p), free(g), free(m), free(v);
}

static void test_found_inf_skips_and_grad_scale_unscales(void) {
  float p[2] = {1, 2}, g[2] = {4, 8}, m[2] = {0}, v[2] = {0}, step = 1, scale = 2, inf = 1;
  tpu_tensor t[8] = {vec(&step, 1), vec(&scale, 1), vec(&inf, 1),
                     vec(p, 2),     vec(g, 2),      vec(m, 2), vec(v, 2)};
  tpu_scalar s[6] = {{.f = 0.1}, {.f = 0.9}, {.f = 0.99}, {.f = 0}, {.f = 1e-8},
                     {.u = TPU_ADAM_GRAD_SCALE | TPU_ADAM_FOUND_INF}};
  CHECK_OK(run(TPU_OP_FUSED_ADAM, t, 3, 4, s, 6));
  CHECK(p[0] == 1 && p[1] == 2 && g[0] == 4); /* skipped entirely */
  inf = 0;
  CHECK_OK(run(TPU_OP_FUSED_ADAM, t, 3, 4, s, 6));
  CHECK(g[0] == 2 && g[1] == 4); /* unscaled in place */
  CHECK(p[0] < 1 && p[1] < 2);
}

static void test_sgd_momentum_and_nesterov(void) {
  float p[1] = {1}, g[1] = {0.5f}, buf[1] = {0};
  tpu_tensor t[3] = {vec(p, 1), vec(g, 1), vec(buf, 1)};
  tpu_scalar s[5] = {{.f = 0.1}, {.f = 0}, {.f = 0.9}, {.f = 0}, {.u = TPU_SGD_FIRST_STEP}};
  CHECK_OK(run(TPU_OP_FUSED_SGD, t, 0, 3, s, 5));
  CHECK(buf[0] == 0.5f && fabsf(p[0] - 0.95f) < 1e-7f);
  s[4].u = TPU_SGD_NESTEROV;
  CHECK_OK(run(TPU_OP_FUSED_SGD, t, 0, 3, s, 5));
  float buf2 = 0.9f * 0.5f + 0.5f, expected = 0.95f - 0.1f * (0.5f + 0.9f * buf2);
  CHECK(fabsf(buf[0] - buf2) < 1e-7f && fabsf(p[0] - expected) < 1e-6f);
}

static void test_grad_scaler(void) {
  float g[3] = {2, 4, 6}, inv = 0.5f, found = 0;
  tpu_tensor t[3] = {vec(&inv, 1), vec(g, 3), vec(&found, 1)};
  CHECK_OK(run(TPU_OP_AMP_UNSCALE, t, 1, 2, NULL, 0));
  CHECK(g[0] == 1 && g[2] == 3 && found == 0);
  g[1] = INFINITY;
  CHECK_OK(run(TPU_OP_AMP_UNSCALE, t, 1, 2, NULL, 0));
  CHECK(found == 1);

  float scale = 8;
  int32_t tracker = 1;
  int64_t one = 1;
  tpu_tensor u[3] = {vec(&found, 1), vec(&scale, 1), host_view(&tracker, TPU_INT32, 1, &one, NULL)};
  tpu_scalar s[3] = {{.f = 2}, {.f = 0.5}, {.i = 2}};
  CHECK_OK(run(TPU_OP_AMP_UPDATE_SCALE, u, 1, 2, s, 3));
  CHECK(scale == 4 && tracker == 0); /* backed off */
  found = 0;
  CHECK_OK(run(TPU_OP_AMP_UPDATE_SCALE, u, 1, 2, s, 3));
  CHECK(scale == 4 && tracker == 1);
  CHECK_OK(run(TPU_OP_AMP_UPDATE_SCALE, u, 1, 2, s, 3));
  CHECK(scale == 8 && tracker == 0); /* grew after growth_interval good steps */
}

static void test_bad_shapes_rejected(void) {
  float p[2] = {0}, g[3] = {0}, step = 1;
  tpu_tensor t[5] = {vec(&step, 1), vec(p, 2), vec(g, 3), vec(p, 2), vec(p, 2)};
  tpu_scalar s[6] = {{.f = 0.1}, {.f = 0.9}, {.f = 0.99}, {.f = 0}, {.f = 1e-8}, {.u = 0}};
  CHECK(run(TPU_OP_FUSED_ADAM, t, 1, 4, s, 6) == TPU_ERR_RUNTIME);
  int32_t tracker = 0;
  int64_t one = 1;
  tpu_tensor u[3] = {vec(&step, 1), host_view(&tracker, TPU_INT32, 1, &one, NULL), vec(p, 1)};
  CHECK(run(TPU_OP_AMP_UPDATE_SCALE, u, 1, 2, s, 3) == TPU_ERR_RUNTIME);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_adamw_matches_formula);
  RUN_TEST(test_found_inf_skips_and_grad_scale_unscales);
  RUN_TEST(test_sgd_momentum_and_nesterov);
  RUN_TEST(test_grad_scaler);
  RUN_TEST(test_bad_shapes_rejected);
  TEST_MAIN_END();
}
