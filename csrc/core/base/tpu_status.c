#include "base/tpu_status.h"

#include <stdio.h>

static _Thread_local char last_error[4096];

tpu_status tpu_verror(tpu_status status, const char *fmt, va_list ap) {
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  return status;
}

tpu_status tpu_error(tpu_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tpu_verror(status, fmt, ap);
  va_end(ap);
  return status;
}

const char *tpu_last_error(void) { return last_error; }

const char *tpu_status_name(tpu_status status) {
  switch (status) {
  case TPU_OK: return "ok";
  case TPU_ERR_RUNTIME: return "runtime error";
  case TPU_ERR_VALUE: return "value error";
  case TPU_ERR_TYPE: return "type error";
  case TPU_ERR_INDEX: return "index error";
  case TPU_ERR_OUT_OF_MEMORY: return "out of memory";
  case TPU_ERR_NOT_IMPLEMENTED: return "not implemented";
  case TPU_ERR_BAD_FORK: return "bad fork";
  case TPU_ERR_DIST: return "distributed error";
  }
  return "unknown error";
}
