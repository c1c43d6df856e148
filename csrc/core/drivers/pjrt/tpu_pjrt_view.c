#include "drivers/pjrt/tpu_pjrt_view.h"

#include <string.h>

/* A view's layout: its dimensions of size > 1 with a stride (the others broadcast), ordered by
 * stride, outermost first, and the box they nest in. */
typedef struct layout {
  int k;                         /* kept dimensions */
  int64_t dim[TPU_MAX_DIMS];     /* their indices in the view, outermost first */
  int64_t box[TPU_MAX_DIMS + 1]; /* box[0] = size of the outermost, box[j] = stride[j-1] /
                                    stride[j], box[k] = stride of the innermost */
  int64_t span;                  /* elements from the first to the last, inclusive */
  int64_t box_elems;             /* product of box */
  bool nested;
  bool dense; /* the box is exactly the kept sizes: no gaps */
} layout;

static layout layout_of(const tpu_tensor *t) {
  layout l = {.nested = true, .span = 1};
  for (int i = 0; i < t->ndim; i++)
    if (t->sizes[i] > 1 && t->strides[i] != 0)
      l.dim[l.k++] = i;
  /* Insertion sort by stride, descending; ties keep view order. */
  for (int a = 1; a < l.k; a++)
    for (int b = a; b > 0 && t->strides[l.dim[b - 1]] < t->strides[l.dim[b]]; b--) {
      int64_t swap = l.dim[b];
      l.dim[b] = l.dim[b - 1];
      l.dim[b - 1] = swap;
    }
  for (int j = 0; j < l.k; j++) {
    int64_t size = t->sizes[l.dim[j]], stride = t->strides[l.dim[j]];
    l.span += (size - 1) * stride;
    if (stride < 1)
      l.nested = false;
    if (j + 1 < l.k) {
      int64_t inner = t->strides[l.dim[j + 1]], inner_extent = t->sizes[l.dim[j + 1]] * inner;
      if (inner < 1 || stride % inner != 0 || stride < inner_extent)
        l.nested = false;
    }
  }
  if (!l.nested || l.k == 0) {
    l.dense = l.k == 0;
    l.box_elems = 1;
    return l;
  }
  l.box[0] = t->sizes[l.dim[0]];
  for (int j = 1; j < l.k; j++)
    l.box[j] = t->strides[l.dim[j - 1]] / t->strides[l.dim[j]];
  l.box[l.k] = t->strides[l.dim[l.k - 1]];
  l.dense = l.box[l.k] == 1;
  l.box_elems = l.box[0] * t->strides[l.dim[0]];
  for (int j = 1; j < l.k; j++)
    l.dense &= l.box[j] == t->sizes[l.dim[j]];
  return l;
}

tpu_dtype tpu_pjrt_view_value_elem(tpu_dtype dtype) {
  return dtype == TPU_COMPLEX64 ? TPU_FLOAT32 : dtype == TPU_COMPLEX128 ? TPU_FLOAT64 : dtype;
}

int tpu_pjrt_view_value_dims(const tpu_tensor *t, int64_t *dims) {
  memcpy(dims, t->sizes, (size_t)t->ndim * sizeof *dims);
  if (!tpu_dtype_is_complex(t->dtype))
    return t->ndim;
  dims[t->ndim] = 2;
  return t->ndim + 1;
}

/* Into *parts, complex view t as the view of its parts (torch.view_as_real): false for a real
 * view, and for one with TPU_MAX_DIMS dimensions, which has no such view. */
static bool as_parts(const tpu_tensor *t, tpu_tensor *parts) {
  if (!tpu_dtype_is_complex(t->dtype) || t->ndim == TPU_MAX_DIMS)
    return false;
  *parts = *t;
  parts->dtype = tpu_pjrt_view_value_elem(t->dtype);
  /* A checked view's extent bounds the strides of its dimensions of more than one element, so
   * doubling them cannot overflow; the others never step, so any stride serves. */
  for (int i = 0; i < t->ndim; i++)
    parts->strides[i] = t->sizes[i] > 1 ? 2 * t->strides[i] : 0;
  parts->sizes[t->ndim] = 2;
  parts->strides[t->ndim] = 1;
  parts->ndim = t->ndim + 1;
  return true;
}

/* Whether no two elements of `t` share a position: ordered by the size of their strides, each
 * dimension steps past all the positions the ones inside it reach (PyTorch's sufficient test). */
