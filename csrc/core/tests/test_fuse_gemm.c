/* GEMM epilogues of the fused planner (drivers/host/fuse/fuse.h): y = gelu(A @ B + bias) + r is
 * one step whose chain runs on each block of the product, bit for bit what the nodes give one by
 * one, with its intermediate never written, for row tiles and column tiles over two threads, in
 * float32 and float64 (a GEMM too small to split takes none); a chain that writes an operand of the GEMM is no epilogue and still
 * matches; reordering moves a GEMM past an unrelated one to the chain that reads it. */
#include "drivers/host/fuse/fuse.h"
#include "drivers/host/host_driver.h"
#include "drivers/host/engine/engine_pool.h"
#include "tpu_test_graph.h"

#define POISON 0xA5

enum { A, B, BIAS, P, T, R, Y, B2, E, N_ARRAYS };

/* One copy of a test's arrays: A [m, k], B [k, n], the bias [n], the product P, the gelu T, the
 * residual R and Y [m, n], a second right operand B2 [k, n] and its product E [m, n]. */
typedef struct copy {
  tpu_dtype d;
  int64_t m, k, n;
  void *mem[N_ARRAYS];
} copy;

static int64_t length(const copy *c, int i) {
  switch (i) {
  case A: return c->m * c->k;
  case B: case B2: return c->k * c->n;
  case BIAS: return c->n;
  default: return c->m * c->n;
  }
}

static size_t bytes(const copy *c, int i) { return (size_t)length(c, i) * tpu_dtype_size(c->d); }

static void make_copy(copy *c, tpu_dtype d, int64_t m, int64_t k, int64_t n) {
  *c = (copy){.d = d, .m = m, .k = k, .n = n};
  for (int i = 0; i < N_ARRAYS; i++) {
    c->mem[i] = malloc(bytes(c, i));
    fill_random(c->mem[i], d, length(c, i), (uint64_t)i + 5);
    if (i == P || i == T || i == Y || i == E)
      memset(c->mem[i], POISON, bytes(c, i));
  }
}

static void free_copy(copy *c) {
  for (int i = 0; i < N_ARRAYS; i++)
    free(c->mem[i]);
}

/* [1, rows, cols] with the given row and column strides. */
static tpu_tensor mat(const copy *c, int i, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  return host_view(c->mem[i], c->d, 3, (int64_t[]){1, rows, cols},
                   (int64_t[]){rows * cols, rs, cs});
}

/* [m, n] for the elementwise nodes. */
static tpu_tensor plane(const copy *c, int i) {
  return host_view(c->mem[i], c->d, 2, (int64_t[]){c->m, c->n}, NULL);
}

/* out = left @ right (+ bias broadcast over the rows when `bias`). */
static void gemm(emitter *e, const copy *c, int left, int right, int out, bool bias) {
  tpu_tensor t[4] = {mat(c, left, c->m, c->k, c->k, 1), mat(c, right, c->k, c->n, c->n, 1)};
  int n_in = 2;
  if (bias)
    t[n_in++] = mat(c, BIAS, c->m, c->n, 0, 1);
  t[n_in] = mat(c, out, c->m, c->n, c->n, 1);
  tpu_op_call *call = mk_call(bias ? TPU_OP_ADDMM : TPU_OP_MM, c->d, t, n_in, 1);
  call->scalars[1].f = 1;
  emit(e, call);
}

/* p = a @ b + bias; t = gelu(p) (into `gelu_out`); y = t + r. */
static void linear_gelu(emitter *e, const copy *c, int gelu_out) {
  gemm(e, c, A, B, P, true);
  emit(e, mk_call(TPU_OP_GELU, c->d, (tpu_tensor[]){plane(c, P), plane(c, gelu_out)}, 1, 0));
  emit(e, mk_call(TPU_OP_ADD, c->d,
                  (tpu_tensor[]){plane(c, gelu_out), plane(c, R), plane(c, Y)}, 2, 1));
}

static bool same(const copy *x, const copy *y) {
  for (int i = 0; i < N_ARRAYS; i++)
    if (memcmp(x->mem[i], y->mem[i], bytes(x, i)))
      return false;
  return true;
}

/* Plans and runs g (T unneeded when `t_unneeded`); returns the plan's steps, *epilogue the node
 * count of its GEMM step (0: none). */
static int run_graph(tpu_graph *g, const copy *c, bool t_unneeded, int *epilogue) {
  for (int n = 0; n < g->n_nodes && t_unneeded; n++) {
    const tpu_op_call *call = g->nodes[n].call;
    if (call->tensors[call->n_inputs].host == c->mem[T])
      tpu_graph_set_needed(g, n, 0, false);
  }
  tpu_fuse_plan *plan;
  CHECK_OK_OR(tpu_fuse_plan_create(g, &plan), -1);
  CHECK_OK_OR(tpu_fuse_run(plan, g), -1);
  int steps = tpu_fuse_plan_steps(plan);
  *epilogue = 0;
  for (int s = 0; s < steps; s++) {
    int first, count;
    bool fused;
    tpu_fuse_plan_step(plan, s, &first, &count, &fused);
    if (fused && tpu_host_kernel(g->nodes[first].call->op) == tpu_host_kernel(TPU_OP_MM))
      *epilogue = count;
  }
  tpu_fuse_plan_destroy(plan);
  return steps;
}

