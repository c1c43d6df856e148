/* The IR (graph/tpu_graph.h): edges to earlier results, versions of buffers written in place,
 * fresh pending outputs, scalars kept in the call, and the structural hash and equality: equal for
 * other scalar values and other buffers, different for another dtype, shape, stride, offset, edge,
 * aliasing, needed flag, attribute scalar or flags word; the text and dot dumps. */
#include <string.h>

#include "tpu_test_graph.h"

enum { N = 64 };

/* Memory for one instance of the chain below. */
typedef struct chain_mem {
  float x[N], a[N], b[N], t0[N], t1[N], y[N];
} chain_mem;

/* What a variant of the chain y = gelu(x * a + alpha * b) changes. */
typedef struct variant {
  tpu_dtype dtype; /* of y */
  int64_t n;       /* elements */
  double alpha;
  uint64_t flags;
  bool add_reads_x;  /* the add reads x instead of t0 (another edge) */
  bool inplace;      /* the add writes t0 in place instead of t1 */
  bool t1_unneeded;  /* mark the add's output unneeded */
  bool alpha_is_attr;
  int64_t y_stride;
  int64_t y_offset;
} variant;

static tpu_graph *chain(chain_mem *m, const variant *v) {
  tpu_graph *g = tpu_graph_new(v->flags);
  tpu_tensor t[3] = {vec1(m->x, TPU_FLOAT32, v->n), vec1(m->a, TPU_FLOAT32, v->n),
                     vec1(m->t0, TPU_FLOAT32, v->n)};
  CHECK_OK_OR(tpu_graph_add(g, mk_call(TPU_OP_MUL, TPU_FLOAT32, t, 2, 0), 0), g);
  t[0] = vec1(v->add_reads_x ? m->x : m->t0, TPU_FLOAT32, v->n);
  t[1] = vec1(m->b, TPU_FLOAT32, v->n);
  t[2] = vec1(v->inplace ? m->t0 : m->t1, TPU_FLOAT32, v->n);
  CHECK_OK_OR(tpu_graph_add(g, mk_call(TPU_OP_ADD, TPU_FLOAT32, t, 2, v->alpha),
                            v->alpha_is_attr ? 1 : 0),
              g);
  if (v->t1_unneeded)
    tpu_graph_set_needed(g, 1, 0, false);
  t[0] = t[2];
  t[1] = vec1(m->y, v->dtype, v->n / v->y_stride);
  t[1].strides[0] = v->y_stride;
  t[1].offset = v->y_offset;
  CHECK_OK_OR(tpu_graph_add(g, mk_call(TPU_OP_GELU, TPU_FLOAT32, t, 1, 0), 0), g);
  return g;
}

static const variant base = {.dtype = TPU_FLOAT32, .n = N, .alpha = 1.0, .y_stride = 1};

static void test_edges_and_versions(void) {
  chain_mem m;
  tpu_graph *g = chain(&m, &base);
  CHECK(g->n_nodes == 3 && g->n_slots == 6);
  const tpu_graph_ref *mul = g->nodes[0].refs, *add = g->nodes[1].refs, *gelu = g->nodes[2].refs;
  CHECK(mul[0].node == TPU_GRAPH_EXTERNAL && mul[0].slot == 0 && mul[1].slot == 1);
  CHECK(mul[2].slot == 2 && mul[2].needed);
  CHECK(add[0].node == 0 && add[0].index == 0 && add[0].slot == 2);
  CHECK(add[1].node == TPU_GRAPH_EXTERNAL && add[2].slot == 4);
  CHECK(gelu[0].node == 1 && gelu[0].slot == 4);
  tpu_graph_free(g);
  /* In place: the add writes a new version of t0's slot over the mul's result. */
  variant v = base;
  v.inplace = true;
  g = chain(&m, &v);
  add = g->nodes[1].refs;
  CHECK(add[2].slot == 2 && add[2].node == 0 && add[2].index == 0);
  CHECK(g->nodes[2].refs[0].node == 1 && g->nodes[2].refs[0].slot == 2);
  CHECK(g->slots[2].latest_node == 1);
  tpu_graph_free(g);
}

static void test_fresh_and_scalar_operands(void) {
  tpu_buffer *x, *out;
  CHECK_OK(tpu_buffer_create(0, 0, 16 * sizeof(float), &x));
  CHECK_OK(tpu_buffer_create_pending(0, 0, 16 * sizeof(float), &out));
  tpu_tensor t[3] = {{.buf = x, .dtype = TPU_FLOAT32, .ndim = 1, .sizes = {16}, .strides = {1}},
                     {0},
                     {.buf = out, .dtype = TPU_FLOAT32, .ndim = 1, .sizes = {16}, .strides = {1}}};
  tpu_op_call *call = mk_call(TPU_OP_MUL, TPU_FLOAT32, t, 2, 0);
  tpu_op_set_scalar_input(call, 1, 7, SCALAR_F(3.0), true);
  tpu_graph *g = tpu_graph_new(0);
  CHECK_OK(tpu_graph_add(g, call, 0));
  const tpu_graph_ref *r = g->nodes[0].refs;
  CHECK(r[0].node == TPU_GRAPH_EXTERNAL && r[0].slot == 0);
  CHECK(r[1].slot == -1 && r[1].node == TPU_GRAPH_NO_SLOT);
  CHECK(r[2].node == TPU_GRAPH_FRESH && r[2].slot == 1);
  CHECK(!g->slots[0].host && g->slots[0].key == x);
  /* The graph holds the buffers: they outlive their storages until the graph goes. */
  tpu_buffer_release_storage(x);
  tpu_buffer_release_storage(out);
  tpu_graph_free(g);
}

