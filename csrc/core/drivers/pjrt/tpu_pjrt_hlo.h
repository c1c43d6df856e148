/* A StableHLO text emitter: one function, @main, built value by value in MLIR's generic op form
 * (stable across StableHLO versions). Values carry their type (element and dims), so each op
 * writes its own operand and result types. Out of host memory, the emitter records the failure
 * and every later call does nothing; tpu_hlo_finish reports it. */
#ifndef TPU_PJRT_HLO_H
#define TPU_PJRT_HLO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/tpu_dtype.h"
#include "base/tpu_status.h"
#include "tensor/tpu_tensor.h"

/* Element types: the core's dtypes, bool as StableHLO's i1. */
typedef tpu_dtype tpu_hlo_elem;

/* An SSA value: %v<id> (%a<id> for arguments) of type tensor<dims x elem>. */
typedef struct tpu_hlo_value {
  int id;
  bool arg;
  tpu_hlo_elem elem;
  int rank;
  int64_t dims[TPU_MAX_DIMS + 1];
} tpu_hlo_value;

#define TPU_HLO_MAX_ARGS 256
#define TPU_HLO_MAX_RESULTS 64

typedef struct tpu_hlo {
  char *body;
  size_t len, cap;
  bool failed;
  int next_id;
  int n_args, n_results;
  tpu_hlo_value args[TPU_HLO_MAX_ARGS];
  int arg_alias[TPU_HLO_MAX_ARGS]; /* the result that may reuse the argument's buffer, or -1 */
  tpu_hlo_value results[TPU_HLO_MAX_RESULTS];
} tpu_hlo;

/* Starts an empty function. */
void tpu_hlo_init(tpu_hlo *h);

/* Frees what the emitter holds (the text tpu_hlo_finish returned is the caller's). */
void tpu_hlo_free(tpu_hlo *h);

/* A new argument of the given type; `alias` is the result index that may take its buffer
 * (donation), or -1. Fails (h->failed) past TPU_HLO_MAX_ARGS. */
tpu_hlo_value tpu_hlo_arg(tpu_hlo *h, tpu_hlo_elem elem, int rank, const int64_t *dims, int alias);

/* Appends a result. */
void tpu_hlo_result(tpu_hlo *h, tpu_hlo_value v);

/* The module's text (malloc'd, NUL-terminated, *len bytes), or NULL with an error status. */
tpu_status tpu_hlo_finish(tpu_hlo *h, char **text, size_t *len);

/* Scalar constant of `elem` (rank 0): `literal` is its MLIR spelling, e.g. "0", "1.0", "true". */
tpu_hlo_value tpu_hlo_constant(tpu_hlo *h, tpu_hlo_elem elem, const char *literal);

/* Elementwise ops on values of equal dims ("add", "multiply", "maximum", "power", ...): the
 * StableHLO op name without its prefix; `dialect` is "stablehlo" or "chlo". */
tpu_hlo_value tpu_hlo_unary(tpu_hlo *h, const char *op, tpu_hlo_value x);
tpu_hlo_value tpu_hlo_chlo_unary(tpu_hlo *h, const char *op, tpu_hlo_value x);
tpu_hlo_value tpu_hlo_binary(tpu_hlo *h, const char *op, tpu_hlo_value a, tpu_hlo_value b);
/* A binary CHLO op ("zeta", "polygamma", "next_after") on values of equal dims. */
tpu_hlo_value tpu_hlo_chlo_binary(tpu_hlo *h, const char *op, tpu_hlo_value a, tpu_hlo_value b);

/* compare with `direction` (EQ, NE, LT, LE, GT, GE): an i1 value. */
tpu_hlo_value tpu_hlo_compare(tpu_hlo *h, const char *direction, tpu_hlo_value a,
                              tpu_hlo_value b);

/* select(pred, a, b). */
tpu_hlo_value tpu_hlo_select(tpu_hlo *h, tpu_hlo_value pred, tpu_hlo_value a, tpu_hlo_value b);

