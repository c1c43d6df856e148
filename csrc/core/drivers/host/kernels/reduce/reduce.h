/* The reduction engine behind the reduce family's kernels (private to the host driver).
 *
 * A reduction reads one input and writes one or two outputs that have the input's rank, with size
 * 1 in every reduced dimension (ops/tpu_ops_reduce.h). The engine splits the dimensions into kept
 * and reduced ones and works in one of two modes:
 *   - rows: the reduced elements of one output are (mostly) adjacent in memory; each output is
 *     reduced along runs of its reduced elements;
 *   - columns: the outputs are adjacent instead (a reduction over an outer dimension); a block of
 *     neighbouring outputs is updated from each reduced slice at once, so the loop runs along
 *     memory.
 * Both split over the thread pool by outputs when there are enough of them, otherwise by fixed
 * chunks of the reduced range whose partial states combine in chunk order: the result depends only
 * on the shapes and the thread count.
 *
 * Values pass through two stages. A loader converts a run of input elements to the accumulation
 * class (float, double or int64; |x| for norms) into a small buffer, or hands the input over
 * directly when it already is in that form; an op loop then folds the values into the state. So
 * the op loops exist once per class, not once per dtype, and stay vectorizable. */
#ifndef TPU_HOST_KERNELS_REDUCE_H
#define TPU_HOST_KERNELS_REDUCE_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/tpu_op.h"

/* What a pass folds into its state. */
typedef enum rk_kind {
  RK_NONE = -1,
  RK_SUM,    /* sum of x */
  RK_PROD,   /* product of x */
  RK_MAX,    /* largest x; NaN wins */
  RK_MIN,    /* smallest x; NaN wins */
  RK_ARGMAX, /* largest x and its first index; NaN wins */
  RK_ARGMIN, /* smallest x and its first index; NaN wins */
  RK_COUNT,  /* number of x != 0 (NaN counts) */
  RK_SUMSQ,  /* sum of x * x */
  RK_SUMPOW, /* sum of x^p (loaded as |x|) */
  RK_VAR,    /* sum of d = x - mean and of d * d; the mean comes from a first RK_SUM pass */
  RK_LSE,    /* sum of exp(x - m); m comes from a first RK_MAX pass */
  RK_KINDS
} rk_kind;

/* How the final state becomes the output values. */
typedef enum rk_final {
  RK_VALUE,   /* the state's value (and index) as is */
  RK_MEAN,    /* value / n */
  RK_ANY,     /* count > 0 */
  RK_ALL,     /* count == n */
  RK_SQRT,    /* sqrt(value): the 2-norm */
  RK_ROOT,    /* value^(1/p) */
  RK_VARIANCE /* variance, or standard deviation, and the mean as an optional second output */
} rk_final;

/* One reduction, as a kernel asks the engine for it. */
typedef struct rk_spec {
  rk_kind kind;
  rk_final fin;
  bool abs;          /* fold |x| (norms; complex inputs become their magnitude) */
  tpu_dtype compute; /* inputs are converted to this dtype first, as PyTorch's reduction casts */
  double p;          /* RK_SUMPOW's and RK_ROOT's p; RK_VARIANCE's correction */
  bool sqrt;         /* RK_VARIANCE: standard deviation instead of variance */
} rk_spec;

/* Runs `spec` with call->tensors[0] as input and the call's outputs (keepdim-shaped). A complex
 * input is summed as its real view: every output must then be complex too. */
tpu_status tpu_reduce(const tpu_op_call *call, const rk_spec *spec);

/* ---- Between the engine (reduce.c, reduce_run.c) and its loops ---- */

/* Writes i (when is_int) or f to one element of dtype dt (a real computable dtype), converting as
 * a cast does. */
void rk_store(tpu_dtype dt, char *p, bool is_int, int64_t i, double f);

/* Accumulation class: float for float16/bfloat16/float32, double, or int64 (integers, bool). */
typedef enum rk_class { RK_F, RK_D, RK_I } rk_class;

/* One output's running state. f: sum, product, extreme, count...; g: RK_VAR's sum of squares; i:
 * the same for the int64 class; idx: the arg kinds' index (-1 before the first element). */
typedef struct rk_state {
  double f, g;
  int64_t i, idx;
} rk_state;

/* Values per loaded piece and outputs per column block: a column block's states stay in L2 while
 * whole rows of up to RK_BLOCK outputs stream from memory in order. */
#define RK_BLOCK 4096

/* A buffer of loaded values of any class. */
typedef union rk_buf {
  _Alignas(64) float f[RK_BLOCK];
  double d[RK_BLOCK];
  int64_t i[RK_BLOCK];
} rk_buf;

/* The states of a block of neighbouring outputs, one array per field so the column loops
 * vectorize. */
typedef struct rk_cols {
  double f[RK_BLOCK], g[RK_BLOCK];
  int64_t i[RK_BLOCK], idx[RK_BLOCK];
} rk_cols;

/* Folds n consecutive values (of the class's type; idx0 is the first one's reduced index) into st.
 * aux is the first pass's result for two-pass kinds; p is RK_SUMPOW's exponent. */
