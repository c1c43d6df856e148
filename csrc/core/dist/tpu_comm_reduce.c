/* The reductions: which ops apply to which dtypes, the element loops, and the collectives that
 * reduce (all_reduce, reduce, reduce_scatter; dist/tpu_comm_internal.h).
 *
 * Each element loop works through blocks of BLOCK elements accumulated in a local array,
 * combining the sources in rank order, and chooses the op once per block and source: the inner
 * loops are then plain array loops that GCC vectorizes (float32 SUM over 2 ranks is a load, an add
 * and a store per vector). */
#include "dist/tpu_comm_internal.h"

#include <string.h>

/* 2 KiB of doubles: the accumulator stays in L1 next to the lines of the source being added. */
#define BLOCK 256

bool tpu_comm_op_supported(tpu_reduce_op op, tpu_dtype dtype) {
  if ((unsigned)op > TPU_REDUCE_BXOR || (unsigned)dtype > TPU_COMPLEX128)
    return false;
  bool bitwise = op == TPU_REDUCE_BAND || op == TPU_REDUCE_BOR || op == TPU_REDUCE_BXOR;
  if (dtype == TPU_BOOL)
    return op != TPU_REDUCE_AVG && op != TPU_REDUCE_PREMUL_SUM;
  if (tpu_dtype_is_complex(dtype))
    return op == TPU_REDUCE_SUM || op == TPU_REDUCE_AVG || op == TPU_REDUCE_PREMUL_SUM ||
           op == TPU_REDUCE_PRODUCT;
  if (tpu_dtype_is_floating(dtype))
    return !bitwise;
  return op != TPU_REDUCE_PREMUL_SUM; /* integers: a factor would need a float to mean anything */
}

const char *comm_op_name(tpu_reduce_op op) {
  static const char *const names[] = {
      [TPU_REDUCE_SUM] = "sum",         [TPU_REDUCE_AVG] = "avg",
      [TPU_REDUCE_PRODUCT] = "product", [TPU_REDUCE_MIN] = "min",
      [TPU_REDUCE_MAX] = "max",         [TPU_REDUCE_PREMUL_SUM] = "premul_sum",
      [TPU_REDUCE_BAND] = "band",       [TPU_REDUCE_BOR] = "bor",
      [TPU_REDUCE_BXOR] = "bxor",
  };
  return (unsigned)op <= TPU_REDUCE_BXOR ? names[op] : "invalid";
}

#define SAME(v) (v)

/* `stmt` for each element i of the block. */
#define EACH(stmt)                                                                                \
  for (size_t i = 0; i < m; i++) {                                                                \
    stmt;                                                                                         \
  }

/* Floating dtypes: E stored, A accumulated (float for float16, bfloat16 and float32, double for
 * float64); LOAD widens exactly and STORE rounds once, at the end. A NaN wins MIN and MAX, as in
 * PyTorch: x != x is the NaN test, and a NaN already in acc fails every comparison, so it stays. */
#define DEFINE_FLOAT_REDUCE(name, E, A, LOAD, STORE)                                              \
  static void name(void *dst, const void *const *src, int nsrc, size_t n, tpu_reduce_op op,      \
                   double factor) {                                                               \
    const A f = (A)factor;                                                                        \
    E *d = dst;                                                                                   \
    for (size_t i0 = 0; i0 < n; i0 += BLOCK) {                                                    \
      size_t m = n - i0 < BLOCK ? n - i0 : BLOCK;                                                 \
      A acc[BLOCK];                                                                               \
      const E *s = (const E *)src[0] + i0;                                                        \
      EACH(acc[i] = LOAD(s[i]))                                                                   \
      if (op == TPU_REDUCE_PREMUL_SUM)                                                            \
        EACH(acc[i] *= f)                                                                         \
      for (int p = 1; p < nsrc; p++) {                                                            \
        s = (const E *)src[p] + i0;                                                               \
        switch (op) {                                                                             \
        case TPU_REDUCE_PRODUCT: EACH(acc[i] *= LOAD(s[i])) break;                                \
        case TPU_REDUCE_MIN: EACH(A x = LOAD(s[i]); acc[i] = x < acc[i] || x != x ? x : acc[i])   \
          break;                                                                                  \
        case TPU_REDUCE_MAX: EACH(A x = LOAD(s[i]); acc[i] = x > acc[i] || x != x ? x : acc[i])   \
          break;                                                                                  \
        case TPU_REDUCE_PREMUL_SUM: EACH(acc[i] += LOAD(s[i]) * f) break;                         \
        default: EACH(acc[i] += LOAD(s[i])) break; /* SUM, and AVG's sum */                       \
        }                                                                                         \
      }                                                                                           \
      if (op == TPU_REDUCE_AVG)                                                                   \
        EACH(acc[i] /= (A)nsrc)                                                                   \
      EACH(d[i0 + i] = STORE(acc[i]))                                                             \
    }                                                                                             \
  }

