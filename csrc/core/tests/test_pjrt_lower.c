/* The PJRT driver's lowering without a plugin: op calls over contiguous, transposed, sliced and
 * expanded views become StableHLO text whose arguments and results follow the storages; equal
 * calls give equal text whatever their runtime scalars (the executable cache's key); a bounds
 * check becomes a flag result; losses, embedding backward, attention, random draws, convolutions
 * and batch norm lower; a run drops the storages it is told to and knows when it fits one module; the NaN scan lowers;
 * advanced indexing reads self whole and nonzero compacts through a running sum; calls the driver
 * cannot lower are refused up front; pooling lowers to windows; complex copies and matmuls lower
 * on their parts. Under the sanitizers this covers
 * the emitter's string building and view arithmetic. With TORCH_TPU_PJRT_PLUGIN set, each module
 * also compiles. */
#include <stdlib.h>
#include <string.h>

#include "base/tpu_env.h"
#include "drivers/pjrt/tpu_pjrt_cache.h"
#include "drivers/pjrt/tpu_pjrt_client.h"
#include "drivers/pjrt/tpu_pjrt_lower.h"
#include "drivers/pjrt/tpu_pjrt_plugin.h"
#include "drivers/pjrt/tpu_pjrt_storage.h"
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

/* Gives each storage a buffer (uint8 zeros) when a plugin is there: storages without one are
 * read as constant zeros, not arguments. */
static void give_buffers(tpu_buffer *const *bufs, int n) {
  for (int i = 0; client && i < n; i++) {
    PJRT_Buffer *b;
    tpu_dtype elem;
    CHECK_OK(tpu_pjrt_storage_get(client, 0, tpu_buffer_memory(bufs[i]),
                                  tpu_buffer_nbytes(bufs[i]), &b, &elem));
  }
}

/* Lowers `call`, checks the counts (arguments only with a plugin: storages have buffers then),
 * compiles when a plugin is there; returns the text. */
