/* Debug mode's per-op checks: the non-finite scan (every floating dtype, strided views, big views
 * split over the pool), the NaN check's blame rule on launched ops (the op that makes the value
 * fails; ops that pass one on, and every op outside debug mode, do not), and the op trace. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/engine/engine_nonfinite.h"
#include "drivers/host/engine/engine_pool.h"
#include "device/tpu_stream.h"
#include "ops/tpu_op_debug.h"
#include "ops/tpu_op_trace.h"
#include "tpu_test.h"
#include "tpu_test_host.h"

/* Fills n elements of `dtype` at mem with `bits` (one element's little-endian bit pattern). */
static void set_bits(void *mem, tpu_dtype dtype, int64_t n, uint64_t bits) {
  size_t size = tpu_dtype_size(dtype);
  for (int64_t i = 0; i < n; i++)
    memcpy((char *)mem + (size_t)i * size, &bits, size);
}

typedef struct dtype_case {
  tpu_dtype dtype;
  uint64_t finite[4]; /* largest finite, smallest subnormal, -0, 1.0 */
  uint64_t nan, inf, minus_inf;
} dtype_case;

static const dtype_case cases[] = {
    {TPU_FLOAT16, {0x7bff, 0x0001, 0x8000, 0x3c00}, 0x7e00, 0x7c00, 0xfc00},
    {TPU_BFLOAT16, {0x7f7f, 0x0001, 0x8000, 0x3f80}, 0x7fc0, 0x7f80, 0xff80},
    {TPU_FLOAT32, {0x7f7fffff, 0x1, 0x80000000, 0x3f800000}, 0x7fc00000, 0x7f800000, 0xff800000},
    {TPU_FLOAT64,
     {0x7fefffffffffffff, 0x1, 0x8000000000000000, 0x3ff0000000000000},
     0x7ff8000000000000,
     0x7ff0000000000000,
     0xfff0000000000000},
};

static void test_scan_dtypes(void) {
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const dtype_case *k = &cases[c];
    uint64_t mem[40];
    int64_t n = 37; /* not a multiple of any vector width */
    tpu_tensor t = host_view(mem, k->dtype, 1, &n, NULL);
    for (int f = 0; f < 4; f++) {
      set_bits(mem, k->dtype, n, k->finite[f]);
      CHECK(!tpu_has_nonfinite(&t));
    }
    const uint64_t bad[3] = {k->nan, k->inf, k->minus_inf};
    for (int b = 0; b < 3; b++) {
      set_bits(mem, k->dtype, n, k->finite[3]);
      set_bits((char *)mem + 35 * tpu_dtype_size(k->dtype), k->dtype, 1, bad[b]);
      CHECK(tpu_has_nonfinite(&t));
      int64_t index = -1;
      double value = 0;
      CHECK(tpu_first_nonfinite(&t, &index, &value));
      CHECK(index == 35);
      CHECK(b == 0 ? isnan(value) : value == (b == 1 ? INFINITY : -INFINITY));
    }
  }
  /* Dtypes that cannot hold NaN, and empty views. */
  int32_t ints[4] = {-1, 0x7f800000, 0x7fc00000, 1};
  int64_t four = 4, none = 0;
  tpu_tensor t = host_view(ints, TPU_INT32, 1, &four, NULL);
  CHECK(!tpu_dtype_has_nonfinite(TPU_INT32) && !tpu_has_nonfinite(&t));
  float nan = NAN;
  t = host_view(&nan, TPU_FLOAT32, 1, &none, NULL);
  CHECK(!tpu_has_nonfinite(&t));
  t = host_view(&nan, TPU_FLOAT32, 0, NULL, NULL); /* 0-d */
  CHECK(tpu_has_nonfinite(&t));
}

static void test_scan_complex(void) {
  float c64[6] = {1, 2, 3, 4, 5, 6};
  int64_t n = 3;
  tpu_tensor t = host_view(c64, TPU_COMPLEX64, 1, &n, NULL);
  CHECK(!tpu_has_nonfinite(&t));
  c64[3] = -INFINITY; /* imaginary part of element 1 */
  int64_t index = -1;
  double value = 0;
  CHECK(tpu_has_nonfinite(&t) && tpu_first_nonfinite(&t, &index, &value));
  CHECK(index == 1 && value == -INFINITY);
  /* Every other element: element 1 is skipped. */
  int64_t two = 2, stride = 2;
  t = host_view(c64, TPU_COMPLEX64, 1, &two, &stride);
  CHECK(!tpu_has_nonfinite(&t));
  double c128[4] = {0, NAN, 1, 1};
  t = host_view(c128, TPU_COMPLEX128, 1, &two, NULL);
  CHECK(tpu_first_nonfinite(&t, &index, &value) && index == 0 && isnan(value));
}