DEFINE_FLOAT_REDUCE(reduce_f32, float, float, SAME, SAME)
DEFINE_FLOAT_REDUCE(reduce_f64, double, double, SAME, SAME)
DEFINE_FLOAT_REDUCE(reduce_f16, uint16_t, float, tpu_f16_to_f32, tpu_f32_to_f16)
DEFINE_FLOAT_REDUCE(reduce_bf16, uint16_t, float, tpu_bf16_to_f32, tpu_f32_to_bf16)

/* Integer dtypes. SUM and PRODUCT wrap: they run in the unsigned type U, at least 32 bits wide so
 * that no promotion to int can overflow, and the store truncates (modulo 2^bits, as GCC defines
 * the conversion). MIN and MAX compare the stored values: acc only ever holds a value of E there.
 * AVG sums in 64 bits (wrapping) and truncates the quotient toward zero. */
#define DEFINE_INT_REDUCE(name, E, U)                                                             \
  static void name(void *dst, const void *const *src, int nsrc, size_t n, tpu_reduce_op op) {    \
    E *d = dst;                                                                                   \
    for (size_t i0 = 0; i0 < n; i0 += BLOCK) {                                                    \
      size_t m = n - i0 < BLOCK ? n - i0 : BLOCK;                                                 \
      if (op == TPU_REDUCE_AVG) {                                                                 \
        uint64_t sum[BLOCK] = {0};                                                                \
        for (int p = 0; p < nsrc; p++)                                                            \
          EACH(sum[i] += (uint64_t)((const E *)src[p])[i0 + i])                                   \
        EACH(d[i0 + i] = (E)((int64_t)sum[i] / nsrc))                                             \
        continue;                                                                                 \
      }                                                                                           \
      U acc[BLOCK];                                                                               \
      const E *s = (const E *)src[0] + i0;                                                        \
      EACH(acc[i] = (U)s[i])                                                                      \
      for (int p = 1; p < nsrc; p++) {                                                            \
        s = (const E *)src[p] + i0;                                                               \
        switch (op) {                                                                             \
        case TPU_REDUCE_PRODUCT: EACH(acc[i] *= (U)s[i]) break;                                   \
        case TPU_REDUCE_MIN: EACH(acc[i] = s[i] < (E)acc[i] ? (U)s[i] : acc[i]) break;            \
        case TPU_REDUCE_MAX: EACH(acc[i] = s[i] > (E)acc[i] ? (U)s[i] : acc[i]) break;            \
        case TPU_REDUCE_BAND: EACH(acc[i] &= (U)s[i]) break;                                      \
        case TPU_REDUCE_BOR: EACH(acc[i] |= (U)s[i]) break;                                       \
        case TPU_REDUCE_BXOR: EACH(acc[i] ^= (U)s[i]) break;                                      \
        default: EACH(acc[i] += (U)s[i]) break; /* SUM */                                         \
        }                                                                                         \
      }                                                                                           \
      EACH(d[i0 + i] = (E)acc[i])                                                                 \
    }                                                                                             \
  }

DEFINE_INT_REDUCE(reduce_u8, uint8_t, uint32_t)
DEFINE_INT_REDUCE(reduce_i8, int8_t, uint32_t)
DEFINE_INT_REDUCE(reduce_i16, int16_t, uint32_t)
DEFINE_INT_REDUCE(reduce_i32, int32_t, uint32_t)
DEFINE_INT_REDUCE(reduce_i64, int64_t, uint64_t)

