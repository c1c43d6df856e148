/* Buffers and op calls: live and pending buffers (and which the host reaches in place),
 * materialization by a read, pending buffers that die unread and are never allocated, poisoning by
 * a failed asynchronous op, and the validation of views against their buffers. */
#include <stdlib.h>
#include <string.h>

#include "device/tpu_stream.h"
#include "exec/tpu_fused.h"
#include "mem/tpu_allocator.h"
#include "ops/tpu_op.h"
#include "tensor/tpu_buffer.h"
#include "tpu_test.h"

static tpu_tensor vector_view(tpu_buffer *buf, void *host, tpu_dtype dtype, int64_t n) {
  tpu_tensor t = {.buf = buf, .host = host, .dtype = dtype, .ndim = 1};
  t.sizes[0] = n;
  t.strides[0] = 1;
  return t;
}

static tpu_status fill(tpu_stream *s, tpu_buffer *b, int64_t n, double value) {
  tpu_op_call *call = tpu_op_call_new(TPU_OP_FILL, 0, 1);
  call->tensors[0] = vector_view(b, NULL, TPU_FLOAT32, n);
  call->scalars[0].f = value;
  return tpu_submit(s, call);
}

static tpu_status read_back(tpu_stream *s, tpu_buffer *b, float *out, int64_t n) {
  tpu_op_call *call = tpu_op_call_new(TPU_OP_COPY, 1, 1);
  call->tensors[0] = vector_view(b, NULL, TPU_FLOAT32, n);
  call->tensors[1] = vector_view(NULL, out, TPU_FLOAT32, n);
  return tpu_submit_sync(s, call);
}

static int64_t allocated(void) {
  tpu_mem_stats stats;
  tpu_mem_get_stats(0, &stats);
  return stats.allocated_bytes[TPU_POOL_ALL].current;
}

static void test_live_buffer(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  tpu_buffer *b;
  CHECK_OK(tpu_buffer_create(0, 0, 64 * sizeof(float), &b));
  CHECK(tpu_buffer_is_live(b));
  CHECK(tpu_buffer_identity(b) == tpu_buffer_memory(b));
  CHECK(((uintptr_t)tpu_buffer_identity(b) & 63) == 0);
  CHECK(tpu_buffer_device_of(tpu_buffer_identity(b)) == 0);
  CHECK_OK(fill(s, b, 64, 2.5));
  float out[64];
  CHECK_OK(read_back(s, b, out, 64));
  CHECK(out[0] == 2.5f && out[63] == 2.5f);
  /* The host driver keeps chips in host memory: a live buffer is reachable in place. */
  tpu_tensor view = vector_view(b, NULL, TPU_FLOAT32, 8);
  view.offset = 8 * sizeof(float);
  CHECK(tpu_tensor_host_address(&view) == (char *)tpu_buffer_memory(b) + view.offset);
  CHECK(*(const float *)tpu_tensor_host_address(&view) == 2.5f);
  tpu_tensor host = vector_view(NULL, out, TPU_FLOAT32, 64);
  CHECK(tpu_tensor_host_address(&host) == out);
  tpu_buffer_release_storage(b);
}

static void test_pending_read(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  int64_t before = allocated();
  tpu_buffer *b;
  CHECK_OK(tpu_buffer_create_pending(0, 0, 1000 * sizeof(float), &b));
  CHECK(!tpu_buffer_is_live(b));
  CHECK(tpu_buffer_identity(b) != NULL && tpu_buffer_memory(b) == NULL);
  CHECK(tpu_buffer_device_of(tpu_buffer_identity(b)) == 0);
  tpu_tensor whole = vector_view(b, NULL, TPU_FLOAT32, 1000);
  CHECK(tpu_tensor_host_address(&whole) == NULL); /* no memory yet */
  /* Its producer waits in fused mode's open graph. */
  tpu_op_call *producer = tpu_op_call_new(TPU_OP_FILL, 0, 1);
  producer->tensors[0] = vector_view(b, NULL, TPU_FLOAT32, 1000);
  producer->scalars[0].f = 7.0;
  CHECK_OK(tpu_test_submit(s, TPU_EAGER_FUSED, producer));
  CHECK(allocated() == before); /* nothing allocated while pending */
  float out[10];
  /* A view of the pending buffer (elements 990..999) is read: that runs its graph. */
  tpu_op_call *call = tpu_op_call_new(TPU_OP_COPY, 1, 1);
  call->tensors[0] = vector_view(b, NULL, TPU_FLOAT32, 10);
  call->tensors[0].offset = 990 * sizeof(float);
  call->tensors[1] = vector_view(NULL, out, TPU_FLOAT32, 10);
  CHECK_OK(tpu_submit_sync(s, call));
  CHECK(tpu_buffer_is_live(b));
  CHECK(tpu_tensor_host_address(&whole) == tpu_buffer_memory(b));
  CHECK(out[0] == 7.0f && out[9] == 7.0f);
  CHECK(allocated() > before);
  tpu_buffer_release_storage(b);
  CHECK_OK(tpu_stream_synchronize(s));
  CHECK(allocated() == before);
}

