/* The host driver's fused planner and executor (drivers/host/fuse/fuse.h): chains of 2-8
 * elementwise nodes in float32, bfloat16, float16, float64 and int32 (add, mul, gelu, tanh, exp,
 * where with a bool mask, comparisons, scalar and bias operands, in-place updates) give bit for bit
 * what running each node alone through its host kernel gives; a strided input or a shifted view of
 * a result splits the group and still matches; long chains are cut; unneeded intermediates are
 * never written (a poison pattern survives, a pending buffer stays without memory); errors poison
 * the outputs; an Adam step (moments and parameter updated in place) is one group; the compile
 * cache hands a graph of equal structure with other scalars and buffers the same plan. A timing of
 * y = gelu(x * a + b) fused against node by node is printed (TPU_FUSE_BENCH_N elements, default
 * 1M; TPU_FUSE_BENCH_THREADS threads; no timed assertion). */
#include <math.h>
#include <time.h>

#include "drivers/host/fuse/fuse.h"
#include "drivers/host/engine/engine_pool.h"
#include "graph/tpu_compile_cache.h"
#include "tpu_test_graph.h"

#define MAX_ARRAYS 12
#define POISON 0xA5

/* The arrays a test graph reads and writes; `unneeded` ones must keep the poison when fused. */
typedef struct arrays {
  int n;
  tpu_dtype dtype[MAX_ARRAYS];
  int64_t len[MAX_ARRAYS];
  bool output[MAX_ARRAYS];   /* starts poisoned */
  bool unneeded[MAX_ARRAYS]; /* an intermediate nothing outside reads */
  void *ref[MAX_ARRAYS], *fused[MAX_ARRAYS];
} arrays;

static int add_array(arrays *a, tpu_dtype dtype, int64_t len, bool output, bool unneeded) {
  int i = a->n++;
  a->dtype[i] = dtype, a->len[i] = len, a->output[i] = output, a->unneeded[i] = unneeded;
  size_t bytes = (size_t)len * tpu_dtype_size(dtype);
  a->ref[i] = malloc(bytes);
  a->fused[i] = malloc(bytes);
  if (output) {
    memset(a->ref[i], POISON, bytes);
    memset(a->fused[i], POISON, bytes);
  } else {
    fill_random(a->ref[i], dtype, len, (uint64_t)i + 1);
    memcpy(a->fused[i], a->ref[i], bytes);
  }
  return i;
}

/* A graph description: emits its calls on the arrays of one copy (ref or fused). */
typedef void (*describe_fn)(emitter *e, void **mem, const arrays *a, double scalar);

static bool all_poison(const void *mem, size_t bytes) {
  for (size_t i = 0; i < bytes; i++)
    if (((const unsigned char *)mem)[i] != POISON)
      return false;
  return true;
}

/* Runs the description node by node on the ref copy and as one fused graph on the other (outputs
 * of nodes writing unneeded arrays marked unneeded); compares. Returns the plan's step count. */
static int check_fused(arrays *a, describe_fn describe, double scalar) {
  emitter ref = {NULL};
  describe(&ref, a->ref, a, scalar);
  emitter fused = {tpu_graph_new(0)};
  describe(&fused, a->fused, a, scalar);
  tpu_graph *g = fused.graph;
  for (int n = 0; n < g->n_nodes; n++) {
    const tpu_op_call *c = g->nodes[n].call;
    for (int i = 0; i < a->n; i++)
      if (a->unneeded[i] && c->tensors[c->n_inputs].host == a->fused[i])
        tpu_graph_set_needed(g, n, 0, false);
  }
  tpu_fuse_plan *plan;
  CHECK_OK_OR(tpu_fuse_plan_create(g, &plan), -1);
  CHECK_OK_OR(tpu_fuse_run(plan, g), -1);
  for (int i = 0; i < a->n; i++) {
    size_t bytes = (size_t)a->len[i] * tpu_dtype_size(a->dtype[i]);
    if (a->unneeded[i])
      CHECK(all_poison(a->fused[i], bytes));
    else
      CHECK(memcmp(a->ref[i], a->fused[i], bytes) == 0);
  }
  int steps = tpu_fuse_plan_steps(plan);
  tpu_fuse_plan_destroy(plan);
  tpu_graph_free(g);
  for (int i = 0; i < a->n; i++) {
    free(a->ref[i]);
    free(a->fused[i]);
  }
  return steps;
}