/* The hash of a chain variant, checking that hash and equality agree with `same_as_base`. */
static void check_variant(const variant *v, bool same_as_base) {
  chain_mem m1, m2;
  tpu_graph *a = chain(&m1, &base), *b = chain(&m2, v);
  CHECK(tpu_graph_equal(a, b) == same_as_base);
  CHECK((tpu_graph_hash(a) == tpu_graph_hash(b)) == same_as_base);
  tpu_graph *clone = tpu_graph_clone_structure(b);
  CHECK(tpu_graph_equal(a, clone) == same_as_base && tpu_graph_equal(b, clone));
  CHECK(tpu_graph_hash(clone) == tpu_graph_hash(b));
  tpu_graph_free(clone);
  tpu_graph_free(a);
  tpu_graph_free(b);
}

static void test_hash(void) {
  variant v = base;
  check_variant(&v, true); /* other buffers (m1 vs m2) */
  v.alpha = 0.25;
  check_variant(&v, true); /* another scalar value: a runtime argument */
  v = base, v.dtype = TPU_FLOAT64;
  check_variant(&v, false);
  v = base, v.n = N / 2;
  check_variant(&v, false);
  v = base, v.y_stride = 2;
  check_variant(&v, false);
  v = base, v.y_offset = 4;
  check_variant(&v, false);
  v = base, v.add_reads_x = true;
  check_variant(&v, false);
  v = base, v.inplace = true;
  check_variant(&v, false);
  v = base, v.t1_unneeded = true;
  check_variant(&v, false);
  v = base, v.flags = 1;
  check_variant(&v, false);
  v = base, v.alpha_is_attr = true;
  check_variant(&v, false);
  /* An attribute scalar's value is part of the structure. */
  chain_mem m1, m2;
  variant w = base;
  w.alpha_is_attr = true;
  tpu_graph *a = chain(&m1, &w);
  w.alpha = 2.0;
  tpu_graph *b = chain(&m2, &w);
  CHECK(!tpu_graph_equal(a, b) && tpu_graph_hash(a) != tpu_graph_hash(b));
  tpu_graph_free(a);
  tpu_graph_free(b);
}

/* Two inputs that are one buffer differ from two distinct buffers with the same views. */
static void test_hash_sees_aliasing(void) {
  float x[8], y[8], out[8];
  tpu_tensor same[3] = {vec1(x, TPU_FLOAT32, 8), vec1(x, TPU_FLOAT32, 8),
                        vec1(out, TPU_FLOAT32, 8)};
  tpu_tensor distinct[3] = {vec1(x, TPU_FLOAT32, 8), vec1(y, TPU_FLOAT32, 8),
                            vec1(out, TPU_FLOAT32, 8)};
  tpu_graph *a = tpu_graph_new(0), *b = tpu_graph_new(0);
  CHECK_OK(tpu_graph_add(a, mk_call(TPU_OP_MUL, TPU_FLOAT32, same, 2, 0), 0));
  CHECK_OK(tpu_graph_add(b, mk_call(TPU_OP_MUL, TPU_FLOAT32, distinct, 2, 0), 0));
  CHECK(!tpu_graph_equal(a, b) && tpu_graph_hash(a) != tpu_graph_hash(b));
  tpu_graph_free(a);
  tpu_graph_free(b);
}

static void test_dump(void) {
  chain_mem m;
  variant v = base;
  v.inplace = true;
  v.t1_unneeded = true;
  tpu_graph *g = chain(&m, &v);
  char *text = tpu_graph_dump(g, false);
  CHECK(text && strstr(text, "graph: 3 nodes, 5 slots"));
  CHECK(text && strstr(text, "n0 = mul(ext:s0 [64] float32, ext:s1 [64] float32) compute float32"));
  CHECK(text && strstr(text, "n1 = add(n0.0 [64] float32, ext:s3 [64] float32)"));
  CHECK(text && strstr(text, "-> s2 [64] float32 overwrites n0.0 unneeded"));
  free(text);
  char *dot = tpu_graph_dump(g, true);
  CHECK(dot && strstr(dot, "digraph") && strstr(dot, "n0 -> n1") && strstr(dot, "s3 -> n1"));
  free(dot);
  tpu_graph_free(g);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_edges_and_versions);
  RUN_TEST(test_fresh_and_scalar_operands);
  RUN_TEST(test_hash);
  RUN_TEST(test_hash_sees_aliasing);
  RUN_TEST(test_dump);
  TEST_MAIN_END();
}
