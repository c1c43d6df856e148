/* The PJRT driver's compiled runs, found by structure so that a run binds buffers and scalars only.
 * A run of calls (drivers/pjrt/tpu_pjrt_lower.h) is described by what its module depends on: each
 * call's op and compute dtype; each device view's dtype, sizes, strides and offset, which views
 * share a storage, each storage's size and whether the run drops it; each host view's dtype and
 * sizes; and the values of the scalars the module holds as constants. A kept program also names
 * the storages it reads: each must still hold elements of the type it was lowered for, or still
 * nothing (read as zeros). The first run of a structure is lowered, compiled (or its executable
 * found by module text, tpu_pjrt_cache.h) and kept for the process; scalars the module takes as
 * arguments and host operands' elements are read when a run binds them. A description is trusted
 * only when lowering the run again with its argument scalars changed gives the same module;
 * otherwise, or past a bound on one description's variants, runs lower every time (counted as
 * unkeyed). Thread-safe. */
#ifndef TPU_PJRT_PROGRAMS_H
#define TPU_PJRT_PROGRAMS_H

#include "drivers/pjrt/tpu_pjrt_executable.h"
#include "drivers/pjrt/tpu_pjrt_lower.h"

/* A run's program and executable (exe NULL when the program has no results: it need not run).
 * `owned` is set when the program was lowered for this run alone: tpu_pjrt_compiled_release frees
 * it. */
typedef struct tpu_pjrt_compiled {
  const tpu_pjrt_program *program;
  const tpu_pjrt_executable *exe;
  tpu_pjrt_program *owned;
} tpu_pjrt_compiled;

/* The compiled run of calls[0..n) with storages dropped[0..n_dropped) (as tpu_pjrt_lower takes
 * them): found, or lowered and compiled. Errors: tpu_pjrt_lower's, and compile errors naming the
 * first call's op. */
tpu_status tpu_pjrt_programs_get(const tpu_pjrt_client *client, const tpu_op_call *const *calls,
                                 int n, tpu_buffer *const *dropped, int n_dropped,
                                 tpu_pjrt_compiled *out);

/* Frees what tpu_pjrt_programs_get lent to one run. */
void tpu_pjrt_compiled_release(tpu_pjrt_compiled *c);

/* When on (TORCH_TPU_PJRT_VERIFY_PROGRAMS=1 at start, or set here by a test), every run found by
 * its description is lowered again and a run whose fresh module differs from the kept one fails
 * with TPU_ERR_RUNTIME: the check that descriptions hold all a module depends on. */
void tpu_pjrt_programs_set_verify(bool on);

/* Runs lowered (every miss, unkeyed run and verification), runs found by description, and runs
 * that lowered because no description could be trusted, since start or reset. */
void tpu_pjrt_programs_stats(uint64_t *lowerings, uint64_t *hits, uint64_t *unkeyed);
void tpu_pjrt_programs_reset_stats(void);

#endif
