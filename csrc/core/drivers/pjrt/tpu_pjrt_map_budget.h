/* The kernel's per-process bound on memory mappings (Linux's vm.max_map_count) as a budget for
 * executables. XLA's CPU plugin maps several regions for each executable it compiles or loads,
 * and the driver keeps executables for the process; a process that reaches the bound gets a JIT
 * link failure from the plugin that leaves the process unable to throw a C++ exception. Compiles
 * check the budget first and fail cleanly instead. Thread-safe. */
#ifndef TPU_PJRT_MAP_BUDGET_H
#define TPU_PJRT_MAP_BUDGET_H

#include "base/tpu_status.h"

/* The mappings a compile must leave free: the executable's own and those of later buffers and
 * threads. */
#define TPU_PJRT_MAP_RESERVE 2048

/* TPU_OK when the process may map another executable; TPU_ERR_OUT_OF_MEMORY, with a message naming
 * the bound, when fewer than TPU_PJRT_MAP_RESERVE mappings are left. Where the bound cannot be read
 * (not Linux), always TPU_OK. */
tpu_status tpu_pjrt_map_budget_check(void);

#endif
