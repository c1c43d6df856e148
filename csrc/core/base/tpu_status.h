/* Error reporting for the core: every fallible entry point returns a tpu_status and, on failure,
 * leaves a message in a thread-local slot. The binding turns the kind into the Python exception
 * PyTorch raises on CUDA. */
#ifndef TPU_STATUS_H
#define TPU_STATUS_H

#include <stdarg.h>

typedef enum tpu_status {
  TPU_OK = 0,
  TPU_ERR_RUNTIME,         /* RuntimeError: anything without a more precise kind */
  TPU_ERR_VALUE,           /* ValueError: a bad argument value */
  TPU_ERR_TYPE,            /* TypeError: an unsupported dtype or argument type */
  TPU_ERR_INDEX,           /* IndexError: an index out of range, found by a kernel */
  TPU_ERR_OUT_OF_MEMORY,   /* torch.OutOfMemoryError: the chip's capacity is exhausted */
  TPU_ERR_NOT_IMPLEMENTED, /* NotImplementedError */
  TPU_ERR_BAD_FORK,        /* RuntimeError: the runtime was initialized before fork() */
  TPU_ERR_DIST,            /* torch.distributed.DistBackendError: a collective failed or timed out */
} tpu_status;

/* Records a printf-style message for the calling thread and returns `status` unchanged. */
tpu_status tpu_error(tpu_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Same as tpu_error with a va_list. */
tpu_status tpu_verror(tpu_status status, const char *fmt, va_list ap);

/* The message of the calling thread's most recent error ("" when none). */
const char *tpu_last_error(void);

/* A short name of a status kind, e.g. "index error". */
const char *tpu_status_name(tpu_status status);

#endif
