/* The convolution kernels against a direct double-precision reference: 1-, 2- and 3-d, strides,
 * padding, dilation, groups (depthwise too), bias, contiguous and channels-last layouts, pixel
 * tiles, float32/float64 exactly-representable values, bfloat16 rounding, the bias gradient, and
 * malformed calls. float32 with contiguous x takes the direct kernels (conv_direct.h) on CPUs with
 * AVX2, the other layouts and float64 the im2col ones, so both paths meet the same cases. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/engine/engine_pool.h"
#include "tpu_test.h"
#include "tpu_test_call.h"

typedef struct conv_case {
  int nd; /* spatial dims */
  int64_t n, c, k, g;
  int64_t in[3], ker[3], stride[3], pad[3], dil[3];
} conv_case;

/* Spatial dims padded on the left to 3 (size 1, stride 1, pad 0, dil 1). */
static int64_t sp(const conv_case *cc, const int64_t *v, int d, int64_t missing) {
  int lead = 3 - cc->nd;
  return d < lead ? missing : v[d - lead];
}

static int64_t out_size(const conv_case *cc, int d) {
  int64_t in = sp(cc, cc->in, d, 1), k = sp(cc, cc->ker, d, 1);
  return (in + 2 * sp(cc, cc->pad, d, 0) - sp(cc, cc->dil, d, 1) * (k - 1) - 1) /
             sp(cc, cc->stride, d, 1) + 1;
}

/* A logical [a, b, s0, s1, s2] tensor (5-d, leading spatial dims of size 1) in memory as
 * contiguous or channels-last, exposed to the kernel with nd + 2 dims. */
typedef struct buf {
  tpu_tensor t;
  void *mem;
  int64_t size[5], stride[5];
  tpu_dtype dtype;
} buf;

static buf make(const conv_case *cc, tpu_dtype d, int64_t a, int64_t b, const int64_t s[3],
                bool channels_last) {
  buf x = {.dtype = d};
  int64_t sizes[5] = {a, b, s[0], s[1], s[2]};
  memcpy(x.size, sizes, sizeof sizes);
  int order[5] = {0, 1, 2, 3, 4}, cl[5] = {0, 2, 3, 4, 1}; /* outermost first */
  const int *o = channels_last ? cl : order;
  int64_t step = 1;
  for (int i = 4; i >= 0; i--) {
    x.stride[o[i]] = step;
    step *= sizes[o[i]];
  }
  x.mem = calloc((size_t)(step ? step : 1), tpu_dtype_size(d));
  int nd = cc->nd + 2;
  int64_t ts[5], tst[5];
  for (int i = 0; i < nd; i++) {
    int from = i < 2 ? i : i + (3 - cc->nd);
    ts[i] = sizes[from];
    tst[i] = x.stride[from];
  }
  x.t = host_view(x.mem, d, nd, ts, tst);
  return x;
}

static char *at(const buf *x, const int64_t i[5]) {
  int64_t off = 0;
  for (int d = 0; d < 5; d++)
    off += i[d] * x->stride[d];
  return (char *)x->mem + off * (int64_t)tpu_dtype_size(x->dtype);
}

static double get(const buf *x, const int64_t i[5]) {
  const char *p = at(x, i);
  switch (x->dtype) {
  case TPU_FLOAT64: return *(const double *)p;
  case TPU_FLOAT32: return *(const float *)p;
  default: return tpu_bf16_to_f32(*(const uint16_t *)p);
  }
}

static void set(buf *x, const int64_t i[5], double v) {
  char *p = at(x, i);
  switch (x->dtype) {
  case TPU_FLOAT64: *(double *)p = v; break;
  case TPU_FLOAT32: *(float *)p = (float)v; break;
  default: *(uint16_t *)p = tpu_f32_to_bf16((float)v); break;
  }
}

static int64_t numel(const buf *x) {
  return x->size[0] * x->size[1] * x->size[2] * x->size[3] * x->size[4];
}

static void unflat(const buf *x, int64_t f, int64_t i[5]) {
  for (int d = 4; d >= 0; d--) {
    i[d] = f % x->size[d];
    f /= x->size[d];
  }
}

