/* A library posing as a PJRT plugin for test_pjrt_plugin.c. Its GetPjrtApi returns a table of the
 * next major version when FAKE_PJRT_VARIANT is "major", else one whose struct_size ends before
 * PJRT_Client_Create (a plugin built from an older header). The driver must refuse both before
 * calling anything, so the table holds no function. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt/pjrt_c_api.h"

const PJRT_Api *GetPjrtApi(void);

const PJRT_Api *GetPjrtApi(void) {
  static PJRT_Api api;
  const char *variant = getenv("FAKE_PJRT_VARIANT");
  memset(&api, 0, sizeof api);
  api.struct_size = offsetof(PJRT_Api, PJRT_Client_Create);
  api.pjrt_api_version.struct_size = PJRT_Api_Version_STRUCT_SIZE;
  api.pjrt_api_version.major_version = PJRT_API_MAJOR;
  api.pjrt_api_version.minor_version = PJRT_API_MINOR - 1;
  if (variant && strcmp(variant, "major") == 0) {
    api.struct_size = PJRT_Api_STRUCT_SIZE;
    api.pjrt_api_version.major_version = PJRT_API_MAJOR + 1;
  }
  return &api;
}