static bool distinct_positions(const tpu_tensor *t) {
  int64_t step[TPU_MAX_DIMS], size[TPU_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < t->ndim; i++)
    if (t->sizes[i] > 1) {
      step[k] = t->strides[i] < 0 ? -t->strides[i] : t->strides[i];
      size[k++] = t->sizes[i];
    }
  for (int a = 1; a < k; a++) /* insertion sort by step, ascending */
    for (int b = a; b > 0 && step[b - 1] > step[b]; b--) {
      int64_t s = step[b], n = size[b];
      step[b] = step[b - 1], size[b] = size[b - 1];
      step[b - 1] = s, size[b - 1] = n;
    }
  int64_t reach = 0; /* the farthest position the inner dimensions reach */
  for (int j = 0; j < k; j++) {
    if (step[j] <= reach)
      return false;
    reach += (size[j] - 1) * step[j];
  }
  return true;
}

bool tpu_pjrt_view_supported(const tpu_tensor *t, bool output) {
  tpu_tensor parts;
  if (tpu_dtype_is_complex(t->dtype))
    return as_parts(t, &parts) && tpu_pjrt_view_supported(&parts, output);
  if (!tpu_dtype_is_computable(t->dtype))
    return false;
  for (int i = 0; i < t->ndim; i++)
    if (output && t->sizes[i] > 1 && t->strides[i] == 0)
      return false;
  return !output || layout_of(t).nested || distinct_positions(t);
}

bool tpu_pjrt_view_covers(const tpu_tensor *t, size_t nbytes) {
  for (int i = 0; i < t->ndim; i++)
    if (t->sizes[i] > 1 && t->strides[i] == 0) /* expanded: more elements than bytes hold */
      return false;
  layout l = layout_of(t);
  if (!l.nested || !l.dense || t->offset != 0)
    return false;
  for (int j = 0; j + 1 < l.k; j++) /* in view order: contiguous, not permuted */
    if (l.dim[j] > l.dim[j + 1])
      return false;
  return (uint64_t)l.span * tpu_dtype_size(t->dtype) == nbytes;
}

/* Bytes [offset, offset + span * size) of `bytes` as `span` elements of `dtype`. */
static tpu_hlo_value bytes_to_elems(tpu_hlo *h, tpu_hlo_value bytes, int64_t offset, int64_t span,
                                    tpu_dtype dtype) {
  int64_t size = (int64_t)tpu_dtype_size(dtype);
  int64_t start = offset, limit = offset + span * size;
  tpu_hlo_value flat = tpu_hlo_slice(h, bytes, &start, &limit);
  if (dtype == TPU_BOOL) {
    tpu_hlo_value zero = tpu_hlo_splat(h, tpu_hlo_constant(h, TPU_UINT8, "0"), &flat);
    return tpu_hlo_compare(h, "NE", flat, zero);
  }
  if (dtype == TPU_UINT8)
    return flat;
  if (size == 1)
    return tpu_hlo_bitcast(h, flat, dtype, 1, &span);
  int64_t pairs[2] = {span, size};
  tpu_hlo_value grouped = tpu_hlo_reshape(h, flat, 2, pairs);
  return tpu_hlo_bitcast(h, grouped, dtype, 1, &span);
}

/* The inverse: a rank-1 value of elements as its bytes. */
static tpu_hlo_value elems_to_bytes(tpu_hlo *h, tpu_hlo_value elems) {
  int64_t n = elems.dims[0], size = (int64_t)tpu_dtype_size(elems.elem);
  if (elems.elem == TPU_BOOL)
    return tpu_hlo_convert(h, elems, TPU_UINT8);
  if (elems.elem == TPU_UINT8)
    return elems;
  if (size == 1)
    return tpu_hlo_bitcast(h, elems, TPU_UINT8, 1, &n);
  int64_t pairs[2] = {n, size}, total = n * size;
  tpu_hlo_value grouped = tpu_hlo_bitcast(h, elems, TPU_UINT8, 2, pairs);
  return tpu_hlo_reshape(h, grouped, 1, &total);
}

tpu_dtype tpu_pjrt_view_storage_elem(tpu_dtype dtype) {
  bool typed = dtype != TPU_BOOL && tpu_dtype_is_computable(dtype);
  return typed ? tpu_pjrt_view_value_elem(dtype) : TPU_UINT8;
}

/* Whether a view of `dtype` at byte `offset` reads `storage`'s elements directly. */
static bool direct(tpu_hlo_value storage, tpu_dtype dtype, int64_t offset) {
  return storage.elem == tpu_pjrt_view_storage_elem(dtype) &&
         offset % (int64_t)tpu_dtype_size(storage.elem) == 0;
}

/* Bytes [offset, offset + span * size) of `storage` as `span` elements of `dtype`. */
static tpu_hlo_value storage_to_elems(tpu_hlo *h, tpu_hlo_value storage, int64_t offset,
                                      int64_t span, tpu_dtype dtype) {
  if (!direct(storage, dtype, offset))
    return bytes_to_elems(h, elems_to_bytes(h, storage), offset, span, dtype);
  int64_t start = offset / (int64_t)tpu_dtype_size(storage.elem), limit = start + span;
  tpu_hlo_value flat = tpu_hlo_slice(h, storage, &start, &limit);
  return dtype == TPU_BOOL ? tpu_hlo_cast(h, flat, TPU_BOOL) : flat;
}

