/* What the scenarios of test_fault_injection (fault_scenarios.h) are made of: float32 views and
 * op calls on buffers, launched or recorded in fused mode, synchronous copies to and from the host,
 * and the check that what a run wrote reads back right or fails with the run's error. */
#ifndef FAULT_OPS_H
#define FAULT_OPS_H

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "exec/tpu_fused.h"
#include "ops/tpu_op.h"
#include "tensor/tpu_buffer.h"
#include "tpu_test.h"

/* 64 KiB of float32: past the tiny-op bound, so launches go to the stream's worker, and large
 * enough to be computed again in backward (exec/tpu_remat.h). A 128 x 128 matrix. */
#define FN (1 << 14)
#define FSIDE 128

/* A failed check of test_fault_injection, with its own message. */
#define FAIL_CASE(...)                                                                             \
  do {                                                                                             \
    fprintf(stderr, __VA_ARGS__);                                                                  \
    tpu_test_failures++;                                                                           \
  } while (0)

/* Runs `expr` only while `st` is TPU_OK: the first error stays in `st`. */
#define STEP(st, expr)                                                                             \
  do {                                                                                             \
    if ((st) == TPU_OK)                                                                            \
      (st) = (expr);                                                                               \
  } while (0)

/* A dense view of n floats, 1-d, or 3-d [1, rows, cols] for the matmul family. */
static tpu_tensor fview(tpu_buffer *buf, void *host, int64_t n) {
  tpu_tensor t = {.buf = buf, .host = host, .dtype = TPU_FLOAT32, .ndim = 1};
  t.sizes[0] = n;
  t.strides[0] = 1;
  return t;
}

static tpu_tensor fmatrix(tpu_buffer *buf) {
  tpu_tensor t = {.buf = buf, .dtype = TPU_FLOAT32, .ndim = 3};
  const int64_t sizes[3] = {1, FSIDE, FSIDE}, strides[3] = {FN, FSIDE, 1};
  memcpy(t.sizes, sizes, sizeof sizes);
  memcpy(t.strides, strides, sizeof strides);
  return t;
}

/* A call of `op` on n_in inputs then one output, scalar 0 = s0, computing in float32; NULL when
 * out of host memory, which the launch functions report as TPU_ERR_OUT_OF_MEMORY. */
static tpu_op_call *fcall(tpu_op_id op, const tpu_tensor *t, int n_in, double s0) {
  tpu_op_call *call = tpu_op_call_new(op, n_in, 1);
  if (!call)
    return NULL;
  for (int i = 0; i <= n_in; i++)
    call->tensors[i] = t[i];
  call->compute = TPU_FLOAT32;
  call->scalars[0].f = s0;
  return call;
}

/* Launches in strict mode, or records in the stream's open graph. */
static tpu_status run_op(tpu_stream *s, bool fused, tpu_op_call *call) {
  return tpu_test_submit(s, fused ? TPU_EAGER_FUSED : TPU_EAGER_STRICT, call);
}

static tpu_status binary(tpu_stream *s, bool fused, tpu_op_id op, tpu_buffer *a, tpu_buffer *b,
                         tpu_buffer *out) {
  const tpu_tensor t[3] = {fview(a, NULL, FN), fview(b, NULL, FN), fview(out, NULL, FN)};
  return run_op(s, fused, fcall(op, t, 2, 1.0));
}

static tpu_status unary(tpu_stream *s, bool fused, tpu_op_id op, tpu_buffer *a, tpu_buffer *out) {
  const tpu_tensor t[2] = {fview(a, NULL, FN), fview(out, NULL, FN)};
  return run_op(s, fused, fcall(op, t, 1, 0.0));
}

/* out = a @ b, as 128 x 128 matrices. */
static tpu_status matmul(tpu_stream *s, bool fused, tpu_buffer *a, tpu_buffer *b, tpu_buffer *out) {
  tpu_op_call *call = tpu_op_call_new(TPU_OP_MM, 2, 1);
  if (call) {
    call->tensors[0] = fmatrix(a);
    call->tensors[1] = fmatrix(b);
    call->tensors[2] = fmatrix(out);
    call->compute = TPU_FLOAT32;
    call->scalars[0].f = 1.0;
  }
  return run_op(s, fused, call);
}

/* out (one float) = the sum of a's elements. */
static tpu_status total(tpu_stream *s, bool fused, tpu_buffer *a, tpu_buffer *out) {
  const tpu_tensor t[2] = {fview(a, NULL, FN), fview(out, NULL, 1)};
  return run_op(s, fused, fcall(TPU_OP_SUM, t, 1, 0.0));
}

