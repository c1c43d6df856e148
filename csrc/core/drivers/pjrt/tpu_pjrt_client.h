/* A PJRT client: one plugin's view of its devices, which owns everything made on them (buffers,
 * executables). */
#ifndef TPU_PJRT_CLIENT_H
#define TPU_PJRT_CLIENT_H

#include <stddef.h>

#include "base/tpu_status.h"
#include "drivers/tpu_driver.h"
#include "pjrt/pjrt_c_api.h"

typedef struct tpu_pjrt_client {
  const PJRT_Api *api;
  PJRT_Client *client;
  PJRT_Device *const *devices; /* the addressable devices, owned by the client */
  size_t device_count;         /* those the driver uses, the first ones: at least 1 */
} tpu_pjrt_client;

/* Creates a client of a loaded plugin (tpu_pjrt_plugin_load) and lists its addressable devices; a
 * client without any is an error. It uses all of them (at most TPU_MAX_DEVICES), or the first
 * TORCH_TPU_NUM_DEVICES when that is set, which XLA's CPU plugin is also created with. */
tpu_status tpu_pjrt_client_create(const PJRT_Api *api, tpu_pjrt_client **out);

/* Destroys the client (NULL is fine); its buffers and executables must be destroyed first. Returns
 * the plugin's error, if any: the client is freed either way. */
tpu_status tpu_pjrt_client_destroy(tpu_pjrt_client *client);

#endif
