#include "drivers/pjrt/tpu_pjrt_executable.h"

#include <stdlib.h>
#include <string.h>

#include "drivers/pjrt/tpu_pjrt_error.h"
#include "drivers/pjrt/tpu_pjrt_event.h"
#include "drivers/pjrt/tpu_pjrt_plugin.h"

/* A serialized xla.CompileOptionsProto: executable_build_options (field 3, 4 bytes) holding
 * num_replicas = 1 (field 4) and num_partitions = 1 (field 5), and compile_portable_executable
 * (field 4 of the outer message): one executable runs on whichever device a run names. XLA's
 * plugins abort on an empty proto (0 replicas) instead of returning an error, so the options are
 * never left out. */
static const char compile_options[] = {0x1a, 0x04, 0x20, 0x01, 0x28, 0x01, 0x20, 0x01};

const char *tpu_pjrt_executable_options(size_t *size) {
  *size = sizeof compile_options;
  return compile_options;
}

static PJRT_Error *destroy_loaded(const PJRT_Api *api, PJRT_LoadedExecutable *executable) {
  PJRT_LoadedExecutable_Destroy_Args args = {
      .struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE, .executable = executable};
  return api->PJRT_LoadedExecutable_Destroy(&args);
}

/* The loaded executable's compiled executable, which the caller destroys (destroy_compiled). */
static tpu_status get_compiled(const PJRT_Api *api, PJRT_LoadedExecutable *loaded,
                               PJRT_Executable **out) {
  PJRT_LoadedExecutable_GetExecutable_Args get = {
      .struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE,
      .loaded_executable = loaded};
  tpu_status status = tpu_pjrt_status(api, api->PJRT_LoadedExecutable_GetExecutable(&get),
                                      "PJRT_LoadedExecutable_GetExecutable");
  *out = status == TPU_OK ? get.executable : NULL;
  return status;
}

static PJRT_Error *destroy_compiled(const PJRT_Api *api, PJRT_Executable *executable) {
  PJRT_Executable_Destroy_Args destroy = {.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE,
                                          .executable = executable};
  return api->PJRT_Executable_Destroy(&destroy);
}

/* The number of results, which the compiled executable knows (the loaded one does not say). */
static tpu_status count_outputs(const PJRT_Api *api, PJRT_LoadedExecutable *loaded, size_t *out) {
  PJRT_Executable *compiled;
  tpu_status status = get_compiled(api, loaded, &compiled);
  if (status != TPU_OK)
    return status;
  PJRT_Executable_NumOutputs_Args outputs = {
      .struct_size = PJRT_Executable_NumOutputs_Args_STRUCT_SIZE, .executable = compiled};
  status = tpu_pjrt_status(api, api->PJRT_Executable_NumOutputs(&outputs),
                           "PJRT_Executable_NumOutputs");
  PJRT_Error *destroy_failed = destroy_compiled(api, compiled);
  if (status != TPU_OK) {
    tpu_pjrt_error_drop(api, destroy_failed);
    return status;
  }
  *out = outputs.num_outputs;
  return tpu_pjrt_status(api, destroy_failed, "PJRT_Executable_Destroy");
}

/* Wraps a loaded executable the client made; destroys it on failure. */
static tpu_status wrap_loaded(const tpu_pjrt_client *client, PJRT_LoadedExecutable *loaded,
                              tpu_pjrt_executable **out) {
  const PJRT_Api *api = client->api;
  tpu_pjrt_executable *exe = calloc(1, sizeof *exe);
  tpu_status status = exe ? count_outputs(api, loaded, &exe->output_count)
                          : tpu_error(TPU_ERR_OUT_OF_MEMORY, "out of host memory for PJRT");
  if (status != TPU_OK) {
    tpu_pjrt_error_drop(api, destroy_loaded(api, loaded));
    free(exe);
    return status;
  }
  exe->client = client;
  exe->executable = loaded;
  *out = exe;
  return TPU_OK;
}

tpu_status tpu_pjrt_executable_compile(const tpu_pjrt_client *client, const char *text,
                                       size_t size, tpu_pjrt_executable **out) {
  *out = NULL;
  if (!text || size == 0)
    return tpu_error(TPU_ERR_VALUE, "an empty StableHLO module");
  const PJRT_Api *api = client->api;
  /* PJRT_Program's code is not const because other calls write it; compiling only reads it. */
  PJRT_Program program = {.struct_size = PJRT_Program_STRUCT_SIZE,
                          .code = (char *)text,
                          .code_size = size,
                          .format = "mlir",
                          .format_size = 4};
  PJRT_Client_Compile_Args args = {.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE,
                                   .client = client->client,
                                   .program = &program,
                                   .compile_options = compile_options,
                                   .compile_options_size = sizeof compile_options};
  tpu_status status =
      tpu_pjrt_status(api, api->PJRT_Client_Compile(&args), "PJRT_Client_Compile");
  return status == TPU_OK ? wrap_loaded(client, args.executable, out) : status;
}

bool tpu_pjrt_executable_can_serialize(const PJRT_Api *api) {
  return TPU_PJRT_HAS(api, PJRT_Executable_Serialize) &&
         TPU_PJRT_HAS(api, PJRT_Executable_DeserializeAndLoad);
}

