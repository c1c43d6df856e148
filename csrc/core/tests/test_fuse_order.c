/* Reordering cut graphs for fusion: tpu_graph_permute keeps every ref on its producer, renumbers
 * slots by first appearance (equal graphs permuted alike stay equal, the slot table still finds
 * them) and rejects an order that is not a permutation; tpu_fuse_reorder turns two interleaved
 * chains of different lengths into two fused steps, leaves a chain whose move a write in between
 * forbids where it is, and on random graphs (halves and strided views of shared arrays, in-place
 * updates, scalar operands) keeps every hazard in order and gives bit for bit the results of
 * running node by node and of the fused plan without reordering. */
#include "drivers/host/fuse/fuse.h"
#include "tpu_test_graph.h"

/* Plans and runs g; returns how many of the plan's steps are fused (*steps: all of them). */
static int run_graph(const tpu_graph *g, int *steps) {
  tpu_fuse_plan *plan;
  CHECK_OK_OR(tpu_fuse_plan_create(g, &plan), -1);
  CHECK_OK_OR(tpu_fuse_run(plan, g), -1);
  int fused_steps = 0;
  *steps = tpu_fuse_plan_steps(plan);
  for (int s = 0; s < *steps; s++) {
    int first, count;
    bool fused;
    tpu_fuse_plan_step(plan, s, &first, &count, &fused);
    fused_steps += fused;
  }
  tpu_fuse_plan_destroy(plan);
  return fused_steps;
}

enum { NA = 3000, NB = 5000 };
enum { XA, TA0, TA1, YA, XB, TB0, TB1, YB, N_ARRAYS };

/* One copy of a test's float arrays: NA elements for the first four, NB for the rest. */
typedef struct copy {
  float *m[N_ARRAYS];
} copy;

static int64_t length(int i) { return i < XB ? NA : NB; }

static void make_copy(copy *c) {
  for (int i = 0; i < N_ARRAYS; i++) {
    c->m[i] = malloc((size_t)length(i) * sizeof(float));
    fill_random(c->m[i], TPU_FLOAT32, length(i), (uint64_t)i + 11);
  }
}

static void free_copy(copy *c) {
  for (int i = 0; i < N_ARRAYS; i++)
    free(c->m[i]);
}

static bool same_copy(const copy *a, const copy *b) {
  for (int i = 0; i < N_ARRAYS; i++)
    if (memcmp(a->m[i], b->m[i], (size_t)length(i) * sizeof(float)))
      return false;
  return true;
}

static tpu_tensor v(const copy *c, int i) { return vec1(c->m[i], TPU_FLOAT32, length(i)); }

static void unary(emitter *e, tpu_op_id op, tpu_tensor x, tpu_tensor y) {
  emit(e, mk_call(op, TPU_FLOAT32, (tpu_tensor[]){x, y}, 1, 0));
}

static void binary(emitter *e, tpu_op_id op, tpu_tensor x, tpu_tensor y, tpu_tensor z) {
  emit(e, mk_call(op, TPU_FLOAT32, (tpu_tensor[]){x, y, z}, 2, 1));
}

/* Chain a (NA elements) and chain b (NB), recorded interleaved as a foreach op would:
 *   n0 ta0 = xa * xa   n1 tb0 = xb * xb   n2 ta1 = tanh(ta0)   n3 tb1 = tanh(tb0)
 *   n4 ya = ta1 + xa   n5 yb = tb1 + xb */
static void two_chains(emitter *e, const copy *c) {
  binary(e, TPU_OP_MUL, v(c, XA), v(c, XA), v(c, TA0));
  binary(e, TPU_OP_MUL, v(c, XB), v(c, XB), v(c, TB0));
  unary(e, TPU_OP_TANH, v(c, TA0), v(c, TA1));
  unary(e, TPU_OP_TANH, v(c, TB0), v(c, TB1));
  binary(e, TPU_OP_ADD, v(c, TA1), v(c, XA), v(c, YA));
  binary(e, TPU_OP_ADD, v(c, TB1), v(c, XB), v(c, YB));
}

