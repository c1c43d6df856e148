/* Views of a storage (drivers/pjrt/tpu_pjrt_storage.h) in StableHLO. The storage is a rank-1
 * value of its element type. A view whose dimensions, ordered by stride, nest (each stride a
 * multiple of the next one's extent) reads as a slice of the storage's elements, a pad to the
 * nesting's box, a reshape into the box, a slice of it, a transpose back to the view's order and a
 * broadcast of its size-1 and stride-0 dimensions; a write runs the same steps backwards and
 * updates the storage in place of the old value. A view of another dtype than the storage's
 * elements (or at an offset that is not a multiple of their size) goes through the storage's bytes
 * (bitcasts). That covers contiguous tensors, transposes, narrow, step slices, expand and views of
 * a storage as another dtype; other views (an overlapping as_strided) are not supported yet. */
#ifndef TPU_PJRT_VIEW_H
#define TPU_PJRT_VIEW_H

#include <stdbool.h>

#include "drivers/pjrt/tpu_pjrt_hlo.h"
#include "tensor/tpu_tensor.h"

/* Whether `t` (a checked view with elements) can be read, or written when `output`. */
bool tpu_pjrt_view_supported(const tpu_tensor *t, bool output);

/* The element type a storage takes when a view of `dtype` writes all of it (uint8 for bool and
 * the dtypes modules do not compute in). */
tpu_dtype tpu_pjrt_view_storage_elem(tpu_dtype dtype);

/* The elements of view `t` (its dtype and sizes) from `storage`, its storage's value. */
tpu_hlo_value tpu_pjrt_view_read(tpu_hlo *h, tpu_hlo_value storage, const tpu_tensor *t);

/* `storage` (of the same element type) with view `t` holding `value` (t's dtype and sizes);
 * `storage` may be NULL when t covers its whole storage densely: the result is then of
 * tpu_pjrt_view_storage_elem(t's dtype). */
tpu_hlo_value tpu_pjrt_view_write(tpu_hlo *h, const tpu_hlo_value *storage, const tpu_tensor *t,
                                  tpu_hlo_value value);

/* Whether `t` covers all `nbytes` of its storage, densely and in order. */
bool tpu_pjrt_view_covers(const tpu_tensor *t, size_t nbytes);

#endif
