/* Every op of the op table against the host driver, in the spirit of ggml's test-backend-ops.
 * Each op has at least one case (every_op_cases_*.h, format in every_op_case.h); an op without
 * one fails the program by name. A case runs three times from the same initial storages: on the
 * host driver's op_run over host memory (the reference), then through the runtime on the driver
 * that TPU_TEST_DRIVER names (default host; the counting driver of counting_driver.h is
 * registered too; pjrt needs TORCH_TPU_PJRT_PLUGIN, else the program exits 77, skipped) from
 * device buffers, once submitted in strict mode and once in fused mode
 * (exec/tpu_submit.h, then tpu_fused_flush), so every op also runs through the driver's graph path. Every
 * storage an output views, the gaps of strided views included, must then equal the reference
 * element by element (element_matches). Calls the driver does not support are skipped and counted;
 * a reference call that fails is a bug of its case. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "counting_driver.h"
#include "every_op_cases_attention.h"
#include "every_op_cases_base.h"
#include "every_op_cases_conv.h"
#include "every_op_cases_elementwise.h"
#include "every_op_cases_index.h"
#include "every_op_cases_linalg.h"
#include "every_op_cases_matmul.h"
#include "every_op_cases_nn.h"
#include "every_op_cases_norm.h"
#include "every_op_cases_optim.h"
#include "every_op_cases_random.h"
#include "every_op_cases_reduce.h"
#include "every_op_cases_rnn.h"
#include "every_op_cases_sort.h"
#include "every_op_cases_special.h"
#include "every_op_cases_vision.h"
#include "drivers/host/kernels/matmul/matmul.h"
#include "drivers/pjrt/pjrt.h"
#include "exec/tpu_fused.h"
#include "ops/tpu_op_fallback.h"
#include "tensor/tpu_buffer.h"
#include "tpu_test.h"

/* ---- Walking the cases ---- */

typedef struct case_table {
  const op_case *cases;
  size_t count;
} case_table;

#define CASE_TABLE(cases) {cases, sizeof cases / sizeof cases[0]}

static const case_table case_tables[] = {
    CASE_TABLE(base_cases),      CASE_TABLE(random_cases),    CASE_TABLE(ew_cases),
    CASE_TABLE(reduce_cases),    CASE_TABLE(matmul_cases),    CASE_TABLE(norm_cases),
    CASE_TABLE(nn_cases),        CASE_TABLE(conv_cases),      CASE_TABLE(rnn_cases),
    CASE_TABLE(attention_cases), CASE_TABLE(index_cases),     CASE_TABLE(optim_cases),
    CASE_TABLE(sort_cases),
    CASE_TABLE(special_cases),
    CASE_TABLE(scan_cases),      CASE_TABLE(linalg_cases),    CASE_TABLE(vision_cases),
};

/* Calls visit on every case: the tables', then each elementwise row in each of its dtypes. */
static void for_each_case(void (*visit)(const op_case *c, void *ctx), void *ctx) {
  for (size_t t = 0; t < sizeof case_tables / sizeof case_tables[0]; t++)
    for (size_t i = 0; i < case_tables[t].count; i++)
      visit(&case_tables[t].cases[i], ctx);
  for (size_t e = 0; e < sizeof ew_ops / sizeof ew_ops[0]; e++)
    for (size_t l = 0; l < EW_LAYOUT_COUNT; l++)
      if (ew_ops[e].dtypes & ew_layouts_by_dtype[l].bit) {
        op_case c = ew_case(&ew_ops[e], &ew_layouts_by_dtype[l]);
        visit(&c, ctx);
      }
}

