/* libFuzzer target: graphs (graph/tpu_graph.h) and the host driver's fused planner and executor
 * (drivers/host/fuse/fuse.h), from random op calls (fuzz_graph_calls.h).
 *
 * The input's first bytes give 2 to 4 arrays (dtype, size, contents, whether any storage still
 * holds them) and the graph's flags word; the rest decodes into up to MAX_NODES calls. Checks:
 *   - structure: the calls added over one copy of the arrays and over another make graphs that
 *     compare and hash equal, as does a structure clone; with every runtime scalar changed they
 *     still do; with one attribute scalar changed they no longer compare equal; reordered
 *     (tpu_fuse_reorder) they stay equal;
 *   - execution: one reordered graph, run with the plan made from the other (a compile-cache
 *     hit), leaves every array some storage holds bit for bit as running each call in the
 *     original order through tpu_host_kernel does. A sum or mean fused into a group may round
 *     differently (fuse.h): its result is compared within a bound from the sum of its inputs'
 *     magnitudes, and the arrays it flows into are not compared. A call may fail (an integer
 *     division by zero): the fused run then stops at it, or skips it when it is dead, so only a
 *     fused failure without a reference failure is an error, and nothing is compared. */
#include <float.h>

#include "drivers/host/fuse/fuse.h"
#include "drivers/host/host_driver.h"
#include "fuzz_graph_calls.h"
#include "graph/tpu_graph.h"

/* How a rebuilt graph differs from the first (build). */
typedef enum mutation { AS_IS, NEW_RUNTIME_SCALARS, NEW_ATTRIBUTE } mutation;

static int array_of(unsigned char *const *mem, const arrays *a, const tpu_tensor *t) {
  for (int i = 0; i < a->n; i++)
    if (t->host == mem[i])
      return i;
  return -1; /* a scalar held in the call */
}

/* Fills an array with values of its dtype: floats in [-3, 3), integers in [-50, 50) (uint8
 * [0, 100)), bools 0 or 1; with `special`, one element in 16 is NaN, an infinity, -0, a huge or
 * tiny float, or an integer type's extreme. */
static void fill(unsigned char *m, tpu_dtype dtype, int64_t bytes, uint64_t seed, bool special) {
  static const double floats[] = {NAN, INFINITY, -INFINITY, -0.0, 1e30, -1e30, 1e-40, 65504};
  int64_t item = (int64_t)tpu_dtype_size(dtype);
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int64_t i = 0; i < bytes / item; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(s >> 11) * 0x1p-53, v = u * 6 - 3;
    bool edge = special && (s >> 60) == 0, high = (s >> 56) & 1;
    int64_t k = (int64_t)(u * 100) - 50;
    if (edge)
      v = floats[(s >> 56) & 7];
    unsigned char *at = m + i * item;
    switch (dtype) {
    case TPU_FLOAT32: *(float *)at = (float)v; break;
    case TPU_FLOAT64: *(double *)at = v; break;
    case TPU_BFLOAT16: *(uint16_t *)at = tpu_f32_to_bf16((float)v); break;
    case TPU_FLOAT16: *(uint16_t *)at = tpu_f32_to_f16((float)v); break;
    case TPU_INT16: *(int16_t *)at = edge ? (high ? INT16_MAX : INT16_MIN) : (int16_t)k; break;
    case TPU_INT32: *(int32_t *)at = edge ? (high ? INT32_MAX : INT32_MIN) : (int32_t)k; break;
    case TPU_INT64: *(int64_t *)at = edge ? (high ? INT64_MAX : INT64_MIN) : k; break;
    case TPU_UINT8: *at = edge ? (high ? 255 : 0) : (unsigned char)(k + 50); break;
    default: *at = u < 0.5; /* bool */
    }
  }
}

