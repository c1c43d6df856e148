/* The COPY kernel's dtype conversions, for kernels that convert while they run (the elementwise
 * engine converts operands block by block). A conversion has the semantics the COPY kernel
 * documents (PyTorch CPU's on x86). */
#ifndef TPU_CAST_H
#define TPU_CAST_H

#include "drivers/host/engine/engine_iter.h"

/* The inner loop converting `src` elements to `dst`: operand 0 is the destination, operand 1 the
 * source, ctx is unused. NULL when the dtypes are equal or either is not computable. */
tpu_loop_fn tpu_cast_loop(tpu_dtype src, tpu_dtype dst);

#endif
