/* The elementwise engine: runs an N-ary op (1 to 4 inputs, 1 or 2 outputs) of an op call over the
 * strided iterator, the way numpy's buffered ufunc loop does. What the operands are, how they
 * broadcast and promote, and scalar operands are the elementwise family's contract
 * (ops/tpu_ops_elementwise.h); this is how the host driver meets it.
 *
 * Types. The op's inner loop runs on the loop dtype: float32 for float16 and bfloat16 (so they
 * compute in float and round once per op), the compute dtype otherwise. Each operand is "loop
 * typed" or, when the op says so (bool_operands), bool. An input of another dtype than the compute
 * dtype is first converted to the compute dtype, then to the loop dtype; an output of another
 * dtype is converted from the loop result the same way in reverse (so a float32 output of a
 * bfloat16 op takes the result rounded to bfloat16). Conversions are the COPY kernel's loops.
 *
 * Loops. An op supplies one inner loop per loop dtype. The engine always hands it dense operands:
 * when an operand is strided, broadcast inside the run or needs converting, the engine gathers (and
 * converts) it block by block into a per-thread buffer, and scatters output blocks back. Dense,
 * same-dtype work goes straight to the loop. Work is split over the thread pool in fixed chunks.
 *
 * In-place ops: loops read element i before they write element i and blocks are converted before
 * their outputs are written, so an output may be the very memory of an input. */
#ifndef TPU_HOST_ENGINE_ELEMENTWISE_H
#define TPU_HOST_ENGINE_ELEMENTWISE_H

#include <stdint.h>

#include "ops/tpu_op.h"

#define TPU_EW_MAX_INPUTS 4
#define TPU_EW_MAX_OUTPUTS 2
#define TPU_EW_MAX_OPERANDS (TPU_EW_MAX_INPUTS + TPU_EW_MAX_OUTPUTS)

/* What an inner loop reads besides its operands: the call, and its scalars (call->scalars) already
 * converted to each C type, so a loop of any dtype finds its parameters ready. Scalars hold .f for
 * floating compute dtypes and .i for integer and bool ones (the other views are meaningless). */
typedef struct tpu_ew_ctx {
  const tpu_op_call *call;
  int *failed; /* a loop stores 1 here (atomically) on an integer division by zero */
  float f32[TPU_OP_MAX_SCALARS];
  double f64[TPU_OP_MAX_SCALARS];
  int64_t i64[TPU_OP_MAX_SCALARS];
} tpu_ew_ctx;

/* An inner loop over n elements of dense operands: data holds the outputs first, then the inputs
 * (call->tensors lists the inputs first; the iterator wants an output as operand 0). Element i of
 * operand k is ((T *)data[k])[i], with T the operand's loop type. */
typedef void (*tpu_ew_loop)(char **data, int64_t n, const tpu_ew_ctx *ctx);

/* Flags of an op. */
enum {
  /* A scalar second input (a single element) keeps its own precision when the compute dtype is
   * float16 or bfloat16: it is converted straight to float, not rounded to the compute dtype first.
   * PyTorch CPU's mul, div and their rounding modes read such a scalar at float precision. */
  TPU_EW_OPMATH_SCALAR1 = 1u << 0,
};

typedef struct tpu_ew_op {
  tpu_ew_loop loops[TPU_DTYPE_COUNT]; /* by loop dtype; NULL where the op has no loop */
  uint8_t bool_operands;              /* bit k: loop operand k (outputs first) is bool */
  uint8_t flags;
} tpu_ew_op;

/* Bit of loop operand k in tpu_ew_op.bool_operands. */
#define TPU_EW_BOOL(k) (1u << (k))

/* The dtype an op's inner loop computes in for `compute`. */
tpu_dtype tpu_ew_loop_dtype(tpu_dtype compute);

/* Runs `op` on `call` (see the header comment). Errors: TPU_ERR_VALUE when the shapes do not
 * broadcast, TPU_ERR_NOT_IMPLEMENTED when the op has no loop for the compute dtype or an operand is
 * complex or storage-only, TPU_ERR_RUNTIME "ZeroDivisionError" (PyTorch CPU's message) when an
 * integer division by zero was met; the outputs then hold 0 there. */
tpu_status tpu_ew_run(const tpu_op_call *call, const tpu_ew_op *op);

/* The elementwise engine's table of `op`, or NULL for ops of other families. */
const tpu_ew_op *tpu_ew_op_of(tpu_op_id op);

/* True when elementwise op `op` has an inner loop for compute dtype `compute` (false for ops of
 * other families), so callers can refuse a dtype before launching. */
bool tpu_ew_supports(tpu_op_id op, tpu_dtype compute);

#endif