static void take_arrays(fuzz_in *in, arrays *a, unsigned char **init) {
  static const tpu_dtype homes[] = {TPU_FLOAT32, TPU_FLOAT32, TPU_FLOAT64, TPU_BFLOAT16,
                                    TPU_FLOAT16, TPU_INT32,   TPU_INT64,   TPU_BOOL,
                                    TPU_UINT8,   TPU_INT16};
  a->n = 2 + (int)take_below(in, MAX_ARRAYS - 1);
  for (int i = 0; i < a->n; i++) {
    uint8_t b = take_u8(in);
    a->home[i] = homes[b % (sizeof homes / sizeof homes[0])];
    a->dead[i] = b & 0x80;
    a->bytes[i] = 64 * (8 + (int64_t)take_below(in, 153));
    init[i] = aligned_alloc(64, (size_t)a->bytes[i]);
    fill(init[i], a->home[i], a->bytes[i], (uint64_t)i * 977 + take_u8(in), b & 0x40);
  }
}

/* The graph of the calls decoded from `calls` over arrays `mem`, outputs written to dead arrays
 * not needed; `record` (when not NULL) gets each node's call. */
static tpu_graph *build(fuzz_in calls, const arrays *a, unsigned char *const *mem, uint64_t flags,
                        mutation m, int attr_node, tpu_op_call **record) {
  decoder d = {.in = calls, .a = a, .mem = mem};
  tpu_graph *g = tpu_graph_new(flags);
  FUZZ_REQUIRE(g, "out of memory");
  for (int n = 0; n < MAX_NODES && d.in.n;) {
    tpu_op_call *c = take_call(&d);
    if (!c)
      continue;
    uint8_t attrs = tpu_op_attr_scalars(c->op);
    for (int k = 0; k < TPU_OP_MAX_SCALARS; k++)
      if ((m == NEW_RUNTIME_SCALARS && !(attrs >> k & 1)) ||
          (m == NEW_ATTRIBUTE && n == attr_node && (unsigned)(attrs & -attrs) == 1u << k))
        c->scalars[k].u ^= 1;
    if (record)
      record[n] = c;
    FUZZ_REQUIRE(tpu_graph_add(g, c, attrs) == TPU_OK, "%s", tpu_last_error());
    for (int o = 0; o < c->n_outputs; o++)
      if (a->dead[array_of(mem, a, &c->tensors[c->n_inputs + o])])
        tpu_graph_set_needed(g, n, o, false);
    n++;
  }
  return g;
}

static void require_same(const tpu_graph *x, const tpu_graph *y, const char *what) {
  FUZZ_REQUIRE(tpu_graph_equal(x, y) && tpu_graph_equal(y, x), "%s: not equal", what);
  FUZZ_REQUIRE(tpu_graph_hash(x) == tpu_graph_hash(y), "%s: equal, hashes differ", what);
}

/* The sum of |x| over a float32 or float64 view (NaN for other dtypes). */
static double magnitude(const tpu_tensor *t) {
  if (t->dtype != TPU_FLOAT32 && t->dtype != TPU_FLOAT64)
    return NAN;
  int64_t idx[MAX_DIMS] = {0}, n = numel_of(t->ndim, t->sizes);
  int64_t item = t->dtype == TPU_FLOAT32 ? 4 : 8;
  double sum = 0;
  for (int64_t e = 0; e < n; e++) {
    const char *p = (const char *)t->host + t->offset;
    for (int d = 0; d < t->ndim; d++)
      p += idx[d] * t->strides[d] * item;
    sum += item == 4 ? fabs((double)*(const float *)p) : fabs(*(const double *)p);
    for (int d = t->ndim - 1; d >= 0 && ++idx[d] == t->sizes[d]; d--)
      idx[d] = 0;
  }
  return sum;
}

/* Runs each call in order through its host kernel; false when one failed. abs_sum[n]: for a
 * sum, the magnitude of its input. */
static bool run_reference(fuzz_in calls, const arrays *a, unsigned char *const *mem,
                          double *abs_sum) {
  decoder d = {.in = calls, .a = a, .mem = mem};
  bool ok = true;
  for (int n = 0; n < MAX_NODES && d.in.n;) {
    tpu_op_call *c = take_call(&d);
    if (!c)
      continue;
    abs_sum[n++] = c->op == TPU_OP_SUM ? magnitude(&c->tensors[0]) : NAN;
    ok &= tpu_host_kernel(c->op)(c) == TPU_OK;
    tpu_op_call_free(c);
  }
  return ok;
}