static tpu_graph *record(void (*describe)(emitter *, const copy *), const copy *c) {
  emitter e = {tpu_graph_new(0)};
  describe(&e, c);
  return e.graph;
}

static void test_permute_keeps_refs(void) {
  copy ref, one, two;
  make_copy(&ref), make_copy(&one), make_copy(&two);
  emitter now = {NULL};
  two_chains(&now, &ref);
  tpu_graph *g = record(two_chains, &one), *p;
  const tpu_op_call *calls[6];
  for (int n = 0; n < 6; n++)
    calls[n] = g->nodes[n].call;
  CHECK(tpu_graph_permute(g, (const int[]){0, 0, 1, 2, 3, 4}, &p) == TPU_ERR_VALUE);
  CHECK(g->n_nodes == 6 && g->nodes[1].call == calls[1]);
  const int order[6] = {0, 2, 4, 1, 3, 5};
  CHECK_OK(tpu_graph_permute(g, order, &p));
  for (int i = 0; i < 6; i++)
    CHECK(p->nodes[i].call == calls[order[i]]);
  /* tanh(ta0) reads new node 0; ya = ta1 + xa reads node 1 and the external xa. */
  CHECK(p->nodes[1].refs[0].node == 0 && p->nodes[2].refs[0].node == 1);
  CHECK(p->nodes[2].refs[1].node == TPU_GRAPH_EXTERNAL && p->nodes[4].refs[0].node == 3);
  /* Slots by first appearance: xa ta0 ta1 ya xb tb0 tb1 yb. */
  const int arrays_in_order[8] = {XA, TA0, TA1, YA, XB, TB0, TB1, YB};
  for (int s = 0; s < 8; s++)
    CHECK(p->slots[s].key == one.m[arrays_in_order[s]]);
  CHECK(p->nodes[3].refs[0].slot == 4 && p->slots[3].latest_node == 2);
  CHECK(p->slots[0].latest_node == TPU_GRAPH_EXTERNAL && p->slots[7].latest_node == 5);
  int steps;
  run_graph(p, &steps);
  CHECK(same_copy(&ref, &one));

  tpu_graph *q, *plain = record(two_chains, &one);
  CHECK_OK(tpu_graph_permute(record(two_chains, &two), order, &q));
  CHECK(tpu_graph_hash(p) == tpu_graph_hash(q) && tpu_graph_equal(p, q));
  CHECK(!tpu_graph_equal(p, plain));
  /* The slot table still finds the slots under their new numbers. */
  CHECK_OK(tpu_graph_add(q, mk_call(TPU_OP_NEG, TPU_FLOAT32, (tpu_tensor[]){v(&two, YA), v(&two, XB)},
                                    1, 0), 0));
  CHECK(q->nodes[6].refs[0].slot == 3 && q->nodes[6].refs[0].node == 2);
  CHECK(q->nodes[6].refs[1].slot == 4 && q->nodes[6].refs[1].node == TPU_GRAPH_EXTERNAL);
  tpu_graph_free(p), tpu_graph_free(q), tpu_graph_free(plain);
  free_copy(&ref), free_copy(&one), free_copy(&two);
}

static void test_interleaved_chains_fuse(void) {
  copy ref, one, two;
  make_copy(&ref), make_copy(&one), make_copy(&two);
  emitter now = {NULL};
  two_chains(&now, &ref);
  tpu_graph *g = record(two_chains, &one), *h = record(two_chains, &two);
  int steps;
  CHECK(run_graph(h, &steps) == 0 && steps == 6); /* as recorded: nothing fuses */
  tpu_graph_free(h);
  h = record(two_chains, &two);
  CHECK_OK(tpu_fuse_reorder(&g));
  CHECK_OK(tpu_fuse_reorder(&h));
  CHECK(tpu_graph_equal(g, h)); /* the order depends on the structure alone */
  CHECK(run_graph(g, &steps) == 2 && steps == 2);
  CHECK(same_copy(&ref, &one));
  tpu_graph_free(g), tpu_graph_free(h);
  free_copy(&ref), free_copy(&one), free_copy(&two);
}