typedef void (*rk_row_fn)(rk_state *st, const void *v, int64_t n, int64_t idx0, double aux,
                          double p);

/* Folds value j into output j's state for j < n, all at reduced index idx. */
typedef void (*rk_col_fn)(rk_cols *c, const void *v, int64_t n, int64_t idx, const double *aux,
                          double p);

/* Converts n input elements, `stride` bytes apart, to the class's type in dst. */
typedef void (*rk_load_fn)(void *dst, const char *src, int64_t n, int64_t stride);

/* acc[j] += v[j] in float; then f[j] += acc[j] in double and acc[j] = 0: a float column sum. */
void rk_add_f(float *acc, const float *v, int64_t n);
void rk_flush_f(double *f, float *acc, int64_t n);

/* The loop of kind and class, or NULL when that pair does not exist. */
rk_row_fn rk_row(rk_kind kind, rk_class cls);
rk_col_fn rk_col(rk_kind kind, rk_class cls);

/* The loader from `in` to class cls (|x| when abs), or NULL when there is none. */
rk_load_fn rk_loader(tpu_dtype in, rk_class cls, bool abs);

/* The loader from real dtype `in` to 0 or 1 in int64, as a cast to bool (x != 0, NaN included):
 * what reductions into bool accumulate, where truncating to an integer first would make 0.25
 * false. NULL for complex dtypes. */
rk_load_fn rk_bool_loader(tpu_dtype in);

/* Writes n float (class F) or double (class D) values to elements of a floating dtype, `stride`
 * bytes apart, rounding each once. */
typedef void (*rk_store_fn)(char *dst, const void *src, int64_t n, int64_t stride);

/* The storer of class cls to floating dtype `out`, or NULL. */
rk_store_fn rk_storer(tpu_dtype out, rk_class cls);

/* Rounds n loaded values to `compute` when it is narrower than its class (bfloat16 and float16 for
 * float, the narrower integers and bool for int64), as a cast to it would. */
void rk_narrow(void *v, int64_t n, tpu_dtype compute);

/* The class `compute` accumulates in. */
rk_class rk_class_of(tpu_dtype compute);

/* The empty state of a kind. */
rk_state rk_state_init(rk_kind kind, rk_class cls);

/* Folds b, the state of a later part of the same reduced range, into a. */
void rk_merge(rk_kind kind, rk_class cls, rk_state *a, const rk_state *b);

/* ---- Between the plan (reduce.c) and the execution (reduce_run.c). ---- */

/* Operands of a dimension set: 0 is the input, 1 and 2 the outputs. */
#define RK_OPS 3

/* Dimensions, innermost first, with byte strides per operand. */
typedef struct rk_dims {
  int nd; /* at least 1 */
  int64_t shape[TPU_MAX_DIMS + 1];
  int64_t stride[RK_OPS][TPU_MAX_DIMS + 1];
} rk_dims;

typedef struct rk_plan {
  const rk_spec *spec;
  rk_kind pre;       /* the first pass of two-pass kinds, else RK_NONE */
  rk_class cls;
  rk_load_fn load;   /* input -> class values */
  bool direct;       /* the input already holds class values: dense runs need no loading */
  bool narrow;       /* loaded values round to the compute dtype (see rk_narrow) */
  int64_t elsize;    /* bytes per input element */
  const char *in;
  char *out[2];
  tpu_dtype out_dtype[2];
  int nout;
  rk_dims kept, red; /* red uses operand 0 only */
  int64_t n_out, n_red;
  bool cols;         /* column mode */
  int64_t blocks;    /* column mode: blocks of RK_BLOCK along kept dimension 0 */
} rk_plan;

/* Runs a planned reduction over the pool. */
tpu_status rk_run(const rk_plan *pl);

/* What a first pass hands the second: the mean, or the maximum (0 when infinite, as PyTorch's
 * logsumexp does). */
double rk_first_pass(const rk_plan *pl, const rk_state *st);

/* Writes the final values of one output from its state: o0 and o1 point at its elements in the
 * outputs. */
void rk_finish(const rk_plan *pl, const rk_state *st, double aux, char *o0, char *o1);

/* After an RK_VAR run: computes again, as PyTorch CPU does (Welford in double), each output whose
 * variance or mean came out infinite or NaN, as the fast pass's float sums and squares overflow
 * for values near the dtype's largest where CPU's do not (reduce_fix.c). */
void rk_fix_variance(const rk_plan *pl);

/* After a p-norm run (0 < p < inf): computes again, in double and scaled by the largest |x|,
 * each output that came out infinite from finite inputs: the sum of |x|^p overflows where the
 * norm does not (CPU sums float32 in double; LAPACK's nrm2 scales). */
void rk_fix_norm(const rk_plan *pl);

/* After a floating product: computes again each output that came out NaN although its inputs
 * hold no NaN and not both a zero and an infinity: the exact product's sign and size (zero when
 * a factor is zero), whatever order the fast pass multiplied in (its lanes' partial products may
 * overflow before a zero comes). */
void rk_fix_prod(const rk_plan *pl);

#endif
