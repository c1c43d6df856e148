/* Index ops in StableHLO: INDEX_SELECT (ops/tpu_ops_base.h) as a gather, with its bounds check
 * as a flag the driver reads back. */
#ifndef TPU_PJRT_LOWER_INDEX_H
#define TPU_PJRT_LOWER_INDEX_H

#include <stdbool.h>

#include "drivers/pjrt/tpu_pjrt_hlo.h"
#include "ops/tpu_op.h"

/* Whether the call has a lowering: INDEX_SELECT of a self of rank >= 1. */
bool tpu_pjrt_index_supports(const tpu_op_call *call);

/* The output's value from self and index as read from their views; *out_of_range receives a
 * uint8 scalar, nonzero when an index lies outside [0, size): the call must then fail. */
tpu_hlo_value tpu_pjrt_index_emit(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
                                  tpu_hlo_value *out_of_range);

/* The IndexError of a call whose out_of_range flag was set, into buf. */
void tpu_pjrt_index_message(const tpu_op_call *call, char *buf, size_t len);

#endif
