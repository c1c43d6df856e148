/* libFuzzer target: the host driver's strided iterator (drivers/host/engine/engine_iter.h).
 *
 * The input decodes into a shape of up to 8 dimensions (at most MAX_ELEMENTS elements, possibly
 * none) and 1 to 8 operands of any dtype: tensor views added with tpu_iter_add_tensor (row-major,
 * permuted, reversed or small random strides; any stride at all in dimensions of size 0 or 1,
 * which views accepted by tpu_tensor_check may have), or byte strides broadcast as the
 * elementwise engine adds them (stride 0 in broadcast dimensions). Each operand lives in memory of
 * exactly its reach. The iterator is built, with or without TPU_ITER_LOGICAL_ORDER, and run over
 * [0, numel) cut into pieces (the first starting before 0, the last ending past numel, as the
 * run functions clamp). The loop reads every element it is handed, after checking that it lies
 * inside its operand's memory; at the end every logical element must have been visited exactly
 * once with the right operand offsets: the multiset of per-element offset tuples must equal the
 * one enumerated here from the shape (compared through a sum of hashes), and in logical order the
 * flat index handed to the loop must name the element whose offsets it gets. */
#include <string.h>

#include "drivers/host/engine/engine_iter.h"
#include "fuzz_util.h"

#define MAX_DIMS 8
#define MAX_ELEMENTS 2048

typedef struct operand {
  unsigned char *mem;       /* exactly `bytes` of memory */
  int64_t bytes, elsize;
  int64_t base;             /* byte offset of element [0, ..., 0] in mem */
  int64_t strides[MAX_DIMS]; /* bytes per step of each dimension, outermost first, as iterated */
} operand;

typedef struct walk {
  int ndim, nops;
  int64_t shape[MAX_DIMS];
  operand ops[TPU_ITER_MAX_OPERANDS];
  bool logical;     /* check each flat index against the offsets */
  int64_t visited;  /* elements the loop was handed */
  uint64_t signature;
} walk;

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 31);
}

/* The offsets, from element [0, ..., 0], of every operand at row-major flat index `index`. */
static void logical_offsets(const walk *w, int64_t index, int64_t *offsets) {
  for (int k = 0; k < w->nops; k++)
    offsets[k] = 0;
  for (int d = w->ndim - 1; d >= 0; d--) {
    int64_t i = index % w->shape[d];
    index /= w->shape[d];
    for (int k = 0; k < w->nops; k++)
      offsets[k] += i * w->ops[k].strides[d];
  }
}

static uint64_t tuple_hash(const walk *w, const int64_t *offsets) {
  uint64_t h = 0;
  for (int k = 0; k < w->nops; k++)
    h = mix(h, (uint64_t)offsets[k]);
  return h;
}

static volatile unsigned char sink;

static void visit(char **data, const int64_t *strides, int64_t n, int64_t index, void *ctx) {
  walk *w = ctx;
  for (int64_t i = 0; i < n; i++) {
    int64_t offsets[TPU_ITER_MAX_OPERANDS];
    for (int k = 0; k < w->nops; k++) {
      const operand *o = &w->ops[k];
      /* In integers: a pointer outside the memory would already be undefined. */
      int64_t at = (int64_t)((uintptr_t)data[k] - (uintptr_t)o->mem) + i * strides[k];
      FUZZ_REQUIRE(at >= 0 && at + o->elsize <= o->bytes,
                   "operand %d: element at byte %lld of %lld", k, (long long)at,
                   (long long)o->bytes);
      unsigned char element[16];
      memcpy(element, o->mem + at, (size_t)o->elsize);
      sink ^= element[0];
      offsets[k] = at - o->base;
    }
    if (w->logical && index >= 0) {
      int64_t expected[TPU_ITER_MAX_OPERANDS];
      logical_offsets(w, index + i, expected);
      FUZZ_REQUIRE(!memcmp(offsets, expected, (size_t)w->nops * sizeof offsets[0]),
                   "flat index %lld does not match its offsets", (long long)(index + i));
    }
    w->signature += tuple_hash(w, offsets);
  }
  w->visited += n;
}

static void visit_plain(char **data, const int64_t *strides, int64_t n, void *ctx) {
  visit(data, strides, n, -1, ctx);
}