/* Element type changes: convert (value-preserving as StableHLO defines it) and bitcast_convert
 * (bits reinterpreted; a narrower result element adds a last dimension, a wider one drops it). */
tpu_hlo_value tpu_hlo_convert(tpu_hlo *h, tpu_hlo_value x, tpu_hlo_elem elem);
tpu_hlo_value tpu_hlo_bitcast(tpu_hlo *h, tpu_hlo_value x, tpu_hlo_elem elem, int rank,
                              const int64_t *dims);

/* 0, 1, 2, ... along dimension 0 of a rank-1 value of `n` elements. */
tpu_hlo_value tpu_hlo_iota(tpu_hlo *h, tpu_hlo_elem elem, int64_t n);

/* Shape ops. */
tpu_hlo_value tpu_hlo_reshape(tpu_hlo *h, tpu_hlo_value x, int rank, const int64_t *dims);
tpu_hlo_value tpu_hlo_transpose(tpu_hlo *h, tpu_hlo_value x, const int64_t *perm);
tpu_hlo_value tpu_hlo_broadcast(tpu_hlo *h, tpu_hlo_value x, int rank, const int64_t *dims,
                                const int64_t *bdims);
tpu_hlo_value tpu_hlo_slice(tpu_hlo *h, tpu_hlo_value x, const int64_t *start,
                            const int64_t *limit);
/* x padded with the scalar `value`: per dimension i, low[i] elements before, high[i] after (a
 * negative count crops instead) and interior[i] >= 0 between each two adjacent elements. */
tpu_hlo_value tpu_hlo_pad(tpu_hlo *h, tpu_hlo_value x, tpu_hlo_value value, const int64_t *low,
                          const int64_t *high, const int64_t *interior);
/* Pads the end of a rank-1 value with zeros to `length`. */
tpu_hlo_value tpu_hlo_pad_end(tpu_hlo *h, tpu_hlo_value x, int64_t length);
/* x with `update` written at the constant position `start`. */
tpu_hlo_value tpu_hlo_update_slice(tpu_hlo *h, tpu_hlo_value x, tpu_hlo_value update,
                                   const int64_t *start);

/* Batched matrix product of a [b, m, k] and b [b, k, n] as `elem` (wider than the operands'
 * for float16 and bfloat16 accumulation), at the highest precision: [b, m, n], or [m, n] with the
 * batches summed when `sum_batches`. */
tpu_hlo_value tpu_hlo_dot(tpu_hlo *h, tpu_hlo_value a, tpu_hlo_value b, bool sum_batches,
                          tpu_hlo_elem elem);

/* A convolution's parameters: the dimension letters leading lhs, rhs and result layouts (e.g.
 * "b, f", "o, i", "b, f"; the `spatial` dimensions follow in order), feature groups, and per
 * spatial dimension the window stride, padding (possibly negative) and dilations. */
typedef struct tpu_hlo_conv {
  const char *layout[3];
  int spatial;
  int64_t groups;       /* feature_group_count */
  int64_t batch_groups; /* batch_group_count (0 taken as 1) */
  int64_t stride[3], pad_low[3], pad_high[3], lhs_dilation[3], rhs_dilation[3];
} tpu_hlo_conv;

/* StableHLO's convolution of lhs and rhs at the highest precision, in lhs's element type, with
 * the result dims given. */
tpu_hlo_value tpu_hlo_convolution(tpu_hlo *h, tpu_hlo_value lhs, tpu_hlo_value rhs,
                                  const tpu_hlo_conv *c, int rank, const int64_t *dims);

/* x with dimensions dims[0..n) reversed. */
tpu_hlo_value tpu_hlo_reverse(tpu_hlo *h, tpu_hlo_value x, const int64_t *dims, int n);

/* x's slices along `dim` at `index` (a rank-1 int64 value of in-range positions): x's dims with
 * dims[dim] replaced by the index's length. */
