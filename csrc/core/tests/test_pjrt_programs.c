/* The PJRT driver's compiled runs (drivers/pjrt/tpu_pjrt_programs.h), with a plugin
 * (TORCH_TPU_PJRT_PLUGIN; without one it exits 77, skipped): a run of the same structure on other
 * storages and with other runtime scalars finds the kept program without lowering; each change a
 * module depends on (sizes, strides, an offset, storages shared or not, a storage's element type
 * or its lack of contents, a constant scalar, a dropped storage) finds another; verification
 * lowers a found run again and accepts it. Runtime scalars' buffers are kept by value
 * (drivers/pjrt/tpu_pjrt_scalars.h): a value comes back as the same buffer, and past the table's
 * room each value still gets a buffer holding it. */
#include <string.h>
#include <unistd.h>

#include "base/tpu_env.h"
#include "drivers/pjrt/tpu_pjrt_buffer.h"
#include "drivers/pjrt/tpu_pjrt_plugin.h"
#include "drivers/pjrt/tpu_pjrt_programs.h"
#include "drivers/pjrt/tpu_pjrt_scalars.h"
#include "drivers/pjrt/tpu_pjrt_storage.h"
#include "tpu_test.h"

#define SKIP 77
#define ROWS 6
#define COLS 8
#define STORAGES 6

static tpu_pjrt_client *client;
static tpu_buffer *bufs[STORAGES];

/* Gives storage b a buffer of elements of `elem` (zeros), as a write of that dtype would. */
static void give_contents(tpu_buffer *b, tpu_dtype elem) {
  static const char zeros[ROWS * COLS * sizeof(double)];
  int64_t n = (int64_t)(tpu_buffer_nbytes(b) / tpu_dtype_size(elem));
  PJRT_Buffer *buf;
  CHECK_OK(tpu_pjrt_buffer_from_host(client, 0, elem, &n, 1, zeros, &buf));
  CHECK_OK(tpu_pjrt_storage_set(client, tpu_buffer_memory(b), tpu_buffer_nbytes(b), elem, buf));
}

static tpu_tensor matrix(tpu_buffer *buf, int64_t rows, int64_t cols, int64_t row_stride,
                         int64_t offset) {
  tpu_tensor t = {.buf = buf, .dtype = TPU_FLOAT32, .ndim = 2, .offset = offset};
  t.sizes[0] = rows;
  t.sizes[1] = cols;
  t.strides[0] = row_stride;
  t.strides[1] = 1;
  return t;
}

/* out = x + alpha * y over whole ROWS x COLS storages. */
static tpu_op_call *add(tpu_buffer *x, tpu_buffer *y, tpu_buffer *out, double alpha) {
  tpu_op_call *call = tpu_op_call_new(TPU_OP_ADD, 2, 1);
  call->compute = TPU_FLOAT32;
  call->tensors[0] = matrix(x, ROWS, COLS, COLS, 0);
  call->tensors[1] = matrix(y, ROWS, COLS, COLS, 0);
  call->tensors[2] = matrix(out, ROWS, COLS, COLS, 0);
  call->scalars[0].f = alpha;
  return call;
}

static uint64_t lowerings(void) {
  uint64_t lowered, hits, unkeyed;
  tpu_pjrt_programs_stats(&lowered, &hits, &unkeyed);
  CHECK(unkeyed == 0);
  return lowered;
}

/* The program of the run of `call` (dropping `dropped` when given), after the call is freed. */
static const tpu_pjrt_program *program_of(tpu_op_call *call, tpu_buffer *dropped) {
  tpu_pjrt_compiled c;
  const tpu_op_call *calls[1] = {call};
  CHECK_OK_OR(tpu_pjrt_programs_get(client, calls, 1, &dropped, dropped ? 1 : 0, &c), NULL);
  CHECK(!c.owned);
  const tpu_pjrt_program *p = c.program;
  tpu_pjrt_compiled_release(&c);
  tpu_op_call_free(call);
  return p;
}

