/* Lowering op calls (one, or a run of a fused graph's nodes) to one StableHLO module over their
 * storages (drivers/pjrt/tpu_pjrt_view.h), each typed as its buffer is when lowered; within a run
 * each storage's contents flow from node to node as values, so XLA sees and fuses the whole run:
 * every storage the call reads or partly writes is an argument, each storage it writes is a result
 * (the argument's buffer donated to it), host operands are arguments of their dense contents, and
 * the op's runtime scalars are 0-d float64 or int64 arguments, so that new scalar values never
 * change the module. A copy to the host returns the converted elements instead. Arguments and
 * results name positions in the run (a call's tensor or scalar), not pointers, so a program
 * serves every run of its structure (drivers/pjrt/tpu_pjrt_programs.h). */
#ifndef TPU_PJRT_LOWER_H
#define TPU_PJRT_LOWER_H

#include <stdbool.h>
#include <stddef.h>

#include "drivers/pjrt/tpu_pjrt_hlo.h"
#include "ops/tpu_op.h"

/* Calls one module may hold: a fused graph is lowered in runs of at most this many nodes. */
#define TPU_PJRT_MAX_RUN 32

/* Where an argument comes from or a result goes, as a position in the run rather than a pointer,
 * so that a program lowered for some calls runs any calls of the same structure
 * (drivers/pjrt/tpu_pjrt_programs.h). */
typedef enum tpu_pjrt_source {
  TPU_PJRT_STORAGE, /* the storage of calls[call]->tensors[index] (a 1-D buffer of dtype) */
  TPU_PJRT_HOST,    /* host view calls[call]->tensors[index], its elements dense */
  TPU_PJRT_SCALAR,  /* calls[call]->scalars[index], a 0-d float64 or int64 (see dtype) */
  TPU_PJRT_CHECK,   /* a result only: the uint8 flag of messages[index], nonzero when a call's
                       input was invalid (an index out of range) and the run must fail */
} tpu_pjrt_source;

typedef struct tpu_pjrt_slot {
  tpu_pjrt_source source;
  int call, index;
  tpu_dtype dtype;
} tpu_pjrt_slot;

#define TPU_PJRT_MESSAGE_LEN 160

typedef struct tpu_pjrt_program {
  char *text; /* the module, malloc'd */
  size_t len;
  int n_args, n_results;
  tpu_pjrt_slot args[TPU_HLO_MAX_ARGS];       /* a storage's result is its next contents */
  tpu_pjrt_slot results[TPU_HLO_MAX_RESULTS];
  int n_zeros; /* storages read while nothing had written them: the module reads zeros */
  tpu_pjrt_slot zeros[TPU_HLO_MAX_ARGS];
  int n_messages; /* the checks' errors; a program with checks donates nothing, so a failed run
                     leaves every storage as it was */
  char messages[TPU_PJRT_MAX_RUN][TPU_PJRT_MESSAGE_LEN];
  tpu_status message_status[TPU_PJRT_MAX_RUN]; /* each error's status (an IndexError mostly) */
  int message_call[TPU_PJRT_MAX_RUN]; /* the call (its index in the run) each check is about */
} tpu_pjrt_program;

/* Whether `call` lowers (its op, dtypes and views), judged without building the module. */
bool tpu_pjrt_lowerable(const tpu_op_call *call);

/* Lowers calls[0..n) (1 <= n <= TPU_PJRT_MAX_RUN, in order) into one program, *out (freed with
 * tpu_pjrt_program_free). The storages dropped[0..n_dropped) are ones nothing reads after the
 * run (a fused graph's intermediates): the module computes with them but returns none.
 * TPU_ERR_NOT_IMPLEMENTED for a call tpu_pjrt_lowerable refuses, or for a run whose operands
 * exceed the module's limits. */
tpu_status tpu_pjrt_lower(const tpu_op_call *const *calls, int n, tpu_buffer *const *dropped,
                          int n_dropped, tpu_pjrt_program **out);

/* *fits: whether calls[0..n) (each lowerable) fit one module, whatever buffers their storages
 * have then and whichever they drop: judged by lowering them as if every storage were an
 * argument. Errors other than the module's limits (out of host memory) return. */
tpu_status tpu_pjrt_run_fits(const tpu_op_call *const *calls, int n, bool *fits);

/* Whether tpu_pjrt_lower_nonfinite scans device view t (a floating dtype it computes in). */
bool tpu_pjrt_nonfinite_lowers(const tpu_tensor *t);

/* A program writing 1 into scan->tensors[1] (a 0-d uint8 host view) when view scan->tensors[0]
 * holds a NaN or an infinity, else 0: debug mode's scan, on the device. `scan` only holds the two
 * views (its op is not read). */
tpu_status tpu_pjrt_lower_nonfinite(const tpu_op_call *scan, tpu_pjrt_program **out);

void tpu_pjrt_program_free(tpu_pjrt_program *p);

#endif
