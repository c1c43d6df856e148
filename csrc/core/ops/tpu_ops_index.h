/* The index family's ops: X(ID, "name") per op; see ops/tpu_op.h. Gathers and
 * scatters along a dimension, advanced indexing, mask-driven selection, and the shape and
 * creation ops that are not plain copies. */
#ifndef TPU_OPS_INDEX_H
#define TPU_OPS_INDEX_H

#define TPU_OPS_INDEX(X)                                                                           \
  X(GATHER, "gather")                                                                              \
  X(SCATTER, "scatter")                                                                            \
  X(INDEX_ADD, "index_add")                                                                        \
  X(INDEX_COPY, "index_copy")                                                                      \
  X(INDEX_FILL, "index_fill")                                                                      \
  X(INDEX, "index")                                                                                \
  X(INDEX_PUT, "index_put")                                                                        \
  X(NONZERO_COUNT, "nonzero_count")                                                                \
  X(NONZERO, "nonzero")                                                                            \
  X(MASKED_SELECT, "masked_select")                                                                \
  X(MASKED_SCATTER, "masked_scatter")                                                              \
  X(TRILU, "trilu")                                                                                \
  X(ARANGE, "arange")

/* How a scatter combines a source element into a destination element (SCATTER's scalars[1].i). */
typedef enum tpu_accum {
  TPU_ACCUM_ASSIGN, /* dst = src */
  TPU_ACCUM_ADD,    /* dst = dst + alpha * src */
  TPU_ACCUM_MUL,    /* dst = dst * src */
} tpu_accum;

#endif