/* Array roles of the chains below. */
enum { X, A, B, T0, T1, T2, T3, Y, MASK };

static tpu_tensor arr(void **mem, const arrays *a, int i) {
  return vec1(mem[i], a->dtype[i], a->len[i]);
}

/* y = gelu(x * a + scalar * b), t0 and t1 unneeded. */
static void gelu_chain(emitter *e, void **m, const arrays *a, double scalar) {
  tpu_dtype c = a->dtype[X];
  emit(e, mk_call(TPU_OP_MUL, c, (tpu_tensor[]){arr(m, a, X), arr(m, a, A), arr(m, a, T0)}, 2, 0));
  emit(e, mk_call(TPU_OP_ADD, c, (tpu_tensor[]){arr(m, a, T0), arr(m, a, B), arr(m, a, T1)}, 2,
                  scalar));
  emit(e, mk_call(TPU_OP_GELU, c, (tpu_tensor[]){arr(m, a, T1), arr(m, a, Y)}, 1, 0));
}

static void make_chain_arrays(arrays *a, tpu_dtype d, int64_t n, int extra_unneeded) {
  memset(a, 0, sizeof *a);
  for (int i = X; i <= B; i++)
    add_array(a, d, n, false, false);
  for (int i = T0; i <= T3; i++)
    add_array(a, d, n, true, i - T0 < extra_unneeded);
  add_array(a, d, n, true, false); /* Y */
}

static void test_gelu_chain(void) {
  /* Odd sizes: several tiles, a partial last tile, chunks over the pool. */
  const tpu_dtype dtypes[] = {TPU_FLOAT32, TPU_FLOAT64, TPU_BFLOAT16, TPU_FLOAT16};
  for (int d = 0; d < 4; d++) {
    arrays a;
    make_chain_arrays(&a, dtypes[d], 100003, 2);
    CHECK(check_fused(&a, gelu_chain, 0.75) == 1);
  }
}

/* Six nodes in bfloat16: y = exp(tanh(x * a)) * 1.3 (a scalar operand) + b, then gelu_tanh; the
 * mul's result t0 is also needed outside. */
static void six_chain(emitter *e, void **m, const arrays *a, double scalar) {
  tpu_dtype c = a->dtype[X];
  emit(e, mk_call(TPU_OP_MUL, c, (tpu_tensor[]){arr(m, a, X), arr(m, a, A), arr(m, a, T0)}, 2, 0));
  emit(e, mk_call(TPU_OP_TANH, c, (tpu_tensor[]){arr(m, a, T0), arr(m, a, T1)}, 1, 0));
  emit(e, mk_call(TPU_OP_EXP, c, (tpu_tensor[]){arr(m, a, T1), arr(m, a, T2)}, 1, 0));
  tpu_op_call *mul =
      mk_call(TPU_OP_MUL, c, (tpu_tensor[]){arr(m, a, T2), {0}, arr(m, a, T3)}, 2, 0);
  tpu_op_set_scalar_input(mul, 1, 7, SCALAR_F(scalar), true);
  emit(e, mul);
  emit(e, mk_call(TPU_OP_ADD, c, (tpu_tensor[]){arr(m, a, T3), arr(m, a, B), arr(m, a, T1)}, 2, 1));
  emit(e, mk_call(TPU_OP_GELU_TANH, c, (tpu_tensor[]){arr(m, a, T1), arr(m, a, Y)}, 1, 0));
}

static void test_six_nodes_with_scalar(void) {
  const tpu_dtype dtypes[] = {TPU_BFLOAT16, TPU_FLOAT32};
  for (int d = 0; d < 2; d++) {
    arrays a;
    make_chain_arrays(&a, dtypes[d], 5000, 0);
    a.unneeded[T2] = a.unneeded[T3] = true;
    /* T1 is written twice (tanh, then the add): only its last version is needed. */
    CHECK(check_fused(&a, six_chain, 1.3) == 1);
  }
}

