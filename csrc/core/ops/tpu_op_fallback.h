/* The core's counted CPU fallback for native ops: a call the driver refuses (supports_op) runs on
 * the host driver's kernels instead, on host copies of the storages it touches, and the storages
 * it writes are copied back. Each such call is counted (tpu_op_count_driver_fallback) and the
 * first of each op prints a warning naming it, so that a driver's missing lowerings are never
 * silent. */
#ifndef TPU_OP_FALLBACK_H
#define TPU_OP_FALLBACK_H

#include "ops/tpu_op.h"

/* Decides once, at submission, who runs `call`: the driver, or the fallback (call->host_fallback).
 * TPU_ERR_NOT_IMPLEMENTED, naming the op and its dtype, when neither can. */
tpu_status tpu_op_route(tpu_op_call *call);

/* Runs a routed `call` (its outputs have memory) where tpu_op_route decided. */
tpu_status tpu_op_run(const tpu_op_call *call);

#endif