/* The box of a nested layout read from the storage: box-shaped, of t's dtype. */
static tpu_hlo_value read_box(tpu_hlo *h, tpu_hlo_value storage, const tpu_tensor *t,
                              const layout *l) {
  tpu_hlo_value flat = storage_to_elems(h, storage, t->offset, l->span, t->dtype);
  flat = tpu_hlo_pad_end(h, flat, l->box_elems);
  return tpu_hlo_reshape(h, flat, l->k + 1, l->box);
}

/* The positions of view t's elements (int64, t's dims) counted from the lowest of them, which
 * lies *low elements (<= 0) from t's offset; *span elements reach from the lowest to the highest.
 * Views that do not nest (negative or overlapping strides, steps that do not divide the row)
 * read their elements at these positions (a gather) and write them there. */
static tpu_hlo_value positions(tpu_hlo *h, const tpu_tensor *t, int64_t *low, int64_t *span) {
  tpu_hlo_value like = {.elem = TPU_INT64, .rank = t->ndim};
  int64_t lo = 0, hi = 0;
  for (int i = 0; i < t->ndim; i++) {
    like.dims[i] = t->sizes[i];
    int64_t reach = t->sizes[i] > 1 ? (t->sizes[i] - 1) * t->strides[i] : 0;
    *(reach < 0 ? &lo : &hi) += reach;
  }
  tpu_hlo_value at = tpu_hlo_full_i64(h, -lo, &like);
  for (int i = 0; i < t->ndim; i++)
    if (t->sizes[i] > 1 && t->strides[i] != 0) {
      tpu_hlo_value step = tpu_hlo_full_i64(h, t->strides[i], &like);
      tpu_hlo_value moved = tpu_hlo_binary(h, "multiply", tpu_hlo_coordinate(h, &like, i), step);
      at = tpu_hlo_binary(h, "add", at, moved);
    }
  *low = lo;
  *span = hi - lo + 1;
  return at;
}

static int64_t elements_of(const tpu_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++)
    n *= t->sizes[i];
  return n;
}

static tpu_hlo_value read_positions(tpu_hlo *h, tpu_hlo_value storage, const tpu_tensor *t) {
  int64_t low, span, n = elements_of(t);
  tpu_hlo_value at = tpu_hlo_reshape(h, positions(h, t, &low, &span), 1, &n);
  int64_t first = t->offset + low * (int64_t)tpu_dtype_size(t->dtype);
  tpu_hlo_value flat = storage_to_elems(h, storage, first, span, t->dtype);
  return tpu_hlo_reshape(h, tpu_hlo_take(h, flat, at, 0), t->ndim, t->sizes);
}

tpu_hlo_value tpu_pjrt_view_read(tpu_hlo *h, tpu_hlo_value storage, const tpu_tensor *t) {
  tpu_tensor parts;
  if (as_parts(t, &parts))
    t = &parts;
  layout l = layout_of(t);
  if (!l.nested)
    return read_positions(h, storage, t);
  int64_t sorted[TPU_MAX_DIMS + 1], zeros[TPU_MAX_DIMS + 1] = {0}, perm[TPU_MAX_DIMS];
  for (int j = 0; j < l.k; j++)
    sorted[j] = t->sizes[l.dim[j]];
  sorted[l.k] = 1;
  tpu_hlo_value kept;
  if (l.dense) {
    tpu_hlo_value flat = storage_to_elems(h, storage, t->offset, l.span, t->dtype);
    kept = tpu_hlo_reshape(h, flat, l.k, sorted);
  } else {
    tpu_hlo_value box = read_box(h, storage, t, &l);
    kept = tpu_hlo_reshape(h, tpu_hlo_slice(h, box, zeros, sorted), l.k, sorted);
  }
  /* Back to view order: the kept dimensions sorted by view index. */
  int64_t order[TPU_MAX_DIMS];
  for (int j = 0; j < l.k; j++)
    order[j] = l.dim[j];
  for (int a = 0; a < l.k; a++) {
    int rank = 0;
    for (int b = 0; b < l.k; b++)
      rank += order[b] < order[a];
    perm[rank] = a;
  }
  kept = tpu_hlo_transpose(h, kept, perm);
  int64_t bdims[TPU_MAX_DIMS];
  for (int j = 0, n = 0; j < t->ndim; j++)
    if (t->sizes[j] > 1 && t->strides[j] != 0)
      bdims[n++] = j;
  return tpu_hlo_broadcast(h, kept, t->ndim, t->sizes, bdims);
}