/* bool: SUM and MAX are "any", PRODUCT and MIN "all"; on 0/1 values BAND and BOR are those too and
 * BXOR is the parity. Any nonzero byte counts as true. */
static void reduce_bool(void *dst, const void *const *src, int nsrc, size_t n, tpu_reduce_op op) {
  bool all = op == TPU_REDUCE_PRODUCT || op == TPU_REDUCE_MIN || op == TPU_REDUCE_BAND;
  uint8_t *d = dst;
  for (size_t i0 = 0; i0 < n; i0 += BLOCK) {
    size_t m = n - i0 < BLOCK ? n - i0 : BLOCK;
    uint8_t acc[BLOCK];
    const uint8_t *s = (const uint8_t *)src[0] + i0;
    EACH(acc[i] = s[i] != 0)
    for (int p = 1; p < nsrc; p++) {
      s = (const uint8_t *)src[p] + i0;
      if (all)
        EACH(acc[i] &= s[i] != 0)
      else if (op == TPU_REDUCE_BXOR)
        EACH(acc[i] ^= s[i] != 0)
      else
        EACH(acc[i] |= s[i] != 0)
    }
    memcpy(d + i0, acc, m);
  }
}

/* Complex PRODUCT, as c10::complex multiplies: (a + bi)(c + di) = (ac - bd) + (ad + bc)i. The
 * other complex ops act on the real and imaginary parts alone, as the real kernels do. */
#define DEFINE_COMPLEX_PRODUCT(name, C)                                                           \
  static void name(void *dst, const void *const *src, int nsrc, size_t n) {                      \
    C *d = dst;                                                                                   \
    for (size_t i = 0; i < n; i++) {                                                              \
      C acc = ((const C *)src[0])[i];                                                             \
      for (int p = 1; p < nsrc; p++) {                                                            \
        C x = ((const C *)src[p])[i];                                                             \
        C r = {acc.re * x.re - acc.im * x.im, acc.re * x.im + acc.im * x.re};                     \
        acc = r;                                                                                  \
      }                                                                                           \
      d[i] = acc;                                                                                 \
    }                                                                                             \
  }

DEFINE_COMPLEX_PRODUCT(product_c64, tpu_c64)
DEFINE_COMPLEX_PRODUCT(product_c128, tpu_c128)

void comm_reduce_elems(void *dst, const void *const *src, int nsrc, size_t n, tpu_dtype dtype,
                       tpu_reduce_op op, double factor) {
  switch (dtype) {
  case TPU_BOOL: reduce_bool(dst, src, nsrc, n, op); break;
  case TPU_UINT8: reduce_u8(dst, src, nsrc, n, op); break;
  case TPU_INT8: reduce_i8(dst, src, nsrc, n, op); break;
  case TPU_INT16: reduce_i16(dst, src, nsrc, n, op); break;
  case TPU_INT32: reduce_i32(dst, src, nsrc, n, op); break;
  case TPU_INT64: reduce_i64(dst, src, nsrc, n, op); break;
  case TPU_FLOAT16: reduce_f16(dst, src, nsrc, n, op, factor); break;
  case TPU_BFLOAT16: reduce_bf16(dst, src, nsrc, n, op, factor); break;
  case TPU_FLOAT32: reduce_f32(dst, src, nsrc, n, op, factor); break;
  case TPU_FLOAT64: reduce_f64(dst, src, nsrc, n, op, factor); break;
  case TPU_COMPLEX64:
    if (op == TPU_REDUCE_PRODUCT)
      product_c64(dst, src, nsrc, n);
    else
      reduce_f32(dst, src, nsrc, 2 * n, op, factor);
    break;
  case TPU_COMPLEX128:
    if (op == TPU_REDUCE_PRODUCT)
      product_c128(dst, src, nsrc, n);
    else
      reduce_f64(dst, src, nsrc, 2 * n, op, factor);
    break;
  default: break; /* callers reduce only what tpu_comm_op_supported accepts */
  }
}

static void need_op(comm_coll *x, tpu_dtype dtype, tpu_reduce_op op, double factor) {
  x->dtype = dtype;
  x->op = op;
  x->factor = factor;
  x->sig.dtype = (int32_t)dtype;
  x->sig.op = (int32_t)op;
  if (!tpu_comm_op_supported(op, dtype))
    comm_reject(x, tpu_error(TPU_ERR_TYPE, "tpu_dist: %s: op %s does not apply to %s",
                             comm_kind_name(x->sig.kind), comm_op_name(op),
                             tpu_dtype_name(dtype)));
}