/* Small integers (exact in every dtype and in float sums), varied by seed. */
static void fill(buf *x, int seed) {
  for (int64_t f = 0; f < numel(x); f++) {
    int64_t i[5];
    unflat(x, f, i);
    set(x, i, (double)((f * 7 + seed * 13) % 9) - 4.0);
  }
}

static void release(buf *x) { free(x->mem); }

static tpu_scalar packed(const conv_case *cc, const int64_t *v, int64_t missing) {
  return SCALAR_U(tpu_conv_pack(sp(cc, v, 0, missing), sp(cc, v, 1, missing),
                                sp(cc, v, 2, missing)));
}

static tpu_status run(const conv_case *cc, tpu_op_id op, const tpu_tensor *t, int n_in) {
  tpu_scalar s[3] = {packed(cc, cc->stride, 1), packed(cc, cc->pad, 0), packed(cc, cc->dil, 1)};
  return run_call(op, t, n_in, 1, s, 3);
}

/* Input coordinate of output o at kernel offset k along spatial dim d; -1 when in the padding. */
static int64_t src_coord(const conv_case *cc, int d, int64_t o, int64_t k) {
  int64_t i = o * sp(cc, cc->stride, d, 1) - sp(cc, cc->pad, d, 0) + k * sp(cc, cc->dil, d, 1);
  return i >= 0 && i < sp(cc, cc->in, d, 1) ? i : -1;
}

/* Calls visit(y index, x index, w index) for every multiply of the convolution. */
typedef void (*visit_fn)(const int64_t yi[5], const int64_t xi[5], const int64_t wi[5], void *);

static void each_term(const conv_case *cc, const buf *y, const buf *w, visit_fn visit, void *ctx) {
  int64_t cg = cc->c / cc->g, kg = cc->k / cc->g;
  for (int64_t f = 0; f < numel(y); f++) {
    int64_t yi[5];
    unflat(y, f, yi);
    int64_t g = yi[1] / kg;
    for (int64_t c = 0; c < cg; c++)
      for (int64_t k0 = 0; k0 < w->size[2]; k0++)
        for (int64_t k1 = 0; k1 < w->size[3]; k1++)
          for (int64_t k2 = 0; k2 < w->size[4]; k2++) {
            int64_t s0 = src_coord(cc, 0, yi[2], k0), s1 = src_coord(cc, 1, yi[3], k1),
                    s2 = src_coord(cc, 2, yi[4], k2);
            if (s0 < 0 || s1 < 0 || s2 < 0)
              continue;
            int64_t xi[5] = {yi[0], g * cg + c, s0, s1, s2}, wi[5] = {yi[1], c, k0, k1, k2};
            visit(yi, xi, wi, ctx);
          }
  }
}

typedef struct refs {
  const buf *x, *y, *w;
  double *ry, *rx, *rw; /* reference results, indexed like the bufs' logical order */
} refs;

static int64_t flat(const buf *b, const int64_t i[5]) {
  int64_t f = 0;
  for (int d = 0; d < 5; d++)
    f = f * b->size[d] + i[d];
  return f;
}

static void accumulate(const int64_t yi[5], const int64_t xi[5], const int64_t wi[5], void *ctx) {
  refs *r = ctx;
  r->ry[flat(r->y, yi)] += get(r->x, xi) * get(r->w, wi);
  r->rx[flat(r->x, xi)] += get(r->y, yi) * get(r->w, wi);
  r->rw[flat(r->w, wi)] += get(r->y, yi) * get(r->x, xi);
}

/* |got - want| within tol (relative for the rounded dtypes). */
static bool close(double got, double want, double tol) {
  return fabs(got - want) <= tol * (1.0 + fabs(want));
}

static bool matches(const buf *b, const double *ref, double tol) {
  for (int64_t f = 0; f < numel(b); f++) {
    int64_t i[5];
    unflat(b, f, i);
    if (!close(get(b, i), ref[f], tol)) {
      fprintf(stderr, "  element %lld: got %g, want %g\n", (long long)f, get(b, i), ref[f]);
      return false;
    }
  }
  return true;
}

/* Forward (with bias), backward input (with the input's bias, as a transposed convolution
 * does), backward weight and the bias gradient of one case, against the reference. */