tpu_hlo_value tpu_hlo_take(tpu_hlo *h, tpu_hlo_value x, tpu_hlo_value index, int dim);

/* How tpu_hlo_reduce combines two elements. */
typedef enum tpu_hlo_combine {
  TPU_HLO_ADD,
  TPU_HLO_MUL,
  TPU_HLO_MAX, /* NaN wins */
  TPU_HLO_MIN, /* NaN wins */
} tpu_hlo_combine;

/* x reduced over dims[0..n) (ascending) from the scalar `init`: x's dims without those. */
tpu_hlo_value tpu_hlo_reduce(tpu_hlo *h, tpu_hlo_value x, tpu_hlo_value init, const int64_t *dims,
                             int n, tpu_hlo_combine combine);

/* The running sums of x along `dim` (x's dims; rank >= 1) from the scalar `init` (its zero). */
tpu_hlo_value tpu_hlo_prefix_sum(tpu_hlo *h, tpu_hlo_value x, tpu_hlo_value init, int dim);

/* Operands one tpu_hlo_reduce_window reduces together. */
#define TPU_HLO_MAX_REDUCED 4

/* A reduction region's body: r[0..n), the combination of the rank-0 values p[0..n) (the
 * reduction so far) and q[0..n) (the next element), emitted with the ops above. XLA applies it
 * in any grouping and order, so it must be associative and commutative. */
typedef void (*tpu_hlo_region_fn)(tpu_hlo *h, const tpu_hlo_value *p, const tpu_hlo_value *q,
                                  tpu_hlo_value *r, void *ctx);

/* The region body of one operand combined as *(const tpu_hlo_combine *)ctx says. */
void tpu_hlo_combine_body(tpu_hlo *h, const tpu_hlo_value *p, const tpu_hlo_value *q,
                          tpu_hlo_value *r, void *ctx);

/* reduce_window's windows over each dimension: their size, stride and dilation (the distance of
 * adjacent taps), and the padding (>= 0, elements that take the init value) before and after. */
typedef struct tpu_hlo_window {
  int64_t size[TPU_MAX_DIMS + 1], stride[TPU_MAX_DIMS + 1], dilation[TPU_MAX_DIMS + 1];
  int64_t pad_low[TPU_MAX_DIMS + 1], pad_high[TPU_MAX_DIMS + 1];
} tpu_hlo_window;

/* The window of one element over `rank` dimensions (size, stride and dilation 1, no padding), for
 * the caller to widen along the dimensions it reduces. */
tpu_hlo_window tpu_hlo_window_one(int rank);

/* xs[0..n) (1 <= n <= TPU_HLO_MAX_REDUCED, of equal dims) reduced together over each window from
 * the scalars inits[0..n) by `body`: r[k] has xs[k]'s element type and, per dimension, one
 * element per window position that fits the padded operand. */
void tpu_hlo_reduce_window(tpu_hlo *h, int n, const tpu_hlo_value *xs, const tpu_hlo_value *inits,
                           const tpu_hlo_window *w, tpu_hlo_region_fn body, void *ctx,
                           tpu_hlo_value *r);

/* A sort's comparator body: the i1 scalar "the element at a goes before the one at b", from
 * a[0..n) and b[0..n), the rank-0 elements of each sorted operand at the two positions, emitted
 * with the ops above. It must be a strict weak order. */
typedef tpu_hlo_value (*tpu_hlo_less_fn)(tpu_hlo *h, const tpu_hlo_value *a,
                                         const tpu_hlo_value *b, void *ctx);

/* xs[0..n) (1 <= n <= TPU_HLO_MAX_REDUCED, of equal dims) permuted together along `dim` into the
 * order `less` gives, stably: elements it orders neither way keep their order. r[k] has xs[k]'s
 * type. */
