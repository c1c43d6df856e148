/* The PJRT driver's extras, found by name through tpu_driver_proc (drivers/tpu_driver.h), which
 * returns NULL on another driver. The only header of the PJRT driver that the core's upper layers
 * and the binding include. */
#ifndef TPU_PJRT_H
#define TPU_PJRT_H

#include <stdint.h>

#define TPU_PJRT_EXECUTABLE_STATS "executable_stats" /* void (tpu_executable_stats *) */
#define TPU_PJRT_RESET_EXECUTABLE_STATS "reset_executable_stats" /* void (void) */

/* What the driver's executables did since start or reset: executables compiled, loaded from and
 * written to its disk cache, and the microseconds compiling and loading took; runs of executables
 * and the microseconds the devices were busy with them (the union of their launch-to-completion
 * intervals, summed over devices, for executions completed by now); runs lowered to a module, runs
 * that found their compiled module by description without lowering, and runs that lowered because
 * their description could not be trusted (drivers/pjrt/tpu_pjrt_programs.h); and storages
 * copied from one device to another for a run (a copy between chips). */
typedef struct tpu_executable_stats {
  uint64_t compiles, disk_loads, disk_stores, compile_us, load_us, runs, run_us;
  uint64_t lowerings, program_hits, unkeyed, device_copies;
} tpu_executable_stats;
typedef void (*tpu_pjrt_executable_stats_fn)(tpu_executable_stats *stats);
typedef void (*tpu_pjrt_reset_executable_stats_fn)(void);

#endif
