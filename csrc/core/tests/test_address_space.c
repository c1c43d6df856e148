/* Reservations under a limit on the address space (mem/tpu_reserve.h): the capacity shrinks to
 * what the arena and the pending range can hold; an arena that no longer fits twice the capacity
 * takes the capacity alone; a chip without room for its pending range runs fused-mode calls as
 * strict ones. The registry and the reservations are made once per process, so each case runs in
 * a fresh child that sets the limit first. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device/tpu_device.h"
#include "exec/tpu_fused.h"
#include "mem/tpu_allocator.h"
#include "device/tpu_address_space.h"
#include "ops/tpu_op.h"
#include "tensor/tpu_buffer.h"
#include "tpu_test.h"

#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)
#define N 4096

/* Leaves the process `room` bytes of address space beyond what it maps now. */
static void limit_to(size_t room) {
  struct rlimit lim;
  getrlimit(RLIMIT_AS, &lim);
  lim.rlim_cur = tpu_address_space_mapped() + room;
  CHECK(setrlimit(RLIMIT_AS, &lim) == 0);
}

/* Runs `body` in a child process; its checks count in the child, which exits non-zero on any. */
static void in_child(void (*body)(void)) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    body();
    exit(tpu_test_failures ? 1 : 0);
  }
  int status = -1;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static tpu_tensor view(tpu_buffer *buf, float *host) {
  tpu_tensor t = {.buf = buf, .host = host, .dtype = TPU_FLOAT32, .ndim = 1};
  t.sizes[0] = N;
  t.strides[0] = 1;
  return t;
}

/* out = a + a, launched or (fused) recorded; then out read back: every element is 2 * value. */
static void add_and_check(bool fused, tpu_buffer *a, tpu_buffer *out, float value) {
  tpu_stream *s = tpu_stream_get(0, 0);
  tpu_op_call *call = tpu_op_call_new(TPU_OP_ADD, 2, 1);
  call->tensors[0] = view(a, NULL);
  call->tensors[1] = view(a, NULL);
  call->tensors[2] = view(out, NULL);
  call->compute = TPU_FLOAT32;
  call->scalars[0].f = 1.0;
  CHECK_OK(tpu_test_submit(s, fused ? TPU_EAGER_FUSED : TPU_EAGER_STRICT, call));
  static float host[N];
  tpu_op_call *copy = tpu_op_call_new(TPU_OP_COPY, 1, 1);
  copy->tensors[0] = view(out, NULL);
  copy->tensors[1] = view(NULL, host);
  CHECK_OK(tpu_submit_sync(s, copy));
  CHECK(host[0] == 2 * value && host[N - 1] == 2 * value);
}

/* A buffer of N floats, all `value`. */
static tpu_buffer *filled(float value) {
  tpu_buffer *b = NULL;
  CHECK_OK_OR(tpu_buffer_create(0, 0, N * sizeof(float), &b), NULL);
  tpu_op_call *call = tpu_op_call_new(TPU_OP_FILL, 0, 1);
  call->tensors[0] = view(b, NULL);
  call->scalars[0].f = value;
  CHECK_OK_OR(tpu_submit(tpu_stream_get(0, 0), call), b);
  return b;
}

/* 3 GiB left: the chip's arena (twice the capacity) and pending range (once) fit in half. */
static void capacity_fits(void) {
  limit_to(3 * GiB);
  CHECK(tpu_address_space_left() <= 3 * GiB);
  size_t capacity = tpu_device_capacity(0);
  CHECK(capacity >= 2 * MiB && capacity <= 3 * GiB / 2 / 3);
  size_t free_bytes, total;
  tpu_mem_info(0, &free_bytes, &total);
  CHECK(total == capacity && tpu_device_props_of(0)->memory_bytes == capacity);
  void *big = NULL;
  CHECK_OK(tpu_mem_alloc(0, 0, capacity - 4 * MiB, &big)); /* nearly all of it */
  tpu_mem_free(big);
  tpu_buffer *a = filled(1.5f), *out = NULL;
  CHECK(tpu_buffer_pending_supported(0));
  CHECK_OK(tpu_buffer_create_pending(0, 0, N * sizeof(float), &out));
  add_and_check(true, a, out, 1.5f);
  tpu_buffer_release_storage(out);
  tpu_buffer_release_storage(a);
}

static void test_capacity_fits_the_limit(void) { in_child(capacity_fits); }

/* The chips were read without a limit; by the first allocation only the capacity fits. */
static void arena_shrinks(void) {
  setenv("TORCH_TPU_DEVICE_MEMORY", "512MiB", 1);
  CHECK(tpu_device_capacity(0) == 512 * MiB);
  limit_to(800 * MiB);
  void *big = NULL;
  CHECK_OK(tpu_mem_alloc(0, 0, 500 * MiB, &big));
  tpu_mem_free(big);
  CHECK(tpu_device_capacity(0) == 512 * MiB);
}

static void test_arena_takes_the_capacity_alone(void) { in_child(arena_shrinks); }

/* No room for a pending range once the arena is made: fused-mode calls are launched. */
static void fused_off(void) {
  tpu_buffer *a = filled(2.0f), *out = NULL;
  CHECK_OK(tpu_stream_synchronize(tpu_stream_get(0, 0)));
  limit_to(256 * MiB);
  CHECK(!tpu_buffer_pending_supported(0));
  CHECK_OK(tpu_buffer_create_pending(0, 0, N * sizeof(float), &out));
  CHECK(tpu_buffer_is_live(out));
  add_and_check(true, a, out, 2.0f);
  CHECK(tpu_fused_pending_nodes(tpu_stream_get(0, 0)) == 0);
  tpu_buffer_release_storage(out);
  tpu_buffer_release_storage(a);
}

static void test_fused_mode_is_off_without_a_pending_range(void) { in_child(fused_off); }

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_capacity_fits_the_limit);
  RUN_TEST(test_arena_takes_the_capacity_alone);
  RUN_TEST(test_fused_mode_is_off_without_a_pending_range);
  TEST_MAIN_END();
}
