/* The scenarios of test_fault_injection: each does one kind of work through the runtime as a
 * careful client would (every step checked, everything it made released whatever failed) and
 * returns the first error it met; failed or not, what it wrote must then read back right or fail
 * with an error of the failure (fault_ops.h's read_written). Included by fault_injection.c only. */
#ifndef FAULT_SCENARIOS_H
#define FAULT_SCENARIOS_H

#include <time.h>

#include "device/tpu_event.h"
#include "fault_ops.h"
#include "graph/tpu_compile_cache.h"
#include "graph/tpu_graph.h"
#include "mem/tpu_allocator.h"
#include "mem/tpu_heap.h"
#include "mem/tpu_host_alloc.h"
#include "ops/tpu_op_debug.h"
#include "ops/tpu_op_trace.h"

/* Strict mode: uploads, elementwise ops, a matmul, a softmax and a sum on the stream's worker, a
 * tiny op, then every result read back. */
static tpu_status scenario_strict(results *r) {
  tpu_stream *s = tpu_stream_get(0, 0);
  if (!s)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate a stream");
  enum { A, B, C, M, P, T, U, NBUF };
  static const int64_t len[NBUF] = {FN, FN, FN, FN, FN, 1, 1};
  tpu_buffer *buf[NBUF] = {NULL};
  bool written[NBUF] = {false};
  tpu_status st = TPU_OK;
  for (int i = 0; i < NBUF; i++)
    STEP(st, tpu_buffer_create(0, 0, (size_t)len[i] * sizeof(float), &buf[i]));
  WRITES(st, written[A], upload(s, fault_input(), buf[A], FN));
  WRITES(st, written[B], unary(s, false, TPU_OP_GELU, buf[A], buf[B]));
  WRITES(st, written[C], binary(s, false, TPU_OP_ADD, buf[A], buf[B], buf[C]));
  WRITES(st, written[M], matmul(s, false, buf[C], buf[B], buf[M]));
  WRITES(st, written[P], softmax(s, buf[M], buf[P]));
  WRITES(st, written[T], total(s, false, buf[M], buf[T]));
  if (st == TPU_OK)
    tpu_stream_synchronize(s); /* idle, so the tiny op runs here */
  WRITES(st, written[U], tiny(s, buf[T], buf[U]));
  st = read_written(s, buf, written, len, NBUF, r, st);
  release_all(buf, NBUF);
  return st;
}

/* Debug mode: the strict scenario in this thread's debug mode (launch blocking: every op runs on
 * this thread), the NaN check and an op trace collected. */
static tpu_status scenario_debug(results *r) {
  tpu_set_thread_eager_mode(TPU_EAGER_DEBUG);
  tpu_set_nan_check(true);
  uint64_t mark = tpu_op_trace_begin();
  tpu_status st = scenario_strict(r);
  tpu_trace_record **records = NULL;
  size_t count = 0;
  tpu_status traced = tpu_op_trace_end(mark, &records, &count);
  STEP(st, traced);
  CHECK(st != TPU_OK || count >= 7);
  tpu_op_trace_free(records, count);
  tpu_set_nan_check(false);
  tpu_set_thread_eager_mode(TPU_EAGER_UNSET);
  return st;
}

/* Fused mode: a chain whose intermediate dies unread, a dead input's memory reused in place, a
 * matmul and a sum, cut at the start of backward (the chain's result is computed again there), a
 * backward graph reading it, then every result read back, which cuts it. The compile cache starts
 * empty, so every graph is compiled. */
