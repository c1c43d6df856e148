#include "drivers/pjrt/tpu_pjrt_client.h"

#include <stdlib.h>

#include "base/tpu_env.h"
#include "drivers/pjrt/tpu_pjrt_error.h"

static PJRT_Error *destroy_client(const PJRT_Api *api, PJRT_Client *client) {
  PJRT_Client_Destroy_Args args = {.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE,
                                   .client = client};
  return api->PJRT_Client_Destroy(&args);
}

/* Creates the plugin's client. A device count asked for goes to XLA's CPU plugin as its
 * cpu_device_count option; plugins reject options they do not know, so another plugin is created
 * again without it. */
static tpu_status create_client(const PJRT_Api *api, int64_t asked, PJRT_Client **out) {
  PJRT_NamedValue count = {.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                           .name = "cpu_device_count",
                           .name_size = sizeof "cpu_device_count" - 1,
                           .type = PJRT_NamedValue_kInt64,
                           .int64_value = asked,
                           .value_size = 1};
  PJRT_Client_Create_Args create = {.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE,
                                    .create_options = &count,
                                    .num_options = asked > 0 ? 1 : 0};
  PJRT_Error *failed = api->PJRT_Client_Create(&create);
  if (failed && asked > 0) {
    tpu_pjrt_error_drop(api, failed);
    create.num_options = 0;
    failed = api->PJRT_Client_Create(&create);
  }
  *out = create.client;
  return tpu_pjrt_status(api, failed, "PJRT_Client_Create");
}

tpu_status tpu_pjrt_client_create(const PJRT_Api *api, tpu_pjrt_client **out) {
  *out = NULL;
  tpu_pjrt_client *c = calloc(1, sizeof *c);
  if (!c)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "out of host memory for a PJRT client");
  c->api = api;
  int64_t asked = tpu_env_int("TORCH_TPU_NUM_DEVICES", 0);
  if (asked > TPU_MAX_DEVICES)
    asked = TPU_MAX_DEVICES;
  tpu_status status = create_client(api, asked, &c->client);
  if (status != TPU_OK) {
    free(c);
    return status;
  }
  PJRT_Client_AddressableDevices_Args devices = {
      .struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE, .client = c->client};
  status = tpu_pjrt_status(api, api->PJRT_Client_AddressableDevices(&devices),
                           "PJRT_Client_AddressableDevices");
  if (status == TPU_OK && devices.num_addressable_devices == 0)
    status = tpu_error(TPU_ERR_RUNTIME, "the PJRT client has no addressable device");
  if (status != TPU_OK) {
    tpu_pjrt_error_drop(api, destroy_client(api, c->client));
    free(c);
    return status;
  }
  c->devices = devices.addressable_devices;
  c->device_count = devices.num_addressable_devices;
  if (c->device_count > TPU_MAX_DEVICES)
    c->device_count = TPU_MAX_DEVICES;
  if (asked > 0 && (size_t)asked < c->device_count)
    c->device_count = (size_t)asked;
  *out = c;
  return TPU_OK;
}

tpu_status tpu_pjrt_client_destroy(tpu_pjrt_client *client) {
  if (!client)
    return TPU_OK;
  tpu_status status = tpu_pjrt_status(client->api, destroy_client(client->api, client->client),
                                      "PJRT_Client_Destroy");
  free(client);
  return status;
}