static void check_case(const conv_case *cc, tpu_dtype d, bool cl_x, bool cl_w) {
  int64_t in3[3], out3[3], ker3[3];
  for (int i = 0; i < 3; i++) {
    in3[i] = sp(cc, cc->in, i, 1);
    out3[i] = out_size(cc, i);
    ker3[i] = sp(cc, cc->ker, i, 1);
  }
  int64_t bias_c[3] = {1, 1, cc->k}, bias_x[3] = {1, 1, cc->c};
  buf x = make(cc, d, cc->n, cc->c, in3, cl_x), w = make(cc, d, cc->k, cc->c / cc->g, ker3, cl_w);
  buf y = make(cc, d, cc->n, cc->k, out3, cl_x), dx = make(cc, d, cc->n, cc->c, in3, cl_x);
  buf dw = make(cc, d, cc->k, cc->c / cc->g, ker3, cl_w), dy = make(cc, d, cc->n, cc->k, out3, cl_x);
  conv_case flat1 = {.nd = 1};
  buf b = make(&flat1, d, 1, 1, bias_c, false), bx = make(&flat1, d, 1, 1, bias_x, false);
  buf db = make(&flat1, d, 1, 1, bias_c, false);
  fill(&x, 1);
  fill(&w, 2);
  fill(&dy, 3);
  fill(&b, 4);
  fill(&bx, 5);
  tpu_tensor bias = vec(b.mem, d, cc->k), bias_in = vec(bx.mem, d, cc->c);
  tpu_tensor dbias = vec(db.mem, d, cc->k);

  refs r = {&x, &dy, &w, calloc((size_t)numel(&y), sizeof(double)),
            calloc((size_t)numel(&x), sizeof(double)), calloc((size_t)numel(&w), sizeof(double))};
  each_term(cc, &dy, &w, accumulate, &r);
  /* r.ry holds conv(x, w); r.rx and r.rw use dy as the output gradient. */
  double tol = d == TPU_BFLOAT16 ? 1.0 / 128 : 0.0;
  double *want_y = malloc(sizeof(double) * (size_t)numel(&y));
  for (int64_t f = 0; f < numel(&y); f++) {
    int64_t i[5];
    unflat(&y, f, i);
    want_y[f] = r.ry[f] + get(&b, (int64_t[5]){0, 0, 0, 0, i[1]});
  }
  double *want_x = malloc(sizeof(double) * (size_t)numel(&x));
  for (int64_t f = 0; f < numel(&x); f++) {
    int64_t i[5];
    unflat(&x, f, i);
    want_x[f] = r.rx[f] + get(&bx, (int64_t[5]){0, 0, 0, 0, i[1]});
  }
  double *want_b = calloc((size_t)cc->k, sizeof(double));
  for (int64_t f = 0; f < numel(&dy); f++) {
    int64_t i[5];
    unflat(&dy, f, i);
    want_b[i[1]] += get(&dy, i);
  }

  tpu_tensor t[4] = {x.t, w.t, bias, y.t};
  CHECK_OK(run(cc, TPU_OP_CONV, t, 3));
  CHECK(matches(&y, want_y, tol));
  tpu_tensor tb[4] = {dy.t, w.t, bias_in, dx.t};
  CHECK_OK(run(cc, TPU_OP_CONV_BACKWARD_INPUT, tb, 3));
  CHECK(matches(&dx, want_x, tol));
  tpu_tensor tw[3] = {dy.t, x.t, dw.t};
  CHECK_OK(run(cc, TPU_OP_CONV_BACKWARD_WEIGHT, tw, 2));
  CHECK(matches(&dw, r.rw, tol));
  tpu_tensor tbias[2] = {dy.t, dbias};
  CHECK_OK(run_call(TPU_OP_CONV_BACKWARD_BIAS, tbias, 1, 1, NULL, 0));
  CHECK(matches(&db, want_b, tol));

  free(want_y);
  free(want_x);
  free(want_b);
  free(r.ry);
  free(r.rx);
  free(r.rw);
  buf *all[] = {&x, &w, &y, &dx, &dw, &dy, &b, &bx, &db};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    release(all[i]);
}

