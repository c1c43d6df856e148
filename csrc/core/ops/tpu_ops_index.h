/* The index family's ops: X(ID, "name", attribute scalars) per op; see ops/tpu_op.h. Index
 * selection, gathers and scatters along a dimension, advanced indexing, mask-driven selection, set
 * membership, and the shape and creation ops that are not plain copies.
 *
 * Combining (tpu_accum below) is PyTorch CPU's arithmetic: integers wrap, bool adds as `or` and
 * multiplies as `and`, float16 and bfloat16 compute in float and round once per element and step.
 * Duplicate indices combine in a fixed order, stated per op, whatever the thread count.
 *
 * INDEX_SELECT: tensors[0] = self, [1] = index (int32 or int64, 0-d or 1-d), [2] = output, sized
 *   by the caller: self's sizes with dimension scalars[0].i (negative counts from the end)
 *   replaced by the index's length. Any dtype: elements move as bytes. A 0-d self (and its 0-d
 *   output) acts as one dimension of size 1, as in PyTorch. Every index is checked before
 *   anything is written; one outside [0, size) is an IndexError (negative indices do not wrap, as
 *   on PyTorch CPU).
 *
 * Gathers and scatters along one dimension. All tensors have the same rank, at least 1 (callers
 * pass 0-d tensors as 1-d of size 1), with index.size(d) <= self.size(d) for d != dim and, for a
 * scatter, index.size(d) <= src.size(d); a call that breaks this is refused. An index outside
 * [0, self.size(dim)) is an IndexError; negative indices do not wrap, as on PyTorch CPU.
 *   GATHER: tensors[0] = self, [1] = index (int64 or int32), [2] = out (index's sizes, self's
 *     dtype); scalars[0].i = dim. out[p] = self[p with coordinate dim replaced by index[p]].
 *   SCATTER, INDEX_ADD, INDEX_COPY, INDEX_FILL (one contract; the op names the ATen op in
 *     errors): tensors[0] = index (int64 or int32), [1] = src (self's dtype), [2] = self, the
 *     output, updated in place; scalars[0].i = dim, [1].i = a tpu_accum, and the alpha of
 *     TPU_ACCUM_ADD: [2].f, [3].f its real and imaginary parts (floating and complex dtypes),
 *     [4].i its value for integers and bool. A complex src is multiplied by alpha as a complex
 *     product unless alpha is 1, except for INDEX_ADD into a 1-d self, which PyTorch CPU
 *     multiplies even by 1 (so an infinite part makes the other NaN). For every position p of
 *     index: self[p with coordinate dim replaced by index[p]] op= src[p], with the positions
 *     that hit one element taken in increasing dim coordinate (the last write wins for
 *     assignments); INDEX_FILL alone takes an index in [-size, 0) as counting from the end, as
 *     index_fill_ does. index_add, index_copy and index_fill come as scatters whose index has
 *     stride 0 outside dim; a scalar source comes as a src view with every stride 0. Every index
 *     is checked before anything is written. MAX and MIN (scatter_reduce and index_reduce's
 *     amax and amin) propagate NaN as PyTorch CPU does.
 *
 * Advanced indexing: x[i1, i2, ...] (INDEX) and its writing form x[i1, i2, ...] = v (INDEX_PUT,
 * index_put_). The caller lays the problem out as PyTorch's AdvancedIndex does (indexed
 * dimensions adjacent, masks already turned into int64 indices, index tensors broadcast
 * together): the result has sizes B + I + A, where the k index tensors all have sizes I, B are
 * the nb dimensions before the indexed ones and A the rest. Negative indices wrap once; an index
 * outside [-size, size) is an IndexError and, for INDEX_PUT, nothing is written.
 *   INDEX: tensors[0] = src: self restrided to B + I + A, stride 0 across I;
 *     [1 .. k] = the index tensors (int64 or int32, sizes I);
 *     [k+1 .. 2k] = for each index tensor, a 1-d view of self's buffer along its indexed
 *     dimension: its size bounds the index and its stride scales it;
 *     outputs [2k+1] = offsets, int64 scratch with sizes I, contiguous; [2k+2] = out, B + I + A.
 *     scalars[0].i = nb.
 *   INDEX_PUT: tensors[0] = values, broadcast to B + I + A; [1 .. 2k] as for INDEX; outputs
 *     [2k+1] = offsets; [2k+2] = self restrided to B + I + A (stride 0 across I), written in
 *     place. scalars[0].i = nb, [1].i = accumulate (add, else assign). The positions that hit
 *     one element of self are taken in row-major order of I: duplicates accumulate in that
 *     order, and without accumulate the last one wins.
 *
 * Ops driven by which elements are nonzero, in row-major (logical) order. A value is nonzero as
 * in PyTorch: NaN counts, -0.0 does not, complex either part.
 *   NONZERO_COUNT: tensors[0] = self (any computable dtype), [1] = count (int64, 0-d; may be host
 *     memory, so the caller can read it after a synchronous launch).
 *   NONZERO: tensors[0] = self, [1] = out, int64 [n, self.ndim] with any strides: the
 *     coordinates of the nonzero elements, in row-major order; n must equal their number.
 *   MASKED_SELECT: tensors[0] = self, [1] = mask (bool or uint8, self's sizes), [2] = out, 1-d
 *     of the number of nonzero mask elements: self's elements where mask is set, in row-major
 *     order.
 *   MASKED_SCATTER: tensors[0] = mask (self's sizes), [1] = source (contiguous, any sizes),
 *     [2] = self, updated in place: the i-th set element of mask (row-major) takes source's
 *     element i; a source with too few elements is an error and leaves self unchanged.
 *
 * Set membership:
 *   ISIN (torch.isin): tensors[0] = elements (any sizes and strides), [1] = test elements (1-d,
 *     any stride, at least one element), [2] = out (bool, the elements' sizes); both inputs of
 *     one dtype, uint8, int8, int16, int32, int64 or floating (the caller converts both to their
 *     promoted dtype, as isin does). scalars[0].i = 1 inverts. out[p] is whether elements[p]
 *     equals some test element, != invert; equality is the dtype's ==: NaN equals nothing,
 *     -0.0 equals +0.0.
 *
 * Shape and creation ops:
 *   TRILU: tensors[0] = self, [1] = out (self's sizes and dtype, at least 2-d; may be self's own
 *     memory for tril_/triu_); scalars[0].i = diagonal k, [1].i = 1 for triu, 0 for tril. Over
 *     the last two dimensions, tril keeps the elements with column - row <= k and triu those
 *     with column - row >= k; the others become zero.
 *   ARANGE: tensors[0] = out, 1-d; out[i] = start + i * step, computed as PyTorch CPU's scalar
 *     loop does: in double for float32 and float64 (scalars[0].f start, [1].f step), in float
 *     for float16 and bfloat16, in wrapping int64 for integer dtypes (scalars[2].i start, [3].i
 *     step), then converted to the dtype. */
