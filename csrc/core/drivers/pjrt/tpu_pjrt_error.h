/* PJRT errors as the core's statuses. Every PJRT call returns a PJRT_Error* that the caller owns;
 * these functions are the only places the driver destroys one, so none leaks and each failure
 * reaches the user with the plugin's own message. */
#ifndef TPU_PJRT_ERROR_H
#define TPU_PJRT_ERROR_H

#include "base/tpu_status.h"
#include "pjrt/pjrt_c_api.h"

/* TPU_OK for a NULL `error`; otherwise records "<call>: <CODE>: <plugin's message>" (tpu_error),
 * destroys `error` and returns the status its code maps to (TPU_ERR_RUNTIME by default). */
tpu_status tpu_pjrt_status(const PJRT_Api *api, PJRT_Error *error, const char *call);

/* Destroys `error` (NULL is fine) without recording it: for cleanup after a failure whose message
 * must stay the one the user sees. */
void tpu_pjrt_error_drop(const PJRT_Api *api, PJRT_Error *error);

#endif
