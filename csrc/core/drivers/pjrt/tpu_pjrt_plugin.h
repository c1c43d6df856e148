/* A PJRT plugin: a shared library exporting GetPjrtApi (XLA's CPU and GPU plugins, libtpu). The
 * PJRT driver loads the one TORCH_TPU_PJRT_PLUGIN names (src/torch_tpu/_pjrt_plugin.py turns a
 * package name into its library). */
#ifndef TPU_PJRT_PLUGIN_H
#define TPU_PJRT_PLUGIN_H

#include <stddef.h>

#include "base/tpu_status.h"
#include "pjrt/pjrt_c_api.h"

/* Whether the plugin's table has function `fn`: the slot lies inside it (reading past it is out of
 * bounds) and is set. For the optional functions; tpu_pjrt_plugin_load checks the required ones. */
#define TPU_PJRT_HAS(api, fn)                                                                      \
  (offsetof(PJRT_Api, fn) + sizeof((api)->fn) <= (api)->struct_size && (api)->fn != NULL)

/* Loads the plugin at `path` once per process, checks its API (major version 0, every function the
 * driver calls present within its struct size) and initializes it; *out receives its function
 * table. Loading the same path again returns the same table; another path is an error, since
 * plugins cannot be unloaded. */
tpu_status tpu_pjrt_plugin_load(const char *path, const PJRT_Api **out);

#endif