/* A new program, lowered now (its own and the check that its scalars are arguments). */
static void check_new(const tpu_pjrt_program *p, const tpu_pjrt_program *base,
                      uint64_t lowered_before, const char *what) {
  if (p == base || lowerings() != lowered_before + 2)
    fprintf(stderr, "FAIL: %s did not find a program of its own\n", what);
  tpu_test_failures += p == base || lowerings() != lowered_before + 2;
}

static void test_same_structure_binds_only(void) {
  uint64_t before = lowerings();
  const tpu_pjrt_program *base = program_of(add(bufs[0], bufs[1], bufs[2], 1.0), NULL);
  CHECK(base && base->n_args == 3 && lowerings() == before + 2);
  /* Other storages, another alpha: found, nothing lowered. */
  before = lowerings();
  CHECK(program_of(add(bufs[3], bufs[4], bufs[5], -2.5), NULL) == base);
  CHECK(lowerings() == before);
  /* Verification lowers the found run once more and accepts it. */
  tpu_pjrt_programs_set_verify(true);
  CHECK(program_of(add(bufs[0], bufs[1], bufs[2], 3.0), NULL) == base);
  CHECK(lowerings() == before + 1);
  tpu_pjrt_programs_set_verify(false);
  /* A scalar operand (a 0-d host view of the call's scalar) is bound too. */
  tpu_op_call *call = add(bufs[0], bufs[1], bufs[2], 1.0);
  tpu_op_set_scalar_input(call, 1, 1, (tpu_scalar){.f = 0.5}, true);
  const tpu_pjrt_program *scalar = program_of(call, NULL);
  before = lowerings();
  call = add(bufs[3], bufs[4], bufs[5], 1.0);
  tpu_op_set_scalar_input(call, 1, 1, (tpu_scalar){.f = 7.0}, true);
  CHECK(scalar && scalar != base && program_of(call, NULL) == scalar);
  CHECK(lowerings() == before);
}

static void test_each_dependency_finds_another_program(void) {
  const tpu_pjrt_program *base = program_of(add(bufs[0], bufs[1], bufs[2], 1.0), NULL);
  uint64_t before = lowerings();
  tpu_op_call *call = add(bufs[0], bufs[1], bufs[2], 1.0);
  call->tensors[0].sizes[0] = call->tensors[1].sizes[0] = call->tensors[2].sizes[0] = ROWS / 2;
  check_new(program_of(call, NULL), base, before, "other sizes");
  before = lowerings();
  call = add(bufs[0], bufs[1], bufs[2], 1.0);
  call->tensors[0].strides[0] = 0; /* one row, expanded */
  check_new(program_of(call, NULL), base, before, "other strides");
  before = lowerings();
  call = add(bufs[0], bufs[1], bufs[2], 1.0);
  call->tensors[0] = matrix(bufs[0], ROWS - 1, COLS, COLS, COLS);
  call->tensors[1].sizes[0] = call->tensors[2].sizes[0] = ROWS - 1;
  tpu_op_call *unshifted = add(bufs[0], bufs[1], bufs[2], 1.0);
  unshifted->tensors[1].sizes[0] = unshifted->tensors[2].sizes[0] = ROWS - 1;
  unshifted->tensors[0].sizes[0] = ROWS - 1;
  const tpu_pjrt_program *shifted = program_of(call, NULL);
  check_new(program_of(unshifted, NULL), shifted, before + 2, "another offset");
  before = lowerings();
  check_new(program_of(add(bufs[0], bufs[0], bufs[2], 1.0), NULL), base, before,
            "a shared storage");
  before = lowerings();
  give_contents(bufs[4], TPU_INT32); /* written by int32 views last */
  check_new(program_of(add(bufs[3], bufs[4], bufs[5], 1.0), NULL), base, before,
            "another element type");
  give_contents(bufs[4], TPU_FLOAT32);
  before = lowerings();
  tpu_buffer *fresh;
  CHECK_OK(tpu_buffer_create(0, 0, ROWS * COLS * sizeof(float), &fresh));
  check_new(program_of(add(bufs[3], fresh, bufs[5], 1.0), NULL), base, before,
            "a storage without contents");
  tpu_buffer_release_storage(fresh);
  before = lowerings();
  check_new(program_of(add(bufs[0], bufs[1], bufs[2], 1.0), bufs[2]), base, before,
            "a dropped output");
  /* A sum (mean = 0) and a mean (mean = 1, a constant of the module) over the rows. */
  tpu_op_call *sums[2];
  for (int mean = 0; mean < 2; mean++) {
    sums[mean] = tpu_op_call_new(TPU_OP_SUM, 1, 1);
    sums[mean]->compute = TPU_FLOAT32;
    sums[mean]->tensors[0] = matrix(bufs[0], ROWS, COLS, COLS, 0);
    sums[mean]->tensors[1] = matrix(bufs[1], 1, COLS, COLS, 0);
    sums[mean]->scalars[0].i = mean;
  }
  const tpu_pjrt_program *sum = program_of(sums[0], NULL);
  before = lowerings();
  check_new(program_of(sums[1], NULL), sum, before, "a constant scalar");
}