tpu_status tpu_pjrt_executable_serialize(const tpu_pjrt_executable *exe, char **out,
                                         size_t *size) {
  *out = NULL;
  *size = 0;
  const PJRT_Api *api = exe->client->api;
  if (!tpu_pjrt_executable_can_serialize(api))
    return tpu_error(TPU_ERR_RUNTIME, "the PJRT plugin cannot serialize executables");
  PJRT_Executable *compiled;
  tpu_status status = get_compiled(api, exe->executable, &compiled);
  if (status != TPU_OK)
    return status;
  PJRT_Executable_Serialize_Args args = {.struct_size = PJRT_Executable_Serialize_Args_STRUCT_SIZE,
                                         .executable = compiled};
  status = tpu_pjrt_status(api, api->PJRT_Executable_Serialize(&args), "PJRT_Executable_Serialize");
  if (status == TPU_OK) {
    *out = malloc(args.serialized_bytes_size ? args.serialized_bytes_size : 1);
    if (*out) {
      memcpy(*out, args.serialized_bytes, args.serialized_bytes_size);
      *size = args.serialized_bytes_size;
    } else {
      status = tpu_error(TPU_ERR_OUT_OF_MEMORY, "out of host memory for a serialized executable");
    }
    if (args.serialized_executable_deleter)
      args.serialized_executable_deleter(args.serialized_executable);
  }
  PJRT_Error *destroy_failed = destroy_compiled(api, compiled);
  if (status != TPU_OK) {
    tpu_pjrt_error_drop(api, destroy_failed);
    return status;
  }
  return tpu_pjrt_status(api, destroy_failed, "PJRT_Executable_Destroy");
}

tpu_status tpu_pjrt_executable_deserialize(const tpu_pjrt_client *client, const char *bytes,
                                           size_t size, tpu_pjrt_executable **out) {
  *out = NULL;
  const PJRT_Api *api = client->api;
  if (!tpu_pjrt_executable_can_serialize(api))
    return tpu_error(TPU_ERR_RUNTIME, "the PJRT plugin cannot load serialized executables");
  if (!bytes || size == 0)
    return tpu_error(TPU_ERR_VALUE, "an empty serialized executable");
  PJRT_Executable_DeserializeAndLoad_Args args = {
      .struct_size = PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE,
      .client = client->client,
      .serialized_executable = bytes,
      .serialized_executable_size = size};
  tpu_status status = tpu_pjrt_status(api, api->PJRT_Executable_DeserializeAndLoad(&args),
                                      "PJRT_Executable_DeserializeAndLoad");
  return status == TPU_OK ? wrap_loaded(client, args.loaded_executable, out) : status;
}

tpu_status tpu_pjrt_executable_run(const tpu_pjrt_executable *exe, size_t device,
                                   PJRT_Buffer *const *inputs, size_t input_count,
                                   PJRT_Buffer **outputs, size_t output_count, PJRT_Event **done) {
  if (done)
    *done = NULL;
  if (device >= exe->client->device_count)
    return tpu_error(TPU_ERR_VALUE, "no PJRT device %zu (the client has %zu)", device,
                     exe->client->device_count);
  if (output_count != exe->output_count)
    return tpu_error(TPU_ERR_VALUE, "the executable makes %zu outputs, not %zu", exe->output_count,
                     output_count);
  if (input_count && !inputs)
    return tpu_error(TPU_ERR_VALUE, "no input buffers for %zu inputs", input_count);
  for (size_t i = 0; i < input_count; i++)
    if (!inputs[i])
      return tpu_error(TPU_ERR_VALUE, "input %zu is not a buffer", i);
  for (size_t i = 0; i < output_count; i++)
    outputs[i] = NULL;
  const PJRT_Api *api = exe->client->api;
  /* One device: the argument and output lists are one list each. */
  PJRT_ExecuteOptions options = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE};
  PJRT_Event *complete = NULL;
  PJRT_LoadedExecutable_Execute_Args args = {
      .struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE,
      .executable = exe->executable,
      .options = &options,
      .argument_lists = &inputs,
      .num_devices = 1,
      .num_args = input_count,
      .output_lists = &outputs,
      .device_complete_events = &complete,
      .execute_device = exe->client->devices[device],
  };
  tpu_status status = tpu_pjrt_status(api, api->PJRT_LoadedExecutable_Execute(&args),
                                      "PJRT_LoadedExecutable_Execute");
  if (status == TPU_OK && done)
    *done = complete;
  else if (status == TPU_OK)
    status = tpu_pjrt_event_await(api, complete, "PJRT_LoadedExecutable_Execute");
  if (status != TPU_OK) {
    for (size_t i = 0; i < output_count; i++) {
      PJRT_Buffer_Destroy_Args destroy = {.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE,
                                          .buffer = outputs[i]};
      if (outputs[i])
        tpu_pjrt_error_drop(api, api->PJRT_Buffer_Destroy(&destroy));
      outputs[i] = NULL;
    }
  }
  return status;
}

tpu_status tpu_pjrt_executable_destroy(tpu_pjrt_executable *exe) {
  if (!exe)
    return TPU_OK;
  const PJRT_Api *api = exe->client->api;
  tpu_status status = tpu_pjrt_status(api, destroy_loaded(api, exe->executable),
                                      "PJRT_LoadedExecutable_Destroy");
  free(exe);
  return status;
}
