/* The driver interface (drivers/tpu_driver.h): registration refuses incomplete tables, an unknown
 * name fails with an error listing the drivers there are, and with the counting driver selected
 * (tests/counting_driver.h) the core reaches the chip only through the interface: devices and
 * memory, launched ops, calls the driver cannot run, and fused graphs (optimize, compile once,
 * run). */
#include <string.h>

#include "counting_driver.h"
#include "device/tpu_device.h"
#include "exec/tpu_fused.h"
#include "ops/tpu_op_fallback.h"
#include "tensor/tpu_buffer.h"
#include "tpu_test.h"

#define N 4096

static tpu_tensor view(tpu_buffer *buf, void *host) {
  tpu_tensor t = {.buf = buf, .host = host, .dtype = TPU_FLOAT32, .ndim = 1};
  t.sizes[0] = N;
  t.strides[0] = 1;
  return t;
}

/* A call of `op` (ADD, MUL) computing in float32 on two device inputs and one output. */
static tpu_op_call *binary(tpu_op_id op, tpu_buffer *a, tpu_buffer *b, tpu_buffer *out) {
  tpu_op_call *call = tpu_op_call_new(op, 2, 1);
  call->tensors[0] = view(a, NULL);
  call->tensors[1] = view(b, NULL);
  call->tensors[2] = view(out, NULL);
  call->compute = TPU_FLOAT32;
  call->scalars[0].f = 1.0;
  return call;
}

static tpu_status copy(tpu_stream *s, tpu_tensor from, tpu_tensor to) {
  tpu_op_call *call = tpu_op_call_new(TPU_OP_COPY, 1, 1);
  call->tensors[0] = from;
  call->tensors[1] = to;
  return tpu_submit_sync(s, call);
}

static void test_registration_checks_the_table(void) {
  tpu_driver_i incomplete = *tpu_host_driver();
  incomplete.name = "incomplete";
  incomplete.op_run = NULL;
  CHECK(tpu_driver_register(&incomplete) == TPU_ERR_VALUE);
  CHECK(tpu_driver_register(NULL) == TPU_ERR_VALUE);
  CHECK_OK(tpu_driver_register(tpu_host_driver())); /* again: nothing changes */
}

static void test_unknown_name_lists_the_drivers(void) {
  CHECK(tpu_driver_select("no-such-driver") == TPU_ERR_RUNTIME);
  CHECK(strstr(tpu_last_error(), "no-such-driver") != NULL);
  CHECK(strstr(tpu_last_error(), "host, pjrt, counting") != NULL);
}

static void test_devices_and_memory_come_from_the_driver(void) {
  CHECK(tpu_device_count() == tpu_host_driver()->device_count());
  CHECK(atomic_load(&counting.device_count) == 1);
  CHECK(strncmp(tpu_device_props_of(0)->name, "counting: ", 10) == 0);
  tpu_buffer *b = NULL;
  CHECK_OK(tpu_buffer_create(0, 0, N * sizeof(float), &b));
  CHECK(atomic_load(&counting.arena_create) == 1);
  tpu_buffer_release_storage(b);
}

static void test_ops_run_through_op_run(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  static float host[N], out[N];
  for (int i = 0; i < N; i++)
    host[i] = (float)i;
  tpu_buffer *a = NULL, *sum = NULL;
  CHECK_OK(tpu_buffer_create(0, 0, N * sizeof(float), &a));
  CHECK_OK(tpu_buffer_create(0, 0, N * sizeof(float), &sum));
  long copies = atomic_load(&counting.op_runs[TPU_OP_COPY]);
  CHECK_OK(copy(s, view(NULL, host), view(a, NULL)));
  CHECK_OK(tpu_submit(s, binary(TPU_OP_ADD, a, a, sum)));
  CHECK_OK(copy(s, view(sum, NULL), view(NULL, out)));
  CHECK(atomic_load(&counting.op_runs[TPU_OP_COPY]) == copies + 2);
  CHECK(atomic_load(&counting.op_runs[TPU_OP_ADD]) == 1);
  CHECK(out[N - 1] == 2.0f * (N - 1));
  tpu_buffer_release_storage(a);
  tpu_buffer_release_storage(sum);
}