/* Decodes operand k: its dtype, how it is added, its strides; allocates its memory and adds it. */
static void add_operand(fuzz_in *in, walk *w, tpu_iter *it, int k) {
  operand *o = &w->ops[k];
  tpu_dtype dtype = (tpu_dtype)take_below(in, TPU_DTYPE_COUNT);
  o->elsize = (int64_t)tpu_dtype_size(dtype);
  uint8_t how = take_u8(in);
  bool as_tensor = how & 1, broadcast = !as_tensor;
  int64_t elems[MAX_DIMS]; /* element strides */
  int perm[MAX_DIMS];
  for (int d = 0; d < w->ndim; d++)
    perm[d] = d;
  switch ((how >> 1) & 3) {
  case 1: /* row-major over a permutation of the dimensions */
    for (int d = w->ndim - 1; d > 0; d--) {
      int j = (int)take_below(in, (unsigned)d + 1), t = perm[d];
      perm[d] = perm[j], perm[j] = t;
    }
    /* fall through */
  case 0:
  case 2: { /* case 2: reversed, row-major with every stride negated */
    int64_t step = 1;
    for (int i = w->ndim - 1; i >= 0; i--) {
      elems[perm[i]] = ((how >> 1) & 3) == 2 ? -step : step;
      step *= w->shape[perm[i]] ? w->shape[perm[i]] : 1;
    }
    break;
  }
  default: /* small strides, overlaps and all */
    for (int d = 0; d < w->ndim; d++)
      elems[d] = (int64_t)take_below(in, 13) - 6;
  }
  int64_t lo = 0, hi = 0;
  for (int d = 0; d < w->ndim; d++) {
    bool spread = w->shape[d] > 1 && !(broadcast && take_u8(in) & 1);
    o->strides[d] = spread ? elems[d] * o->elsize : 0;
    if (as_tensor && w->shape[d] <= 1)
      elems[d] = take_i64(in); /* never multiplied: any value is valid */
    *(o->strides[d] < 0 ? &lo : &hi) += (w->shape[d] - 1) * o->strides[d];
  }
  bool empty = false;
  for (int d = 0; d < w->ndim; d++)
    empty |= w->shape[d] == 0;
  if (empty)
    lo = hi = 0;
  o->bytes = hi - lo + o->elsize;
  o->base = -lo;
  o->mem = malloc((size_t)o->bytes);
  memset(o->mem, 0, (size_t)o->bytes);
  if (as_tensor) {
    tpu_tensor t;
    memset(&t, 0, sizeof t);
    t.host = o->mem;
    t.offset = o->base;
    t.dtype = dtype;
    t.ndim = w->ndim;
    for (int d = 0; d < w->ndim; d++) {
      t.sizes[d] = w->shape[d];
      t.strides[d] = elems[d];
    }
    tpu_iter_add_tensor(it, &t);
  } else {
    tpu_iter_add(it, o->mem + o->base, o->elsize, o->strides);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_in in = {data, size};
  walk w;
  memset(&w, 0, sizeof w);
  w.ndim = (int)take_below(&in, MAX_DIMS + 1);
  int64_t numel = 1;
  for (int d = 0; d < w.ndim; d++) {
    uint8_t b = take_u8(&in);
    w.shape[d] = b & 4 ? 1 : b % 7; /* sizes of 1 are common, 0 possible */
    if (numel * w.shape[d] > MAX_ELEMENTS)
      w.shape[d] = 1;
    numel *= w.shape[d];
  }
  unsigned flags = take_u8(&in) & 1 ? TPU_ITER_LOGICAL_ORDER : 0;
  w.logical = flags & TPU_ITER_LOGICAL_ORDER;
  w.nops = 1 + (int)take_below(&in, TPU_ITER_MAX_OPERANDS);
  tpu_iter it;
  tpu_iter_init(&it, w.ndim, w.ndim ? w.shape : NULL);
  for (int k = 0; k < w.nops; k++)
    add_operand(&in, &w, &it, k);
  tpu_iter_build(&it, flags);

  FUZZ_REQUIRE(it.numel == numel, "numel %lld, expected %lld", (long long)it.numel,
               (long long)numel);
  FUZZ_REQUIRE(it.ndim >= 1 && it.ndim <= (w.ndim > 1 ? w.ndim : 1), "ndim %d", it.ndim);
  int64_t product = 1;
  for (int d = 0; d < it.ndim; d++)
    product *= it.shape[d];
  FUZZ_REQUIRE(product == numel, "built shape holds %lld elements, not %lld", (long long)product,
               (long long)numel);

  /* Pieces: cut points in [0, numel], the ends pushed past the range to test the clamping. */
  int64_t cuts[5];
  int n_cuts = (int)take_below(&in, 4);
  for (int c = 0; c < n_cuts; c++)
    cuts[c] = (int64_t)(take_u64(&in) % (uint64_t)(numel + 1));
  for (int c = 1; c < n_cuts; c++) /* insertion sort */
    for (int j = c; j > 0 && cuts[j] < cuts[j - 1]; j--) {
      int64_t t = cuts[j];
      cuts[j] = cuts[j - 1], cuts[j - 1] = t;
    }
  int64_t begin = -(int64_t)take_below(&in, 3);
  for (int c = 0; c <= n_cuts; c++) {
    int64_t end = c < n_cuts ? cuts[c] : numel + (int64_t)take_below(&in, 3);
    if (take_u8(&in) & 1)
      tpu_iter_run(&it, begin, end, visit_plain, &w);
    else
      tpu_iter_run_indexed(&it, begin, end, visit, &w);
    begin = end;
  }

  FUZZ_REQUIRE(w.visited == numel, "visited %lld of %lld elements", (long long)w.visited,
               (long long)numel);
  uint64_t expected = 0;
  for (int64_t i = 0; i < numel; i++) {
    int64_t offsets[TPU_ITER_MAX_OPERANDS];
    logical_offsets(&w, i, offsets);
    expected += tuple_hash(&w, offsets);
  }
  FUZZ_REQUIRE(w.signature == expected, "the elements visited are not the shape's elements");
  for (int k = 0; k < w.nops; k++)
    free(w.ops[k].mem);
  return 0;
}
