#include "drivers/pjrt/tpu_pjrt_map_budget.h"

#include <pthread.h>
#include <stdio.h>

/* The process's mappings: the lines of /proc/self/maps, or -1 when it cannot be read. */
static long count_mappings(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f)
    return -1;
  long lines = 0;
  char chunk[1 << 16];
  size_t got;
  while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
    for (size_t i = 0; i < got; i++)
      lines += chunk[i] == '\n';
  fclose(f);
  return lines;
}

/* vm.max_map_count, or -1 when it cannot be read. */
static long map_limit(void) {
  FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
  if (!f)
    return -1;
  long limit;
  if (fscanf(f, "%ld", &limit) != 1)
    limit = -1;
  fclose(f);
  return limit;
}

/* Reading /proc/self/maps costs time in proportion to the mappings, so a check that finds plenty
 * left skips the next ones: no compile maps more than MAPS_PER_COMPILE regions. */
#define MAPS_PER_COMPILE 32

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long unchecked_left; /* compiles that may run before the next reading; guarded by mu */

tpu_status tpu_pjrt_map_budget_check(void) {
  pthread_mutex_lock(&mu);
  if (unchecked_left > 0) {
    unchecked_left--;
    pthread_mutex_unlock(&mu);
    return TPU_OK;
  }
  long limit = map_limit(), used = limit > 0 ? count_mappings() : -1;
  long spare = used >= 0 ? limit - used - TPU_PJRT_MAP_RESERVE : -1;
  unchecked_left = spare > 0 ? spare / MAPS_PER_COMPILE : 0;
  pthread_mutex_unlock(&mu);
  if (used < 0 || spare > 0)
    return TPU_OK;
  return tpu_error(TPU_ERR_OUT_OF_MEMORY,
                   "cannot compile another PJRT executable: the process holds %ld of the %ld "
                   "memory mappings the kernel allows (vm.max_map_count), and the PJRT plugin maps "
                   "several for each executable, which the driver keeps for the process; raise "
                   "vm.max_map_count (sysctl) or run fewer distinct programs in one process",
                   used, limit);
}