static bool all_poison(const void *mem, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (((const unsigned char *)mem)[i] != POISON)
      return false;
  return true;
}

/* A test graph's two copies: `ref` computed node by node, `fused` described into `graph`. */
typedef void (*describe_fn)(emitter *e, const copy *c, int gelu_out);
typedef struct pair {
  copy ref, fused;
  tpu_graph *graph;
} pair;

static void pair_open(pair *p, describe_fn describe, int gelu_out, tpu_dtype d, int64_t m,
                      int64_t k, int64_t n) {
  make_copy(&p->ref, d, m, k, n);
  make_copy(&p->fused, d, m, k, n);
  emitter now = {NULL}, graph = {tpu_graph_new(0)};
  describe(&now, &p->ref, gelu_out);
  describe(&graph, &p->fused, gelu_out);
  p->graph = graph.graph;
}

/* Checks that both copies hold the same bits, and frees them. */
static void pair_close(pair *p) {
  CHECK(same(&p->ref, &p->fused));
  tpu_graph_free(p->graph);
  free_copy(&p->ref);
  free_copy(&p->fused);
}

/* Runs linear_gelu fused and node by node; `steps` and `epilogue` are what the plan must have. */
static void check_epilogue(tpu_dtype d, int64_t m, int64_t k, int64_t n, int steps, int epilogue) {
  pair p;
  pair_open(&p, linear_gelu, T, d, m, k, n);
  tpu_graph_run_stats before, after;
  tpu_fuse_get_stats(&before);
  int nodes;
  CHECK(run_graph(p.graph, &p.fused, true, &nodes) == steps);
  tpu_fuse_get_stats(&after);
  CHECK(nodes == epilogue);
  CHECK(after.gemm_epilogues == before.gemm_epilogues + (epilogue > 0));
  CHECK(all_poison(p.fused.mem[T], bytes(&p.fused, T)));
  memcpy(p.fused.mem[T], p.ref.mem[T], bytes(&p.ref, T));
  pair_close(&p);
}

static void test_epilogue_row_and_column_tiles(void) {
  /* Over 2^20 multiply-adds, so two threads share each GEMM: m >= n splits rows (the chain runs
   * on each tile), m < n columns (the chain runs on whole rows after the tiles). */
  check_epilogue(TPU_FLOAT32, 200, 64, 96, 1, 3);
  check_epilogue(TPU_FLOAT32, 96, 64, 200, 1, 3);
  check_epilogue(TPU_FLOAT64, 130, 70, 120, 1, 3);
  /* Below FZ_EPILOGUE_MIN_WORK: the GEMM alone, then the chain as a group. */
  check_epilogue(TPU_FLOAT32, 50, 30, 70, 2, 0);
}

static void test_chain_writing_an_operand_is_separate(void) {
  /* k == n: the gelu writes into A, which the GEMM reads across all of its tiles. */
  pair p;
  pair_open(&p, linear_gelu, A, TPU_FLOAT32, 150, 90, 90);
  int epilogue;
  CHECK(run_graph(p.graph, &p.fused, false, &epilogue) == 2);
  CHECK(epilogue == 0);
  pair_close(&p);
}

/* p = a @ b; e = a @ b2; gelu_out = gelu(p): as autograd records a linear's input and weight
 * gradients before the activation's backward. */
static void two_products(emitter *e, const copy *c, int gelu_out) {
  gemm(e, c, A, B, P, false);
  gemm(e, c, A, B2, E, false);
  emit(e, mk_call(TPU_OP_GELU, c->d, (tpu_tensor[]){plane(c, P), plane(c, gelu_out)}, 1, 0));
}

static void test_reorder_brings_the_gemm_to_its_chain(void) {
  pair p;
  pair_open(&p, two_products, T, TPU_FLOAT32, 200, 64, 96);
  CHECK_OK(tpu_fuse_reorder(&p.graph));
  CHECK(p.graph->nodes[1].call->tensors[2].host == p.fused.mem[P]);
  int epilogue;
  CHECK(run_graph(p.graph, &p.fused, false, &epilogue) == 2);
  CHECK(epilogue == 2);
  pair_close(&p);
}

int main(void) {
  TEST_MAIN_BEGIN();
  tpu_pool_set_threads(2);
  RUN_TEST(test_epilogue_row_and_column_tiles);
  RUN_TEST(test_chain_writing_an_operand_is_separate);
  RUN_TEST(test_reorder_brings_the_gemm_to_its_chain);
  TEST_MAIN_END();
}
