/* Debug mode's op trace: a record per op (its name, its tensors' dtypes and shapes, the kernel's
 * time), printed to stderr as one grep-friendly line (TORCH_TPU_OP_TRACE=1,
 * torch.tpu.set_debug_op_trace) and/or collected in memory for Python (torch.tpu.debug_op_trace()).
 * Ops are recorded by ops/tpu_op_debug.c, in debug mode only. Thread-safe. */
#ifndef TPU_OP_TRACE_H
#define TPU_OP_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/tpu_op.h"

typedef struct tpu_trace_tensor {
  tpu_dtype dtype;
  bool host; /* host memory (a CPU tensor or a scalar argument), not the device's */
  int32_t ndim;
  int64_t sizes[TPU_MAX_DIMS];
} tpu_trace_tensor;

typedef struct tpu_trace_record {
  tpu_op_id op;
  int n_inputs;
  int n_outputs;
  double us;         /* time the kernel took, in microseconds */
  tpu_status status; /* what the kernel returned */
  tpu_trace_tensor tensors[]; /* n_inputs inputs, then n_outputs outputs */
} tpu_trace_record;

/* Turns printing on or off for the process (initially TORCH_TPU_OP_TRACE). */
void tpu_set_op_trace(bool on);
bool tpu_op_trace(void);

/* True while ops are printed or collected: whether tpu_op_trace_add has anything to do. */
bool tpu_op_trace_active(void);

/* Starts collecting records, process-wide (collections nest); returns the mark to pass to
 * tpu_op_trace_end. */
uint64_t tpu_op_trace_begin(void);

/* Ends one collection: *out receives a malloc'd copy of the records added since `mark`, in order
 * (free it with tpu_op_trace_free), and the store is emptied when no collection is left. */
tpu_status tpu_op_trace_end(uint64_t mark, tpu_trace_record ***out, size_t *count);

/* Frees what tpu_op_trace_end returned. */
void tpu_op_trace_free(tpu_trace_record **records, size_t count);

/* Records one op that ran: prints its line when printing, stores it while collecting. */
void tpu_op_trace_add(const tpu_op_call *call, double us, tpu_status status);

/* Appends "[d0<sep>d1...]" to the string in buf (size >= 1), truncating to fit: shapes in the trace
 * ("," as separator) and in the NaN check's messages (", ", as Python prints them). */
void tpu_format_shape(char *buf, size_t size, int ndim, const int64_t *sizes, const char *sep);

/* The record's line, e.g. "tpu_op_trace op=add in=float32[2,3],float32[]@cpu out=float32[2,3]
 * us=1.5 status=ok", truncated to fit `size` (which must be at least 1). */
void tpu_op_trace_format(const tpu_trace_record *r, char *buf, size_t size);

#endif