static void test_pending_dies_unread(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  tpu_mem_stats stats_before, stats_after;
  tpu_mem_get_stats(0, &stats_before);
  uint64_t fills_before = tpu_op_native_count(TPU_OP_FILL);
  tpu_buffer *b;
  CHECK_OK(tpu_buffer_create_pending(0, 0, 1 << 20, &b));
  tpu_op_call *producer = tpu_op_call_new(TPU_OP_FILL, 0, 1);
  producer->tensors[0] = vector_view(b, NULL, TPU_FLOAT32, (1 << 20) / 4);
  CHECK_OK(tpu_test_submit(s, TPU_EAGER_FUSED, producer));
  tpu_buffer_release_storage(b);
  tpu_mem_get_stats(0, &stats_after);
  CHECK(stats_after.allocation[TPU_POOL_ALL].allocated ==
        stats_before.allocation[TPU_POOL_ALL].allocated);
  CHECK(tpu_op_native_count(TPU_OP_FILL) == fills_before + 1); /* counted when recorded */
  CHECK_OK(tpu_fused_flush(s, TPU_CUT_SYNC));
  CHECK_OK(tpu_stream_synchronize(s));
  tpu_mem_get_stats(0, &stats_after);
  CHECK(stats_after.allocated_bytes[TPU_POOL_ALL].current ==
        stats_before.allocated_bytes[TPU_POOL_ALL].current);
}

static void test_poison(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  tpu_buffer *src, *index, *dst, *next;
  CHECK_OK(tpu_buffer_create(0, 0, 4 * sizeof(float), &src));
  CHECK_OK(tpu_buffer_create(0, 0, sizeof(int64_t), &index));
  CHECK_OK(tpu_buffer_create(0, 0, sizeof(float), &dst));
  CHECK_OK(tpu_buffer_create(0, 0, sizeof(float), &next));
  CHECK_OK(fill(s, src, 4, 1.0));
  tpu_op_call *set_index = tpu_op_call_new(TPU_OP_FILL, 0, 1);
  set_index->tensors[0] = vector_view(index, NULL, TPU_INT64, 1);
  set_index->scalars[0].i = 9; /* out of range for 4 elements */
  CHECK_OK(tpu_submit(s, set_index));
  tpu_op_call *gather = tpu_op_call_new(TPU_OP_INDEX_SELECT, 2, 1);
  gather->tensors[0] = vector_view(src, NULL, TPU_FLOAT32, 4);
  gather->tensors[1] = vector_view(index, NULL, TPU_INT64, 1);
  gather->tensors[2] = vector_view(dst, NULL, TPU_FLOAT32, 1);
  CHECK_OK(tpu_submit(s, gather)); /* asynchronous: the error is found later */
  tpu_op_call *copy = tpu_op_call_new(TPU_OP_COPY, 1, 1);
  copy->tensors[0] = vector_view(dst, NULL, TPU_FLOAT32, 1);
  copy->tensors[1] = vector_view(next, NULL, TPU_FLOAT32, 1);
  CHECK_OK(tpu_submit(s, copy));
  tpu_status st = tpu_stream_synchronize(s);
  CHECK(st == TPU_ERR_RUNTIME);
  CHECK(strstr(tpu_last_error(), "index_select") != NULL);
  CHECK(tpu_buffer_check_poison(dst) != TPU_OK);
  CHECK(tpu_buffer_check_poison(next) != TPU_OK); /* passed on through the copy */
  float out;
  CHECK(read_back(s, next, &out, 1) == TPU_ERR_RUNTIME);
  CHECK(strstr(tpu_last_error(), "index_select") != NULL);
  CHECK_OK(read_back(s, src, &out, 1)); /* the stream stays usable */
  tpu_buffer_release_storage(src);
  tpu_buffer_release_storage(index);
  tpu_buffer_release_storage(dst);
  tpu_buffer_release_storage(next);
}