/* Whether n2 below writes xa (a hazard for the move of n0) or yb (none). */
static bool write_xa;

/*   n0 ta0 = tanh(xa)   n1 tb0 = -xb   n2 xa[0:NA/2] (or yb[0:NA/2]) = -tb1[0:NA/2]
 *   n3 ya = ta0 + xa: moving n0 next to n3 would pass n2. */
static void hazard_chain(emitter *e, const copy *c) {
  unary(e, TPU_OP_TANH, v(c, XA), v(c, TA0));
  unary(e, TPU_OP_NEG, v(c, XB), v(c, TB0));
  unary(e, TPU_OP_NEG, vec1(c->m[TB1], TPU_FLOAT32, NA / 2),
        vec1(c->m[write_xa ? XA : YB], TPU_FLOAT32, NA / 2));
  binary(e, TPU_OP_ADD, v(c, TA0), v(c, XA), v(c, YA));
}

static void test_hazard_blocks_move(void) {
  for (int blocked = 0; blocked < 2; blocked++) {
    write_xa = blocked;
    copy ref, one;
    make_copy(&ref), make_copy(&one);
    emitter now = {NULL};
    hazard_chain(&now, &ref);
    tpu_graph *g = record(hazard_chain, &one), *before = g;
    const tpu_op_call *first = g->nodes[0].call;
    CHECK_OK(tpu_fuse_reorder(&g));
    int steps, fused = run_graph(g, &steps);
    if (blocked) {
      CHECK(g == before && fused == 0 && steps == 4);
    } else {
      CHECK(g != before && g->nodes[2].call == first && fused == 1 && steps == 3);
    }
    CHECK(same_copy(&ref, &one));
    tpu_graph_free(g);
    free_copy(&ref), free_copy(&one);
  }
}

/* Random graphs over eight arrays of 1000 floats: each node works on 1000 elements (whole arrays)
 * or 500 (a half, or every second element: strided, so not fusable); an output's array is read
 * only through the output's own view (in place), so no node overlaps itself partly. */
enum { R_ARRAYS = 8, R_LEN = 1000, R_NODES = 24 };

typedef struct rng {
  uint64_t s;
} rng;

static int pick(rng *r, int n) {
  r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
  return (int)((r->s >> 33) % (uint64_t)n);
}

/* A view of `array`: whole, or for `half` its first half (kind 0), second half (1) or every second
 * element (2). */
static tpu_tensor random_view(float *const *m, int array, bool half, int kind) {
  int64_t n = half ? R_LEN / 2 : R_LEN, stride = kind == 2 ? 2 : 1;
  tpu_tensor t = host_view(m[array], TPU_FLOAT32, 1, &n, &stride);
  t.offset = half && kind == 1 ? (int64_t)(R_LEN / 2 * sizeof(float)) : 0;
  return t;
}

static void random_graph(emitter *e, float *const *m, uint64_t seed) {
  rng r = {seed};
  const tpu_op_id ops[4] = {TPU_OP_ADD, TPU_OP_MUL, TPU_OP_NEG, TPU_OP_TANH};
  for (int n = 0; n < R_NODES; n++) {
    bool half = pick(&r, 2);
    tpu_op_id op = ops[pick(&r, 4)];
    int n_in = op == TPU_OP_ADD || op == TPU_OP_MUL ? 2 : 1, out = pick(&r, R_ARRAYS);
    int out_kind = half ? pick(&r, 2) : 0;
    tpu_tensor t[3];
    for (int i = 0; i < n_in; i++) {
      int array = pick(&r, R_ARRAYS), kind = half ? pick(&r, 3) : 0;
      t[i] = random_view(m, array, half, array == out ? out_kind : kind);
    }
    t[n_in] = random_view(m, out, half, out_kind);
    tpu_op_call *call = mk_call(op, TPU_FLOAT32, t, n_in, 0.5);
    if (op == TPU_OP_MUL && pick(&r, 4) == 0)
      tpu_op_set_scalar_input(call, 1, 7, SCALAR_F(0.75), true);
    emit(e, call);
  }
}