/* Reports a failed check of case `c`, printf-style. */
static void case_failed(const op_case *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void case_failed(const op_case *c, const char *fmt, ...) {
  fprintf(stderr, "FAIL %s (%s): ", tpu_op_name(c->op), c->what);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  tpu_test_failures++;
}

/* ---- Deterministic values (splitmix64) ---- */

static uint64_t next_random(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double uniform01(uint64_t *state) { return (double)(next_random(state) >> 11) * 0x1p-53; }

/* Stores v, already integral for integer dtypes, as element i. Integers pass through int64, so a
 * value outside a narrow dtype wraps instead of being undefined behaviour. */
static void store_value(void *mem, tpu_dtype dtype, int64_t i, double v) {
  switch (dtype) {
  case TPU_BOOL: ((uint8_t *)mem)[i] = v != 0; break;
  case TPU_UINT8: ((uint8_t *)mem)[i] = (uint8_t)(int64_t)v; break;
  case TPU_INT8: ((int8_t *)mem)[i] = (int8_t)(int64_t)v; break;
  case TPU_INT16: ((int16_t *)mem)[i] = (int16_t)(int64_t)v; break;
  case TPU_INT32: ((int32_t *)mem)[i] = (int32_t)(int64_t)v; break;
  case TPU_INT64: ((int64_t *)mem)[i] = (int64_t)v; break;
  case TPU_FLOAT16: ((uint16_t *)mem)[i] = tpu_f32_to_f16((float)v); break;
  case TPU_BFLOAT16: ((uint16_t *)mem)[i] = tpu_f32_to_bf16((float)v); break;
  case TPU_FLOAT32: ((float *)mem)[i] = (float)v; break;
  default: ((double *)mem)[i] = v; break; /* float64 */
  }
}

/* Fills n elements of `dtype` as `values` says (every_op_case.h); complex ones part by part. */
static void fill_storage(void *mem, tpu_dtype dtype, int64_t n, case_values values,
                         uint64_t *rng) {
  if (tpu_dtype_is_complex(dtype)) {
    dtype = dtype == TPU_COMPLEX64 ? TPU_FLOAT32 : TPU_FLOAT64;
    n *= 2;
  }
  const bool integral = !tpu_dtype_is_floating(dtype);
  double lo = values.lo, hi = values.hi;
  if (values.kind == VALUES_DOMINANT) /* off the diagonal; the diagonal adds the side plus one */
    lo = -1, hi = 1;
  else if (values.kind == VALUES_EVERY || (lo == 0 && hi == 0)) { /* a default magnitude */
    if (values.kind == VALUES_SIGNED || values.kind == VALUES_EVERY)
      lo = integral ? 1 : 0.25, hi = integral ? 50 : 3;
    else if (!integral)
      lo = -3, hi = 3;
    else if (dtype == TPU_BOOL || dtype == TPU_UINT8)
      lo = 0, hi = dtype == TPU_BOOL ? 2 : 100;
    else
      lo = -50, hi = 50;
  }
  static const double specials[4] = {NAN, INFINITY, -INFINITY, -0.0};
  for (int64_t i = 0; i < n; i++) {
    double value = lo + uniform01(rng) * (hi - lo), sign = next_random(rng) & 1 ? -1 : 1;
    switch (values.kind) {
    case VALUES_CONST: value = values.lo; break;
    case VALUES_SIGNED: value *= sign; break;
    case VALUES_EVERY: value = i % (int64_t)values.lo == 0 ? sign * value : 0; break;
    case VALUES_ASCENDING:
      value = (double)(i % (int64_t)values.hi) * values.lo - values.hi * values.lo / 2;
      break;
    case VALUES_SPECIAL:
      if (!integral && i % 5 == 0)
        value = specials[i / 5 % 4];
      break;
    case VALUES_DOMINANT: {
      const int64_t side = (int64_t)values.lo;
      if (i % (side * side) % (side + 1) == 0)
        value += (double)side + 1;
      break;
    }
    case VALUES_UNIFORM: break;
    }
    store_value(mem, dtype, i, integral ? floor(value) : value);
  }
}

/* ---- Views and storages ---- */

/* The tensor whose storage tensor i views. */
static int owner_of(const op_case *c, int i) {
  return c->tensors[i].alias ? c->tensors[i].alias - 1 : i;
}

/* Element strides and offset of a tensor's view of its storage. */
static void layout_of(const case_tensor *t, int64_t *strides, int64_t *offset) {
  if (t->layout == LAYOUT_EXPLICIT) {
    memcpy(strides, t->strides, sizeof t->strides);
    *offset = t->offset;
    return;
  }
  const int n = t->ndim;
  const bool transposed = t->layout == LAYOUT_TRANSPOSED && n >= 2;
  int64_t step = t->layout == LAYOUT_STRIDED ? 2 : 1;
  *offset = t->layout == LAYOUT_STRIDED ? 1 : 0;
  for (int k = n - 1; k >= 0; k--) { /* innermost in memory first */
    int d = transposed && k == n - 1 ? n - 2 : transposed && k == n - 2 ? n - 1 : k;
    strides[d] = step;
    step *= t->sizes[d];
  }
}

/* Elements of its storage that a view reaches: one past its last element. */
static int64_t view_reach(const case_tensor *t) {
  int64_t strides[CASE_MAX_DIMS], last;
  layout_of(t, strides, &last);
  for (int d = 0; d < t->ndim; d++)
    last += (t->sizes[d] - 1) * strides[d];
  return last + 1;
}

static bool is_output_storage(const op_case *c, int owner) {
  for (int i = c->n_inputs; i < c->n_inputs + c->n_outputs; i++)
    if (owner_of(c, i) == owner)
      return true;
  return false;
}

/* The storages of a case, indexed by the tensor that owns each: as drawn, after the reference,
 * and as read back from the driver. */
typedef struct case_memory {
  int64_t elements[CASE_MAX_TENSORS]; /* 0 for tensors that own none */
  size_t bytes[CASE_MAX_TENSORS];
  unsigned char *initial[CASE_MAX_TENSORS], *expected[CASE_MAX_TENSORS],
      *actual[CASE_MAX_TENSORS];
} case_memory;

static void case_memory_free(case_memory *m) {
  for (int i = 0; i < CASE_MAX_TENSORS; i++) {
    free(m->initial[i]);
    free(m->expected[i]);
    free(m->actual[i]);
  }
}

/* Sizes, allocates and fills the storages from `seed`. False, reported, for an alias that views
 * no storage of its dtype (a bug of the case) or when host memory runs out. */
static bool case_memory_init(const op_case *c, case_memory *m, uint64_t seed) {
  memset(m, 0, sizeof *m);
  const int n = c->n_inputs + c->n_outputs;
  for (int i = 0; i < n; i++) {
    const case_tensor *t = &c->tensors[i];
    int o = owner_of(c, i);
    if (t->layout == LAYOUT_SCALAR)
      continue;
    const case_tensor *owner = o >= 0 && o < n ? &c->tensors[o] : NULL;
    if (!owner || owner->alias || owner->layout == LAYOUT_SCALAR || owner->dtype != t->dtype) {
      case_failed(c, "tensor %d views tensor %d, which owns no storage of its dtype", i, o);
      return false;
    }
    int64_t reach = view_reach(t);
    int64_t need = reach > owner->storage_elements ? reach : owner->storage_elements;
    if (need > m->elements[o])
      m->elements[o] = need;
  }
  for (int o = 0; o < n; o++) {
    if (!m->elements[o])
      continue;
    m->bytes[o] = (size_t)m->elements[o] * tpu_dtype_size(c->tensors[o].dtype);
    m->initial[o] = malloc(m->bytes[o]);
    m->expected[o] = malloc(m->bytes[o]);
    m->actual[o] = malloc(m->bytes[o]);
    if (!m->initial[o] || !m->expected[o] || !m->actual[o]) {
      case_failed(c, "out of host memory");
      return false;
    }
    uint64_t rng = seed + (uint64_t)o;
    fill_storage(m->initial[o], c->tensors[o].dtype, m->elements[o], c->tensors[o].values, &rng);
  }
  return true;
}

/* Tensor i's view of host memory `host` or of device buffer `buf`. */
static tpu_tensor view_of(const op_case *c, int i, void *host, tpu_buffer *buf) {
  const case_tensor *t = &c->tensors[i];
  tpu_tensor v;
  memset(&v, 0, sizeof v);
  v.buf = buf;
  v.host = buf ? NULL : host;
  v.dtype = t->dtype;
  v.ndim = t->ndim;
  int64_t strides[CASE_MAX_DIMS], offset;
  layout_of(t, strides, &offset);
  for (int d = 0; d < t->ndim; d++) {
    v.sizes[d] = t->sizes[d];
    v.strides[d] = strides[d];
  }
  v.offset = offset * (int64_t)tpu_dtype_size(t->dtype);
  return v;
}

/* The call of `c` over host storages (`host`) or device buffers (`bufs`), indexed by owner. */
static tpu_op_call *build_call(const op_case *c, unsigned char *const *host,
                               tpu_buffer *const *bufs) {
  tpu_op_call *call = tpu_op_call_new(c->op, c->n_inputs, c->n_outputs);
  if (!call)
    return NULL;
  call->compute = c->compute;
  memcpy(call->scalars, c->scalars, sizeof call->scalars);
  for (int i = 0; i < c->n_inputs + c->n_outputs; i++) {
    const case_tensor *t = &c->tensors[i];
    int o = owner_of(c, i);
    if (t->layout == LAYOUT_SCALAR) {
      bool is_float = t->dtype == TPU_FLOAT64;
      tpu_scalar value = is_float ? (tpu_scalar){.f = t->values.lo}
                                  : (tpu_scalar){.i = (int64_t)t->values.lo};
      tpu_op_set_scalar_input(call, i, SCALAR_INPUT_SLOT, value, is_float);
    } else {
      call->tensors[i] = view_of(c, i, host ? host[o] : NULL, bufs ? bufs[o] : NULL);
    }
  }
  return call;
}

/* ---- Running a case ---- */

/* True when the driver computes with kernels of its own (pjrt: XLA's), not the host's. */
static bool own_kernels;

/* The dtype of a complex dtype's parts (the dtype itself for others). */
static tpu_dtype part_dtype(tpu_dtype dtype) {
  return dtype == TPU_COMPLEX64 ? TPU_FLOAT32 : dtype == TPU_COMPLEX128 ? TPU_FLOAT64 : dtype;
}

/* Whether the driver's element matches the reference's: bit for bit for every dtype on drivers
 * that run the host's kernels. A driver with kernels of its own rounds its own way in floating
 * dtypes (other transcendental functions, summation orders, fused multiply-adds): there an
 * element matches within a tolerance of a few units in the dtype's last place relative to the
 * larger of its own magnitude and `scale`, the largest finite magnitude in its storage (an element
 * of a sum of many terms, as in a matmul or attention, carries rounding of the terms' size even
 * when it cancels to a small value), and a complex element where both its parts match so; NaN
 * matches NaN, and infinities and every other dtype match exactly. */
static bool element_matches(tpu_dtype dtype, const void *expected, const void *actual,
                            double scale) {
  if (memcmp(expected, actual, tpu_dtype_size(dtype)) == 0)
    return true;
  if (own_kernels && tpu_dtype_is_complex(dtype)) {
    tpu_dtype part = part_dtype(dtype);
    size_t size = tpu_dtype_size(part);
    return element_matches(part, expected, actual, scale) &&
           element_matches(part, (const char *)expected + size, (const char *)actual + size,
                           scale);
  }
  if (!own_kernels || !tpu_dtype_is_floating(dtype))
    return false;
  double tol = dtype == TPU_FLOAT64 ? 1e-9 : dtype == TPU_FLOAT32 ? 2e-5
               : dtype == TPU_FLOAT16 ? 2e-3 : 1.6e-2;
  double e = tpu_real_load(expected, dtype), a = tpu_real_load(actual, dtype);
  if (isnan(e) || isnan(a))
    return isnan(e) && isnan(a);
  if (isinf(e) || isinf(a))
    return e == a;
  return fabs(a - e) <= tol * (1 + fmax(fabs(e), scale));
}

/* The largest finite magnitude among `n` elements of a floating storage, or among the parts of a
 * complex one (0 for other dtypes). */
static double largest_magnitude(tpu_dtype dtype, const unsigned char *data, int64_t n) {
  double largest = 0;
  if (tpu_dtype_is_complex(dtype)) {
    dtype = part_dtype(dtype);
    n *= 2;
  }
  if (!tpu_dtype_is_floating(dtype))
    return 0;
  for (int64_t i = 0; i < n; i++) {
    double v = fabs(tpu_real_load((const char *)data + i * (int64_t)tpu_dtype_size(dtype), dtype));
    if (isfinite(v) && v > largest)
      largest = v;
  }
  return largest;
}

/* Runs the host driver's op_run on host copies of the initial storages: false when it fails, or
 * when it leaves every output as drawn (then a driver that does nothing would pass the case). */
static bool run_reference(const op_case *c, case_memory *m) {
  for (int o = 0; o < CASE_MAX_TENSORS; o++)
    if (m->bytes[o])
      memcpy(m->expected[o], m->initial[o], m->bytes[o]);
  tpu_op_call *call = build_call(c, m->expected, NULL);
  tpu_status st = call ? tpu_host_driver()->op_run(call) : TPU_ERR_OUT_OF_MEMORY;
  tpu_op_call_free(call);
  if (st != TPU_OK) {
    case_failed(c, "the reference call fails, a bug of the case: %s", tpu_last_error());
    return false;
  }
  for (int o = 0; o < CASE_MAX_TENSORS; o++)
    if (m->bytes[o] && is_output_storage(c, o) &&
        memcmp(m->expected[o], m->initial[o], m->bytes[o]) != 0)
      return true;
  case_failed(c, "the reference writes nothing new, so the case cannot fail a driver");
  return false;
}

/* A COPY launch of `bytes` between host memory and a buffer: asynchronous to the device, waited
 * for from it. */
static tpu_status copy_bytes(tpu_stream *s, void *host, tpu_buffer *buf, size_t bytes,
                             bool to_device) {
  tpu_op_call *call = tpu_op_call_new(TPU_OP_COPY, 1, 1);
  if (!call)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate a copy");
  tpu_tensor on_host = {.host = host, .dtype = TPU_UINT8, .ndim = 1};
  on_host.sizes[0] = (int64_t)bytes;
  on_host.strides[0] = 1;
  tpu_tensor on_device = on_host;
  on_device.host = NULL;
  on_device.buf = buf;
  call->tensors[0] = to_device ? on_host : on_device;
  call->tensors[1] = to_device ? on_device : on_host;
  return to_device ? tpu_submit(s, call) : tpu_submit_sync(s, call);
}

typedef enum run_mode { RUN_EAGER, RUN_FUSED } run_mode;

static const char *const mode_names[] = {"launched", "fused"};

/* Runs `c` on the selected driver from fresh device buffers holding the initial storages (the
 * outputs' too: in-place ops read them), and reads the output storages back into m->actual.
 * Counts the COPY launches in *copies. */
static tpu_status run_on_driver(const op_case *c, case_memory *m, run_mode mode, int *copies) {
  tpu_stream *s = tpu_stream_get(0, 0);
  tpu_buffer *bufs[CASE_MAX_TENSORS] = {0};
  tpu_status st = TPU_OK;
  for (int o = 0; o < CASE_MAX_TENSORS && st == TPU_OK; o++) {
    if (!m->bytes[o])
      continue;
    st = tpu_buffer_create(0, 0, m->bytes[o], &bufs[o]);
    if (st == TPU_OK) {
      st = copy_bytes(s, m->initial[o], bufs[o], m->bytes[o], true);
      ++*copies;
    }
  }
  if (st == TPU_OK) {
    tpu_op_call *call = build_call(c, NULL, bufs);
    st = tpu_test_submit(s, mode == RUN_EAGER ? TPU_EAGER_STRICT : TPU_EAGER_FUSED, call);
    if (st == TPU_OK && mode == RUN_FUSED)
      st = tpu_fused_flush(s, TPU_CUT_SYNC);
  }
  for (int o = 0; o < CASE_MAX_TENSORS && st == TPU_OK; o++) {
    if (m->bytes[o] && is_output_storage(c, o)) {
      st = copy_bytes(s, m->actual[o], bufs[o], m->bytes[o], false);
      ++*copies;
    }
  }
  /* After a failure, queued copies may still read the host storages. */
  tpu_status drained = tpu_stream_synchronize(s);
  for (int o = 0; o < CASE_MAX_TENSORS; o++)
    if (bufs[o])
      tpu_buffer_release_storage(bufs[o]);
  return st != TPU_OK ? st : drained;
}

static void compare_outputs(const op_case *c, const case_memory *m, run_mode mode) {
  for (int o = 0; o < CASE_MAX_TENSORS; o++) {
    if (!m->bytes[o] || !is_output_storage(c, o))
      continue;
    tpu_dtype dtype = c->tensors[o].dtype, shown = part_dtype(dtype); /* complex: real parts */
    size_t size = tpu_dtype_size(dtype);
    int64_t differ = 0, first = -1;
    double scale = largest_magnitude(dtype, m->expected[o], m->elements[o]);
    for (int64_t e = 0; e < m->elements[o]; e++)
      if (!element_matches(dtype, m->expected[o] + e * size, m->actual[o] + e * size, scale) &&
          differ++ == 0)
        first = e;
    if (differ)
      case_failed(c, "%s: %lld of %lld elements of tensor %d's storage differ from the reference, "
                     "the first at element %lld (%.17g, want %.17g)", mode_names[mode],
                  (long long)differ, (long long)m->elements[o], o, (long long)first,
                  tpu_real_load((const char *)m->actual[o] + first * size, shown),
                  tpu_real_load((const char *)m->expected[o] + first * size, shown));
  }
}

static bool counting_selected(void) { return strcmp(tpu_driver()->name, "counting") == 0; }

/* Runs `c` in `mode` and compares; with the counting driver, also checks that the op reached it
 * through op_run (launched) or graph_run (fused), besides the copies. */
static void run_and_compare(const op_case *c, case_memory *m, run_mode mode) {
  long op_runs = atomic_load(&counting.op_runs[c->op]);
  long graph_runs = atomic_load(&counting.graph_run);
  int copies = 0;
  tpu_status st = run_on_driver(c, m, mode, &copies);
  if (st != TPU_OK) {
    case_failed(c, "%s: %s", mode_names[mode], tpu_last_error());
    return;
  }
  compare_outputs(c, m, mode);
  if (!counting_selected())
    return;
  long want_op_runs = (mode == RUN_EAGER) + (c->op == TPU_OP_COPY ? copies : 0);
  long got_op_runs = atomic_load(&counting.op_runs[c->op]) - op_runs;
  long got_graph_runs = atomic_load(&counting.graph_run) - graph_runs;
  if (got_op_runs != want_op_runs || got_graph_runs != (mode == RUN_FUSED))
    case_failed(c, "%s: the counting driver saw %ld op_run calls of the op (want %ld) and %ld "
                   "graph_run calls (want %d)", mode_names[mode], got_op_runs, want_op_runs,
                got_graph_runs, mode == RUN_FUSED);
}

typedef struct run_stats {
  int cases, run, skipped;
  int cases_by_op[TPU_OP_COUNT];
} run_stats;

static void count_case(const op_case *c, void *ctx) {
  run_stats *stats = ctx;
  stats->cases_by_op[c->op]++;
}

/* FNV-1a of `text` (with its terminating zero) continuing from h. */
static uint64_t hash_text(uint64_t h, const char *text) {
  do
    h = (h ^ (unsigned char)*text) * 0x100000001b3ull;
  while (*text++);
  return h;
}

/* The seed of a case's values: a function of the case itself (its op's name, its description and
 * compute dtype), not of its place among the tables, so moving cases between tables or adding
 * some never changes another case's values. */
static uint64_t case_seed(const op_case *c) {
  uint64_t h = hash_text(hash_text(0xcbf29ce484222325ull, tpu_op_name(c->op)), c->what);
  return (h ^ (uint64_t)c->compute) * 0x243f6a8885a308d3ull;
}

static void run_case(const op_case *c, void *ctx) {
  run_stats *stats = ctx;
  case_memory m;
  stats->cases++;
  uint64_t seed = case_seed(c);
  if (case_memory_init(c, &m, seed) && run_reference(c, &m)) {
    tpu_op_call *probe = build_call(c, m.initial, NULL);
    bool supported = probe && tpu_op_route(probe) == TPU_OK;
    tpu_op_call_free(probe);
    if (!supported) {
      stats->skipped++;
    } else {
      stats->run++;
      run_and_compare(c, &m, RUN_EAGER);
      if (own_kernels) /* again: the driver's kept program for the call, not a fresh one */
        run_and_compare(c, &m, RUN_EAGER);
      run_and_compare(c, &m, RUN_FUSED);
    }
  }
  case_memory_free(&m);
}

static run_stats stats;

static void test_every_op_has_a_case(void) {
  for_each_case(count_case, &stats);
  for (int op = 0; op < TPU_OP_COUNT; op++)
    if (!stats.cases_by_op[op]) {
      fprintf(stderr, "FAIL: op %s has no case in every_op_cases_*.h\n", tpu_op_name(op));
      tpu_test_failures++;
    }
  /* The tables pack convolution parameters with a macro, which must agree with the op table. */
  CHECK(CONV_PARAMS(3, 2, 1) == tpu_conv_pack(3, 2, 1));
}

static void test_every_case_matches_the_reference(void) { for_each_case(run_case, &stats); }

int main(void) {
  TEST_MAIN_BEGIN();
  CHECK_OK_OR(tpu_driver_register(counting_driver()), 1);
  const char *driver = getenv("TPU_TEST_DRIVER");
  if (driver && strcmp(driver, "pjrt") == 0 && !getenv("TORCH_TPU_PJRT_PLUGIN")) {
    printf("skipped: the pjrt driver needs TORCH_TPU_PJRT_PLUGIN\n");
    return 77;
  }
  if (tpu_driver_select(driver ? driver : "host") != TPU_OK) {
    fprintf(stderr, "cannot select the driver: %s\n", tpu_last_error());
    return 1;
  }
#ifdef TPU_TEST_BLAS_LIBRARY
  /* The linalg ops' reference runs LAPACK from the BLAS that Python hands over at import. */
  tpu_matmul_set_blas_path(TPU_TEST_BLAS_LIBRARY);
#endif
  own_kernels = strcmp(tpu_driver()->name, "host") != 0 &&
                strcmp(tpu_driver()->name, "counting") != 0;
  RUN_TEST(test_every_op_has_a_case);
  RUN_TEST(test_every_case_matches_the_reference);
  int covered = 0, fell_back = 0;
  for (int op = 0; op < TPU_OP_COUNT; op++) {
    covered += stats.cases_by_op[op] > 0;
    fell_back += tpu_op_driver_fallback_count((tpu_op_id)op) > 0;
  }
  printf("every op on the %s driver: %d of %d ops covered, %d cases run, %d skipped; %d ops "
         "ran some call through the driver fallback (the host's kernels)\n",
         tpu_driver()->name, covered, TPU_OP_COUNT, stats.run, stats.skipped, fell_back);
  for (int op = 0, listed = 0; op < TPU_OP_COUNT; op++)
    if (tpu_op_driver_fallback_count((tpu_op_id)op) > 0)
      printf("%s%s", listed++ ? ", " : "  through the fallback: ", tpu_op_name((tpu_op_id)op));
  if (fell_back)
    printf("\n");
  tpu_pjrt_executable_stats_fn executable_stats =
      (tpu_pjrt_executable_stats_fn)tpu_driver_proc(TPU_PJRT_EXECUTABLE_STATS);
  if (executable_stats) { /* a compiling driver: each call's structure names its program */
    tpu_executable_stats e;
    executable_stats(&e);
    printf("%llu runs lowered, %llu found compiled by structure, %llu unkeyed\n",
           (unsigned long long)e.lowerings, (unsigned long long)e.program_hits,
           (unsigned long long)e.unkeyed);
    CHECK(e.program_hits > 0);
    CHECK(e.unkeyed == 0);
  }
  TEST_MAIN_END();
}
