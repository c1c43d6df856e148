#include "device/tpu_device.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "device/tpu_address_space.h"
#include "drivers/tpu_driver.h"

/* One segment of the caching allocator: a smaller chip could not hold a single allocation. */
#define TPU_MIN_CAPACITY (2ull << 20)

static pthread_once_t registry_once = PTHREAD_ONCE_INIT;
static int device_count;
static tpu_device_props props[TPU_MAX_DEVICES];
static atomic_bool runtime_initialized;
static atomic_bool in_bad_fork;

const char *tpu_device_kind_name(tpu_device_kind kind) {
  static const char *const names[] = {"simulated", "tpu", "gpu", "cpu"};
  return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "unknown";
}

/* Only a child forked after initialization is unusable: worker threads and queued work do not
 * survive fork(), exactly as a CUDA context does not. */
static void atfork_child(void) {
  if (atomic_load(&runtime_initialized))
    atomic_store(&in_bad_fork, true);
}

/* The driver's chips, read once; none when no driver could be selected. */
static void registry_init(void) {
  const tpu_driver_i *driver = tpu_driver();
  if (driver) {
    int count = driver->device_count();
    device_count = count < 0 ? 0 : count > TPU_MAX_DEVICES ? TPU_MAX_DEVICES : count;
  }
  size_t capacities[TPU_MAX_DEVICES];
  for (int d = 0; d < device_count; d++) {
    driver->device_props(d, &props[d]);
    if (props[d].memory_bytes < TPU_MIN_CAPACITY)
      props[d].memory_bytes = TPU_MIN_CAPACITY;
    if (props[d].memory_bytes > SIZE_MAX / 4)
      props[d].memory_bytes = SIZE_MAX / 4; /* the arena reserves twice this; keep that representable */
    capacities[d] = props[d].memory_bytes;
  }
  /* Under an address-space limit the chips get what their reservations can hold. */
  tpu_address_space_plan(device_count, capacities);
  for (int d = 0; d < device_count; d++)
    props[d].memory_bytes = capacities[d];
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
  if (!device_count && tpu_driver_error() != TPU_OK)
    return TPU_ERR_RUNTIME; /* no driver: its message says why */
  if (device < 0 || device >= device_count)
    return tpu_error(TPU_ERR_RUNTIME, "invalid device ordinal: tpu:%d (there are %d devices)",
                     device, device_count);
  return TPU_OK;
}

size_t tpu_device_capacity(int device) {
  registry_ensure();
  return device >= 0 && device < device_count ? props[device].memory_bytes : 0;
}

const tpu_device_props *tpu_device_props_of(int device) {
  registry_ensure();
  return device >= 0 && device < device_count ? &props[device] : NULL;
}

tpu_status tpu_device_drain(int device) {
  const tpu_driver_i *driver = tpu_driver();
  return driver && driver->device_wait ? driver->device_wait(device) : TPU_OK;
}

bool tpu_device_drained(int device) {
  const tpu_driver_i *driver = tpu_driver();
  return !driver || !driver->device_idle || driver->device_idle(device);
}

void tpu_runtime_mark_initialized(void) {
  registry_ensure();
  atomic_store(&runtime_initialized, true);
}

bool tpu_runtime_in_bad_fork(void) { return atomic_load(&in_bad_fork); }
