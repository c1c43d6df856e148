/* Fused eager mode: calls recorded in a stream's open graph, cut by a read of a pending result,
 * dead intermediates never given memory, dead inputs' memory reused in place, cut reasons counted,
 * the graph-size cap, calls that cannot wait, the mode names, and rematerialization at the
 * backward_start cut (exec/tpu_remat.h): recomputable results leave the forward graph pending and
 * are computed again before their first reader (after the results they read), before a write to a
 * buffer they read, or dropped when they die unread. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/tpu_fused.h"
#include "mem/tpu_allocator.h"
#include "tensor/tpu_buffer.h"
#include "tpu_test.h"

#define N (1 << 14) /* 64 KiB of floats: large enough to be recomputed (TPU_REMAT_MIN_BYTES) */

static tpu_tensor view(tpu_buffer *buf, void *host) {
  tpu_tensor t = {.buf = buf, .host = host, .dtype = TPU_FLOAT32, .ndim = 1};
  t.sizes[0] = N;
  t.strides[0] = 1;
  return t;
}

/* out = a + b (alpha 1), recorded in the stream's graph. */
static tpu_status add(tpu_stream *s, tpu_buffer *a, tpu_buffer *b, tpu_buffer *out) {
  tpu_op_call *call = tpu_op_call_new(TPU_OP_ADD, 2, 1);
  call->tensors[0] = view(a, NULL);
  call->tensors[1] = view(b, NULL);
  call->tensors[2] = view(out, NULL);
  call->compute = TPU_FLOAT32;
  call->scalars[0].f = 1.0;
  return tpu_test_submit(s, TPU_EAGER_FUSED, call);
}

static tpu_buffer *pending(void) {
  tpu_buffer *b = NULL;
  CHECK_OK_OR(tpu_buffer_create_pending(0, 0, N * sizeof(float), &b), NULL);
  return b;
}

static tpu_buffer *ones(tpu_stream *s) {
  tpu_buffer *b = NULL;
  CHECK_OK_OR(tpu_buffer_create(0, 0, N * sizeof(float), &b), NULL);
  tpu_op_call *call = tpu_op_call_new(TPU_OP_FILL, 0, 1);
  call->tensors[0] = view(b, NULL);
  call->scalars[0].f = 1.0;
  CHECK_OK_OR(tpu_submit(s, call), b);
  return b;
}

/* A synchronous copy to the host: reads (materializes) `b`. */
static tpu_status read_back(tpu_stream *s, tpu_buffer *b, float *out) {
  tpu_op_call *call = tpu_op_call_new(TPU_OP_COPY, 1, 1);
  call->tensors[0] = view(b, NULL);
  call->tensors[1] = view(NULL, out);
  return tpu_submit_sync(s, call);
}

static int64_t peak_allocated(void) {
  tpu_mem_stats stats;
  tpu_mem_get_stats(0, &stats);
  return stats.allocated_bytes[TPU_POOL_ALL].peak;
}

static void test_dead_intermediates_never_get_memory(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  tpu_buffer *x = ones(s);
  CHECK_OK(tpu_stream_synchronize(s));
  tpu_mem_reset_peak(0);
  int64_t base = peak_allocated();
  tpu_fused_reset_stats();
  tpu_buffer *y = pending(), *z = pending(), *w = pending();
  CHECK_OK(add(s, x, x, y));
  CHECK_OK(add(s, y, x, z));
  CHECK_OK(add(s, z, z, w));
  CHECK(tpu_fused_pending_nodes(s) == 3);
  CHECK(!tpu_buffer_is_live(w));
  char *text = tpu_fused_dump(s, false);
  CHECK(text && strstr(text, "add") != NULL);
  free(text);
  tpu_buffer_release_storage(y);
  tpu_buffer_release_storage(z);
  float out[N];
  CHECK_OK(read_back(s, w, out));
  CHECK(out[0] == 6.0f && out[N - 1] == 6.0f);
  CHECK(tpu_fused_pending_nodes(s) == 0);
  CHECK(peak_allocated() - base == (int64_t)(N * sizeof(float)));
  tpu_fused_stats stats;
  tpu_fused_get_stats(&stats);
  CHECK(stats.cuts[TPU_CUT_HOST_READ] == 1 && stats.nodes == 3);
  tpu_buffer_release_storage(w);
  tpu_buffer_release_storage(x);
}