static void dump(const tpu_graph *g, const tpu_fuse_plan *p) {
  char *text = tpu_graph_dump(g, false);
  fprintf(stderr, "%s", text ? text : "");
  free(text);
  for (int s = 0; s < tpu_fuse_plan_steps(p); s++) {
    int first, count;
    bool fused;
    tpu_fuse_plan_step(p, s, &first, &count, &fused);
    fprintf(stderr, "step %d: nodes %d-%d%s\n", s, first, first + count - 1, fused ? " fused" : "");
  }
}

/* Node n of g, a sum fused into a group (fuse.h), against the reference: within the rounding of
 * float (float32) or double accumulation over its input, whose magnitude is abs_sum. */
static void check_fused_sum(const tpu_graph *g, const tpu_fuse_plan *p, int n, const arrays *a,
                            unsigned char *const *ref, unsigned char *const *fused,
                            double abs_sum) {
  const tpu_op_call *c = g->nodes[n].call;
  const tpu_tensor *out = &c->tensors[1];
  int arr = array_of(fused, a, out);
  bool f32 = out->dtype == TPU_FLOAT32;
  double count = (double)numel_of(c->tensors[0].ndim, c->tensors[0].sizes);
  double scale = c->scalars[0].i ? abs_sum / count : abs_sum;
  if (!(scale < (f32 ? 1e36 : 1e300))) /* NaN or infinite inputs, or float lanes may overflow */
    return;
  double want, got;
  if (f32) {
    float x, y;
    memcpy(&x, ref[arr] + out->offset, 4), memcpy(&y, fused[arr] + out->offset, 4);
    want = x, got = y;
  } else {
    memcpy(&want, ref[arr] + out->offset, 8), memcpy(&got, fused[arr] + out->offset, 8);
  }
  double eps = f32 ? 0x1p-24 : 0x1p-53;
  double bound =
      2 * count * eps * scale + 4 * eps * fabs(want) + (f32 ? FLT_TRUE_MIN : DBL_TRUE_MIN);
  if (!(fabs(got - want) <= bound)) {
    dump(g, p);
    FUZZ_REQUIRE(false, "fused sum at node %d: %.17g, reference %.17g (bound %g)", n, got, want,
                 bound);
  }
}

/* Compares the fused run's arrays with the reference's (see the header comment). */
static void compare(const tpu_graph *g, const tpu_fuse_plan *p, tpu_op_call *const *calls,
                    int n_calls, const arrays *a, unsigned char *const *ref,
                    unsigned char *const *fused, const double *abs_sum) {
  bool fused_sum[MAX_NODES] = {false}, tainted[MAX_ARRAYS] = {false}, clean_input[MAX_NODES];
  int last_writer[MAX_ARRAYS] = {-1, -1, -1, -1};
  for (int s = 0; s < tpu_fuse_plan_steps(p); s++) {
    int first, count;
    bool is_fused;
    tpu_fuse_plan_step(p, s, &first, &count, &is_fused);
    fused_sum[first + count - 1] = is_fused && g->nodes[first + count - 1].call->op == TPU_OP_SUM;
  }
  for (int n = 0; n < g->n_nodes; n++) {
    const tpu_op_call *c = g->nodes[n].call;
    clean_input[n] = true;
    for (int i = 0; i < c->n_inputs; i++) {
      int arr = array_of(fused, a, &c->tensors[i]);
      clean_input[n] &= arr < 0 || !tainted[arr];
    }
    for (int o = c->n_inputs; o < c->n_inputs + c->n_outputs; o++) {
      int arr = array_of(fused, a, &c->tensors[o]);
      tainted[arr] |= !clean_input[n] || fused_sum[n];
      last_writer[arr] = n;
    }
  }
  for (int n = 0; n < g->n_nodes; n++) {
    if (!fused_sum[n] || !clean_input[n] ||
        last_writer[array_of(fused, a, &g->nodes[n].call->tensors[1])] != n)
      continue;
    int orig = 0;
    while (orig < n_calls && calls[orig] != g->nodes[n].call)
      orig++;
    check_fused_sum(g, p, n, a, ref, fused, abs_sum[orig]);
  }
  for (int arr = 0; arr < a->n; arr++) {
    if (a->dead[arr] || tainted[arr] || !memcmp(ref[arr], fused[arr], (size_t)a->bytes[arr]))
      continue;
    int64_t at = 0;
    while (ref[arr][at] == fused[arr][at])
      at++;
    dump(g, p);
    FUZZ_REQUIRE(false, "array %d (%s) differs from the reference at byte %lld", arr,
                 tpu_dtype_name(a->home[arr]), (long long)at);
  }
}