/* Softmax over the rows of a as a 128 x 128 matrix. */
static tpu_status softmax(tpu_stream *s, tpu_buffer *a, tpu_buffer *out) {
  tpu_op_call *call = tpu_op_call_new(TPU_OP_SOFTMAX, 1, 1);
  if (call) {
    call->tensors[0] = fmatrix(a);
    call->tensors[1] = fmatrix(out);
    call->scalars[0].i = 2;
  }
  return tpu_submit(s, call);
}

/* Synchronous copies between the host and a buffer (the first n floats). */
static tpu_status upload(tpu_stream *s, const float *host, tpu_buffer *b, int64_t n) {
  const tpu_tensor t[2] = {fview(NULL, (void *)host, n), fview(b, NULL, n)};
  return tpu_submit_sync(s, fcall(TPU_OP_COPY, t, 1, 0.0));
}

static tpu_status download(tpu_stream *s, tpu_buffer *b, float *host, int64_t n) {
  const tpu_tensor t[2] = {fview(b, NULL, n), fview(NULL, host, n)};
  return tpu_submit_sync(s, fcall(TPU_OP_COPY, t, 1, 0.0));
}

static void release_all(tpu_buffer **bufs, int n) {
  for (int i = 0; i < n; i++)
    if (bufs[i])
      tpu_buffer_release_storage(bufs[i]);
}

/* Deterministic inputs in [-1, 1). */
static const float *fault_input(void) {
  static float x[FN];
  for (int i = 0; i < FN; i++)
    x[i] = (float)((i * 7919) % 2000 - 1000) / 1000.0f;
  return x;
}

/* A failed allocation may end a run with TPU_ERR_OUT_OF_MEMORY, or with a RuntimeError reporting
 * it as the failure of an op or a stream: a read of contents an op could not write
 * (tpu_buffer_check_poison), a stream whose worker thread could not start. */
static bool acceptable(tpu_status st, const char *message) {
  if (st == TPU_ERR_OUT_OF_MEMORY)
    return true;
  return st == TPU_ERR_RUNTIME && (strstr(message, "tensor contents are invalid") != NULL ||
                                   strstr(message, "cannot start the worker thread") != NULL);
}

/* The buffers a scenario writes, and what they read back: compared with the golden copy that its
 * first run, which meets no failure, reads. Equal within a relative 1e-5 (kernels may split work
 * differently from run to run). The program keeps them in memory shared with the processes it
 * forks. */
enum { MAX_BUFFERS = 10 };

typedef struct results {
  float values[MAX_BUFFERS][FN];
  bool golden_made;
  float golden[MAX_BUFFERS][FN];
} results;

static bool close_to(const float *got, const float *want, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!(fabsf(got[i] - want[i]) <= 1e-5f * (1.0f + fabsf(want[i]))))
      return false;
  return true;
}

/* Runs `expr` only while `st` is TPU_OK, and records in `flag` that it succeeded: the op that
 * writes a buffer was accepted, so the buffer must come to hold its result. */
#define WRITES(st, flag, expr)                                                                     \
  do {                                                                                             \
    if ((st) == TPU_OK && ((st) = (expr)) == TPU_OK)                                               \
      (flag) = true;                                                                               \
  } while (0)

/* After the work, whether it failed or not: every buffer whose writing op was accepted reads back
 * its right value, or fails to read with an error of the failure (its contents poisoned); a silent
 * wrong value is a bug. Returns the run's first error, the reads' included. */
static tpu_status read_written(tpu_stream *s, tpu_buffer **buf, const bool *written,
                               const int64_t *len, int n, results *r, tpu_status st) {
  for (int i = 0; i < n; i++) {
    if (!written[i] || !buf[i])
      continue;
    memset(r->values[i], 0, sizeof r->values[i]);
    tpu_status read = download(s, buf[i], r->values[i], len[i]);
    if (read != TPU_OK && st == TPU_OK)
      st = read;
    else if (read != TPU_OK && !acceptable(read, tpu_last_error()))
      FAIL_CASE("buffer %d does not read back: %s: %s\n", i, tpu_status_name(read),
                tpu_last_error());
    else if (read == TPU_OK && r->golden_made && !close_to(r->values[i], r->golden[i], len[i]))
      FAIL_CASE("buffer %d reads back a wrong value: %g, %g, ... instead of %g, %g, ...\n", i,
                r->values[i][0], r->values[i][1], r->golden[i][0], r->golden[i][1]);
  }
  if (st == TPU_OK && !r->golden_made) {
    memcpy(r->golden, r->values, sizeof r->golden);
    r->golden_made = true;
  }
  return st;
}

/* out (one float) = a + a: a tiny op, which runs on the launching thread if the stream is idle. */
static tpu_status tiny(tpu_stream *s, tpu_buffer *a, tpu_buffer *out) {
  const tpu_tensor t[3] = {fview(a, NULL, 1), fview(a, NULL, 1), fview(out, NULL, 1)};
  return tpu_submit(s, fcall(TPU_OP_ADD, t, 2, 1.0));
}

#endif
