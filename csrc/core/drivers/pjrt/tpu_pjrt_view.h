/* Views of a storage (drivers/pjrt/tpu_pjrt_storage.h) in StableHLO. The storage is a rank-1
 * value of its element type. A view whose dimensions, ordered by stride, nest (each stride a
 * multiple of the next one's extent) reads as a slice of the storage's elements, a pad to the
 * nesting's box, a reshape into the box, a slice of it, a transpose back to the view's order and a
 * broadcast of its size-1 and stride-0 dimensions; a write runs the same steps backwards and
 * updates the storage in place of the old value. A view of another dtype than the storage's
 * elements (or at an offset that is not a multiple of their size) goes through the storage's bytes
 * (bitcasts). That covers contiguous tensors, transposes, narrow, step slices, expand and views of
 * a storage as another dtype. Any other view (negative strides, an overlapping as_strided, a step
 * that does not divide the row) reads its elements by their positions in the storage (a gather)
 * and, when no two of them share a position, writes them the same way (a scatter).
 * Modules compute on complex numbers part by part, so a complex view reads and writes as the view
 * of its parts (torch.view_as_real: a last dimension of 2, real part first) and its values are of
 * the part type (float32 for complex64, float64 for complex128). */
#ifndef TPU_PJRT_VIEW_H
#define TPU_PJRT_VIEW_H

#include <stdbool.h>

#include "drivers/pjrt/tpu_pjrt_hlo.h"
#include "tensor/tpu_tensor.h"

/* Whether `t` (a checked view with elements) can be read, or written when `output`: the views the
 * functions below take. Every view can be read; an output must not reach a position twice. A
 * complex view with TPU_MAX_DIMS dimensions cannot be (the view of its parts would need one
 * more). */
bool tpu_pjrt_view_supported(const tpu_tensor *t, bool output);

/* The element type a storage takes when a view of `dtype` writes all of it: the type of its
 * values (tpu_pjrt_view_value_elem), uint8 for bool and the dtypes modules do not compute in. A
 * complex storage is thus an array of its parts, whether a module or a copy from the host wrote
 * it, and views of it as reals (torch.view_as_real) read it without a bitcast. */
tpu_dtype tpu_pjrt_view_storage_elem(tpu_dtype dtype);

/* The element type of the values a view of `dtype` reads and writes: `dtype`, or for a complex
 * dtype its parts' type. */
tpu_dtype tpu_pjrt_view_value_elem(tpu_dtype dtype);

/* Into dims (TPU_MAX_DIMS + 1 of them), the dims of the value view `t` reads and writes: its
 * sizes, then 2 for a complex view; returns their count. */
int tpu_pjrt_view_value_dims(const tpu_tensor *t, int64_t *dims);

/* The elements of view `t` (its value's type and dims) from `storage`, its storage's value. */
tpu_hlo_value tpu_pjrt_view_read(tpu_hlo *h, tpu_hlo_value storage, const tpu_tensor *t);

/* `storage` (of the same element type) with view `t` holding `value` (its value's type and dims);
 * `storage` may be NULL when t covers its whole storage densely: the result is then of
 * tpu_pjrt_view_storage_elem(t's dtype). */
tpu_hlo_value tpu_pjrt_view_write(tpu_hlo *h, const tpu_hlo_value *storage, const tpu_tensor *t,
                                  tpu_hlo_value value);

/* Whether `t` covers all `nbytes` of its storage, densely and in order. */
bool tpu_pjrt_view_covers(const tpu_tensor *t, size_t nbytes);

#endif