static void test_graph_cap_and_undeferrable_calls(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  tpu_fused_reset_stats();
  tpu_buffer *x = ones(s);
  for (int i = 0; i < TPU_FUSED_MAX_NODES + 10; i++)
    CHECK_OK(add(s, x, x, x)); /* in place: x doubles */
  CHECK(tpu_fused_pending_nodes(s) == 10);
  /* A copy into host memory the call does not own cannot wait in a graph. */
  float out[N];
  tpu_op_call *call = tpu_op_call_new(TPU_OP_COPY, 1, 1);
  call->tensors[0] = view(x, NULL);
  call->tensors[1] = view(NULL, out);
  CHECK_OK(tpu_test_submit(s, TPU_EAGER_FUSED, call));
  CHECK_OK(tpu_stream_synchronize(s));
  CHECK(out[0] > 3e38f); /* 2^522 overflows float32: inf */
  tpu_fused_stats stats;
  tpu_fused_get_stats(&stats);
  CHECK(stats.cuts[TPU_CUT_GRAPH_CAP] == 1 && stats.cuts[TPU_CUT_UNDEFERRABLE] == 1);
  CHECK(stats.nodes == TPU_FUSED_MAX_NODES + 10);
  /* A stream's own cap (a torch.compile graph's) holds more nodes; 0 restores the default. */
  tpu_fused_set_graph_cap(s, 3 * TPU_FUSED_MAX_NODES);
  for (int i = 0; i < 2 * TPU_FUSED_MAX_NODES; i++)
    CHECK_OK(add(s, x, x, x));
  CHECK(tpu_fused_pending_nodes(s) == 2 * TPU_FUSED_MAX_NODES);
  tpu_fused_set_graph_cap(s, 0);
  CHECK_OK(add(s, x, x, x));
  CHECK(tpu_fused_pending_nodes(s) == 0);
  tpu_fused_get_stats(&stats);
  CHECK(stats.cuts[TPU_CUT_GRAPH_CAP] == 2);
  CHECK(strcmp(tpu_cut_reason_name(TPU_CUT_COMPILED), "compiled") == 0);
  tpu_buffer_release_storage(x);
}

static void test_small_in_place_chain(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  tpu_buffer *x = ones(s);
  for (int i = 0; i < 5; i++)
    CHECK_OK(add(s, x, x, x));
  CHECK_OK(tpu_fused_flush(s, TPU_CUT_SYNC));
  float out[N];
  CHECK_OK(read_back(s, x, out));
  CHECK(out[0] == 32.0f && out[N - 1] == 32.0f);
  tpu_buffer_release_storage(x);
}

/* The output of a chain takes the memory of an input that died and that nothing reads after. */
static void test_dead_input_memory_is_reused(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  tpu_buffer *x = ones(s);
  CHECK_OK(tpu_stream_synchronize(s));
  tpu_mem_reset_peak(0);
  int64_t base = peak_allocated();
  tpu_buffer *y = pending(), *z = pending();
  CHECK_OK(add(s, x, x, y));
  CHECK_OK(add(s, y, y, z));
  tpu_buffer_release_storage(x);
  tpu_buffer_release_storage(y);
  float out[N];
  CHECK_OK(read_back(s, z, out));
  CHECK(out[0] == 4.0f && out[N - 1] == 4.0f);
  CHECK(peak_allocated() == base);
  tpu_buffer_release_storage(z);
}

