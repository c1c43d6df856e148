/* Debug mode's per-op checks, run around each kernel by the op-call path (ops/tpu_op.c): the NaN/Inf
 * check (TORCH_TPU_CHECK_NAN, torch.tpu.set_debug_nan_check) and the op trace (ops/tpu_op_trace.h).
 * They run only under launch blocking (debug mode), where each op runs on the calling thread, so a
 * failed check raises at the op; in strict and fused mode they cost a flag test per op.
 *
 * The NaN check blames the op that makes a non-finite value, not the ops that pass one on: after
 * the kernel, each floating-point or complex output is scanned, and when one holds a NaN or an
 * infinity while none of the op's device inputs held one before the op ran, the op fails with a
 * RuntimeError naming it, the output, its shape and the first bad element. Values from the host
 * (a CPU tensor copied in, a Python scalar such as masked_fill's -inf, a fill value) count as new.
 * An op that writes only part of an output it does not also read is blamed for NaN the output
 * held before. The outputs
 * keep what the kernel wrote (they are not poisoned), so they can be inspected after the error.
 * The scan is the driver's (TPU_PROC_HAS_NONFINITE): with a driver that has none, an op fails with
 * NotImplementedError while the check is on. */
#ifndef TPU_OP_DEBUG_H
#define TPU_OP_DEBUG_H

#include <stdbool.h>

#include "ops/tpu_op.h"

/* Turns the NaN/Inf check on or off for the process (initially TORCH_TPU_CHECK_NAN). */
void tpu_set_nan_check(bool on);
bool tpu_nan_check(void);

/* True when a check or the trace is on: such a setting does nothing outside debug mode, which the
 * binding says once. */
bool tpu_op_debug_requested(void);

/* What tpu_op_debug_begin found out before the kernel ran. */
typedef struct tpu_op_debug {
  bool nan_check;
  bool (*scan)(const tpu_tensor *t); /* the driver's NaN/Inf scan; NULL: it has none */
  bool trace;
  bool inputs_nonfinite; /* an input the op overwrites held a NaN or infinity before it ran */
  double start_us;
} tpu_op_debug;

/* Before an op's kernel: false (after a flag test) unless launch blocking is on and a check or the
 * trace is; then fills `d`: scans the inputs the op overwrites in place, starts the clock. */
bool tpu_op_debug_begin(const tpu_op_call *call, tpu_op_debug *d);

/* After the kernel returned `status`: adds the op to the trace, then, when the kernel succeeded and
 * the NaN check is on, returns the check's error (see above) or TPU_OK. Returns `status`
 * otherwise. */
tpu_status tpu_op_debug_end(const tpu_op_call *call, const tpu_op_debug *d, tpu_status status);

#endif
