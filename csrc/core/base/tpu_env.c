#include "base/tpu_env.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const tpu_env_var registry[] = {
    {"TORCH_TPU_DRIVER", "host, or pjrt on a TPU host",
     "The driver that runs the chips: host (simulated chips in host memory) or pjrt (a PJRT "
     "plugin's device: XLA's CPU or GPU plugin, libtpu; see TORCH_TPU_PJRT_PLUGIN). Unset, a "
     "machine with TPU chips (/dev/accel* or /dev/vfio) and the libtpu package gets pjrt with "
     "libtpu. An unknown name makes every tpu call raise an error that lists the drivers there "
     "are.",
     TPU_ENV_STABLE},
    {"TORCH_TPU_NUM_DEVICES", "1 (host), the plugin's (pjrt)",
     "Number of chips: the simulated ones the host driver exposes, or the first N of the PJRT "
     "plugin's devices (XLA's CPU plugin is created with N).",
     TPU_ENV_STABLE},
    {"TORCH_TPU_DEVICE_MEMORY", "min(16GiB, RAM/2/chips)",
     "Memory capacity of each simulated chip, e.g. 512MiB or 8GiB. Allocations past it raise "
     "torch.OutOfMemoryError. Under an address-space limit (ulimit -v) every chip's capacity "
     "shrinks to what the address space can hold.",
     TPU_ENV_STABLE},
    {"TORCH_TPU_LAUNCH_BLOCKING", "0",
     "1 runs every op synchronously on the calling thread, so errors surface at the op (debug "
     "mode).",
     TPU_ENV_STABLE},
    {"TORCH_TPU_EAGER_MODE", "strict",
     "Eager mode at start: debug (synchronous per op), strict (asynchronous like CUDA) or fused "
     "(ops deferred into graphs that are fused, cached and run at a materialization trigger). "
     "Overrides the two variables below.",
     TPU_ENV_STABLE},
    {"TORCH_TPU_DEFER_AND_FUSE", "0", "1 starts in fused mode (TorchTPU's name for it).",
     TPU_ENV_STABLE},
    {"TORCH_TPU_CPU_FALLBACK", "1",
     "0 makes an op without a native kernel raise NotImplementedError naming the op instead of "
     "running it on the CPU.",
     TPU_ENV_STABLE},
    {"TORCH_TPU_CHECK_NAN", "0",
     "1 checks every floating-point output of every op in debug mode: the first op that makes a NaN "
     "or an infinity from finite inputs raises RuntimeError naming the op and the output. Does "
     "nothing in strict and fused mode.",
     TPU_ENV_STABLE},
    {"TORCH_TPU_OP_TRACE", "0",
     "1 prints one line per op to stderr in debug mode: its name, its inputs' and outputs' dtypes "
     "and shapes, and the time it took. Does nothing in strict and fused mode.",
     TPU_ENV_STABLE},
    {"TORCH_TPU_STAGING_LIMIT", "1MiB",
     "Largest pageable host-to-device copy that is staged and queued; larger ones synchronize "
     "the stream and copy on the calling thread.",
     TPU_ENV_EXPERIMENTAL},
    {"TORCH_TPU_PJRT_PLUGIN", "found",
     "The PJRT driver's plugin: the path of a shared library exporting GetPjrtApi, or the name of "
     "an installed Python package holding one. Unset, torch_tpu looks for libtpu, then "
     "jax-cuda12-pjrt, then lammps-jax-pjrt-cpu (XLA's CPU plugin) among the installed packages.",
     TPU_ENV_EXPERIMENTAL},
    {"TORCH_TPU_DEVICES_PER_HOST", "unset (ranks share a host when their hostnames match)",
     "Forces the tpu_dist layout: ranks 0..N-1 form the first host, N..2N-1 the next, and so on, "
     "so one machine exercises the path between hosts (shared memory inside each host, Gloo "
     "between host leaders).",
     TPU_ENV_STABLE},
    {"TORCH_TPU_CACHE_DIR", "$XDG_CACHE_HOME/torch_tpu, else ~/.cache/torch_tpu",
     "Directory of the on-disk compile cache: the PJRT driver keeps each compiled executable "
     "there (one subdirectory per plugin build), so later processes load it instead of compiling.",
     TPU_ENV_STABLE},
    {"TORCH_TPU_COMPILE_REPLAY", "1",
     "0 runs every call of a torch.compile graph through its Python code and the dispatcher; by "
     "default the first call's op calls are captured and later calls with the same input layouts "
     "replay them with their own buffers.",
     TPU_ENV_EXPERIMENTAL},
    {"TORCH_TPU_LOG", "unset (nothing logged)",
     "Comma list of what to print on stderr. recompiles: each compile-cache miss of a graph whose "
     "skeleton (its ops and their connections) was compiled before, with the first difference: "
     "the node, its op, the input or output and the dimension (torch.tpu.compile_cache_stats() "
     "counts them by reason).",
     TPU_ENV_EXPERIMENTAL},
    {"TORCH_TPU_DISK_CACHE", "1", "0 keeps compiled executables in memory only (no disk cache).",
     TPU_ENV_STABLE},
    {"TORCH_TPU_PJRT_VERIFY_PROGRAMS", "0",
     "1 makes the PJRT driver lower every run again that it found compiled by structure, and "
     "fail it with a RuntimeError when the fresh module differs: a check for tests, as slow as "
     "lowering every run.",
     TPU_ENV_TESTING},
};

const tpu_env_var *tpu_env_list(size_t *count) {
  *count = sizeof registry / sizeof registry[0];
  return registry;
}

const char *tpu_env_stage_name(tpu_env_stage stage) {
  switch (stage) {
  case TPU_ENV_STABLE: return "stable";
  case TPU_ENV_EXPERIMENTAL: return "experimental";
  case TPU_ENV_TESTING: return "testing";
  }
  return "unknown";
}

const char *tpu_env_get(const char *name) {
  size_t n;
  const tpu_env_var *vars = tpu_env_list(&n);
  for (size_t i = 0; i < n; i++) {
    if (strcmp(vars[i].name, name) == 0) {
      const char *value = getenv(name);
      return value && *value ? value : NULL;
    }
  }
  fprintf(stderr, "torch_tpu: environment variable %s is not registered\n", name);
  abort();
}

bool tpu_env_flag(const char *name, bool fallback) {
  const char *v = tpu_env_get(name);
  if (!v)
    return fallback;
  return strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "yes") == 0 ||
         strcasecmp(v, "on") == 0;
}

int64_t tpu_env_int(const char *name, int64_t fallback) {
  const char *v = tpu_env_get(name);
  if (!v)
    return fallback;
  char *end;
  long long parsed = strtoll(v, &end, 10);
  return (*end == '\0' && end != v) ? (int64_t)parsed : fallback;
}

bool tpu_parse_bytes(const char *text, uint64_t *out) {
  char *end;
  if (!text || !isdigit((unsigned char)*text))
    return false;
  double value = strtod(text, &end);
  while (*end == ' ')
    end++;
  uint64_t scale = 1;
  switch (toupper((unsigned char)*end)) {
  case '\0': break;
  case 'K': scale = 1ull << 10; break;
  case 'M': scale = 1ull << 20; break;
  case 'G': scale = 1ull << 30; break;
  case 'T': scale = 1ull << 40; break;
  default: return false;
  }
  if (*end) {
    end++;
    if (*end && strcasecmp(end, "b") != 0 && strcasecmp(end, "ib") != 0)
      return false;
  }
  double bytes = value * (double)scale;
  if (bytes < 0 || bytes > 1.8e19)
    return false;
  *out = (uint64_t)bytes;
  return true;
}