static void test_scan_strided(void) {
  /* A [4, 3] transposed view of a 3x5 row-major block whose last two columns are outside it. */
  float mem[15];
  for (int i = 0; i < 15; i++)
    mem[i] = (float)i;
  const int64_t sizes[2] = {4, 3}, strides[2] = {1, 5};
  tpu_tensor t = host_view(mem, TPU_FLOAT32, 2, sizes, strides);
  mem[4] = NAN; /* column 4: outside the view */
  mem[9] = INFINITY;
  mem[14] = NAN;
  CHECK(!tpu_has_nonfinite(&t));
  /* mem[2] is view element [2, 0] (flat 6) and first in memory; mem[6] is [1, 1] (flat 4), first
   * in logical order. */
  mem[2] = INFINITY;
  mem[6] = NAN;
  int64_t index = -1;
  double value = 0;
  CHECK(tpu_has_nonfinite(&t));
  CHECK(tpu_first_nonfinite(&t, &index, &value) && index == 4 && isnan(value));
}

static void test_scan_parallel(void) {
  int threads = tpu_pool_threads();
  tpu_pool_set_threads(4);
  int64_t n = 300001;
  uint16_t *mem = malloc((size_t)n * sizeof *mem);
  tpu_tensor t = host_view(mem, TPU_BFLOAT16, 1, &n, NULL);
  set_bits(mem, TPU_BFLOAT16, n, 0x3f80);
  CHECK(!tpu_has_nonfinite(&t));
  const int64_t spots[3] = {0, 150000, 300000}; /* in the first, a middle and the last chunk */
  for (int s = 0; s < 3; s++) {
    mem[spots[s]] = 0xff80;
    int64_t index = -1;
    double value = 0;
    CHECK(tpu_has_nonfinite(&t));
    CHECK(tpu_first_nonfinite(&t, &index, &value) && index == spots[s] && value == -INFINITY);
    mem[spots[s]] = 0x3f80;
  }
  free(mem);
  tpu_pool_set_threads(threads);
}

/* ---- the check on launched ops ---- */

static tpu_tensor vec_view(tpu_buffer *buf, void *host, tpu_dtype dtype, int64_t n) {
  tpu_tensor t = {.buf = buf, .host = host, .dtype = dtype, .ndim = 1};
  t.sizes[0] = n;
  t.strides[0] = 1;
  return t;
}

static tpu_status launch(tpu_op_id op, tpu_tensor a, const tpu_tensor *b, tpu_tensor out) {
  tpu_op_call *call = tpu_op_call_new(op, b ? 2 : 1, 1);
  call->compute = out.dtype;
  call->scalars[0].f = 1.0;
  call->tensors[0] = a;
  if (b)
    call->tensors[1] = *b;
  call->tensors[b ? 2 : 1] = out;
  return tpu_submit(tpu_stream_get(0, 0), call);
}

static tpu_status upload(const float *host, tpu_buffer *dst, int64_t n) {
  return launch(TPU_OP_COPY, vec_view(NULL, (void *)host, TPU_FLOAT32, n), NULL,
                vec_view(dst, NULL, TPU_FLOAT32, n));
}

static bool error_has(const char *text) { return strstr(tpu_last_error(), text) != NULL; }

static void test_nan_check(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  tpu_buffer *a, *b, *out, *half;
  CHECK_OK(tpu_buffer_create(0, 0, 4 * sizeof(float), &a));
  CHECK_OK(tpu_buffer_create(0, 0, 4 * sizeof(float), &b));
  CHECK_OK(tpu_buffer_create(0, 0, 4 * sizeof(float), &out));
  CHECK_OK(tpu_buffer_create(0, 0, 4 * sizeof(uint16_t), &half));
  const float ones[4] = {1, 2, 3, 4}, zeros[4] = {1, 0, 1, 1}, big[4] = {1, 1e5f, 1, 1};
  tpu_tensor ta = vec_view(a, NULL, TPU_FLOAT32, 4), tb = vec_view(b, NULL, TPU_FLOAT32, 4);
  tpu_tensor tout = vec_view(out, NULL, TPU_FLOAT32, 4);
  tpu_set_default_eager_mode(TPU_EAGER_DEBUG);
  tpu_set_nan_check(true);
  CHECK(tpu_nan_check() && tpu_op_debug_requested());
  CHECK_OK(upload(ones, a, 4));
  CHECK_OK(upload(zeros, b, 4));
  /* 2 / 0: the op that makes the infinity fails, naming itself and the element. */
  CHECK(launch(TPU_OP_DIV, ta, &tb, tout) == TPU_ERR_RUNTIME);
  CHECK(error_has("tpu op 'div' produced inf in output 0 (float32, shape [4]) at index [1], "
                  "from finite inputs"));
  /* The output keeps what the kernel wrote, and an op passing the infinity on is not blamed. */
  float got[4];
  CHECK_OK(launch(TPU_OP_COPY, tout, NULL, vec_view(NULL, got, TPU_FLOAT32, 4)));
  CHECK(got[0] == 1 && got[1] == INFINITY);
  CHECK_OK(launch(TPU_OP_EXP, tout, NULL, tout)); /* in place: its input held inf before */
  CHECK_OK(launch(TPU_OP_MUL, tout, &tb, ta));      /* inf * 0: NaN from a non-finite input */
  /* A float16 copy overflowing to inf; the output's index is reported. */
  CHECK_OK(upload(big, a, 4));
  CHECK(launch(TPU_OP_COPY, ta, NULL, vec_view(half, NULL, TPU_FLOAT16, 4)) == TPU_ERR_RUNTIME);
  CHECK(error_has("'copy' produced inf in output 0 (float16, shape [4]) at index [1]"));
  /* NaN coming from the host is new to the device. */
  const float host_nan[4] = {1, 1, 1, NAN};
  CHECK(upload(host_nan, a, 4) == TPU_ERR_RUNTIME);
  CHECK(error_has("produced NaN in output 0 (float32, shape [4]) at index [3], from a non-finite "
                  "value on the host"));
  /* Off, or outside debug mode: nothing is checked. */
  tpu_set_nan_check(false);
  CHECK_OK(upload(ones, a, 4));
  CHECK_OK(launch(TPU_OP_DIV, ta, &tb, tout));
  tpu_set_nan_check(true);
  tpu_set_default_eager_mode(TPU_EAGER_STRICT);
  CHECK_OK(launch(TPU_OP_DIV, ta, &tb, tout));
  CHECK_OK(tpu_stream_synchronize(s));
  tpu_set_nan_check(false);
  tpu_buffer_release_storage(a);
  tpu_buffer_release_storage(b);
  tpu_buffer_release_storage(out);
  tpu_buffer_release_storage(half);
  CHECK_OK(tpu_stream_synchronize(s));
}