static tpu_status scenario_fused(results *r) {
  tpu_stream *s = tpu_stream_get(0, 0);
  if (!s)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate a stream");
  tpu_compile_cache *cache = tpu_compile_cache_global();
  if (cache)
    tpu_compile_cache_clear(cache);
  enum { X, D, Y, Z, E, W, M, T, V, NBUF };
  static const int64_t len[NBUF] = {FN, FN, FN, FN, FN, FN, FN, 1, FN};
  tpu_buffer *buf[NBUF] = {NULL};
  bool written[NBUF] = {false};
  tpu_status st = TPU_OK;
  STEP(st, tpu_buffer_create(0, 0, FN * sizeof(float), &buf[X]));
  STEP(st, tpu_buffer_create(0, 0, FN * sizeof(float), &buf[D]));
  for (int i = Y; i < NBUF; i++)
    STEP(st, tpu_buffer_create_pending(0, 0, (size_t)len[i] * sizeof(float), &buf[i]));
  WRITES(st, written[X], upload(s, fault_input(), buf[X], FN));
  STEP(st, upload(s, fault_input(), buf[D], FN));
  STEP(st, binary(s, true, TPU_OP_ADD, buf[X], buf[X], buf[Y]));
  WRITES(st, written[Z], unary(s, true, TPU_OP_GELU, buf[Y], buf[Z]));
  WRITES(st, written[E], binary(s, true, TPU_OP_MUL, buf[D], buf[D], buf[E]));
  if (st == TPU_OK) {
    tpu_buffer_release_storage(buf[Y]); /* never read again: never gets memory */
    tpu_buffer_release_storage(buf[D]); /* its memory goes to E */
    buf[Y] = buf[D] = NULL;
  }
  WRITES(st, written[W], binary(s, true, TPU_OP_ADD, buf[Z], buf[E], buf[W]));
  WRITES(st, written[M], matmul(s, true, buf[W], buf[X], buf[M]));
  WRITES(st, written[T], total(s, true, buf[M], buf[T]));
  STEP(st, tpu_fused_flush(s, TPU_CUT_BACKWARD_START));
  WRITES(st, written[V], binary(s, true, TPU_OP_MUL, buf[Z], buf[X], buf[V]));
  st = read_written(s, buf, written, len, NBUF, r, st);
  release_all(buf, NBUF);
  return st;
}

/* Streams and events: a second stream waits for an event of the first, reads its buffer
 * (record_stream, so the buffer's free waits for it), and times the work with timing events. */
static tpu_status scenario_streams(results *r) {
  tpu_stream *s0 = tpu_stream_get(0, 0);
  if (!s0)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate a stream");
  int index = 0;
  tpu_status st = tpu_stream_create(0, 0, &index);
  tpu_stream *s1 = st == TPU_OK ? tpu_stream_get(0, index) : NULL;
  tpu_event *start = NULL, *end = NULL, *ready = NULL;
  enum { A, B, NBUF };
  static const int64_t len[NBUF] = {FN, FN};
  tpu_buffer *buf[NBUF] = {NULL};
  bool written[NBUF] = {false}; /* A is written twice: only B is read back */
  STEP(st, tpu_event_create(true, &start));
  STEP(st, tpu_event_create(true, &end));
  STEP(st, tpu_event_create(false, &ready));
  STEP(st, tpu_buffer_create(0, 0, FN * sizeof(float), &buf[A]));
  STEP(st, tpu_buffer_create(0, index, FN * sizeof(float), &buf[B]));
  STEP(st, tpu_event_record(start, s0));
  STEP(st, upload(s0, fault_input(), buf[A], FN));
  STEP(st, unary(s0, false, TPU_OP_GELU, buf[A], buf[A]));
  STEP(st, tpu_event_record(ready, s0));
  STEP(st, tpu_event_block(ready, s1));
  if (st == TPU_OK)
    tpu_mem_record_stream(tpu_buffer_memory(buf[A]), index);
  WRITES(st, written[B], binary(s1, false, TPU_OP_MUL, buf[A], buf[A], buf[B]));
  STEP(st, tpu_event_record(end, s1));
  if (buf[A])
    tpu_buffer_release_storage(buf[A]); /* freed once s1 has read it */
  buf[A] = NULL;
  STEP(st, tpu_event_synchronize(end));
  double ms = -1;
  STEP(st, tpu_event_elapsed_ms(start, end, &ms));
  CHECK(st != TPU_OK || ms >= 0);
  if (s1)
    st = read_written(s1, buf, written, len, NBUF, r, st);
  release_all(buf, NBUF);
  tpu_event_destroy(start);
  tpu_event_destroy(end);
  tpu_event_destroy(ready);
  return st;
}