/* A sum of a chain's value is computed tile by tile: the value never gets memory. */
/* The sum (mean 0) or the mean (mean 1) of x + x, recorded as a fused chain with its reduction,
 * read back. */
static float reduce_doubled(tpu_stream *s, tpu_buffer *x, int64_t mean) {
  tpu_buffer *y = pending(), *total = NULL;
  CHECK_OK_OR(tpu_buffer_create_pending(0, 0, sizeof(float), &total), NAN);
  CHECK_OK_OR(add(s, x, x, y), NAN);
  tpu_op_call *call = tpu_op_call_new(TPU_OP_SUM, 1, 1);
  call->tensors[0] = view(y, NULL);
  call->tensors[1] = (tpu_tensor){.buf = total, .dtype = TPU_FLOAT32, .ndim = 1};
  call->tensors[1].sizes[0] = 1;
  call->tensors[1].strides[0] = 1;
  call->compute = TPU_FLOAT32;
  call->scalars[0].i = mean;
  tpu_tensor result = call->tensors[1];
  CHECK_OK_OR(tpu_test_submit(s, TPU_EAGER_FUSED, call), NAN);
  tpu_buffer_release_storage(y);
  float out = 0;
  tpu_op_call *copy = tpu_op_call_new(TPU_OP_COPY, 1, 1);
  copy->tensors[0] = result;
  copy->tensors[1] = (tpu_tensor){.host = &out, .dtype = TPU_FLOAT32, .ndim = 1};
  copy->tensors[1].sizes[0] = 1;
  copy->tensors[1].strides[0] = 1;
  CHECK_OK_OR(tpu_submit_sync(s, copy), NAN);
  tpu_buffer_release_storage(total);
  return out;
}

static void test_sum_of_a_chain(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  tpu_buffer *x = ones(s);
  CHECK_OK(tpu_stream_synchronize(s));
  tpu_mem_reset_peak(0);
  int64_t base = peak_allocated();
  CHECK(reduce_doubled(s, x, 0) == 2.0f * N);
  CHECK(peak_allocated() - base < (int64_t)(N * sizeof(float)));
  tpu_buffer_release_storage(x);
}

/* SUM's mean flag is an attribute scalar (ops/tpu_op.h): a graph that differs from a cached one
 * only there gets a plan of its own instead of reusing one that computes the other reduction. */
static void test_attribute_scalars_are_structure(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  tpu_buffer *x = ones(s);
  for (int round = 0; round < 2; round++) {
    CHECK(reduce_doubled(s, x, 0) == 2.0f * N);
    CHECK(reduce_doubled(s, x, 1) == 2.0f);
  }
  tpu_buffer_release_storage(x);
}

static void test_modes(void) {
  CHECK(tpu_eager_mode_parse("fused") == TPU_EAGER_FUSED);
  CHECK(tpu_eager_mode_parse("Debug") == TPU_EAGER_DEBUG);
  CHECK(tpu_eager_mode_parse("lazy") == TPU_EAGER_UNSET);
  CHECK(strcmp(tpu_eager_mode_name(TPU_EAGER_STRICT), "strict") == 0);
  CHECK(strcmp(tpu_cut_reason_name(TPU_CUT_HOST_READ), "host_read") == 0);
  tpu_stream *s = tpu_stream_get(0, 1);
  CHECK(tpu_stream_eager_mode(s) == TPU_EAGER_UNSET);
  tpu_stream_set_eager_mode(s, TPU_EAGER_FUSED);
  CHECK(tpu_stream_eager_mode(s) == TPU_EAGER_FUSED);
  CHECK(tpu_default_eager_mode() == TPU_EAGER_STRICT);
  tpu_set_default_eager_mode(TPU_EAGER_DEBUG);
  CHECK(tpu_launch_blocking());
  tpu_set_default_eager_mode(TPU_EAGER_STRICT);
  CHECK(!tpu_launch_blocking());
}