/* y = where(x > a, x * s, b) in float64 or int32, then t2 = where(mask, y, x), mask external. */
static void where_chain(emitter *e, void **m, const arrays *a, double scalar) {
  tpu_dtype c = a->dtype[X];
  emit(e, mk_call(TPU_OP_GT, c, (tpu_tensor[]){arr(m, a, X), arr(m, a, A), arr(m, a, T0)}, 2, 0));
  tpu_op_call *mul = mk_call(TPU_OP_MUL, c, (tpu_tensor[]){arr(m, a, X), {0}, arr(m, a, T1)}, 2, 0);
  tpu_op_set_scalar_input(mul, 1, 7, c == TPU_INT32 ? SCALAR_I((int64_t)scalar) : SCALAR_F(scalar),
                    c != TPU_INT32);
  emit(e, mul);
  emit(e, mk_call(TPU_OP_WHERE, c,
                  (tpu_tensor[]){arr(m, a, T0), arr(m, a, T1), arr(m, a, B), arr(m, a, Y)}, 3, 0));
  tpu_tensor last[4] = {arr(m, a, MASK), arr(m, a, Y), arr(m, a, X), arr(m, a, T2)};
  emit(e, mk_call(TPU_OP_WHERE, c, last, 3, 0));
}

static void test_where_chain(void) {
  const tpu_dtype dtypes[] = {TPU_FLOAT64, TPU_INT32};
  for (int d = 0; d < 2; d++) {
    arrays a;
    memset(&a, 0, sizeof a);
    int64_t n = 9000;
    for (int i = X; i <= B; i++)
      add_array(&a, dtypes[d], n, false, false);
    add_array(&a, TPU_BOOL, n, true, true); /* T0: the mask, unneeded */
    add_array(&a, dtypes[d], n, true, true);
    add_array(&a, dtypes[d], n, true, false);
    add_array(&a, dtypes[d], n, true, false); /* T3, unused */
    add_array(&a, dtypes[d], n, true, false); /* Y */
    add_array(&a, TPU_BOOL, n, false, false); /* MASK */
    CHECK(check_fused(&a, where_chain, 3) == 1);
  }
}

/* In place: x *= a; x += b (alpha scalar); y = tanh(x). x is external and needed. */
static void inplace_chain(emitter *e, void **m, const arrays *a, double scalar) {
  tpu_dtype c = a->dtype[X];
  emit(e, mk_call(TPU_OP_MUL, c, (tpu_tensor[]){arr(m, a, X), arr(m, a, A), arr(m, a, X)}, 2, 0));
  emit(e, mk_call(TPU_OP_ADD, c, (tpu_tensor[]){arr(m, a, X), arr(m, a, B), arr(m, a, X)}, 2,
                  scalar));
  emit(e, mk_call(TPU_OP_TANH, c, (tpu_tensor[]){arr(m, a, X), arr(m, a, Y)}, 1, 0));
}

static void test_inplace_chain(void) {
  arrays a;
  make_chain_arrays(&a, TPU_FLOAT32, 70000, 0);
  CHECK(check_fused(&a, inplace_chain, -0.5) == 1);
}

/* t0 = x * a; t1 = t0 + b^T (a transposed view: ends the group); t2 = exp(t1); y = t2 * x. */
static void split_chain(emitter *e, void **m, const arrays *a, double scalar) {
  tpu_dtype c = a->dtype[X];
  int64_t sizes[2] = {100, 70}, strides[2] = {1, 100};
  tpu_tensor bt = host_view(m[B], c, 2, sizes, strides);
  tpu_tensor mat[3];
  for (int i = 0; i < 3; i++)
    mat[i] = host_view(m[(int[]){T0, B, T1}[i]], c, 2, sizes, NULL);
  mat[1] = bt;
  emit(e, mk_call(TPU_OP_MUL, c, (tpu_tensor[]){arr(m, a, X), arr(m, a, A), arr(m, a, T0)}, 2, 0));
  emit(e, mk_call(TPU_OP_ADD, c, mat, 2, scalar));
  emit(e, mk_call(TPU_OP_EXP, c, (tpu_tensor[]){arr(m, a, T1), arr(m, a, T2)}, 1, 0));
  emit(e, mk_call(TPU_OP_MUL, c, (tpu_tensor[]){arr(m, a, T2), arr(m, a, X), arr(m, a, Y)}, 2, 0));
}