static void test_view_validation(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  tpu_buffer *b;
  CHECK_OK(tpu_buffer_create(0, 0, 16, &b));
  tpu_op_call *call = tpu_op_call_new(TPU_OP_FILL, 0, 1);
  call->tensors[0] = vector_view(b, NULL, TPU_FLOAT32, 5); /* 20 bytes in a 16-byte buffer */
  CHECK(tpu_submit(s, call) == TPU_ERR_VALUE);
  call = tpu_op_call_new(TPU_OP_FILL, 0, 1);
  call->tensors[0] = vector_view(b, NULL, TPU_FLOAT32, 4);
  call->tensors[0].strides[0] = -1; /* reaches before the start */
  CHECK(tpu_submit(s, call) == TPU_ERR_VALUE);
  call = tpu_op_call_new(TPU_OP_FILL, 0, 1);
  call->tensors[0] = vector_view(b, NULL, TPU_FLOAT32, 4);
  call->tensors[0].ndim = TPU_MAX_DIMS + 1;
  CHECK(tpu_submit(s, call) == TPU_ERR_VALUE);
  CHECK_OK(tpu_stream_synchronize(s));
  /* Found by fuzz_view: a view without elements is valid whatever its strides, but not with a
   * negative size after its zero one; */
  tpu_tensor v = {.buf = b, .dtype = TPU_FLOAT32, .ndim = 2, .sizes = {4, 0},
                  .strides = {INT64_MAX / 3, 1}};
  CHECK_OK(tpu_tensor_check(&v));
  v.sizes[0] = 0, v.sizes[1] = -1;
  CHECK(tpu_tensor_check(&v) == TPU_ERR_VALUE);
  /* an element count past int64 is invalid, even when stride 0 keeps it inside the buffer (or it
   * has no element), as tpu_tensor_numel would overflow; */
  v = (tpu_tensor){.buf = b, .dtype = TPU_FLOAT32, .ndim = 2};
  v.sizes[0] = (int64_t)1 << 40, v.sizes[1] = (int64_t)1 << 24;
  CHECK(tpu_tensor_check(&v) == TPU_ERR_VALUE);
  v.ndim = 3;
  CHECK(tpu_tensor_check(&v) == TPU_ERR_VALUE);
  /* a host view must keep every byte offset within int64: three dimensions each within the old
   * per-dimension limit overflowed its sums, and one 2^61 elements of 8 bytes away overflows. */
  static double host[1];
  v = (tpu_tensor){.host = host, .dtype = TPU_FLOAT64, .ndim = 3, .sizes = {2, 2, 2}};
  for (int d = 0; d < 3; d++)
    v.strides[d] = -(INT64_MAX / 2);
  CHECK(tpu_tensor_check(&v) == TPU_ERR_VALUE);
  v.ndim = 1;
  v.strides[0] = (int64_t)1 << 61;
  CHECK(tpu_tensor_check(&v) == TPU_ERR_VALUE);
  v.strides[0] = (int64_t)1 << 56;
  CHECK_OK(tpu_tensor_check(&v));
  tpu_buffer_release_storage(b);
}

int main(void) {
  TEST_MAIN_BEGIN();
  setenv("TORCH_TPU_DEVICE_MEMORY", "64MiB", 1);
  RUN_TEST(test_live_buffer);
  RUN_TEST(test_pending_read);
  RUN_TEST(test_pending_dies_unread);
  RUN_TEST(test_poison);
  RUN_TEST(test_view_validation);
  TEST_MAIN_END();
}
