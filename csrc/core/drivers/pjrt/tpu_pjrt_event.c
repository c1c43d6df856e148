#include "drivers/pjrt/tpu_pjrt_event.h"

#include "drivers/pjrt/tpu_pjrt_error.h"

tpu_status tpu_pjrt_event_await(const PJRT_Api *api, PJRT_Event *event, const char *call) {
  if (!event)
    return TPU_OK;
  PJRT_Event_Await_Args wait = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = event};
  PJRT_Error *failed = api->PJRT_Event_Await(&wait);
  PJRT_Event_Destroy_Args destroy = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE,
                                     .event = event};
  PJRT_Error *destroy_failed = api->PJRT_Event_Destroy(&destroy);
  if (failed) {
    tpu_pjrt_error_drop(api, destroy_failed);
    return tpu_pjrt_status(api, failed, call);
  }
  return tpu_pjrt_status(api, destroy_failed, "PJRT_Event_Destroy");
}
