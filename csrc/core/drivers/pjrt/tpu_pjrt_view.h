/* Views of a storage's bytes (drivers/pjrt/tpu_pjrt_storage.h) in StableHLO. A view whose
 * dimensions, ordered by stride, nest (each stride a multiple of the next one's extent) reads as a
 * slice of the bytes, a bitcast, a pad to the nesting's box, a reshape into the box, a slice of it,
 * a transpose back to the view's order and a broadcast of its size-1 and stride-0 dimensions; a
 * write runs the same steps backwards and updates the bytes in place of the old ones. That covers
 * contiguous tensors, transposes, narrow, step slices and expand; other views (an overlapping
 * as_strided) are not supported yet. */
#ifndef TPU_PJRT_VIEW_H
#define TPU_PJRT_VIEW_H

#include <stdbool.h>

#include "drivers/pjrt/tpu_pjrt_hlo.h"
#include "tensor/tpu_tensor.h"

/* Whether `t` (a checked view with elements) can be read, or written when `output`. */
bool tpu_pjrt_view_supported(const tpu_tensor *t, bool output);

/* The elements of view `t` (its dtype and sizes) from `bytes`, its storage's uint8 value. */
tpu_hlo_value tpu_pjrt_view_read(tpu_hlo *h, tpu_hlo_value bytes, const tpu_tensor *t);

/* `bytes` with view `t` holding `value` (t's dtype and sizes); `bytes` may be NULL when t covers
 * its whole storage densely. */
tpu_hlo_value tpu_pjrt_view_write(tpu_hlo *h, const tpu_hlo_value *bytes, const tpu_tensor *t,
                                  tpu_hlo_value value);

/* Whether `t` covers all `nbytes` of its storage, densely and in order. */
bool tpu_pjrt_view_covers(const tpu_tensor *t, size_t nbytes);

#endif
