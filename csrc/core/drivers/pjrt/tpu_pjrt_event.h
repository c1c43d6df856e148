/* Waiting for PJRT events: copies and executions complete asynchronously, and each returns an
 * event the caller owns. */
#ifndef TPU_PJRT_EVENT_H
#define TPU_PJRT_EVENT_H

#include "base/tpu_status.h"
#include "pjrt/pjrt_c_api.h"

/* Blocks until `event` is ready, destroys it and returns its error as a status (TPU_OK for a NULL
 * event). `call` names the operation the event belongs to, for the message. */
tpu_status tpu_pjrt_event_await(const PJRT_Api *api, PJRT_Event *event, const char *call);

#endif
