#include "exec/tpu_device.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "base/tpu_env.h"

/* A TPU v5e chip has 16 GiB of HBM; the simulated chip has as much when the host can afford it. */
#define TPU_DEFAULT_CAPACITY (16ull << 30)

/* One segment of the caching allocator: a smaller chip could not hold a single allocation. */
#define TPU_MIN_CAPACITY (2ull << 20)

static pthread_once_t registry_once = PTHREAD_ONCE_INIT;
static int device_count;
static size_t device_capacity;
static atomic_bool runtime_initialized;
static atomic_bool in_bad_fork;

/* Half the machine's RAM shared among the chips, so the host keeps room for itself. */
static uint64_t default_capacity(int count) {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0)
    return TPU_DEFAULT_CAPACITY;
  uint64_t share = (uint64_t)pages * (uint64_t)page_size / 2 / (uint64_t)count;
  return share < TPU_DEFAULT_CAPACITY ? share : TPU_DEFAULT_CAPACITY;
}

/* Only a child forked after initialization is unusable: worker threads and queued work do not
 * survive fork(), exactly as a CUDA context does not. */
static void atfork_child(void) {
  if (atomic_load(&runtime_initialized))
    atomic_store(&in_bad_fork, true);
}

static void registry_init(void) {
  int64_t count = tpu_env_int("TORCH_TPU_NUM_DEVICES", 1);
  device_count = count < 1 ? 1 : count > TPU_MAX_DEVICES ? TPU_MAX_DEVICES : (int)count;

  uint64_t capacity = default_capacity(device_count);
  const char *text = tpu_env_get("TORCH_TPU_DEVICE_MEMORY");
  if (text) {
    uint64_t parsed;
    if (tpu_parse_bytes(text, &parsed))
      capacity = parsed;
    else
      fprintf(stderr, "torch_tpu: ignoring malformed TORCH_TPU_DEVICE_MEMORY=%s\n", text);
  }
  if (capacity < TPU_MIN_CAPACITY)
    capacity = TPU_MIN_CAPACITY;
  if (capacity > SIZE_MAX / 4)
    capacity = SIZE_MAX / 4; /* the arena reserves twice the capacity; keep that representable */
  device_capacity = (size_t)capacity;

  pthread_atfork(NULL, NULL, atfork_child);
}

static void registry_ensure(void) { pthread_once(&registry_once, registry_init); }

int tpu_device_count(void) {
  registry_ensure();
  return device_count;
}

tpu_status tpu_device_check(int device) {
  registry_ensure();
  if (atomic_load(&in_bad_fork))
    return tpu_error(TPU_ERR_BAD_FORK,
                     "Cannot re-initialize TPU in forked subprocess. To use TPU with "
                     "multiprocessing, you must use the 'spawn' start method");
  if (device < 0 || device >= device_count)
    return tpu_error(TPU_ERR_RUNTIME, "invalid device ordinal: tpu:%d (there are %d devices)",
                     device, device_count);
  return TPU_OK;
}

size_t tpu_device_capacity(int device) {
  registry_ensure();
  return device >= 0 && device < device_count ? device_capacity : 0;
}

const char *tpu_device_name(int device) {
  (void)device; /* every simulated chip is the same part */
  return "TPU v5e (simulated)";
}

void tpu_runtime_mark_initialized(void) {
  registry_ensure();
  atomic_store(&runtime_initialized, true);
}

bool tpu_runtime_in_bad_fork(void) { return atomic_load(&in_bad_fork); }
