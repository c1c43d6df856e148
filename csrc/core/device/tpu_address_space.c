#include "device/tpu_address_space.h"

#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "device/tpu_device.h"

/* Without a limit: a pending range only bounds the pending bytes that exist at once, and the
 * pinned range the pinned bytes; both far beyond what a process holds. */
#define PENDING_UNLIMITED ((size_t)1 << 40)
#define HOST_UNLIMITED ((size_t)64 << 30)

/* Capacities stay whole allocator segments (mem/tpu_allocator.c's 2 MiB). */
#define SEGMENT ((size_t)2 << 20)

/* Written once by tpu_address_space_plan, inside the chips' pthread_once (device/tpu_device.c); read only
 * after it, through tpu_device_count or tpu_device_capacity. */
static bool limited;
static size_t host_bytes = HOST_UNLIMITED;

/* 0 when /proc/self/statm is unreadable, which overstates what is left; the half kept for the
 * process absorbs that. */
size_t tpu_address_space_mapped(void) {
  unsigned long pages = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    if (fscanf(f, "%lu", &pages) != 1)
      pages = 0;
    fclose(f);
  }
  long page = sysconf(_SC_PAGESIZE);
  return (size_t)pages * (size_t)(page > 0 ? page : 4096);
}

size_t tpu_address_space_left(void) {
  struct rlimit lim;
  if (getrlimit(RLIMIT_AS, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY)
    return SIZE_MAX;
  size_t mapped = tpu_address_space_mapped();
  return (size_t)lim.rlim_cur > mapped ? (size_t)lim.rlim_cur - mapped : 0;
}

void tpu_address_space_plan(int count, size_t *capacities) {
  size_t left = tpu_address_space_left();
  if (left == SIZE_MAX)
    return;
  limited = true;
  /* Half of what is left for the runtime, an eighth of that for pinned memory, the rest shared
   * by the chips, each reserving three times its capacity: its arena twice, its pending range
   * once. */
  size_t share = left / 2;
  host_bytes = share / 8 < HOST_UNLIMITED ? share / 8 : HOST_UNLIMITED;
  if (count < 1)
    return;
  size_t fit = (share - host_bytes) / (size_t)count / 3 / SEGMENT * SEGMENT;
  if (fit < SEGMENT)
    fit = SEGMENT; /* the smallest chip there is; its arena may still not fit, and says so */
  for (int d = 0; d < count; d++)
    if (capacities[d] > fit)
      capacities[d] = fit;
}

size_t tpu_address_space_pending_bytes(int device) {
  size_t capacity = tpu_device_capacity(device); /* first: it makes the plan */
  return limited ? capacity : PENDING_UNLIMITED;
}

size_t tpu_address_space_host_bytes(void) {
  tpu_device_count(); /* makes the plan */
  return host_bytes;
}