static void test_strided_input_splits(void) {
  arrays a;
  make_chain_arrays(&a, TPU_FLOAT32, 7000, 0);
  a.unneeded[T2] = true;
  /* mul alone (single), add (single: transposed input), exp + mul fused. */
  CHECK(check_fused(&a, split_chain, 2.0) == 3);
}

/* y = gelu((x + bias) * a) on [rows, cols] with bias [cols] (read periodically in the group). */
static void bias_chain(emitter *e, void **m, const arrays *a, double scalar) {
  tpu_dtype c = a->dtype[X];
  int64_t cols = a->len[B], shape[2] = {a->len[X] / cols, cols};
  tpu_tensor x = host_view(m[X], c, 2, shape, NULL), t0 = host_view(m[T0], c, 2, shape, NULL),
             t1 = host_view(m[T1], c, 2, shape, NULL), y = host_view(m[Y], c, 2, shape, NULL),
             am = host_view(m[A], c, 2, shape, NULL);
  emit(e, mk_call(TPU_OP_ADD, c, (tpu_tensor[]){x, arr(m, a, B), t0}, 2, scalar));
  emit(e, mk_call(TPU_OP_MUL, c, (tpu_tensor[]){t0, am, t1}, 2, 0));
  emit(e, mk_call(TPU_OP_GELU, c, (tpu_tensor[]){t1, y}, 1, 0));
}

static void test_bias_is_fused(void) {
  const tpu_dtype dtypes[] = {TPU_FLOAT32, TPU_BFLOAT16};
  const int64_t cols[] = {301, 2048}; /* wrapping inside tiles; whole tiles */
  for (int d = 0; d < 2; d++) {
    arrays a;
    memset(&a, 0, sizeof a);
    int64_t n = 50 * cols[d];
    add_array(&a, dtypes[d], n, false, false);       /* X */
    add_array(&a, dtypes[d], n, false, false);       /* A */
    add_array(&a, dtypes[d], cols[d], false, false); /* B: the bias */
    add_array(&a, dtypes[d], n, true, true);         /* T0 */
    add_array(&a, dtypes[d], n, true, true);         /* T1 */
    add_array(&a, dtypes[d], n, true, false);
    add_array(&a, dtypes[d], n, true, false);
    add_array(&a, dtypes[d], n, true, false); /* Y */
    CHECK(check_fused(&a, bias_chain, 0.5) == 1);
  }
}

/* A scalar operand for input 1 of `call`, kept in the call. */
static tpu_op_call *with_scalar(tpu_op_call *call, double value) {
  tpu_op_set_scalar_input(call, 1, 7, SCALAR_F(value), true);
  return call;
}

/* One Adam step on param x with gradient g (array A), moments m (B) and v (T2), all in place:
 *   m = m * b1 + (1 - b1) g;  v = v * b2 + (1 - b2) g g;  d = sqrt(v) / c2 + eps;
 *   x = x - lr * m / d.  d (T0, T1) is an intermediate: never written. */
static void adam_step(emitter *e, void **mem, const arrays *a, double lr) {
  tpu_dtype c = a->dtype[X];
  tpu_tensor x = arr(mem, a, X), g = arr(mem, a, A), m = arr(mem, a, B), v = arr(mem, a, T2),
             d0 = arr(mem, a, T0), d1 = arr(mem, a, T1);
  emit(e, with_scalar(mk_call(TPU_OP_MUL, c, (tpu_tensor[]){m, {0}, m}, 2, 0), 0.9));
  emit(e, mk_call(TPU_OP_ADD, c, (tpu_tensor[]){m, g, m}, 2, 0.1));
  emit(e, with_scalar(mk_call(TPU_OP_MUL, c, (tpu_tensor[]){v, {0}, v}, 2, 0), 0.999));
  emit(e, mk_call(TPU_OP_ADDCMUL, c, (tpu_tensor[]){v, g, g, v}, 3, 0.001));
  emit(e, mk_call(TPU_OP_SQRT, c, (tpu_tensor[]){v, d0}, 1, 0));
  emit(e, with_scalar(mk_call(TPU_OP_DIV, c, (tpu_tensor[]){d0, {0}, d1}, 2, 0), 0.3));
  emit(e, with_scalar(mk_call(TPU_OP_ADD, c, (tpu_tensor[]){d1, {0}, d1}, 2, 1.0), 1e-8));
  emit(e, mk_call(TPU_OP_ADDCDIV, c, (tpu_tensor[]){x, m, d1, x}, 3, -lr));
}