static void test_unsupported_calls_are_refused_at_launch(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  tpu_buffer *a = NULL;
  CHECK_OK(tpu_buffer_create(0, 0, N * sizeof(float), &a));
  tpu_op_call *call = binary(TPU_OP_BITWISE_AND, a, a, a); /* no float loop */
  long supports = atomic_load(&counting.supports_op);
  CHECK(tpu_submit(s, call) == TPU_ERR_NOT_IMPLEMENTED);
  CHECK(strstr(tpu_last_error(), "counting driver") != NULL);
  CHECK(atomic_load(&counting.supports_op) == supports + 1);
  CHECK(atomic_load(&counting.op_runs[TPU_OP_BITWISE_AND]) == 0);
  tpu_buffer_release_storage(a);
}

/* Two equal graphs: compiled once, run twice, each run a fused graph rather than op calls. */
static void test_fused_graphs_run_through_graph_run(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  static float host[N], out[N];
  for (int i = 0; i < N; i++)
    host[i] = 1.0f;
  tpu_buffer *x = NULL;
  CHECK_OK(tpu_buffer_create(0, 0, N * sizeof(float), &x));
  CHECK_OK(copy(s, view(NULL, host), view(x, NULL)));
  long adds = atomic_load(&counting.op_runs[TPU_OP_ADD]);
  for (int round = 0; round < 2; round++) {
    tpu_buffer *y = NULL, *z = NULL;
    CHECK_OK(tpu_buffer_create_pending(0, 0, N * sizeof(float), &y));
    CHECK_OK(tpu_buffer_create_pending(0, 0, N * sizeof(float), &z));
    CHECK_OK(tpu_test_submit(s, TPU_EAGER_FUSED, binary(TPU_OP_ADD, x, x, y)));
    CHECK_OK(tpu_test_submit(s, TPU_EAGER_FUSED, binary(TPU_OP_MUL, y, y, z)));
    CHECK_OK(tpu_fused_flush(s, TPU_CUT_SYNC));
    CHECK_OK(copy(s, view(z, NULL), view(NULL, out)));
    CHECK(out[0] == 4.0f && out[N - 1] == 4.0f);
    tpu_buffer_release_storage(y);
    tpu_buffer_release_storage(z);
  }
  CHECK(atomic_load(&counting.graph_optimize) == 2);
  CHECK(atomic_load(&counting.graph_compile) == 1);
  CHECK(atomic_load(&counting.graph_run) == 2);
  CHECK(atomic_load(&counting.op_runs[TPU_OP_ADD]) == adds); /* fused, not run one by one */
  tpu_buffer_release_storage(x);
}

static void test_the_driver_in_use_stays(void) {
  CHECK(tpu_driver_select("host") == TPU_ERR_RUNTIME);
  CHECK(strstr(tpu_last_error(), "in use") != NULL);
  CHECK(tpu_driver_register(counting_driver()) == TPU_OK); /* the same table: no change */
  CHECK(strcmp(tpu_driver()->name, "counting") == 0);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_registration_checks_the_table);
  CHECK_OK_OR(tpu_driver_register(counting_driver()), 1);
  RUN_TEST(test_unknown_name_lists_the_drivers);
  CHECK_OK_OR(tpu_driver_select("counting"), 1);
  RUN_TEST(test_devices_and_memory_come_from_the_driver);
  RUN_TEST(test_ops_run_through_op_run);
  RUN_TEST(test_unsupported_calls_are_refused_at_launch);
  RUN_TEST(test_fused_graphs_run_through_graph_run);
  RUN_TEST(test_the_driver_in_use_stays);
  TEST_MAIN_END();
}