static void need_elements(comm_coll *x, size_t bytes) {
  if (x->invalid == TPU_OK && bytes % tpu_dtype_size(x->dtype) != 0)
    comm_reject(x, tpu_error(TPU_ERR_VALUE, "tpu_dist: %s: %zu bytes are not whole %s elements",
                             comm_kind_name(x->sig.kind), bytes, tpu_dtype_name(x->dtype)));
}

/* Rank `rank`'s share of chunk `chunk` of a reduction: bytes [*first, *end) of the chunk, whole
 * elements, the chunk's elements split evenly in rank order. */
static void share_of(const comm_coll *x, size_t chunk, int rank, size_t *first, size_t *end) {
  const tpu_comm *c = x->c;
  size_t esize = tpu_dtype_size(x->dtype), n = comm_chunk_len(x, chunk, x->total) / esize;
  *first = n * (size_t)rank / (size_t)c->size * esize;
  *end = n * (size_t)(rank + 1) / (size_t)c->size * esize;
}

/* All_reduce's and reduce's stage: the chunk into this rank's slot; with the input in host memory,
 * all of it but this rank's own share, which only this rank reads (from the input, in place). */
static tpu_status stage_for_reduction(comm_coll *x, size_t chunk, int set) {
  if (!x->in->data)
    return comm_stage_own(x, chunk, set);
  size_t first, end, len = comm_chunk_len(x, chunk, x->total), at = chunk * x->piece;
  share_of(x, chunk, x->c->rank, &first, &end);
  char *slot = comm_slot(x->c, set, x->c->rank);
  memcpy(slot, (const char *)x->in->data + at, first);
  memcpy(slot + end, (const char *)x->in->data + at + end, len - end);
  return TPU_OK;
}

/* Bytes reduced at a time when the result also goes to the output in place: the block is copied
 * there while it is still in cache, so the second write costs no second read from memory. */
#define RESULT_BLOCK (16u << 10)

/* The output when this rank writes its result in place, else NULL. */
static char *output_in_place(const comm_coll *x) {
  bool writes = x->sig.kind == COMM_ALL_REDUCE || comm_is_root(x);
  return writes && x->out->data ? x->out->data : NULL;
}

/* All_reduce's and reduce's combine: this rank's share of the chunk's elements, reduced over
 * every rank's slot (its own share from the input where stage left it there) into the result
 * slot, and into the output where it is written in place. */
static tpu_status reduce_share(comm_coll *x, size_t chunk, int set) {
  tpu_comm *c = x->c;
  size_t first, end, at = chunk * x->piece;
  share_of(x, chunk, c->rank, &first, &end);
  char *result = comm_slot(c, set, c->size), *out = output_in_place(x);
  size_t block = out ? RESULT_BLOCK : end - first;
  for (size_t from = first; from < end; from += block) {
    size_t len = end - from < block ? end - from : block;
    const void *src[COMM_MAX_RANKS];
    for (int p = 0; p < c->size; p++)
      src[p] = comm_slot(c, set, p) + from;
    if (x->in->data)
      src[c->rank] = (const char *)x->in->data + at + from;
    comm_reduce_elems(result + from, src, c->size, len / tpu_dtype_size(x->dtype), x->dtype,
                      x->op, x->factor);
    if (out)
      memcpy(out + at + from, result + from, len);
  }
  return TPU_OK;
}

/* The chunk's result out (but this rank's share where reduce_share wrote it in place). */
static tpu_status deliver_result(comm_coll *x, size_t chunk, int set) {
  if (x->sig.kind == COMM_REDUCE && !comm_is_root(x))
    return TPU_OK;
  size_t len = comm_chunk_len(x, chunk, x->total), at = chunk * x->piece;
  const char *result = comm_slot(x->c, set, x->c->size);
  if (!output_in_place(x))
    return comm_write_out(x->out, at, len, result);
  size_t first, end;
  share_of(x, chunk, x->c->rank, &first, &end);
  tpu_status st = comm_write_out(x->out, at, first, result);
  return st == TPU_OK ? comm_write_out(x->out, at + end, len - end, result + end) : st;
}