/* What a node touches, to check the new order against every hazard of the old one. */
typedef struct touches {
  const tpu_op_call *call;
  int n;
  int32_t slot[3];
  bool writes[3];
} touches;

static bool conflict(const touches *a, const touches *b) {
  for (int i = 0; i < a->n; i++)
    for (int j = 0; j < b->n; j++)
      if (a->slot[i] == b->slot[j] && (a->writes[i] || b->writes[j]))
        return true;
  return false;
}

static void check_hazards_kept(const touches *old, const tpu_graph *g) {
  int position[R_NODES];
  for (int i = 0; i < R_NODES; i++)
    for (int k = 0; k < R_NODES; k++)
      if (g->nodes[i].call == old[k].call)
        position[k] = i;
  for (int a = 0; a < R_NODES; a++)
    for (int b = a + 1; b < R_NODES; b++)
      if (conflict(&old[a], &old[b]))
        CHECK(position[a] < position[b]);
}

static void test_random_graphs(void) {
  float *m[3][R_ARRAYS];
  int moved = 0, fused_before = 0, fused_after = 0;
  for (int c = 0; c < 3; c++)
    for (int i = 0; i < R_ARRAYS; i++)
      m[c][i] = malloc(R_LEN * sizeof(float));
  for (uint64_t seed = 1; seed <= 200; seed++) {
    for (int c = 0; c < 3; c++)
      for (int i = 0; i < R_ARRAYS; i++)
        fill_random(m[c][i], TPU_FLOAT32, R_LEN, seed * 16 + (uint64_t)i);
    emitter ref = {NULL}, plain = {tpu_graph_new(0)}, moving = {tpu_graph_new(0)};
    random_graph(&ref, m[0], seed);
    random_graph(&plain, m[1], seed);
    random_graph(&moving, m[2], seed);
    touches old[R_NODES];
    for (int n = 0; n < R_NODES; n++) {
      const tpu_graph_node *node = &moving.graph->nodes[n];
      old[n] = (touches){.call = node->call};
      for (int t = 0; t < node->call->n_inputs + node->call->n_outputs; t++)
        if (node->refs[t].slot >= 0) {
          old[n].slot[old[n].n] = node->refs[t].slot;
          old[n].writes[old[n].n++] = t >= node->call->n_inputs;
        }
    }
    tpu_graph *before = moving.graph;
    CHECK_OK(tpu_fuse_reorder(&moving.graph));
    moved += moving.graph != before;
    check_hazards_kept(old, moving.graph);
    int steps;
    fused_before += run_graph(plain.graph, &steps);
    fused_after += run_graph(moving.graph, &steps);
    for (int i = 0; i < R_ARRAYS; i++) {
      CHECK(memcmp(m[0][i], m[1][i], R_LEN * sizeof(float)) == 0);
      CHECK(memcmp(m[0][i], m[2][i], R_LEN * sizeof(float)) == 0);
    }
    tpu_graph_free(plain.graph);
    tpu_graph_free(moving.graph);
  }
  CHECK(moved > 100); /* the test exercises reordering, not the identity */
  printf("     200 random graphs: %d reordered; fused steps %d as recorded, %d reordered\n", moved,
         fused_before, fused_after);
  for (int c = 0; c < 3; c++)
    for (int i = 0; i < R_ARRAYS; i++)
      free(m[c][i]);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_permute_keeps_refs);
  RUN_TEST(test_interleaved_chains_fuse);
  RUN_TEST(test_hazard_blocks_move);
  RUN_TEST(test_random_graphs);
  TEST_MAIN_END();
}