#ifndef TPU_OPS_INDEX_H
#define TPU_OPS_INDEX_H

#define TPU_OPS_INDEX(X)                                                                           \
  X(INDEX_SELECT, "index_select", TPU_ATTR(0))                                                     \
  X(GATHER, "gather", TPU_ATTR(0))                                                                 \
  X(SCATTER, "scatter", TPU_ATTR(0) | TPU_ATTR(1))                                                 \
  X(INDEX_ADD, "index_add", TPU_ATTR(0) | TPU_ATTR(1))                                             \
  X(INDEX_COPY, "index_copy", TPU_ATTR(0) | TPU_ATTR(1))                                           \
  X(INDEX_FILL, "index_fill", TPU_ATTR(0) | TPU_ATTR(1))                                           \
  X(INDEX, "index", TPU_ATTR(0))                                                                   \
  X(INDEX_PUT, "index_put", TPU_ATTR(0) | TPU_ATTR(1))                                             \
  X(NONZERO_COUNT, "nonzero_count", 0)                                                             \
  X(NONZERO, "nonzero", 0)                                                                         \
  X(MASKED_SELECT, "masked_select", 0)                                                             \
  X(MASKED_SCATTER, "masked_scatter", 0)                                                           \
  X(ISIN, "isin", TPU_ATTR(0))                                                                     \
  X(TRILU, "trilu", TPU_ATTR(0) | TPU_ATTR(1))                                                     \
  X(ARANGE, "arange", 0)

/* How a scatter combines a source element into a destination element (SCATTER's scalars[1].i). */
typedef enum tpu_accum {
  TPU_ACCUM_ASSIGN, /* dst = src */
  TPU_ACCUM_ADD,    /* dst = dst + alpha * src */
  TPU_ACCUM_MUL,    /* dst = dst * src */
  TPU_ACCUM_MAX,    /* dst = max(dst, src), a NaN on either side winning; real, non-bool dtypes */
  TPU_ACCUM_MIN,    /* dst = min(dst, src), likewise */
} tpu_accum;

#endif
