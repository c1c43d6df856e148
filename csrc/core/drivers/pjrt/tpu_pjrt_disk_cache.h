/* The PJRT driver's executables on disk, so that a second process skips XLA's compile. One file per
 * module under TORCH_TPU_CACHE_DIR/pjrt-<plugin>/, where <plugin> hashes the plugin's identity
 * (its file, size, modification time, platform and version: serialized executables only load into
 * the library that made them), the compile options and XLA_FLAGS, XLA's compiler options. A file
 * holds the module text, compared in full on load, and the plugin's serialization of the
 * executable. Unreadable, foreign or corrupt files are misses; a failure to write one warns once
 * and changes nothing else. TORCH_TPU_DISK_CACHE=0 turns it off. */
#ifndef TPU_PJRT_DISK_CACHE_H
#define TPU_PJRT_DISK_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drivers/pjrt/tpu_pjrt_executable.h"

/* FNV-1a of `data` continuing from `h` (TPU_PJRT_HASH_SEED to start): module texts' hashes name
 * their files, and the executable cache (tpu_pjrt_cache.c) keys them the same way. */
#define TPU_PJRT_HASH_SEED 0xcbf29ce484222325ull
uint64_t tpu_pjrt_hash(uint64_t h, const void *data, size_t len);

/* Chooses the directory for the client of the plugin at `plugin_path`; `platform` names its
 * platform and version. The cache stays off when turned off, or the plugin cannot serialize. */
void tpu_pjrt_disk_cache_open(const tpu_pjrt_client *client, const char *plugin_path,
                              const char *platform);

/* The executable of module `text` (`hash`: its hash) loaded from disk, or *out = NULL (a miss). */
void tpu_pjrt_disk_cache_load(const tpu_pjrt_client *client, const char *text, size_t len,
                              uint64_t hash, tpu_pjrt_executable **out);

/* Writes `exe`, compiled from `text`, to disk (atomically: readers never see half a file); false
 * when it could not. */
bool tpu_pjrt_disk_cache_store(const tpu_pjrt_executable *exe, const char *text, size_t len,
                               uint64_t hash);

#endif
