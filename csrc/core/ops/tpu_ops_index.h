/* The index family's ops: X(ID, "name", host kernel) per op; see ops/tpu_op.h. Gathers and
 * scatters along a dimension, advanced indexing, mask-driven selection, and the shape and
 * creation ops that are not plain copies. */
#ifndef TPU_OPS_INDEX_H
#define TPU_OPS_INDEX_H

#define TPU_OPS_INDEX(X)  \
  X(GATHER, "gather", tpu_kernel_gather)  \
  X(SCATTER, "scatter", tpu_kernel_scatter)  \
  X(INDEX_ADD, "index_add", tpu_kernel_scatter)  \
  X(INDEX_COPY, "index_copy", tpu_kernel_scatter)  \
  X(INDEX_FILL, "index_fill", tpu_kernel_scatter)  \
  X(INDEX, "index", tpu_kernel_index)  \
  X(INDEX_PUT, "index_put", tpu_kernel_index_put)  \
  X(NONZERO_COUNT, "nonzero_count", tpu_kernel_nonzero_count)  \
  X(NONZERO, "nonzero", tpu_kernel_nonzero)  \
  X(MASKED_SELECT, "masked_select", tpu_kernel_masked_select)  \
  X(MASKED_SCATTER, "masked_scatter", tpu_kernel_masked_scatter)  \
  X(TRILU, "trilu", tpu_kernel_trilu)  \
  X(ARANGE, "arange", tpu_kernel_arange)

#endif
