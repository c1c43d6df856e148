/* Executables of a PJRT client: StableHLO modules compiled once as portable executables (one
 * replica, one partition, no device fixed), each run on the device it names with buffers of that
 * device. */
#ifndef TPU_PJRT_EXECUTABLE_H
#define TPU_PJRT_EXECUTABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/tpu_status.h"
#include "drivers/pjrt/tpu_pjrt_client.h"

typedef struct tpu_pjrt_executable {
  const tpu_pjrt_client *client;
  PJRT_LoadedExecutable *executable;
  size_t output_count; /* the results one run makes */
} tpu_pjrt_executable;

/* Compiles the StableHLO module `text` (MLIR text or bytecode, `size` bytes) for one replica and
 * one partition. A module the plugin rejects is an error with the plugin's message. */
tpu_status tpu_pjrt_executable_compile(const tpu_pjrt_client *client, const char *text,
                                       size_t size, tpu_pjrt_executable **out);

/* Whether the plugin can serialize executables and load them back. */
bool tpu_pjrt_executable_can_serialize(const PJRT_Api *api);

/* The plugin's serialization of `exe` in a malloc'd *out of *size bytes (the caller frees it). */
tpu_status tpu_pjrt_executable_serialize(const tpu_pjrt_executable *exe, char **out, size_t *size);

/* Loads an executable serialized by tpu_pjrt_executable_serialize with the same plugin. */
tpu_status tpu_pjrt_executable_deserialize(const tpu_pjrt_client *client, const char *bytes,
                                           size_t size, tpu_pjrt_executable **out);

/* Launches the executable on the client's device `device` (an index into client->devices) with
 * `inputs` (its parameters, in order, buffers of that device); outputs[0..output_count) receive
 * new buffers the caller destroys (tpu_pjrt_buffer_destroy), usable as inputs at once. With
 * `done`, it returns once the execution is enqueued and *done receives its completion event
 * (which the caller owns; it may be NULL); without, it waits until the execution has finished. */
tpu_status tpu_pjrt_executable_run(const tpu_pjrt_executable *exe, size_t device,
                                   PJRT_Buffer *const *inputs, size_t input_count,
                                   PJRT_Buffer **outputs, size_t output_count, PJRT_Event **done);

/* The serialized compile options every executable is built with (*size bytes): part of what a
 * serialized executable depends on (drivers/pjrt/tpu_pjrt_disk_cache.h). */
const char *tpu_pjrt_executable_options(size_t *size);

/* Frees the executable (NULL is fine) and returns the plugin's error, if any. */
tpu_status tpu_pjrt_executable_destroy(tpu_pjrt_executable *exe);

#endif