static void test_scalar_buffers_are_kept_by_value(void) {
  double one = 1.0;
  PJRT_Buffer *first, *again;
  bool owned_first, owned_again;
  CHECK_OK(tpu_pjrt_scalar_buffer(client, 0, TPU_FLOAT64, &one, &first, &owned_first));
  CHECK_OK(tpu_pjrt_scalar_buffer(client, 0, TPU_FLOAT64, &one, &again, &owned_again));
  CHECK(first == again && !owned_first && !owned_again);
  if (client->device_count > 1) { /* a run on another device gets that device's buffer */
    PJRT_Buffer *other;
    bool owned_other;
    CHECK_OK(tpu_pjrt_scalar_buffer(client, 1, TPU_FLOAT64, &one, &other, &owned_other));
    CHECK(other != first);
    double back = 0;
    CHECK_OK(tpu_pjrt_buffer_to_host(client, other, &back, sizeof back));
    CHECK(back == 1.0);
    if (owned_other)
      tpu_pjrt_buffer_destroy(client, other);
  }
  int owned = 0;
  for (int64_t i = 0; i < 3000; i++) { /* more values than the table has places */
    PJRT_Buffer *b;
    bool own;
    CHECK_OK(tpu_pjrt_scalar_buffer(client, 0, TPU_INT64, &i, &b, &own));
    int64_t back = -1;
    CHECK_OK(tpu_pjrt_buffer_to_host(client, b, &back, sizeof back));
    CHECK(back == i);
    owned += own;
    if (own)
      tpu_pjrt_buffer_destroy(client, b);
  }
  CHECK(owned > 0); /* some values found their place taken and were the run's alone */
}

int main(void) {
  TEST_MAIN_BEGIN();
  const char *path = tpu_env_get("TORCH_TPU_PJRT_PLUGIN");
  if (!path || access(path, R_OK) != 0) {
    printf("skipped: TORCH_TPU_PJRT_PLUGIN is not the path of a readable PJRT plugin\n");
    return SKIP;
  }
#ifdef TSAN_BUILD
  printf("skipped: a ThreadSanitizer build, and the PJRT plugin is not built with it\n");
  return SKIP;
#endif
  const PJRT_Api *api;
  CHECK_OK_OR(tpu_pjrt_plugin_load(path, &api), 1);
  CHECK_OK_OR(tpu_pjrt_client_create(api, &client), 1);
  for (int i = 0; i < STORAGES; i++) {
    CHECK_OK_OR(tpu_buffer_create(0, 0, ROWS * COLS * sizeof(float), &bufs[i]), 1);
    give_contents(bufs[i], TPU_FLOAT32);
  }
  RUN_TEST(test_same_structure_binds_only);
  RUN_TEST(test_each_dependency_finds_another_program);
  RUN_TEST(test_scalar_buffers_are_kept_by_value);
  for (int i = 0; i < STORAGES; i++)
    tpu_buffer_release_storage(bufs[i]);
  TEST_MAIN_END();
}
