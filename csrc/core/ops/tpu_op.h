/* The op table: every native op has an id, a name and a call counter; its contract (which tensors
 * and scalars a call holds, what it computes) is in its family's header, and a driver
 * (drivers/tpu_driver.h) runs it. An op call names its op, its tensors (inputs first, then
 * outputs) and its scalars; exec/tpu_submit.h submits it to a stream. */
#ifndef TPU_OP_H
#define TPU_OP_H

#include <stdbool.h>
#include <stdint.h>

#include "base/tpu_status.h"
#include "ops/tpu_ops_base.h"
#include "ops/tpu_ops_random.h"
#include "ops/tpu_ops_elementwise.h"
#include "ops/tpu_ops_reduce.h"
#include "ops/tpu_ops_matmul.h"
#include "ops/tpu_ops_norm.h"
#include "ops/tpu_ops_nn.h"
#include "ops/tpu_ops_conv.h"
#include "ops/tpu_ops_rnn.h"
#include "ops/tpu_ops_attention.h"
#include "ops/tpu_ops_index.h"
#include "ops/tpu_ops_optim.h"
#include "ops/tpu_ops_sort.h"
#include "ops/tpu_ops_special.h"
#include "ops/tpu_ops_vision.h"
#include "ops/tpu_ops_linalg.h"
#include "tensor/tpu_tensor.h"

/* The attribute scalars of an op, a mask of TPU_ATTR(k): call->scalars[k] selects what the op
 * computes (a dimension, a flag, a mode, packed geometry), so it belongs to a graph's structure
 * (graph/tpu_graph.h) and a driver may compile a plan for its value. The other scalars (alpha,
 * eps, a fill value, a learning rate, the RNG seed and offset) are runtime arguments: a plan reads
 * them when it runs, so new values never recompile. */
#define TPU_ATTR(k) (1u << (k))
#define TPU_ATTRS_BELOW(n) ((1u << (n)) - 1u) /* slots 0 to n - 1 */

/* The native ops: X(ID, "name", attribute scalars), one family per header, so that a family's
 * contract sits together and adding an op touches only its family (and each driver's table of
 * kernels). */
#define TPU_OP_LIST(X)                                                                             \
  TPU_OPS_BASE(X)                                                                                  \
  TPU_OPS_RANDOM(X)                                                                                \
  TPU_OPS_ELEMENTWISE(X)                                                                           \
  TPU_OPS_REDUCE(X)                                                                                \
  TPU_OPS_MATMUL(X)                                                                                \
  TPU_OPS_NORM(X)                                                                                  \
  TPU_OPS_NN(X)                                                                                    \
  TPU_OPS_CONV(X)                                                                                  \
  TPU_OPS_RNN(X)                                                                                   \
  TPU_OPS_ATTENTION(X)                                                                             \
  TPU_OPS_INDEX(X)                                                                                 \
  TPU_OPS_OPTIM(X)                                                                                 \
  TPU_OPS_SORT(X)                                                                                  \
  TPU_OPS_SPECIAL(X)                                                                               \
  TPU_OPS_VISION(X)                                                                                \
  TPU_OPS_LINALG(X)

typedef enum tpu_op_id {
#define TPU_OP_ENUM(id, name, attrs) TPU_OP_##id,
  TPU_OP_LIST(TPU_OP_ENUM)
#undef TPU_OP_ENUM
      TPU_OP_COUNT
} tpu_op_id;

#define TPU_OP_MAX_SCALARS 8

typedef union tpu_scalar {
  double f;
  int64_t i;
  uint64_t u;
} tpu_scalar;

typedef struct tpu_op_call {
  tpu_op_id op;
  int n_inputs;
  int n_outputs;
  bool host_fallback; /* set at submission: the core's fallback runs it (ops/tpu_op_fallback.h) */
  tpu_dtype compute; /* the dtype the op computes in (type promotion's result), for ops with one */
  tpu_scalar scalars[TPU_OP_MAX_SCALARS];
  /* Runs after the kernel (or when the call is dropped) to free memory the call owns, e.g. the
   * staging copy of a host-to-device transfer. */
  void (*cleanup)(void *);
  void *cleanup_ctx;
  tpu_tensor tensors[]; /* n_inputs inputs, then n_outputs outputs */
} tpu_op_call;

/* A zeroed call for `op` with room for the given tensors; NULL when out of host memory. */
tpu_op_call *tpu_op_call_new(tpu_op_id op, int n_inputs, int n_outputs);

/* Makes input `index` of `call` a scalar operand that broadcasts over the outputs: its value is
 * kept in call->scalars[slot], as float64 (value.f) when is_float, else as int64 (value.i), and the
 * input is a 0-d host view of it, so nothing outside the call has to outlive it. */
void tpu_op_set_scalar_input(tpu_op_call *call, int index, int slot, tpu_scalar value,
                             bool is_float);

/* Frees a call that was never launched (running its cleanup). */
void tpu_op_call_free(tpu_op_call *call);

/* A new call with src's op, compute dtype, scalars and views (no buffer references
 * taken); a scalar operand held in src (tpu_op_set_scalar_input) is held in the copy. Other host
 * memory and the cleanup are not copied: the copy must not outlive that memory. NULL when out of
 * host memory. */
tpu_op_call *tpu_op_call_clone(const tpu_op_call *src);

/* Name of an op, e.g. "copy". */
const char *tpu_op_name(tpu_op_id op);

/* The op's attribute scalars (a TPU_ATTR mask; 0 for an invalid id). */
uint8_t tpu_op_attr_scalars(tpu_op_id op);

/* Counts one native call of `op` (a call submitted to a stream or recorded in a graph). */
void tpu_op_count_native(tpu_op_id op);

/* Native calls of `op` since start or the last reset. */
uint64_t tpu_op_native_count(tpu_op_id op);

/* Counts one call of `op_name` (an ATen operator name) that ran through the CPU fallback. */
void tpu_op_count_fallback(const char *op_name);

/* Visits every op name that fell back, with its count. */
void tpu_op_fallback_counts(void (*visit)(const char *name, uint64_t count, void *ctx), void *ctx);

/* Counts one call of `op` that the driver could not run and the core's fallback ran on the host
 * (ops/tpu_op_fallback.h); the call counts as native too, having been launched as one. */
void tpu_op_count_driver_fallback(tpu_op_id op);

/* Calls of `op` the core's fallback ran since start or the last reset. */
uint64_t tpu_op_driver_fallback_count(tpu_op_id op);

/* Zeroes the native and fallback counters. */
void tpu_op_reset_counts(void);

#endif
