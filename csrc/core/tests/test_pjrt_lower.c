/* The PJRT driver's lowering without a plugin: op calls over contiguous, transposed, sliced and
 * expanded views become StableHLO text whose arguments and results follow the storages; equal
 * calls give equal text whatever their runtime scalars (the executable cache's key); a bounds
 * check becomes a flag result; calls the
 * driver cannot lower are refused up front. Under the sanitizers this covers the emitter's string
 * building and view arithmetic. With TORCH_TPU_PJRT_PLUGIN set, each module also compiles. */
#include <stdlib.h>
#include <string.h>

#include "base/tpu_env.h"
#include "drivers/pjrt/tpu_pjrt_cache.h"
#include "drivers/pjrt/tpu_pjrt_client.h"
#include "drivers/pjrt/tpu_pjrt_lower.h"
#include "drivers/pjrt/tpu_pjrt_plugin.h"
#include "tpu_test.h"

#define ROWS 6
#define COLS 8

static tpu_pjrt_client *client; /* set when a plugin is given */

static tpu_tensor matrix(tpu_buffer *buf, tpu_dtype dtype, int64_t rows, int64_t cols,
                         int64_t row_stride, int64_t col_stride, int64_t offset) {
  tpu_tensor t = {.buf = buf, .dtype = dtype, .ndim = 2, .offset = offset};
  t.sizes[0] = rows;
  t.sizes[1] = cols;
  t.strides[0] = row_stride;
  t.strides[1] = col_stride;
  return t;
}

/* Lowers `call`, checks the counts, compiles when a plugin is there; returns the text. */
static char *lower(const tpu_op_call *call, int args, int results) {
  tpu_pjrt_program *p = NULL;
  CHECK_OK_OR(tpu_pjrt_lower(&call, 1, &p), NULL);
  CHECK(p->n_args == args);
  CHECK(p->n_results == results);
  CHECK(strstr(p->text, "func.func public @main") != NULL);
  if (client) {
    const tpu_pjrt_executable *exe;
    tpu_status st = tpu_pjrt_cache_get(client, p->text, p->len, &exe);
    if (st != TPU_OK)
      fprintf(stderr, "%s\n%s\n", tpu_last_error(), p->text);
    CHECK(st == TPU_OK);
  }
  char *text = strdup(p->text);
  tpu_pjrt_program_free(p);
  return text;
}

static void test_views_of_storages(void) {
  tpu_buffer *a = NULL, *b = NULL;
  CHECK_OK(tpu_buffer_create(0, 0, ROWS * COLS * sizeof(float), &a));
  CHECK_OK(tpu_buffer_create(0, 0, ROWS * COLS * sizeof(float), &b));
  tpu_op_call *call = tpu_op_call_new(TPU_OP_ADD, 2, 1);
  call->compute = TPU_FLOAT32;
  call->tensors[0] = matrix(a, TPU_FLOAT32, COLS, ROWS, 1, COLS, 0); /* transposed */
  call->tensors[1] = matrix(a, TPU_FLOAT32, COLS, ROWS, 0, 1, 0);    /* one row, expanded */
  call->tensors[2] = matrix(b, TPU_FLOAT32, COLS, ROWS, ROWS, 1, 0); /* all of b */
  call->scalars[0].f = 1.0;
  char *first = lower(call, 2, 1); /* a's bytes and alpha in; b, written whole, out */
  call->scalars[0].f = -2.5;
  char *second = lower(call, 2, 1);
  CHECK(first && second && strcmp(first, second) == 0);
  /* In place on a step slice of b: b is read and its buffer donated to the result. */
  call->tensors[1] = matrix(b, TPU_FLOAT32, ROWS / 2, COLS / 2, 2 * COLS, 2, 1 * sizeof(float));
  call->tensors[0] = call->tensors[1];
  call->tensors[2] = call->tensors[1];
  char *in_place = lower(call, 2, 1);
  CHECK(in_place && strstr(in_place, "tf.aliasing_output = 0") != NULL);
  free(first);
  free(second);
  free(in_place);
  tpu_op_call_free(call);
  tpu_buffer_release_storage(a);
  tpu_buffer_release_storage(b);
}

