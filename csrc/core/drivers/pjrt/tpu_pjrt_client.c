#include "drivers/pjrt/tpu_pjrt_client.h"

#include <stdlib.h>

#include "drivers/pjrt/tpu_pjrt_error.h"

static PJRT_Error *destroy_client(const PJRT_Api *api, PJRT_Client *client) {
  PJRT_Client_Destroy_Args args = {.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE,
                                   .client = client};
  return api->PJRT_Client_Destroy(&args);
}

tpu_status tpu_pjrt_client_create(const PJRT_Api *api, tpu_pjrt_client **out) {
  *out = NULL;
  tpu_pjrt_client *c = calloc(1, sizeof *c);
  if (!c)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "out of host memory for a PJRT client");
  c->api = api;
  /* No create options: plugins reject names they do not know, and each plugin knows others. */
  PJRT_Client_Create_Args create = {.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE};
  tpu_status status =
      tpu_pjrt_status(api, api->PJRT_Client_Create(&create), "PJRT_Client_Create");
  if (status != TPU_OK) {
    free(c);
    return status;
  }
  c->client = create.client;
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