/* Every element of `b` (read synchronously, which cuts the graph) equals `want`. */
static bool all_equal(tpu_stream *s, tpu_buffer *b, float want) {
  float *out = malloc(N * sizeof *out);
  bool same = read_back(s, b, out) == TPU_OK;
  for (int i = 0; same && i < N; i++)
    same = out[i] == want;
  free(out);
  return same;
}

static uint64_t recomputed(void) {
  tpu_fused_stats stats;
  tpu_fused_get_stats(&stats);
  return stats.recomputed;
}

static void test_results_are_computed_again_when_read(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  tpu_fused_reset_stats();
  tpu_buffer *x = ones(s), *y = pending(), *z = pending(), *w = pending();
  CHECK_OK(add(s, x, x, y)); /* 2 */
  CHECK_OK(add(s, y, x, z)); /* 3 */
  CHECK_OK(tpu_fused_flush(s, TPU_CUT_BACKWARD_START));
  CHECK_OK(tpu_stream_synchronize(s));
  CHECK(!tpu_buffer_is_live(y) && !tpu_buffer_is_live(z));
  CHECK(recomputed() == 0);
  CHECK_OK(add(s, z, z, w)); /* z's recipe first, and y's before it, as z's reads y */
  CHECK(recomputed() == 2);
  CHECK(all_equal(s, w, 6));
  CHECK(all_equal(s, y, 2));
  tpu_buffer *buffers[] = {x, y, z, w};
  for (int i = 0; i < 4; i++)
    tpu_buffer_release_storage(buffers[i]);
}

static void test_dead_results_are_dropped(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  tpu_fused_reset_stats();
  tpu_buffer *x = ones(s), *y = pending(), *z = pending();
  CHECK_OK(add(s, x, x, y));
  CHECK_OK(add(s, y, y, z));
  CHECK_OK(tpu_fused_flush(s, TPU_CUT_BACKWARD_START));
  /* z dies unread; y stays readable while z's recipe, which reads it, exists, then alone. */
  tpu_buffer_release_storage(z);
  CHECK_OK(tpu_fused_flush(s, TPU_CUT_SYNC));
  CHECK(recomputed() == 1);
  CHECK(all_equal(s, y, 2));
  tpu_buffer_release_storage(y);
  tpu_buffer *v = pending();
  CHECK_OK(add(s, x, x, v));
  CHECK_OK(tpu_fused_flush(s, TPU_CUT_BACKWARD_START));
  tpu_buffer_release_storage(v);
  CHECK_OK(tpu_fused_flush(s, TPU_CUT_SYNC));
  CHECK_OK(tpu_stream_synchronize(s));
  CHECK(recomputed() == 1);
  tpu_buffer_release_storage(x);
}

static void test_a_write_to_an_input_waits_for_the_recipe(void) {
  tpu_stream *s = tpu_stream_get(0, 0);
  tpu_buffer *x = ones(s), *y = pending();
  CHECK_OK(add(s, x, x, y));
  CHECK_OK(tpu_fused_flush(s, TPU_CUT_BACKWARD_START));
  CHECK_OK(add(s, x, x, x)); /* x becomes 2 only after y = 1 + 1 is computed again */
  CHECK(all_equal(s, y, 2));
  CHECK(all_equal(s, x, 2));
  tpu_buffer_release_storage(x);
  tpu_buffer_release_storage(y);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_dead_intermediates_never_get_memory);
  RUN_TEST(test_graph_cap_and_undeferrable_calls);
  RUN_TEST(test_small_in_place_chain);
  RUN_TEST(test_dead_input_memory_is_reused);
  RUN_TEST(test_sum_of_a_chain);
  RUN_TEST(test_attribute_scalars_are_structure);
  RUN_TEST(test_modes);
  RUN_TEST(test_results_are_computed_again_when_read);
  RUN_TEST(test_dead_results_are_dropped);
  RUN_TEST(test_a_write_to_an_input_waits_for_the_recipe);
  TEST_MAIN_END();
}