static void test_families(void) {
  tpu_buffer *a = NULL, *b = NULL, *c = NULL, *d = NULL;
  CHECK_OK(tpu_buffer_create(0, 0, ROWS * COLS * sizeof(double), &a));
  CHECK_OK(tpu_buffer_create(0, 0, ROWS * COLS * sizeof(double), &b));
  CHECK_OK(tpu_buffer_create(0, 0, ROWS * ROWS * sizeof(double), &c));
  CHECK_OK(tpu_buffer_create(0, 0, ROWS * ROWS * sizeof(uint16_t), &d));
  tpu_op_call *mm = tpu_op_call_new(TPU_OP_MM, 2, 1);
  mm->tensors[0] = matrix(a, TPU_BFLOAT16, ROWS, COLS, COLS, 1, 0);
  mm->tensors[1] = matrix(b, TPU_BFLOAT16, COLS, ROWS, 1, COLS, 0);
  mm->tensors[2] = matrix(d, TPU_BFLOAT16, ROWS, ROWS, ROWS, 1, 0);
  for (int i = 0; i < 3; i++) { /* the family's calls are batched: [1, M, N] */
    tpu_tensor *t = &mm->tensors[i];
    memmove(&t->sizes[1], &t->sizes[0], 2 * sizeof t->sizes[0]);
    memmove(&t->strides[1], &t->strides[0], 2 * sizeof t->strides[0]);
    t->sizes[0] = 1;
    t->strides[0] = ROWS * COLS;
    t->ndim = 3;
  }
  free(lower(mm, 3, 1)); /* a, b, alpha; d written whole */
  tpu_op_call *sum = tpu_op_call_new(TPU_OP_SUM, 1, 1);
  sum->compute = TPU_FLOAT64;
  sum->scalars[0].i = 1; /* the mean */
  sum->tensors[0] = matrix(a, TPU_FLOAT32, ROWS, COLS, COLS, 1, 0);
  sum->tensors[1] = matrix(c, TPU_FLOAT64, ROWS, 1, 1, 1, 0);
  free(lower(sum, 2, 1)); /* c is read: the mean covers only part of it */
  tpu_op_call *softmax = tpu_op_call_new(TPU_OP_LOG_SOFTMAX, 1, 1);
  softmax->tensors[0] = matrix(a, TPU_FLOAT16, ROWS, COLS, COLS, 1, 0);
  softmax->tensors[1] = matrix(b, TPU_FLOAT32, ROWS, COLS, COLS, 1, 0);
  softmax->scalars[0].i = 1;
  free(lower(softmax, 2, 1));
  tpu_op_call *select = tpu_op_call_new(TPU_OP_INDEX_SELECT, 2, 1);
  select->tensors[0] = matrix(a, TPU_FLOAT32, ROWS, COLS, COLS, 1, 0);
  select->tensors[1] = matrix(b, TPU_INT64, 3, 1, 1, 1, 0);
  select->tensors[1].ndim = 1;
  select->tensors[2] = matrix(c, TPU_FLOAT32, 3, COLS, COLS, 1, 0);
  char *text = lower(select, 3, 2); /* c's result and the bounds flag, which forbids donation */
  CHECK(text && strstr(text, "stablehlo.gather") && !strstr(text, "tf.aliasing_output"));
  free(text);
  tpu_op_call_free(select);
  tpu_op_call *copy = tpu_op_call_new(TPU_OP_COPY, 1, 1);
  copy->tensors[0] = matrix(a, TPU_FLOAT64, ROWS, COLS, COLS, 1, 0);
  copy->tensors[1] = matrix(b, TPU_BOOL, ROWS, COLS, 1, ROWS, 0);
  free(lower(copy, 2, 1));
  /* Overlapping views and complex dtypes are the fallback's. */
  copy->tensors[0] = matrix(a, TPU_FLOAT32, ROWS, COLS, 2, 1, 0);
  CHECK(!tpu_pjrt_lowerable(copy));
  copy->tensors[0] = matrix(a, TPU_COMPLEX64, ROWS, 2, 2, 1, 0);
  CHECK(!tpu_pjrt_lowerable(copy));
  tpu_op_call_free(mm);
  tpu_op_call_free(sum);
  tpu_op_call_free(softmax);
  tpu_op_call_free(copy);
  tpu_buffer_release_storage(a);
  tpu_buffer_release_storage(b);
  tpu_buffer_release_storage(c);
  tpu_buffer_release_storage(d);
}

int main(void) {
  TEST_MAIN_BEGIN();
  const char *path = tpu_env_get("TORCH_TPU_PJRT_PLUGIN");
  const PJRT_Api *api;
  if (path && tpu_pjrt_plugin_load(path, &api) == TPU_OK)
    tpu_pjrt_client_create(api, &client);
  RUN_TEST(test_views_of_storages);
  RUN_TEST(test_families);
  TEST_MAIN_END();
}
