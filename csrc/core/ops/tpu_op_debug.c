#include "ops/tpu_op_debug.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/tpu_env_switch.h"
#include "device/tpu_stream.h"
#include "drivers/tpu_driver.h"
#include "ops/tpu_op_trace.h"

static tpu_env_switch nan_check = TPU_ENV_SWITCH("TORCH_TPU_CHECK_NAN");

void tpu_set_nan_check(bool on) { tpu_env_switch_set(&nan_check, on); }

bool tpu_nan_check(void) { return tpu_env_switch_get(&nan_check); }

bool tpu_op_debug_requested(void) { return tpu_nan_check() || tpu_op_trace_active(); }

/* The inputs the check tells apart: device inputs the op overwrites (scanned before the kernel),
 * the other device inputs (after it), and host memory (only to word the error). */
typedef enum input_kind { DEVICE_OVERWRITTEN, DEVICE_OTHER, HOST } input_kind;

static input_kind kind_of_input(const tpu_op_call *call, int input) {
  if (!call->tensors[input].buf)
    return HOST;
  for (int o = call->n_inputs; o < call->n_inputs + call->n_outputs; o++)
    if (call->tensors[o].buf == call->tensors[input].buf)
      return DEVICE_OVERWRITTEN;
  return DEVICE_OTHER;
}

/* The driver's scan for NaN and infinity (a TPU_PROC_HAS_NONFINITE extra). */
static tpu_proc_has_nonfinite nonfinite_scan(void) {
  return (tpu_proc_has_nonfinite)tpu_driver_proc(TPU_PROC_HAS_NONFINITE);
}

/* Whether an input of `kind` holds a NaN or an infinity. */
static bool inputs_nonfinite(const tpu_op_call *call, input_kind kind, const tpu_op_debug *d) {
  for (int i = 0; i < call->n_inputs; i++)
    if (kind_of_input(call, i) == kind && d->scan(&call->tensors[i]))
      return true;
  return false;
}

bool tpu_op_debug_begin(const tpu_op_call *call, tpu_op_debug *d) {
  d->nan_check = tpu_nan_check();
  d->trace = tpu_op_trace_active();
  if (!(d->nan_check || d->trace) || !tpu_launch_blocking())
    return false;
  d->scan = d->nan_check ? nonfinite_scan() : NULL;
  /* An in-place op overwrites its input: look at it now, or a NaN it already held would look
   * like the op's. */
  d->inputs_nonfinite = d->scan && inputs_nonfinite(call, DEVICE_OVERWRITTEN, d);
  d->start_us = tpu_now_us();
  return true;
}

static const char *value_name(double v) { return isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf"; }

static tpu_status report(const tpu_op_call *call, const tpu_op_debug *d, int output) {
  const tpu_tensor *t = &call->tensors[call->n_inputs + output];
  int64_t flat = 0;
  double value = NAN;
  tpu_proc_first_nonfinite first =
      (tpu_proc_first_nonfinite)tpu_driver_proc(TPU_PROC_FIRST_NONFINITE);
  if (first)
    first(t, &flat, &value);
  char shape[512] = "";
  tpu_format_shape(shape, sizeof shape, t->ndim, t->sizes, ", ");
  /* The flat row-major index as coordinates. */
  int64_t coords[TPU_MAX_DIMS];
  for (int d = t->ndim - 1; d >= 0; d--) {
    coords[d] = flat % t->sizes[d];
    flat /= t->sizes[d];
  }
  char where[512] = "";
  tpu_format_shape(where, sizeof where, t->ndim, coords, ", ");
  /* An op without tensor inputs (fill, random) computes from scalars the host gave it. */
  const char *source = call->n_inputs == 0 ? "from scalar arguments given by the host"
                       : inputs_nonfinite(call, HOST, d)
                           ? "from a non-finite value on the host (a CPU tensor or scalar)"
                           : "from finite inputs";
  return tpu_error(TPU_ERR_RUNTIME,
                   "tpu op '%s' produced %s in output %d (%s, shape %s) at index %s, %s "
                   "(TORCH_TPU_CHECK_NAN)",
                   tpu_op_name(call->op), value_name(value), output, tpu_dtype_name(t->dtype),
                   shape, where, source);
}

tpu_status tpu_op_debug_end(const tpu_op_call *call, const tpu_op_debug *d, tpu_status status) {
  if (d->trace)
    tpu_op_trace_add(call, tpu_now_us() - d->start_us, status);
  if (status != TPU_OK || !d->nan_check)
    return status;
  if (!d->scan)
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED,
                     "TORCH_TPU_CHECK_NAN: the %s driver cannot scan tensors for NaN",
                     tpu_driver()->name);
  for (int o = 0; o < call->n_outputs; o++) {
    if (!d->scan(&call->tensors[call->n_inputs + o]))
      continue;
    /* Passed on, not made here: an input already held one. */
    if (d->inputs_nonfinite || inputs_nonfinite(call, DEVICE_OTHER, d))
      return TPU_OK;
    return report(call, d, o);
  }
  return TPU_OK;
}