void tpu_hlo_sort(tpu_hlo *h, int n, const tpu_hlo_value *xs, int dim, tpu_hlo_less_fn less,
                  void *ctx, tpu_hlo_value *r);

/* Values one tpu_hlo_while carries. */
#define TPU_HLO_MAX_CARRIED 8

/* A while loop's condition, the i1 scalar "run the body again", and its body, the next carried
 * values r[0..n) (of v's types), from the carried values v[0..n), emitted with the ops above.
 * They may use only their arguments and the constants they make. */
typedef tpu_hlo_value (*tpu_hlo_cond_fn)(tpu_hlo *h, const tpu_hlo_value *v, void *ctx);
typedef void (*tpu_hlo_step_fn)(tpu_hlo *h, const tpu_hlo_value *v, tpu_hlo_value *r, void *ctx);

/* The values init[0..n) (1 <= n <= TPU_HLO_MAX_CARRIED) carried through `step` for as long as
 * `cond` holds (StableHLO's while): r[k] has init[k]'s type. */
void tpu_hlo_while(tpu_hlo *h, int n, const tpu_hlo_value *init, tpu_hlo_cond_fn cond,
                   tpu_hlo_step_fn step, void *ctx, tpu_hlo_value *r);

/* x with updates[i] combined into its slice index[i] along dimension 0 (index: rank-1 int64;
 * updates: [index length, x's other dims]), duplicates in an order XLA chooses. Out-of-range
 * indices change nothing. */
tpu_hlo_value tpu_hlo_scatter(tpu_hlo *h, tpu_hlo_value x, tpu_hlo_value index,
                              tpu_hlo_value updates, tpu_hlo_combine combine);

/* Converts x to `to` with the semantics of the core's COPY (ops/tpu_ops_base.h): x != 0 for bool,
 * float16 and bfloat16 through float32, float to small integers through int32 or int64. */
tpu_hlo_value tpu_hlo_cast(tpu_hlo *h, tpu_hlo_value x, tpu_dtype to);

/* A scalar (rank 0) broadcast to `like`'s dims. */
tpu_hlo_value tpu_hlo_splat(tpu_hlo *h, tpu_hlo_value scalar, const tpu_hlo_value *like);

/* The int64 value v broadcast to `like`'s dims. */
tpu_hlo_value tpu_hlo_full_i64(tpu_hlo *h, int64_t v, const tpu_hlo_value *like);

/* 0, 1, 2, ... along dimension d of `like`'s dims (int64, like's dims). */
tpu_hlo_value tpu_hlo_coordinate(tpu_hlo *h, const tpu_hlo_value *like, int64_t d);

/* The rank-1 constant values[0..n) of `elem` (floating, or integers the doubles hold exactly). */
tpu_hlo_value tpu_hlo_constant_array(tpu_hlo *h, tpu_hlo_elem elem, int64_t n,
                                     const double *values);

/* The constant `literal` of `elem` broadcast to `like`'s dims. */
tpu_hlo_value tpu_hlo_full(tpu_hlo *h, tpu_hlo_elem elem, const char *literal,
                           const tpu_hlo_value *like);

/* A uint8 scalar: 1 when any element of the i1 value `pred` is true, else 0. */
tpu_hlo_value tpu_hlo_any(tpu_hlo *h, tpu_hlo_value pred);

/* StableHLO's Cholesky factor of each matrix of a (rank >= 2, its last two dimensions), read from
 * its lower (or upper) triangle; the other triangle of the result is unspecified. */
tpu_hlo_value tpu_hlo_cholesky(tpu_hlo *h, tpu_hlo_value a, bool lower);

/* StableHLO's triangular_solve: X with A X = B (left) or X A = B, A the lower (upper) triangle of
 * a, with a unit diagonal when `unit`; a and b have equal batch dimensions. */
tpu_hlo_value tpu_hlo_triangular_solve(tpu_hlo *h, tpu_hlo_value a, tpu_hlo_value b, bool left,
                                       bool lower, bool unit);

#endif
