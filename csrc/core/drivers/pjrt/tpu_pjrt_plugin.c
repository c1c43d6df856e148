#include "drivers/pjrt/tpu_pjrt_plugin.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "drivers/pjrt/tpu_pjrt_error.h"

/* Every PJRT function the driver calls. A plugin built from an older header has a shorter PJRT_Api
 * (its struct_size says how long), and a slot may be NULL where a plugin leaves it out, so each is
 * checked once here rather than trusted at the call. */
#define TPU_PJRT_USED(X)                                                                           \
  X(PJRT_Error_Destroy)                                                                            \
  X(PJRT_Error_Message)                                                                            \
  X(PJRT_Error_GetCode)                                                                            \
  X(PJRT_Plugin_Initialize)                                                                        \
  X(PJRT_Event_Destroy)                                                                            \
  X(PJRT_Event_Await)                                                                              \
  X(PJRT_Event_OnReady)                                                                            \
  X(PJRT_Client_Create)                                                                            \
  X(PJRT_Client_Destroy)                                                                           \
  X(PJRT_Client_AddressableDevices)                                                                \
  X(PJRT_Client_PlatformName)                                                                      \
  X(PJRT_Client_PlatformVersion)                                                                   \
  X(PJRT_Client_Compile)                                                                           \
  X(PJRT_Client_BufferFromHostBuffer)                                                              \
  X(PJRT_LoadedExecutable_Destroy)                                                                 \
  X(PJRT_LoadedExecutable_GetExecutable)                                                           \
  X(PJRT_LoadedExecutable_Execute)                                                                 \
  X(PJRT_Executable_Destroy)                                                                       \
  X(PJRT_Executable_NumOutputs)                                                                    \
  X(PJRT_Buffer_Destroy)                                                                           \
  X(PJRT_Buffer_ToHostBuffer)

static pthread_mutex_t plugin_mu = PTHREAD_MUTEX_INITIALIZER;
static char loaded_path[4096];
static const PJRT_Api *loaded_api;

static tpu_status check_api(const PJRT_Api *api, const char *path) {
  size_t version_end = offsetof(PJRT_Api, pjrt_api_version) + sizeof api->pjrt_api_version;
  if (api->struct_size < version_end)
    return tpu_error(TPU_ERR_RUNTIME, "PJRT plugin %s: its PJRT_Api is too short (%zu bytes)",
                     path, api->struct_size);
  int major = api->pjrt_api_version.major_version, minor = api->pjrt_api_version.minor_version;
  if (major != PJRT_API_MAJOR)
    return tpu_error(TPU_ERR_RUNTIME,
                     "PJRT plugin %s implements PJRT C API %d.%d; the driver speaks %d.%d (major "
                     "version %d only)",
                     path, major, minor, PJRT_API_MAJOR, PJRT_API_MINOR, PJRT_API_MAJOR);
#define TPU_PJRT_CHECK_SLOT(fn)                                                                    \
  if (!TPU_PJRT_HAS(api, fn))                                                                      \
    return tpu_error(TPU_ERR_RUNTIME,                                                              \
                     "PJRT plugin %s (C API %d.%d) lacks %s, which the driver (C API %d.%d) "    \
                     "calls",                                                                      \
                     path, major, minor, #fn, PJRT_API_MAJOR, PJRT_API_MINOR);
  TPU_PJRT_USED(TPU_PJRT_CHECK_SLOT)
#undef TPU_PJRT_CHECK_SLOT
  return TPU_OK;
}

/* Plugin_Initialize runs once: the table is cached only after it succeeded. */
static tpu_status load(const char *path, const PJRT_Api **out) {
  /* Never closed: plugins start threads and register global state (XLA's FFI registry) that
   * unloading would tear down under them. RTLD_LOCAL keeps its symbols (LLVM, abseil) from
   * interposing on other copies in the process. */
  void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return tpu_error(TPU_ERR_RUNTIME, "cannot load PJRT plugin %s: %s", path, dlerror());
  const PJRT_Api *(*get_api)(void) = (const PJRT_Api *(*)(void))dlsym(library, "GetPjrtApi");
  if (!get_api)
    return tpu_error(TPU_ERR_RUNTIME, "%s is not a PJRT plugin: it exports no GetPjrtApi", path);
  const PJRT_Api *api = get_api();
  if (!api)
    return tpu_error(TPU_ERR_RUNTIME, "PJRT plugin %s: GetPjrtApi returned NULL", path);
  tpu_status status = check_api(api, path);
  if (status != TPU_OK)
    return status;
  PJRT_Plugin_Initialize_Args init = {.struct_size = PJRT_Plugin_Initialize_Args_STRUCT_SIZE};
  status = tpu_pjrt_status(api, api->PJRT_Plugin_Initialize(&init), "PJRT_Plugin_Initialize");
  if (status != TPU_OK)
    return status;
  snprintf(loaded_path, sizeof loaded_path, "%s", path);
  loaded_api = api;
  *out = api;
  return TPU_OK;
}

tpu_status tpu_pjrt_plugin_load(const char *path, const PJRT_Api **out) {
  if (!path || !*path)
    return tpu_error(TPU_ERR_VALUE, "no PJRT plugin path given");
  if (strlen(path) >= sizeof loaded_path)
    return tpu_error(TPU_ERR_VALUE, "PJRT plugin path too long (%zu bytes)", strlen(path));
  pthread_mutex_lock(&plugin_mu);
  tpu_status status = TPU_OK;
  if (!loaded_api)
    status = load(path, out);
  else if (strcmp(loaded_path, path) == 0)
    *out = loaded_api;
  else
    status = tpu_error(TPU_ERR_VALUE,
                       "PJRT plugin %s is loaded; a process loads one plugin, not also %s",
                       loaded_path, path);
  pthread_mutex_unlock(&plugin_mu);
  return status;
}