static char *lower(const tpu_op_call *call, int args, int results) {
  tpu_pjrt_program *p = NULL;
  CHECK_OK_OR(tpu_pjrt_lower(&call, 1, NULL, 0, &p), NULL);
  CHECK(!client || p->n_args == args);
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
  /* Nothing wrote a yet: it reads as zeros, a constant; alpha is the one argument. */
  tpu_pjrt_program *fresh = NULL;
  CHECK_OK(tpu_pjrt_lower((const tpu_op_call *const *)&call, 1, NULL, 0, &fresh));
  CHECK(fresh && fresh->n_args == 1 && strstr(fresh->text, "stablehlo.constant"));
  tpu_pjrt_program_free(fresh);
  tpu_buffer *both[2] = {a, b};
  give_buffers(both, 2);
  char *first = lower(call, 2, 1); /* a and alpha in; b, written whole, out */
  call->scalars[0].f = -2.5;
  char *second = lower(call, 2, 1);
  CHECK(first && second && strcmp(first, second) == 0);
  /* a's buffer holds bytes; b, written whole, becomes float32 elements. */
  CHECK(!client || (first && strstr(first, "tensor<192xui8>")));
  CHECK(first && strstr(first, "-> (tensor<48xf32>"));
  /* In place on a step slice of b: b is read and its buffer donated to the result. */
  call->tensors[1] = matrix(b, TPU_FLOAT32, ROWS / 2, COLS / 2, 2 * COLS, 2, 1 * sizeof(float));
  call->tensors[0] = call->tensors[1];
  call->tensors[2] = call->tensors[1];
  char *in_place = lower(call, 2, 1);
  CHECK(!client || (in_place && strstr(in_place, "tf.aliasing_output = 0") != NULL));
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
  tpu_buffer *all[4] = {a, b, c, d};
  give_buffers(all, 4);
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
  /* An overlapping view reads its elements by their positions (a gather), as do negative
   * strides; an output that reaches a position twice is the fallback's, and so are copies
   * between views of other sizes. */
  copy->tensors[0] = matrix(a, TPU_FLOAT32, ROWS, COLS, 2, 1, 0);
  text = lower(copy, 2, 1);
  CHECK(text && strstr(text, "stablehlo.gather"));
  free(text);
  copy->tensors[0] = matrix(a, TPU_FLOAT32, ROWS, COLS, -COLS, 1, (ROWS - 1) * COLS * 4);
  text = lower(copy, 2, 1);
  CHECK(text && strstr(text, "stablehlo.gather"));
  free(text);
  copy->tensors[1] = matrix(b, TPU_BOOL, ROWS, COLS, 2, 1, 0);
  CHECK(!tpu_pjrt_lowerable(copy));
  copy->tensors[1] = matrix(b, TPU_BOOL, ROWS, COLS, 1, ROWS, 0);
  copy->tensors[0] = matrix(a, TPU_FLOAT64, ROWS, 1, 1, 0, 0);
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

/* A 1-d or 0-d view of a whole storage. */
static tpu_tensor vector(tpu_buffer *buf, tpu_dtype dtype, int64_t n) {
  tpu_tensor t = matrix(buf, dtype, n, 1, 1, 1, 0);
  t.ndim = n ? 1 : 0;
  return t;
}

/* A contiguous [B, H, L, D] view. */
static tpu_tensor heads(tpu_buffer *buf, int64_t h, int64_t l, int64_t d) {
  tpu_tensor t = {.buf = buf, .dtype = TPU_FLOAT32, .ndim = 4};
  int64_t sizes[4] = {1, h, l, d}, strides[4] = {h * l * d, l * d, d, 1};
  memcpy(t.sizes, sizes, sizeof sizes);
  memcpy(t.strides, strides, sizeof strides);
  return t;
}

static void test_losses_and_attention(void) {
  tpu_buffer *buf[6] = {0};
  for (int i = 0; i < 6; i++)
    CHECK_OK(tpu_buffer_create(0, 0, 64 * sizeof(float), &buf[i]));
  give_buffers(buf, 6);
  tpu_op_call *nll = tpu_op_call_new(TPU_OP_NLL_LOSS, 2, 2);
  nll->tensors[0] = heads(buf[0], 2, 5, 1); /* [1, 2, 5, 1] as [N=2, C=5, S=1] below */
  nll->tensors[0].ndim = 3;
  memmove(nll->tensors[0].sizes, nll->tensors[0].sizes + 1, 3 * sizeof(int64_t));
  memmove(nll->tensors[0].strides, nll->tensors[0].strides + 1, 3 * sizeof(int64_t));
  nll->tensors[1] = matrix(buf[1], TPU_INT64, 2, 1, 1, 1, 0);
  nll->tensors[2] = vector(buf[2], TPU_FLOAT32, 0);
  nll->tensors[3] = vector(buf[3], TPU_FLOAT32, 0);
  nll->scalars[0].i = 1;    /* mean */
  nll->scalars[1].i = -100; /* ignore_index */
  /* Outputs fill part of their storages, which are read: input, target, loss and total weight
   * in; loss, total weight and the bounds flag out. */
  char *text = lower(nll, 4, 3);
  CHECK(text && strstr(text, "stablehlo.gather") && strstr(text, "-100"));
  free(text);
  tpu_op_call *embed = tpu_op_call_new(TPU_OP_EMBEDDING_BACKWARD, 2, 1);
  embed->tensors[0] = matrix(buf[0], TPU_FLOAT32, 4, 8, 8, 1, 0);
  embed->tensors[1] = vector(buf[1], TPU_INT64, 4);
  embed->tensors[2] = matrix(buf[2], TPU_FLOAT32, 6, 8, 8, 1, 0);
  embed->scalars[0].i = 2; /* padding_idx */
  text = lower(embed, 3, 2); /* grad, indices, grad_weight's storage; it and the flag out */
  CHECK(text && strstr(text, "stablehlo.scatter"));
  free(text);
  tpu_op_call *sdpa = tpu_op_call_new(TPU_OP_SDPA, 3, 2);
  sdpa->tensors[0] = heads(buf[0], 2, 3, 4);
  sdpa->tensors[1] = heads(buf[1], 1, 5, 4); /* one key/value head for both query heads */
  sdpa->tensors[2] = heads(buf[2], 1, 5, 4);
  sdpa->tensors[3] = heads(buf[3], 2, 3, 4);
  sdpa->tensors[4] = heads(buf[4], 2, 3, 1);
  sdpa->tensors[4].ndim = 3;
  sdpa->scalars[0].f = 0.5;
  sdpa->scalars[1].i = TPU_SDPA_CAUSAL;
  free(lower(sdpa, 6, 2)); /* q, k, v, out, logsumexp, the scale; out and logsumexp */
  /* Random draws: seed and offset are arguments, so a new offset never changes the text. */
  tpu_op_call *uniform = tpu_op_call_new(TPU_OP_UNIFORM, 0, 1);
  uniform->tensors[0] = matrix(buf[5], TPU_FLOAT64, 3, 5, 1, 3, 0); /* transposed */
  uniform->scalars[1].f = 2.0;
  uniform->scalars[3].u = 1;
  char *first = lower(uniform, 5, 1); /* the storage (partly written), from, to, seed, offset */
  uniform->scalars[3].u = 2;
  text = lower(uniform, 5, 1);
  CHECK(first && text && strcmp(first, text) == 0 && strstr(text, "3528531795"));
  free(first);
  free(text);
  tpu_op_call *dropout = tpu_op_call_new(TPU_OP_DROPOUT, 1, 2);
  dropout->tensors[0] = matrix(buf[0], TPU_BFLOAT16, 4, 8, 8, 1, 0);
  dropout->tensors[1] = matrix(buf[1], TPU_BFLOAT16, 4, 8, 8, 1, 0);
  dropout->tensors[2] = matrix(buf[2], TPU_BOOL, 4, 8, 8, 1, 0);
  dropout->scalars[0].f = 0.75;
  dropout->scalars[1].f = 1 / 0.75;
  /* input, the two outputs' storages (partly written), keep, scale, seed, offset; two out */
  free(lower(dropout, 7, 2));
  tpu_op_call_free(uniform);
  tpu_op_call_free(dropout);
  tpu_op_call_free(nll);
  tpu_op_call_free(embed);
  tpu_op_call_free(sdpa);
  for (int i = 0; i < 6; i++)
    tpu_buffer_release_storage(buf[i]);
}

/* A contiguous [N, C, H, W] view. */
static tpu_tensor nchw(tpu_buffer *buf, int64_t n, int64_t c, int64_t h, int64_t w) {
  tpu_tensor t = {.buf = buf, .dtype = TPU_FLOAT32, .ndim = 4};
  int64_t sizes[4] = {n, c, h, w}, strides[4] = {c * h * w, h * w, w, 1};
  memcpy(t.sizes, sizes, sizeof sizes);
  memcpy(t.strides, strides, sizeof strides);
  return t;
}

/* Convolutions (grouped, strided, padded) and batch norm in training lower to modules that
 * compile. */
static void test_convolutions_and_batch_norm(void) {
  tpu_buffer *x = NULL, *w = NULL, *y = NULL, *c[4] = {0};
  CHECK_OK(tpu_buffer_create(0, 0, 2 * 4 * 7 * 7 * sizeof(float), &x)); /* [2, 4, 7, 7] */
  CHECK_OK(tpu_buffer_create(0, 0, 6 * 2 * 3 * 3 * sizeof(float), &w)); /* [6, 2, 3, 3] */
  CHECK_OK(tpu_buffer_create(0, 0, 2 * 6 * 4 * 4 * sizeof(float), &y)); /* [2, 6, 4, 4] */
  for (int i = 0; i < 4; i++)
    CHECK_OK(tpu_buffer_create(0, 0, 4 * sizeof(float), &c[i]));
  tpu_buffer *all[7] = {x, w, y, c[0], c[1], c[2], c[3]};
  give_buffers(all, 7);
  static const tpu_op_id ops[3] = {TPU_OP_CONV, TPU_OP_CONV_BACKWARD_INPUT,
                                   TPU_OP_CONV_BACKWARD_WEIGHT};
  tpu_tensor tx = nchw(x, 2, 4, 7, 7), tw = nchw(w, 6, 2, 3, 3), ty = nchw(y, 2, 6, 4, 4);
  const tpu_tensor order[3][3] = {{tx, tw, ty}, {ty, tw, tx}, {ty, tx, tw}};
  for (int k = 0; k < 3; k++) {
    tpu_op_call *conv = tpu_op_call_new(ops[k], 2, 1);
    for (int i = 0; i < 3; i++)
      conv->tensors[i] = order[k][i];
    conv->scalars[0].u = tpu_conv_pack(1, 2, 2); /* stride 2 */
    conv->scalars[1].u = tpu_conv_pack(0, 1, 1); /* padding 1 */
    conv->scalars[2].u = tpu_conv_pack(1, 1, 1);
    char *text = lower(conv, 2, 1);
    if (!text || !strstr(text, "stablehlo.convolution"))
      fprintf(stderr, "%s did not lower\n", tpu_op_name(ops[k]));
    CHECK(text && strstr(text, "stablehlo.convolution"));
    /* Two groups: the forward and input gradient split features, the weight gradient batches. */
    CHECK(text && strstr(text, k == 2 ? "batch_group_count = 2" : "feature_group_count = 2"));
    free(text);
    tpu_op_call_free(conv);
  }
  tpu_op_call *bn = tpu_op_call_new(TPU_OP_BATCH_NORM, 3, 5);
  tpu_tensor flat = nchw(x, 2, 4, 7, 7);
  flat.ndim = 3; /* [N, C, S] */
  flat.sizes[2] = 49;
  flat.strides[1] = 49;
  flat.strides[2] = 1;
  bn->tensors[0] = flat;
  bn->tensors[1] = bn->tensors[2] = (tpu_tensor){.dtype = TPU_FLOAT32, .ndim = 1}; /* absent */
  bn->tensors[3] = flat;
  bn->tensors[3].buf = x; /* in place */
  for (int i = 0; i < 4; i++)
    bn->tensors[4 + i] = vector(c[i], TPU_FLOAT32, 4);
  bn->scalars[0].f = 1e-5;
  bn->scalars[1].f = 0.1;
  bn->scalars[2].i = 1; /* training */
  /* x and the running statistics in, with eps and momentum; y, the saved and the running
   * statistics out (x donated to y). */
  char *text = lower(bn, 5, 5);
  CHECK(text && strstr(text, "stablehlo.reduce"));
  free(text);
  tpu_op_call_free(bn);
  for (int i = 0; i < 7; i++)
    tpu_buffer_release_storage(all[i]);
}

/* Pooling lowers to windows: max pooling's pairs of values and positions, its backward a
 * scatter behind a bounds check, average pooling's backward a spread (padding) summed in windows,
 * adaptive windows of varying size as masks. A call the host kernel refuses is the fallback's. */
static void test_pooling(void) {
  tpu_buffer *x = NULL, *y = NULL, *idx = NULL;
  CHECK_OK(tpu_buffer_create(0, 0, 2 * 3 * 7 * 7 * sizeof(float), &x)); /* [2, 3, 7, 7] */
  CHECK_OK(tpu_buffer_create(0, 0, 2 * 3 * 4 * 4 * sizeof(float), &y)); /* [2, 3, 4, 4] */
  CHECK_OK(tpu_buffer_create(0, 0, 2 * 3 * 4 * 4 * sizeof(int64_t), &idx));
  tpu_buffer *all[3] = {x, y, idx};
  give_buffers(all, 3);
  tpu_tensor tx = nchw(x, 2, 3, 7, 7), ty = nchw(y, 2, 3, 4, 4), ti = nchw(idx, 2, 3, 4, 4);
  ti.dtype = TPU_INT64;
  tpu_op_call *pool = tpu_op_call_new(TPU_OP_POOL, 1, 2);
  tpu_op_call *grad = tpu_op_call_new(TPU_OP_POOL_BACKWARD, 2, 1);
  const tpu_tensor forward[3] = {tx, ty, ti}, backward[3] = {ty, ti, tx};
  for (int i = 0; i < 3; i++) {
    pool->tensors[i] = forward[i];
    grad->tensors[i] = backward[i];
  }
  tpu_op_call *calls[2] = {pool, grad};
  for (int k = 0; k < 2; k++) { /* kernel 3, stride 2, padding 1, dilation 1, max */
    calls[k]->scalars[0].u = tpu_conv_pack(1, 3, 3);
    calls[k]->scalars[1].u = tpu_conv_pack(1, 2, 2);
    calls[k]->scalars[2].u = tpu_conv_pack(0, 1, 1);
    calls[k]->scalars[3].u = tpu_conv_pack(1, 1, 1);
  }
  char *text = lower(pool, 1, 2); /* x in; y and the indices out */
  CHECK(text && strstr(text, "stablehlo.reduce_window") && strstr(text, "tensor<2x3x4x4xi64>"));
  free(text);
  text = lower(grad, 2, 2); /* dy and the indices in; dx and the bounds flag out */
  CHECK(text && strstr(text, "stablehlo.scatter") && !strstr(text, "tf.aliasing_output"));
  free(text);
  grad->n_inputs = 1; /* average pooling's backward: dy in, dx out */
  grad->tensors[1] = tx;
  grad->scalars[4].u = TPU_POOL_AVG | TPU_POOL_COUNT_PAD;
  text = lower(grad, 1, 1);
  CHECK(text && strstr(text, "stablehlo.pad") && strstr(text, "stablehlo.reduce_window"));
  free(text);
  pool->n_outputs = 1; /* adaptive average pooling from 7 to 4: windows of 2 and 3 */
  pool->scalars[4].u = TPU_POOL_ADAPTIVE_AVG;
  text = lower(pool, 1, 1);
  CHECK(text && strstr(text, "stablehlo.reduce_window") && strstr(text, "tensor<2x3x4x7x7xf32>"));
  free(text);
  pool->scalars[4].u = TPU_POOL_AVG;
  pool->scalars[0].u = tpu_conv_pack(1, 0, 3); /* a kernel of 0: the host reports the error */
  CHECK(!tpu_pjrt_lowerable(pool));
  tpu_op_call_free(pool);
  tpu_op_call_free(grad);
  for (int i = 0; i < 3; i++)
    tpu_buffer_release_storage(all[i]);
}

/* A run of two calls where the second reads the first's result: dropping the intermediate's
 * storage leaves one result; a run whose outputs outnumber a module's results does not fit; the
 * NaN scan lowers to one flag. */
static void test_runs_drop_and_fit(void) {
  enum { N = 4 * TPU_PJRT_MAX_RUN };
  tpu_buffer *bufs[N] = {NULL};
  for (int i = 0; i < N; i++)
    CHECK_OK(tpu_buffer_create(0, 0, COLS * sizeof(float), &bufs[i]));
  give_buffers(bufs, N);
  tpu_op_call *calls[N];
  for (int i = 0; i < N; i++) { /* bufs[i + 1] = -bufs[i], a chain */
    calls[i] = tpu_op_call_new(TPU_OP_NEG, 1, 1);
    calls[i]->compute = TPU_FLOAT32;
    calls[i]->tensors[0] = matrix(bufs[i], TPU_FLOAT32, 1, COLS, COLS, 1, 0);
    calls[i]->tensors[1] = matrix(bufs[(i + 1) % N], TPU_FLOAT32, 1, COLS, COLS, 1, 0);
  }
  const tpu_op_call *const *run = (const tpu_op_call *const *)calls;
  tpu_pjrt_program *p = NULL;
  CHECK_OK(tpu_pjrt_lower(run, 2, NULL, 0, &p));
  CHECK(p && p->n_results == 2);
  tpu_pjrt_program_free(p);
  CHECK_OK(tpu_pjrt_lower(run, 2, &bufs[1], 1, &p));
  /* The result goes to the second call's output, bufs[2]. */
  CHECK(p && p->n_results == 1 && p->results[0].source == TPU_PJRT_STORAGE &&
        calls[p->results[0].call]->tensors[p->results[0].index].buf == bufs[2]);
  tpu_pjrt_program_free(p);
  bool fits = false;
  CHECK_OK(tpu_pjrt_run_fits(run, TPU_PJRT_MAX_RUN, &fits));
  CHECK(fits); /* 32 results */
  /* Three outputs a call: past the module's results. */
  tpu_op_call *norms[TPU_PJRT_MAX_RUN];
  for (int i = 0; i < TPU_PJRT_MAX_RUN; i++) {
    norms[i] = tpu_op_call_new(TPU_OP_LAYER_NORM, 3, 3);
    norms[i]->compute = TPU_FLOAT32;
    tpu_tensor stats = {.dtype = TPU_FLOAT32, .ndim = 1, .sizes = {2}, .strides = {1}};
    norms[i]->tensors[0] = matrix(bufs[4 * i], TPU_FLOAT32, 2, COLS / 2, COLS / 2, 1, 0);
    norms[i]->tensors[1] = (tpu_tensor){.dtype = TPU_FLOAT32, .ndim = 1}; /* absent */
    norms[i]->tensors[2] = norms[i]->tensors[1];
    norms[i]->tensors[3] = matrix(bufs[4 * i + 1], TPU_FLOAT32, 2, COLS / 2, COLS / 2, 1, 0);
    norms[i]->tensors[4] = norms[i]->tensors[5] = stats;
    norms[i]->tensors[4].buf = bufs[4 * i + 2];
    norms[i]->tensors[5].buf = bufs[4 * i + 3];
    norms[i]->scalars[0].f = 1e-5;
  }
  CHECK_OK(tpu_pjrt_run_fits((const tpu_op_call *const *)norms, TPU_PJRT_MAX_RUN, &fits));
  CHECK(!fits);
  CHECK_OK(tpu_pjrt_run_fits((const tpu_op_call *const *)norms, 2, &fits));
  CHECK(fits);
  uint8_t flag = 0;
  tpu_op_call *scan = tpu_op_call_new(TPU_OP_COPY, 1, 1);
  scan->tensors[0] = calls[0]->tensors[0];
  scan->tensors[1] = (tpu_tensor){.dtype = TPU_UINT8, .host = &flag};
  CHECK(tpu_pjrt_nonfinite_lowers(&scan->tensors[0]));
  CHECK_OK(tpu_pjrt_lower_nonfinite(scan, &p));
  CHECK(p && p->n_results == 1 && p->results[0].source == TPU_PJRT_HOST &&
        p->results[0].call == 0 && p->results[0].index == 1);
  CHECK(p && strstr(p->text, "stablehlo.is_finite") && strstr(p->text, "-> tensor<1x8xi1>"));
  if (client && p) {
    const tpu_pjrt_executable *exe;
    CHECK_OK(tpu_pjrt_cache_get(client, p->text, p->len, &exe));
  }
  tpu_pjrt_program_free(p);
  tpu_op_call_free(scan);
  for (int i = 0; i < TPU_PJRT_MAX_RUN; i++)
    tpu_op_call_free(norms[i]);
  for (int i = 0; i < N; i++) {
    tpu_op_call_free(calls[i]);
    tpu_buffer_release_storage(bufs[i]);
  }
}

/* Advanced indexing reads and writes self whole, through the view its restrided operand and 1-d
 * views make, and checks its indices; nonzero's output, sized by the call, comes from a running
 * sum and a scatter, with its count checked; a self whose indexed dimension is expanded is not
 * written in place. */
static void test_advanced_and_masked_indexing(void) {
  tpu_buffer *x = NULL, *idx = NULL, *offsets = NULL, *out = NULL;
  CHECK_OK(tpu_buffer_create(0, 0, ROWS * COLS * sizeof(float), &x));
  CHECK_OK(tpu_buffer_create(0, 0, 4 * sizeof(int64_t), &idx));
  CHECK_OK(tpu_buffer_create(0, 0, 4 * sizeof(int64_t), &offsets));
  CHECK_OK(tpu_buffer_create(0, 0, 4 * ROWS * sizeof(float), &out));
  tpu_buffer *all[4] = {x, idx, offsets, out};
  give_buffers(all, 4);
  /* x.t()[i] of x [ROWS, COLS] with i [4]: I [4], A [ROWS]; self is x.t(), [COLS, ROWS] */
  tpu_op_call *index = tpu_op_call_new(TPU_OP_INDEX, 3, 2);
  index->tensors[0] = matrix(x, TPU_FLOAT32, 4, ROWS, 0, COLS, 0);
  index->tensors[1] = vector(idx, TPU_INT64, 4);
  index->tensors[2] = vector(x, TPU_FLOAT32, COLS);
  index->tensors[3] = vector(offsets, TPU_INT64, 4);
  index->tensors[4] = matrix(out, TPU_FLOAT32, 4, ROWS, ROWS, 1, 0);
  char *text = lower(index, 2, 3); /* x and i in; offsets, out and the bounds flag out */
  CHECK(text && strstr(text, "stablehlo.gather") && strstr(text, "tensor<8x6xf32>"));
  free(text);
  /* x.t()[i] += v, v in out's storage */
  tpu_op_call *put = tpu_op_call_new(TPU_OP_INDEX_PUT, 3, 2);
  put->tensors[0] = index->tensors[4];
  put->tensors[1] = index->tensors[1];
  put->tensors[2] = index->tensors[2];
  put->tensors[3] = index->tensors[3];
  put->tensors[4] = index->tensors[0];
  put->scalars[1].i = 1;
  text = lower(put, 3, 3); /* v, i and x in; offsets, x and the flag out, x not donated */
  CHECK(text && strstr(text, "stablehlo.scatter") && !strstr(text, "tf.aliasing_output"));
  free(text);
  put->tensors[2].strides[0] = 0; /* self expanded along its indexed dimension */
  CHECK(!tpu_pjrt_lowerable(put));
  tpu_op_call *nonzero = tpu_op_call_new(TPU_OP_NONZERO, 1, 1);
  nonzero->tensors[0] = matrix(x, TPU_FLOAT32, ROWS, COLS, COLS, 1, 0);
  nonzero->tensors[1] = matrix(out, TPU_INT64, 5, 2, 1, 5, 0); /* column-major, as PyTorch's */
  text = lower(nonzero, 2, 2); /* x and out (written in part) in; out and the count's check out */
  CHECK(text && strstr(text, "stablehlo.reduce_window") && strstr(text, "stablehlo.scatter"));
  free(text);
  tpu_op_call_free(index);
  tpu_op_call_free(put);
  tpu_op_call_free(nonzero);
  for (int i = 0; i < 4; i++)
    tpu_buffer_release_storage(all[i]);
}

/* A complex view reads and writes as its parts (a last dimension of 2): copies convert to and
 * from complex dtypes, a storage a complex view writes whole becomes an array of its parts, and
 * a dot of strided, conjugated vectors is four real dots; other ops on complex numbers are the
 * fallback's. The storages hold bytes when a plugin is there, so their views are bitcast. */
static void test_complex(void) {
  tpu_buffer *a = NULL, *b = NULL, *c = NULL;
  CHECK_OK(tpu_buffer_create(0, 0, ROWS * COLS * 8, &a));  /* ROWS x COLS complex64 */
  CHECK_OK(tpu_buffer_create(0, 0, ROWS * COLS * 16, &b)); /* ROWS x COLS complex128 */
  CHECK_OK(tpu_buffer_create(0, 0, 8, &c));                /* one complex64 */
  tpu_buffer *all[3] = {a, b, c};
  give_buffers(all, 3);
  tpu_op_call *copy = tpu_op_call_new(TPU_OP_COPY, 1, 1);
  copy->tensors[0] = matrix(a, TPU_COMPLEX64, COLS, ROWS, 1, COLS, 0); /* transposed */
  copy->tensors[1] = matrix(b, TPU_COMPLEX128, COLS, ROWS, ROWS, 1, 0);
  char *text = lower(copy, 1, 1); /* a in; b, written whole, out as float64 parts */
  CHECK(text && strstr(text, "-> (tensor<96xf64>"));
  free(text);
  copy->tensors[0] = matrix(b, TPU_BOOL, COLS, ROWS, ROWS, 1, 0);
  copy->tensors[1] = matrix(a, TPU_COMPLEX64, COLS, ROWS, 1, COLS, 0);
  free(lower(copy, 2, 1)); /* b and a (written out of order) in; a out */
  copy->tensors[0] = matrix(b, TPU_COMPLEX128, ROWS / 2, COLS / 2, 2 * COLS, 2, 16); /* steps */
  copy->tensors[1] = matrix(a, TPU_INT16, ROWS / 2, COLS / 2, COLS / 2, 1, 0);
  free(lower(copy, 2, 1)); /* the real parts; a, written in part, in */
  tpu_op_call *dot = tpu_op_call_new(TPU_OP_DOT, 2, 1);
  tpu_tensor x = {.buf = a, .dtype = TPU_COMPLEX64, .ndim = 3, .sizes = {1, 1, ROWS},
                  .strides = {0, 0, 2}};
  tpu_tensor y = {.buf = a, .dtype = TPU_COMPLEX64, .ndim = 3, .offset = 8,
                  .sizes = {1, ROWS, 1}, .strides = {0, 2, 0}};
  tpu_tensor out = {.buf = c, .dtype = TPU_COMPLEX64, .ndim = 3, .sizes = {1, 1, 1}};
  dot->tensors[0] = x;
  dot->tensors[1] = y;
  dot->tensors[2] = out;
  dot->scalars[0].f = 1;
  dot->scalars[4].i = TPU_GEMM_CONJ_A;
  text = lower(dot, 3, 1); /* a and alpha's two parts in; c out */
  CHECK(text && strstr(text, "stablehlo.dot_general") && strstr(text, "stablehlo.negate"));
  free(text);
  tpu_op_call *add = tpu_op_call_new(TPU_OP_ADD, 2, 1);
  add->compute = TPU_COMPLEX64;
  for (int i = 0; i < 3; i++)
    add->tensors[i] = matrix(a, TPU_COMPLEX64, ROWS, COLS, COLS, 1, 0);
  CHECK(!tpu_pjrt_lowerable(add));
  tpu_op_call_free(copy);
  tpu_op_call_free(dot);
  tpu_op_call_free(add);
  for (int i = 0; i < 3; i++)
    tpu_buffer_release_storage(all[i]);
}

int main(void) {
  TEST_MAIN_BEGIN();
  const char *path = tpu_env_get("TORCH_TPU_PJRT_PLUGIN");
  const PJRT_Api *api;
  if (path && tpu_pjrt_plugin_load(path, &api) == TPU_OK)
    tpu_pjrt_client_create(api, &client);
  RUN_TEST(test_views_of_storages);
  RUN_TEST(test_families);
  RUN_TEST(test_losses_and_attention);
  RUN_TEST(test_runs_drop_and_fit);
  RUN_TEST(test_convolutions_and_batch_norm);
  RUN_TEST(test_pooling);
  RUN_TEST(test_advanced_and_masked_indexing);
  RUN_TEST(test_complex);
  TEST_MAIN_END();
}