/* The plan's steps cover the nodes in order, each once. */
static void check_steps(const tpu_graph *g, const tpu_fuse_plan *p) {
  int next = 0;
  for (int s = 0; s < tpu_fuse_plan_steps(p); s++) {
    int first, count;
    bool fused;
    tpu_fuse_plan_step(p, s, &first, &count, &fused);
    FUZZ_REQUIRE(first == next && count >= 1, "step %d covers nodes %d-%d after %d", s, first,
                 first + count - 1, next);
    next = first + count;
  }
  FUZZ_REQUIRE(next == g->n_nodes, "the steps cover %d of %d nodes", next, g->n_nodes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_in in = {data, size};
  arrays a;
  unsigned char *init[MAX_ARRAYS], *ref[MAX_ARRAYS], *fused[MAX_ARRAYS];
  take_arrays(&in, &a, init);
  uint64_t flags = take_u8(&in);
  for (int i = 0; i < a.n; i++) {
    ref[i] = aligned_alloc(64, (size_t)a.bytes[i]);
    fused[i] = aligned_alloc(64, (size_t)a.bytes[i]);
    memcpy(ref[i], init[i], (size_t)a.bytes[i]);
    memcpy(fused[i], init[i], (size_t)a.bytes[i]);
  }

  tpu_op_call *calls[MAX_NODES];
  tpu_graph *g = build(in, &a, fused, flags, AS_IS, -1, calls);
  tpu_graph *other = build(in, &a, ref, flags, AS_IS, -1, NULL);
  require_same(g, other, "the same calls over other arrays");
  tpu_graph *clone = tpu_graph_clone_structure(g);
  FUZZ_REQUIRE(clone, "out of memory");
  require_same(g, clone, "a structure clone");
  tpu_graph_free(clone);
  tpu_graph *changed = build(in, &a, ref, flags, NEW_RUNTIME_SCALARS, -1, NULL);
  require_same(g, changed, "new runtime scalars");
  tpu_graph_free(changed);
  int with_attrs[MAX_NODES], n_with = 0;
  for (int n = 0; n < g->n_nodes; n++)
    if (tpu_op_attr_scalars(g->nodes[n].call->op))
      with_attrs[n_with++] = n;
  if (n_with) {
    changed = build(in, &a, ref, flags, NEW_ATTRIBUTE, with_attrs[flags % (unsigned)n_with], NULL);
    FUZZ_REQUIRE(!tpu_graph_equal(g, changed), "a changed attribute compares equal");
    tpu_graph_free(changed);
  }
  int n_calls = g->n_nodes;
  FUZZ_REQUIRE(tpu_fuse_reorder(&g) == TPU_OK && tpu_fuse_reorder(&other) == TPU_OK, "%s",
               tpu_last_error());
  require_same(g, other, "reordered");

  tpu_fuse_plan *plan;
  FUZZ_REQUIRE(tpu_fuse_plan_create(other, &plan) == TPU_OK, "%s", tpu_last_error());
  check_steps(g, plan);
  double abs_sum[MAX_NODES];
  bool ref_ok = run_reference(in, &a, ref, abs_sum);
  tpu_status st = tpu_fuse_run(plan, g);
  if (st != TPU_OK && ref_ok)
    dump(g, plan);
  FUZZ_REQUIRE(st == TPU_OK || !ref_ok, "the fused run failed alone: %s", tpu_last_error());
  if (ref_ok)
    compare(g, plan, calls, n_calls, &a, ref, fused, abs_sum);

  tpu_fuse_plan_destroy(plan);
  tpu_graph_free(g);
  tpu_graph_free(other);
  for (int i = 0; i < a.n; i++) {
    free(init[i]);
    free(ref[i]);
    free(fused[i]);
  }
  return 0;
}