static tpu_status reduction(tpu_comm *c, comm_kind kind, const tpu_comm_buf *in,
                            const tpu_comm_buf *out, int root, tpu_dtype dtype, tpu_reduce_op op,
                            double factor, int64_t timeout_ms) {
  tpu_status st = comm_enter(c, kind, timeout_ms);
  if (st != TPU_OK)
    return st;
  comm_coll x;
  comm_coll_init(&x, c, kind, timeout_ms);
  if (kind == COMM_REDUCE)
    comm_need_root(&x, root);
  need_op(&x, dtype, op, factor);
  bool writes = kind == COMM_ALL_REDUCE || comm_is_root(&x);
  comm_need_buf(&x, in, "input", true);
  if (writes)
    comm_need_buf(&x, out, "output", false);
  if (x.invalid == TPU_OK && writes && out->bytes != in->bytes)
    comm_reject(&x, tpu_error(TPU_ERR_VALUE,
                              "tpu_dist: %s: the input has %zu bytes, the output %zu",
                              comm_kind_name(kind), in->bytes, out->bytes));
  if (in)
    need_elements(&x, in->bytes);
  x.in = in;
  x.out = out;
  x.total = x.sig.bytes = in ? in->bytes : 0;
  x.steps[0] = stage_for_reduction;
  x.steps[1] = reduce_share;
  x.steps[2] = deliver_result;
  x.nsteps = 3;
  return comm_coll_run(&x);
}

tpu_status tpu_comm_all_reduce(tpu_comm *c, const tpu_comm_buf *in, const tpu_comm_buf *out,
                               tpu_dtype dtype, tpu_reduce_op op, double factor,
                               int64_t timeout_ms) {
  return reduction(c, COMM_ALL_REDUCE, in, out, 0, dtype, op, factor, timeout_ms);
}

tpu_status tpu_comm_reduce(tpu_comm *c, const tpu_comm_buf *in, const tpu_comm_buf *out, int root,
                           tpu_dtype dtype, tpu_reduce_op op, double factor, int64_t timeout_ms) {
  return reduction(c, COMM_REDUCE, in, out, root, dtype, op, factor, timeout_ms);
}

/* Reduce_scatter's second step: this rank's part, reduced over every rank's sub-slot for it into
 * its own sub-slot of the result slot (no other rank touches it), then copied out. */
static tpu_status reduce_part(comm_coll *x, size_t chunk, int set) {
  tpu_comm *c = x->c;
  size_t n = comm_chunk_len(x, chunk, x->total);
  const void *src[COMM_MAX_RANKS];
  for (int p = 0; p < c->size; p++)
    src[p] = comm_sub_slot(x, set, p, c->rank);
  char *dst = comm_sub_slot(x, set, c->size, c->rank);
  comm_reduce_elems(dst, src, c->size, n / tpu_dtype_size(x->dtype), x->dtype, x->op, x->factor);
  return comm_write_out(x->out, chunk * x->piece, n, dst);
}

tpu_status tpu_comm_reduce_scatter(tpu_comm *c, const tpu_comm_buf *in, const tpu_comm_buf *out,
                                   tpu_dtype dtype, tpu_reduce_op op, double factor,
                                   int64_t timeout_ms) {
  tpu_status st = comm_enter(c, COMM_REDUCE_SCATTER, timeout_ms);
  if (st != TPU_OK)
    return st;
  comm_coll x;
  comm_coll_init(&x, c, COMM_REDUCE_SCATTER, timeout_ms);
  need_op(&x, dtype, op, factor);
  comm_need_buf(&x, in, "input", true);
  comm_need_buf(&x, out, "output", false);
  if (x.invalid == TPU_OK) {
    comm_need_parts(&x, out, in);
    need_elements(&x, out->bytes);
  }
  x.in = in;
  x.out = out;
  x.piece = comm_sub_slot_bytes(c);
  x.total = x.sig.bytes = out ? out->bytes : 0;
  x.steps[0] = comm_stage_parts;
  x.steps[1] = reduce_part;
  x.nsteps = 2;
  return comm_coll_run(&x);
}
