/* The case format of test_every_op.c: one op call described as data, so the harness can build it
 * twice (host views for the reference, device buffers for the driver under test). A case lists
 * its tensors (inputs first, then outputs, as in the call), each a view of its own storage or of
 * another tensor's, filled with deterministic pseudo-random values from a domain the op accepts.
 * The every_op_cases_<family>.h tables are written with the macros below. */
#ifndef EVERY_OP_CASE_H
#define EVERY_OP_CASE_H

#include <stdint.h>

#include "ops/tpu_op.h"

#define CASE_MAX_TENSORS 12
#define CASE_MAX_DIMS 5

/* The scalar slot that a scalar input's value occupies (tpu_op_set_scalar_input): past every
 * slot an op reads. */
#define SCALAR_INPUT_SLOT (TPU_OP_MAX_SCALARS - 1)

/* How a storage's elements are drawn. Ranges are [lo, hi); lo == hi == 0 picks the dtype's default:
 * [-3, 3) for floating (and both parts of complex), [-50, 50) for signed integers, [0, 100) for
 * uint8, 0 or 1 for bool. */
typedef enum value_kind {
  VALUES_UNIFORM,
  VALUES_CONST,   /* every element lo */
  VALUES_SIGNED,  /* magnitude in [lo, hi) (default [0.25, 3), integers [1, 50)), random sign */
  VALUES_EVERY,   /* element i (in storage order) is a random nonzero value when i % lo == 0, else
                     0: a known count of nonzero elements for nonzero and the masked ops */
  VALUES_SPECIAL, /* floating: every fifth element NaN, inf, -inf or -0.0, the rest uniform */
  VALUES_DOMINANT, /* floating square matrices of side lo, dense: uniform in [-1, 1) plus lo + 1 on
                      the diagonal, so each triangle is positive-definite and well-conditioned */
  VALUES_ASCENDING, /* element i (in storage order) is (i % hi) * lo - hi * lo / 2 (rounded to the
                       dtype): dense rows of hi elements ascending by lo, for the sorted searches */
} value_kind;

typedef struct case_values {
  value_kind kind;
  double lo, hi;
} case_values;

typedef enum case_layout {
  LAYOUT_DENSE,      /* row-major */
  LAYOUT_TRANSPOSED, /* the last two dimensions swapped in memory */
  LAYOUT_STRIDED,    /* every other element along the last dimension, from element 1 */
  LAYOUT_EXPLICIT,   /* .strides and .offset as given (0 strides broadcast) */
  LAYOUT_SCALAR,     /* a scalar input: the 0-d host view of its value (values.lo) in the call */
} case_layout;

typedef struct case_tensor {
  tpu_dtype dtype;
  int ndim;
  int64_t sizes[CASE_MAX_DIMS];
  case_layout layout;
  int64_t strides[CASE_MAX_DIMS]; /* LAYOUT_EXPLICIT, in elements */
  int64_t offset;                 /* LAYOUT_EXPLICIT, in elements */
  int alias; /* 1 + the index of the tensor whose storage this one views (0: its own) */
  int64_t storage_elements; /* of its own storage when larger than its views reach (0: what they
                               reach) */
  case_values values;
} case_tensor;

typedef struct op_case {
  tpu_op_id op;
  const char *what; /* what the case exercises, named in failure messages */
  int n_inputs, n_outputs;
  tpu_dtype compute;
  tpu_scalar scalars[TPU_OP_MAX_SCALARS];
  case_tensor tensors[CASE_MAX_TENSORS];
} op_case;

/* Most cases are small (hundreds to a few thousand elements), so the runtime runs them on the
 * launching thread and the host's kernels in one piece. The few marked "large" have more than
 * TPU_TINY_OP_ELEMENTS (ops/tpu_op.c) and a pool grain (drivers/host/engine/engine_iter.h) of
 * elements, so they also run on the stream's worker and split over the thread pool. */

/* ---- Table macros: a tensor is written {F32(4, 8), TRANSPOSED, RANGE(0, 1)} ---- */

#define CASE(id, description, inputs, outputs)                                                     \
  .op = TPU_OP_##id, .what = description, .n_inputs = inputs, .n_outputs = outputs

#define CASE_NARGS(...) CASE_NARGS_(__VA_ARGS__, 5, 4, 3, 2, 1, 0)
#define CASE_NARGS_(a, b, c, d, e, n, ...) n
#define DIMS(...) .ndim = CASE_NARGS(__VA_ARGS__), .sizes = {__VA_ARGS__}

#define BOOL_(...) .dtype = TPU_BOOL, DIMS(__VA_ARGS__)
#define U8(...) .dtype = TPU_UINT8, DIMS(__VA_ARGS__)
#define I8(...) .dtype = TPU_INT8, DIMS(__VA_ARGS__)
#define I16(...) .dtype = TPU_INT16, DIMS(__VA_ARGS__)
#define I32(...) .dtype = TPU_INT32, DIMS(__VA_ARGS__)
#define I64(...) .dtype = TPU_INT64, DIMS(__VA_ARGS__)
#define F16(...) .dtype = TPU_FLOAT16, DIMS(__VA_ARGS__)
#define BF16(...) .dtype = TPU_BFLOAT16, DIMS(__VA_ARGS__)
#define F32(...) .dtype = TPU_FLOAT32, DIMS(__VA_ARGS__)
#define F64(...) .dtype = TPU_FLOAT64, DIMS(__VA_ARGS__)
#define C64(...) .dtype = TPU_COMPLEX64, DIMS(__VA_ARGS__)
#define C128(...) .dtype = TPU_COMPLEX128, DIMS(__VA_ARGS__)
#define ZERO_DIM(dtype_) .dtype = TPU_##dtype_, .ndim = 0

#define TRANSPOSED .layout = LAYOUT_TRANSPOSED
#define STRIDED .layout = LAYOUT_STRIDED
#define VIEW(offset_, ...) .layout = LAYOUT_EXPLICIT, .offset = offset_, .strides = {__VA_ARGS__}
#define ALIAS(tensor) .alias = (tensor) + 1
#define STORAGE(elements) .storage_elements = elements

#define RANGE(lo_, hi_) .values = {VALUES_UNIFORM, lo_, hi_}
#define CONST(value) .values = {VALUES_CONST, value, value}
#define SIGNED .values = {VALUES_SIGNED, 0, 0}
#define EVERY(k) .values = {VALUES_EVERY, k, 0}
#define SPECIAL .values = {VALUES_SPECIAL, 0, 0}
#define DOMINANT(side) .values = {VALUES_DOMINANT, side, 0}
#define ASCENDING_ROWS(step, row) .values = {VALUES_ASCENDING, step, row}

/* Scalar inputs: a float64 or int64 value carried by the call. */
#define SCALAR_INPUT_F(value)                                                                      \
  .dtype = TPU_FLOAT64, .layout = LAYOUT_SCALAR, .values = {VALUES_CONST, value, value}
#define SCALAR_INPUT_I(value)                                                                      \
  .dtype = TPU_INT64, .layout = LAYOUT_SCALAR, .values = {VALUES_CONST, value, value}

/* Convolution and pooling parameters packed as tpu_conv_pack does, in a constant expression (the
 * harness checks the two agree). */
#define CONV_PARAMS(d, h, w) (((uint64_t)(d) << 42) | ((uint64_t)(h) << 21) | (uint64_t)(w))

#endif
