#include "drivers/pjrt/tpu_pjrt_error.h"

#include <limits.h>

/* Abseil's status code names, which PJRT's codes copy (PJRT_Error_Code, 1 to 16). */
static const char *code_name(PJRT_Error_Code code) {
  static const char *const names[] = {
      "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
      "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
      "UNAUTHENTICATED"};
  size_t i = (size_t)code;
  return i < sizeof names / sizeof names[0] ? names[i] : "UNKNOWN";
}

static tpu_status status_of(PJRT_Error_Code code) {
  switch (code) {
  case PJRT_Error_Code_INVALID_ARGUMENT: return TPU_ERR_VALUE;
  case PJRT_Error_Code_RESOURCE_EXHAUSTED: return TPU_ERR_OUT_OF_MEMORY;
  case PJRT_Error_Code_UNIMPLEMENTED: return TPU_ERR_NOT_IMPLEMENTED;
  default: return TPU_ERR_RUNTIME;
  }
}

void tpu_pjrt_error_drop(const PJRT_Api *api, PJRT_Error *error) {
  if (!error)
    return;
  PJRT_Error_Destroy_Args args = {.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE,
                                  .error = error};
  api->PJRT_Error_Destroy(&args);
}

tpu_status tpu_pjrt_status(const PJRT_Api *api, PJRT_Error *error, const char *call) {
  if (!error)
    return TPU_OK;
  PJRT_Error_Message_Args message = {.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE,
                                     .error = error};
  api->PJRT_Error_Message(&message);
  PJRT_Error_GetCode_Args code = {.struct_size = PJRT_Error_GetCode_Args_STRUCT_SIZE,
                                  .error = error};
  /* Reading the code can itself fail; the message is still worth reporting then. */
  PJRT_Error *code_error = api->PJRT_Error_GetCode(&code);
  if (code_error) {
    tpu_pjrt_error_drop(api, code_error);
    code.code = PJRT_Error_Code_UNKNOWN;
  }
  /* The message is not NUL-terminated and lives as long as the error: format it first. */
  int length = message.message_size > INT_MAX ? INT_MAX : (int)message.message_size;
  tpu_status status = tpu_error(status_of(code.code), "%s: %s: %.*s", call, code_name(code.code),
                                length, message.message ? message.message : "");
  tpu_pjrt_error_drop(api, error);
  return status;
}