/* MAX_DIM over a 4-float host vector: values (float) and indices (int64), one element each. */
static tpu_op_call *max_dim_call(float *x, float *values, int64_t *indices) {
  tpu_op_call *call = tpu_op_call_new(TPU_OP_MAX_DIM, 1, 2);
  if (!call)
    return NULL;
  call->tensors[0] = fview(NULL, x, 4);
  call->tensors[1] = fview(NULL, values, 1);
  call->tensors[2] = fview(NULL, indices, 1);
  call->tensors[2].dtype = TPU_INT64;
  return call;
}

/* A graph takes a node whole or not at all: five adds on host arrays make 15 slots, then a node
 * with two outputs on new arrays, the second of which grows the slot arrays (16 to 32). */
static tpu_status scenario_graph(results *r) {
  (void)r; /* nothing runs */
  static float mem[16][4];
  static int64_t index;
  tpu_graph *g = tpu_graph_new(0);
  if (!g)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate a graph");
  tpu_status st = TPU_OK;
  for (int n = 0; n < 5; n++) {
    const tpu_tensor t[3] = {fview(NULL, mem[3 * n], 4), fview(NULL, mem[3 * n + 1], 4),
                             fview(NULL, mem[3 * n + 2], 4)};
    STEP(st, tpu_graph_add(g, fcall(TPU_OP_ADD, t, 2, 1.0), 0));
  }
  STEP(st, tpu_graph_add(g, max_dim_call(mem[0], mem[15], &index), 0));
  /* Every slot's latest version exists: the external contents or a node of the graph. */
  for (int s = 0; s < g->n_slots; s++)
    CHECK(g->slots[s].latest_node < g->n_nodes);
  CHECK(st != TPU_OK || (g->n_nodes == 6 && g->n_slots == 17));
  tpu_graph_free(g);
  return st;
}

/* Work that holds its stream for 20 ms, long enough for the frees that follow it to wait for the
 * stream. It ends by itself: a free or a record_use that cannot allocate its bookkeeping waits for
 * the stream at once (mem/tpu_allocator.c, mem/tpu_host_alloc.c). */
static tpu_status hold_stream(void *ctx) {
  (void)ctx;
  nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
  return TPU_OK;
}

/* The allocators: device blocks of the three pools on two streams, one of them used by the other
 * stream while it is busy (so its free waits), the cache given back, a heap of its own, pinned
 * host blocks, one used by the busy stream. */
static tpu_status scenario_allocators(results *r) {
  (void)r; /* nothing to compare: the allocators check themselves */
  static const size_t sizes[] = {1000, 3 << 20, 12 << 20, 0};
  enum { NSIZES = sizeof sizes / sizeof sizes[0] };
  void *dev[2][NSIZES] = {{NULL}}, *pinned[NSIZES] = {NULL};
  tpu_stream *busy = tpu_stream_get(0, 1);
  if (!busy)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate a stream");
  tpu_status st = tpu_stream_submit(busy, "hold", hold_stream, NULL, NULL);
  for (int s = 0; s < 2; s++)
    for (int i = 0; i < NSIZES; i++)
      STEP(st, tpu_mem_alloc(0, s, sizes[i], &dev[s][i]));
  if (st == TPU_OK)
    tpu_mem_record_stream(dev[0][1], 1);
  for (int s = 0; s < 2; s++)
    for (int i = 0; i < NSIZES; i++)
      tpu_mem_free(dev[s][i]);
  for (int i = 0; i < NSIZES; i++)
    STEP(st, tpu_host_alloc(sizes[i], &pinned[i]));
  if (st == TPU_OK)
    CHECK(tpu_host_record_use(pinned[0], 0, 1));
  for (int i = 0; i < NSIZES; i++)
    tpu_host_free(pinned[i]);
  tpu_status synced = tpu_stream_synchronize(busy);
  STEP(st, synced);
  tpu_host_empty_cache();
  tpu_status cached = tpu_mem_empty_cache(0);
  STEP(st, cached);
  tpu_heap *heap = NULL;
  STEP(st, tpu_heap_create(1 << 20, true, &heap));
  void *block = heap ? tpu_heap_alloc(heap, 1000, 4096) : NULL;
  if (heap && !block)
    st = tpu_error(TPU_ERR_OUT_OF_MEMORY, "no heap block");
  tpu_heap_free(heap, block);
  tpu_heap_destroy(heap);
  return st;
}

#endif