static void test_adam_step_is_one_group(void) {
  arrays a;
  make_chain_arrays(&a, TPU_FLOAT32, 20000, 2);
  a.output[T2] = false; /* v: a moment, read and written in place */
  fill_random(a.ref[T2], TPU_FLOAT32, 20000, 99);
  for (int i = 0; i < 20000; i++)
    ((float *)a.ref[T2])[i] = fabsf(((float *)a.ref[T2])[i]);
  memcpy(a.fused[T2], a.ref[T2], 20000 * sizeof(float));
  CHECK(check_fused(&a, adam_step, 1e-3) == 1);
}

/* t0[0:n] = x * a; t1 = exp(t0[1:n+1]) (a shifted view of the result: the exp cannot read it
 * tile by tile from the mul's tile, so it starts a new group); y = gelu(t1). */
static void shifted_chain(emitter *e, void **m, const arrays *a, double scalar) {
  (void)scalar;
  tpu_dtype c = a->dtype[X];
  int64_t n = a->len[X];
  tpu_tensor t0 = vec1(m[T0], c, n), shifted = t0;
  shifted.offset = (int64_t)tpu_dtype_size(c);
  emit(e, mk_call(TPU_OP_MUL, c, (tpu_tensor[]){arr(m, a, X), arr(m, a, A), t0}, 2, 0));
  emit(e, mk_call(TPU_OP_EXP, c, (tpu_tensor[]){shifted, arr(m, a, T1)}, 1, 0));
  emit(e, mk_call(TPU_OP_GELU, c, (tpu_tensor[]){arr(m, a, T1), arr(m, a, Y)}, 1, 0));
}

static void test_shifted_view_splits(void) {
  arrays a;
  memset(&a, 0, sizeof a);
  int64_t n = 5000;
  for (int i = X; i <= B; i++)
    add_array(&a, TPU_FLOAT32, n, false, false);
  add_array(&a, TPU_FLOAT32, n + 1, true, false); /* T0: one element more, read shifted */
  add_array(&a, TPU_FLOAT32, n, true, true);      /* T1 */
  add_array(&a, TPU_FLOAT32, n, true, false);
  add_array(&a, TPU_FLOAT32, n, true, false);
  add_array(&a, TPU_FLOAT32, n, true, false); /* Y */
  CHECK(check_fused(&a, shifted_chain, 0) == 2);
}

/* 40 negations ping-ponging between t0 and t1 (many versions of each), then y = t1 * x. */
static void long_chain(emitter *e, void **m, const arrays *a, double scalar) {
  (void)scalar;
  tpu_dtype c = a->dtype[X];
  emit(e, mk_call(TPU_OP_NEG, c, (tpu_tensor[]){arr(m, a, X), arr(m, a, T0)}, 1, 0));
  for (int i = 1; i < 40; i++) {
    int from = i % 2 ? T0 : T1, to = i % 2 ? T1 : T0;
    emit(e, mk_call(TPU_OP_NEG, c, (tpu_tensor[]){arr(m, a, from), arr(m, a, to)}, 1, 0));
  }
  emit(e, mk_call(TPU_OP_MUL, c, (tpu_tensor[]){arr(m, a, T1), arr(m, a, X), arr(m, a, Y)}, 2, 0));
}

static void test_long_chain_is_cut(void) {
  arrays a;
  make_chain_arrays(&a, TPU_INT32, 3333, 0);
  CHECK(check_fused(&a, long_chain, 0) == 2); /* groups of at most 32 nodes */
}