static void test_trace(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  float host[6] = {1, 2, 3, 4, 5, 6}, back[6];
  tpu_buffer *a;
  CHECK_OK(tpu_buffer_create(0, 0, sizeof host, &a));
  const int64_t sizes[2] = {2, 3};
  tpu_tensor dev = host_view(NULL, TPU_FLOAT32, 2, sizes, NULL);
  dev.buf = a;
  tpu_set_default_eager_mode(TPU_EAGER_DEBUG);
  uint64_t outer = tpu_op_trace_begin();
  CHECK(tpu_op_trace_active() && tpu_op_debug_requested());
  CHECK_OK(launch(TPU_OP_COPY, host_view(host, TPU_FLOAT32, 2, sizes, NULL), NULL, dev));
  uint64_t inner = tpu_op_trace_begin();
  CHECK_OK(launch(TPU_OP_EXP, dev, NULL, dev));
  tpu_trace_record **records;
  size_t count;
  CHECK_OK(tpu_op_trace_end(inner, &records, &count));
  CHECK(count == 1 && records[0]->op == TPU_OP_EXP && records[0]->status == TPU_OK);
  tpu_op_trace_free(records, count);
  tpu_set_default_eager_mode(TPU_EAGER_STRICT);
  CHECK_OK(launch(TPU_OP_NEG, dev, NULL, dev)); /* strict mode: not traced */
  CHECK_OK(tpu_stream_synchronize(s));
  tpu_set_default_eager_mode(TPU_EAGER_DEBUG);
  CHECK_OK(launch(TPU_OP_COPY, dev, NULL, host_view(back, TPU_FLOAT32, 2, sizes, NULL)));
  CHECK_OK(tpu_op_trace_end(outer, &records, &count));
  CHECK(!tpu_op_trace_active());
  CHECK(count == 3 && records[0]->op == TPU_OP_COPY && records[1]->op == TPU_OP_EXP &&
        records[2]->op == TPU_OP_COPY);
  if (count == 3) {
    const tpu_trace_record *r = records[0];
    CHECK(r->n_inputs == 1 && r->n_outputs == 1 && r->us >= 0);
    CHECK(r->tensors[0].host && !r->tensors[1].host && r->tensors[1].ndim == 2);
    char line[256];
    tpu_op_trace_format(r, line, sizeof line);
    const char *head = "tpu_op_trace op=copy in=float32[2,3]@cpu out=float32[2,3] us=";
    CHECK(strncmp(line, head, strlen(head)) == 0);
    CHECK(strcmp(line + strlen(line) - 10, " status=ok") == 0);
    char tiny[16];
    tpu_op_trace_format(r, tiny, sizeof tiny); /* truncated, still terminated */
    CHECK(strlen(tiny) == 15);
  }
  tpu_op_trace_free(records, count);
  tpu_set_default_eager_mode(TPU_EAGER_STRICT);
  tpu_buffer_release_storage(a);
  CHECK_OK(tpu_stream_synchronize(s));
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_scan_dtypes);
  RUN_TEST(test_scan_complex);
  RUN_TEST(test_scan_strided);
  RUN_TEST(test_scan_parallel);
  RUN_TEST(test_nan_check);
  RUN_TEST(test_trace);
  TEST_MAIN_END();
}