/* `storage` with the `span` elements (of t's value type) from byte `offset` replaced by `flat`. */
static tpu_hlo_value store_elems(tpu_hlo *h, const tpu_hlo_value *storage, const tpu_tensor *t,
                                 int64_t offset, tpu_hlo_value flat) {
  tpu_dtype elem = tpu_pjrt_view_storage_elem(t->dtype);
  if (!storage)
    return tpu_hlo_convert(h, flat, elem);
  if (direct(*storage, t->dtype, offset)) {
    int64_t at = offset / (int64_t)tpu_dtype_size(elem);
    return tpu_hlo_update_slice(h, *storage, tpu_hlo_convert(h, flat, elem), &at);
  }
  /* Through the bytes, back to the storage's element type. */
  tpu_hlo_value bytes = elems_to_bytes(h, *storage);
  int64_t size = (int64_t)tpu_dtype_size(storage->elem);
  bytes = tpu_hlo_update_slice(h, bytes, elems_to_bytes(h, flat), &offset);
  return bytes_to_elems(h, bytes, 0, bytes.dims[0] / size, storage->elem);
}

/* A write through a view that does not nest: each position of the span takes the element that
 * lands there (found by scattering element numbers, as no two elements share a position) or
 * keeps its value. */
static tpu_hlo_value write_positions(tpu_hlo *h, const tpu_hlo_value *storage,
                                     const tpu_tensor *t, tpu_hlo_value value) {
  int64_t low, span, n = elements_of(t);
  tpu_hlo_value at = tpu_hlo_reshape(h, positions(h, t, &low, &span), 1, &n);
  int64_t first = t->offset + low * (int64_t)tpu_dtype_size(t->dtype);
  tpu_hlo_value old = storage_to_elems(h, *storage, first, span, t->dtype);
  tpu_hlo_value none = tpu_hlo_full_i64(h, -1, &old);
  tpu_hlo_value which = tpu_hlo_scatter(h, none, at, tpu_hlo_iota(h, TPU_INT64, n), TPU_HLO_MAX);
  tpu_hlo_value written = tpu_hlo_compare(h, "GE", which, tpu_hlo_full_i64(h, 0, &old));
  tpu_hlo_value source = tpu_hlo_binary(h, "maximum", which, tpu_hlo_full_i64(h, 0, &old));
  tpu_hlo_value elems = tpu_hlo_reshape(h, value, 1, &n);
  tpu_hlo_value flat = tpu_hlo_select(h, written, tpu_hlo_take(h, elems, source, 0), old);
  return store_elems(h, storage, t, first, flat);
}

tpu_hlo_value tpu_pjrt_view_write(tpu_hlo *h, const tpu_hlo_value *storage, const tpu_tensor *t,
                                  tpu_hlo_value value) {
  tpu_tensor parts;
  if (as_parts(t, &parts))
    t = &parts;
  layout l = layout_of(t);
  if (!l.nested)
    return write_positions(h, storage, t, value);
  int64_t sorted[TPU_MAX_DIMS + 1], zeros[TPU_MAX_DIMS + 1] = {0}, perm[TPU_MAX_DIMS];
  for (int j = 0; j < l.k; j++) {
    sorted[j] = t->sizes[l.dim[j]];
    perm[j] = 0;
  }
  sorted[l.k] = 1;
  /* The value in stride order: its kept dimensions, outermost first. */
  int64_t kept_dims[TPU_MAX_DIMS];
  for (int j = 0, n = 0; j < t->ndim; j++)
    if (t->sizes[j] > 1 && t->strides[j] != 0)
      kept_dims[n++] = t->sizes[j];
  tpu_hlo_value kept = tpu_hlo_reshape(h, value, l.k, kept_dims);
  for (int j = 0; j < l.k; j++) {
    int rank = 0; /* position of l.dim[j] among the kept dims in view order */
    for (int b = 0; b < l.k; b++)
      rank += l.dim[b] < l.dim[j];
    perm[j] = rank;
  }
  kept = tpu_hlo_transpose(h, kept, perm);
  tpu_hlo_value flat;
  if (l.dense) {
    flat = tpu_hlo_reshape(h, kept, 1, &l.span);
  } else {
    tpu_hlo_value box = read_box(h, *storage, t, &l);
    box = tpu_hlo_update_slice(h, box, tpu_hlo_reshape(h, kept, l.k + 1, sorted), zeros);
    flat = tpu_hlo_reshape(h, box, 1, &l.box_elems);
    int64_t start = 0;
    flat = tpu_hlo_slice(h, flat, &start, &l.span);
  }
  return store_elems(h, storage, t, t->offset, flat);
}