static void test_pending_intermediate_gets_no_memory(void) {
  enum { n = 10000 };
  tpu_buffer *x, *t, *y;
  size_t bytes = n * sizeof(float);
  CHECK_OK(tpu_buffer_create(0, 0, bytes, &x));
  CHECK_OK(tpu_buffer_create_pending(0, 0, bytes, &t));
  CHECK_OK(tpu_buffer_create_pending(0, 0, bytes, &y));
  float *xm = tpu_buffer_memory(x);
  fill_random(xm, TPU_FLOAT32, n, 7);
  tpu_tensor v = {.dtype = TPU_FLOAT32, .ndim = 1, .sizes = {n}, .strides = {1}};
  tpu_tensor tx = v, tt = v, ty = v;
  tx.buf = x, tt.buf = t, ty.buf = y;
  tpu_graph *g = tpu_graph_new(0);
  CHECK_OK(tpu_graph_add(g, mk_call(TPU_OP_EXP, TPU_FLOAT32, (tpu_tensor[]){tx, tt}, 1, 0), 0));
  CHECK_OK(tpu_graph_add(g, mk_call(TPU_OP_MUL, TPU_FLOAT32, (tpu_tensor[]){tt, tx, ty}, 2, 0), 0));
  tpu_graph_set_needed(g, 0, 0, false);
  tpu_fuse_plan *plan;
  CHECK_OK(tpu_fuse_plan_create(g, &plan));
  CHECK(!tpu_fuse_plan_stores(plan, 0, 0) && tpu_fuse_plan_stores(plan, 1, 0));
  CHECK_OK(tpu_fuse_run(plan, g));
  CHECK(!tpu_buffer_is_live(t) && tpu_buffer_is_live(y));
  static float ref_t[n], ref_y[n];
  tpu_tensor rx = vec1(xm, TPU_FLOAT32, n), rt = vec1(ref_t, TPU_FLOAT32, n),
             ry = vec1(ref_y, TPU_FLOAT32, n);
  emitter ref = {NULL};
  emit(&ref, mk_call(TPU_OP_EXP, TPU_FLOAT32, (tpu_tensor[]){rx, rt}, 1, 0));
  emit(&ref, mk_call(TPU_OP_MUL, TPU_FLOAT32, (tpu_tensor[]){rt, rx, ry}, 2, 0));
  CHECK(memcmp(ref_y, tpu_buffer_memory(y), bytes) == 0);
  tpu_fuse_plan_destroy(plan);
  tpu_graph_free(g);
  /* A dead single node (nothing needs or reads its output) does not run: t stays pending. */
  g = tpu_graph_new(0);
  CHECK_OK(tpu_graph_add(g, mk_call(TPU_OP_EXP, TPU_FLOAT32, (tpu_tensor[]){tx, tt}, 1, 0), 0));
  tpu_graph_set_needed(g, 0, 0, false);
  CHECK_OK(tpu_fuse_plan_create(g, &plan));
  CHECK_OK(tpu_fuse_run(plan, g));
  CHECK(!tpu_buffer_is_live(t));
  tpu_fuse_plan_destroy(plan);
  tpu_graph_free(g);
  tpu_buffer_release_storage(x);
  tpu_buffer_release_storage(t);
  tpu_buffer_release_storage(y);
}

/* t = x / z (integer, z all 0: the fused loop fails); y = t + x. The run returns the error and
 * poisons the outputs naming the failing op; a second graph reading y passes the poison on. */