static const conv_case CASES[] = {
    /* 2-d: asymmetric kernel, stride, padding, dilation, two groups */
    {2, 2, 4, 6, 2, {7, 6}, {3, 2}, {2, 1}, {1, 0}, {1, 2}},
    /* 1-d: stride 2, padding wider than the kernel's reach */
    {1, 3, 3, 4, 1, {10}, {3}, {2}, {2}, {1}},
    /* 3-d */
    {3, 1, 2, 2, 1, {4, 5, 3}, {2, 3, 2}, {1, 1, 2}, {1, 1, 0}, {1, 1, 1}},
    /* depthwise 3x3 */
    {2, 2, 4, 4, 4, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
    /* 1x1, stride 2 (ResNet's projection) */
    {2, 2, 3, 5, 1, {6, 6}, {1, 1}, {2, 2}, {0, 0}, {1, 1}},
    /* many pixels and long columns: several pixel tiles per image */
    {2, 1, 64, 3, 1, {20, 20}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
    /* Rows wide enough for the direct kernels: */
    /* 7 output channels (a full block of 4 and one of 3), dilated rows */
    {2, 2, 5, 7, 1, {9, 40}, {3, 3}, {1, 1}, {1, 1}, {2, 1}},
    /* 1-d, padding wider than the kernel's reach: the input gradient cannot pad dy */
    {1, 2, 3, 4, 1, {30}, {3}, {1}, {3}, {1}},
    /* stride 2 (phase planes), 5 output channels (blocks of 4 and 1), two groups */
    {2, 2, 6, 10, 2, {6, 35}, {3, 3}, {2, 2}, {1, 1}, {1, 1}},
    /* 3-d, strides 1 and 3 */
    {3, 1, 3, 4, 1, {3, 4, 50}, {3, 2, 3}, {1, 1, 3}, {1, 0, 1}, {1, 1, 1}},
};

static void test_float64_and_float32(void) {
  for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
    const conv_case *cc = &CASES[i];
    check_case(cc, TPU_FLOAT64, false, false);
    check_case(cc, TPU_FLOAT32, false, false);
    if (cc->nd >= 2) {
      check_case(cc, TPU_FLOAT32, true, true);
      check_case(cc, TPU_FLOAT64, true, false);
      check_case(cc, TPU_FLOAT32, false, true);
    }
  }
}

static void test_bfloat16(void) {
  check_case(&CASES[0], TPU_BFLOAT16, false, false);
  check_case(&CASES[3], TPU_BFLOAT16, true, true);
}

/* The same results on one thread as on several (the weight gradient's partials included). */
static void test_threads(void) {
  int threads = tpu_pool_threads();
  tpu_pool_set_threads(3);
  check_case(&CASES[5], TPU_FLOAT32, false, false);
  check_case(&CASES[0], TPU_FLOAT64, true, true);
  tpu_pool_set_threads(1);
  check_case(&CASES[5], TPU_FLOAT32, true, true);
  tpu_pool_set_threads(threads);
}

static void test_empty_batch(void) {
  conv_case cc = CASES[0];
  cc.n = 0;
  check_case(&cc, TPU_FLOAT32, false, false);
}

static void test_malformed(void) {
  const conv_case *cc = &CASES[0];
  int64_t in3[3] = {1, 7, 6}, bad3[3] = {1, 4, 5}, ker3[3] = {1, 3, 2};
  buf x = make(cc, TPU_FLOAT32, 2, 4, in3, false), w = make(cc, TPU_FLOAT32, 6, 2, ker3, false);
  buf y = make(cc, TPU_FLOAT32, 2, 6, bad3, false), yd = make(cc, TPU_FLOAT64, 2, 6, bad3, false);
  tpu_tensor t[3] = {x.t, w.t, y.t};
  CHECK(run(cc, TPU_OP_CONV, t, 2) == TPU_ERR_VALUE); /* output size does not follow */
  t[2] = yd.t;
  CHECK(run(cc, TPU_OP_CONV, t, 2) == TPU_ERR_VALUE); /* dtypes differ */
  tpu_tensor tb[2] = {x.t, w.t};
  CHECK(run_call(TPU_OP_CONV_BACKWARD_BIAS, tb, 1, 1, NULL, 0) == TPU_ERR_VALUE);
  release(&x);
  release(&w);
  release(&y);
  release(&yd);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_float64_and_float32);
  RUN_TEST(test_bfloat16);
  RUN_TEST(test_threads);
  RUN_TEST(test_empty_batch);
  RUN_TEST(test_malformed);
  TEST_MAIN_END();
}