static void test_errors_poison_outputs(void) {
  enum { n = 3000 };
  tpu_buffer *x, *z, *t, *y, *w;
  size_t bytes = n * sizeof(int32_t);
  CHECK_OK(tpu_buffer_create(0, 0, bytes, &x));
  CHECK_OK(tpu_buffer_create(0, 0, bytes, &z));
  CHECK_OK(tpu_buffer_create_pending(0, 0, bytes, &t));
  CHECK_OK(tpu_buffer_create_pending(0, 0, bytes, &y));
  CHECK_OK(tpu_buffer_create_pending(0, 0, bytes, &w));
  fill_random(tpu_buffer_memory(x), TPU_INT32, n, 3);
  memset(tpu_buffer_memory(z), 0, bytes);
  tpu_tensor v = {.dtype = TPU_INT32, .ndim = 1, .sizes = {n}, .strides = {1}};
  tpu_tensor tx = v, tz = v, tt = v, ty = v, tw = v;
  tx.buf = x, tz.buf = z, tt.buf = t, ty.buf = y, tw.buf = w;
  tpu_graph *g = tpu_graph_new(0);
  CHECK_OK(tpu_graph_add(g, mk_call(TPU_OP_DIV_TRUNC, TPU_INT32, (tpu_tensor[]){tx, tz, tt}, 2, 0),
                         0));
  CHECK_OK(tpu_graph_add(g, mk_call(TPU_OP_ADD, TPU_INT32, (tpu_tensor[]){tt, tx, ty}, 2, 1), 0));
  tpu_graph_set_needed(g, 0, 0, false);
  tpu_fuse_plan *plan;
  CHECK_OK(tpu_fuse_plan_create(g, &plan));
  CHECK(tpu_fuse_plan_steps(plan) == 1);
  CHECK(tpu_fuse_run(plan, g) == TPU_ERR_RUNTIME);
  CHECK(strstr(tpu_last_error(), "ZeroDivisionError") != NULL);
  CHECK(tpu_buffer_check_poison(y) == TPU_ERR_RUNTIME);
  CHECK(strstr(tpu_last_error(), "'div_trunc'") != NULL);
  tpu_fuse_plan_destroy(plan);
  tpu_graph_free(g);
  g = tpu_graph_new(0);
  CHECK_OK(tpu_graph_add(g, mk_call(TPU_OP_NEG, TPU_INT32, (tpu_tensor[]){ty, tw}, 1, 0), 0));
  CHECK_OK(tpu_fuse_plan_create(g, &plan));
  CHECK_OK(tpu_fuse_run(plan, g));
  CHECK(tpu_buffer_check_poison(w) == TPU_ERR_RUNTIME);
  CHECK(!tpu_buffer_is_live(w));
  tpu_fuse_plan_destroy(plan);
  tpu_graph_free(g);
  tpu_buffer *all[] = {x, z, t, y, w};
  for (int i = 0; i < 5; i++)
    tpu_buffer_release_storage(all[i]);
}

/* The compile cache's callback for the host planner. */
static tpu_status compile_plan(const tpu_graph *g, void *ctx, void **plan, void (**destroy)(void *)) {
  (void)ctx;
  *destroy = tpu_fuse_plan_destroy;
  return tpu_fuse_plan_create(g, (tpu_fuse_plan **)plan);
}

static void test_cache_reuses_plan(void) {
  tpu_compile_cache *cache;
  CHECK_OK(tpu_compile_cache_create(4, &cache));
  void *first_plan = NULL;
  for (int round = 0; round < 2; round++) {
    /* Other buffers and another alpha each round: the same structure. */
    arrays a;
    make_chain_arrays(&a, TPU_FLOAT32, 3000, 2);
    double alpha = round ? -2.0 : 0.5;
    emitter ref = {NULL};
    gelu_chain(&ref, a.ref, &a, alpha);
    emitter fused = {tpu_graph_new(0)};
    gelu_chain(&fused, a.fused, &a, alpha);
    tpu_graph_set_needed(fused.graph, 0, 0, false);
    tpu_graph_set_needed(fused.graph, 1, 0, false);
    tpu_compile_entry *e;
    CHECK_OK(tpu_compile_cache_lookup(cache, fused.graph, compile_plan, NULL, &e));
    if (round == 0)
      first_plan = tpu_compile_entry_plan(e);
    CHECK(tpu_compile_entry_plan(e) == first_plan);
    CHECK_OK(tpu_fuse_run(tpu_compile_entry_plan(e), fused.graph));
    CHECK(memcmp(a.ref[Y], a.fused[Y], 3000 * sizeof(float)) == 0);
    CHECK(all_poison(a.fused[T0], 3000 * sizeof(float)));
    tpu_compile_entry_release(e);
    tpu_graph_free(fused.graph);
    for (int i = 0; i < a.n; i++) {
      free(a.ref[i]);
      free(a.fused[i]);
    }
  }
  tpu_compile_cache_stats s;
  tpu_compile_cache_get_stats(cache, &s);
  CHECK(s.hits == 1 && s.misses == 1 && s.compiles == 1 && s.entries == 1);
  printf("     cache: planning %llu us, compile %llu us\n", (unsigned long long)s.plan_us,
         (unsigned long long)s.compile_us);
  tpu_compile_cache_destroy(cache);
}

/* Found by fuzz_graph: t0 = -x read as int16; x = -t0 as float32. Both views of x start at
 * offset 0 with n elements, but the float32 one covers twice the bytes: as one group, the tile
 * that writes x[0:512] as float32 would overwrite the int16 elements the next tile reads, so the
 * two nodes are two steps. */
static void reinterpret_chain(emitter *e, void **m, const arrays *a, double scalar) {
  (void)scalar;
  int64_t n = a->len[X];
  tpu_tensor x16 = vec1(m[X], TPU_INT16, n), t0 = vec1(m[T0], TPU_INT16, n);
  emit(e, mk_call(TPU_OP_NEG, TPU_INT16, (tpu_tensor[]){x16, t0}, 1, 0));
  emit(e, mk_call(TPU_OP_NEG, TPU_FLOAT32, (tpu_tensor[]){t0, arr(m, a, X)}, 1, 0));
}

static void test_reinterpreted_view_splits(void) {
  arrays a;
  memset(&a, 0, sizeof a);
  add_array(&a, TPU_FLOAT32, 5000, false, false); /* X */
  for (int i = A; i <= B; i++)
    add_array(&a, TPU_FLOAT32, 1, false, false);
  add_array(&a, TPU_FLOAT32, 5000, true, false); /* T0 */
  CHECK(check_fused(&a, reinterpret_chain, 0) == 2);
}

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Prints the time of y = gelu(x * a + b) fused and node by node (best of 15). */
static void test_bench_gelu_chain(void) {
  const char *env = getenv("TPU_FUSE_BENCH_N"), *threads = getenv("TPU_FUSE_BENCH_THREADS");
  int64_t n = env ? atoll(env) : 1 << 20;
  if (threads)
    tpu_pool_set_threads(atoi(threads));
  arrays a;
  make_chain_arrays(&a, TPU_FLOAT32, n, 2);
  double best_ref = 1e30, best_fused = 1e30;
  emitter fused = {tpu_graph_new(0)};
  gelu_chain(&fused, a.fused, &a, 1.0);
  tpu_graph_set_needed(fused.graph, 0, 0, false);
  tpu_graph_set_needed(fused.graph, 1, 0, false);
  tpu_fuse_plan *plan;
  CHECK_OK(tpu_fuse_plan_create(fused.graph, &plan));
  for (int rep = 0; rep < 15; rep++) {
    emitter ref = {NULL};
    double t0 = seconds();
    gelu_chain(&ref, a.ref, &a, 1.0);
    double t1 = seconds();
    CHECK_OK(tpu_fuse_run(plan, fused.graph));
    double t2 = seconds();
    best_ref = t1 - t0 < best_ref ? t1 - t0 : best_ref;
    best_fused = t2 - t1 < best_fused ? t2 - t1 : best_fused;
  }
  CHECK(memcmp(a.ref[Y], a.fused[Y], (size_t)n * sizeof(float)) == 0);
  printf("     gelu(x*a+b), %lld float32, %d threads: node by node %.2f ms, fused %.2f ms, "
         "speedup %.2fx\n",
         (long long)n, tpu_pool_threads(), best_ref * 1e3, best_fused * 1e3,
         best_ref / best_fused);
  tpu_fuse_plan_destroy(plan);
  tpu_graph_free(fused.graph);
  for (int i = 0; i < a.n; i++) {
    free(a.ref[i]);
    free(a.fused[i]);
  }
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_gelu_chain);
  RUN_TEST(test_six_nodes_with_scalar);
  RUN_TEST(test_where_chain);
  RUN_TEST(test_inplace_chain);
  RUN_TEST(test_strided_input_splits);
  RUN_TEST(test_bias_is_fused);
  RUN_TEST(test_adam_step_is_one_group);
  RUN_TEST(test_shifted_view_splits);
  RUN_TEST(test_reinterpreted_view_splits);
  RUN_TEST(test_long_chain_is_cut);
  RUN_TEST(test_pending_intermediate_gets_no_memory);
  RUN_TEST(test_errors_poison_outputs);
  RUN_TEST(test_cache_reuses_plan);
  RUN_TEST(test_bench_gelu_chain);
  TEST_MAIN_END();
}
