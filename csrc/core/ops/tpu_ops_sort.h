/* The sort family's ops: X(ID, "name", attribute scalars) per op; see ops/tpu_op.h. Ops that order
 * the elements of each row along one dimension: torch.sort, argsort and msort, and topk (the first
 * k of the order); the running scans beyond cumsum (cumprod, cummax, cummin, logcumsumexp); the
 * search of sorted rows (searchsorted, bucketize); and counting into bins (histc, bincount).
 *
 * SORT: tensors[0] = input (rank >= 1, any strides; bool, the integers through int64 and the
 *   floating dtypes), tensors[1] = values (the input's dtype), tensors[2] = indices (int64).
 *   scalars[0].i = dim (0 <= dim < rank), scalars[1].i = 1 for descending, 0 for ascending.
 *   Both outputs have the input's sizes except along dim, where they have k elements,
 *   0 <= k <= n (the input's size there): each row of n elements along dim is ordered and the
 *   outputs receive the first k of the order, values as the input's elements (bit for bit) and
 *   indices as their positions in the row. The outputs do not overlap the input.
 *   The order is PyTorch's: ascending puts NaN after +inf (descending, before it), -0.0 and +0.0
 *   are equal, every NaN equals every other, and the sort is stable whatever the direction:
 *   equal elements keep their order in the input (the smaller index first), so every driver
 *   returns the same indices, also where PyTorch leaves the order of ties unspecified (an
 *   unstable sort, topk).
 *
 * SCAN: tensors[0] = input (rank >= 1, any strides), tensors[1] = values (the input's dtype and
 *   sizes) [, tensors[2] = indices (int64, the input's sizes) for MAX and MIN].
 *   scalars[0].i = dim, scalars[1].i = the combine kind, as PyTorch CPU's kernels along each line:
 *   0 PRODUCT: the running product in the dtype's accumulation type (double for float32 and
 *     float64, float for bfloat16 and float16, wrapping int64 for the integers and bool), rounded
 *     to the dtype at every step.
 *   1 MAX, 2 MIN: the running extreme and the position it came from: an element replaces the one
 *     held when it is NaN, or when neither is NaN and it is >= (MAX) or <= (MIN), so ties and
 *     NaNs take the latest position.
 *   3 LOGSUMEXP (floating dtypes): s = log(exp(s) + exp(x)) from s = -inf, as max + log1p(exp(min
 *     - max)), keeping s when both are the same infinity; NaN propagates.
 *
 * SEARCH: tensors[0] = sorted (rank >= 1, ascending along its last dimension), tensors[1] = values
 *   (the sorted rows' dtype; rank 1 sorted serves every value, else values have sorted's leading
 *   sizes and any size in the last dimension), tensors[2] = out (int64 or int32, the values'
 *   sizes). scalars[0].i = 1 for right. Each out is the position of its value in its row of n:
 *   the number of leading elements s with !(s >= v) (left) or !(s > v) (right), found by
 *   bisection as PyTorch does, so a NaN value gives n.
 *
 * HISTC: tensors[0] = input (any shape and strides; a floating or integer dtype) [, tensors[1] =
 *   weights (the input's sizes)], then out (rank 1, `bins` elements, a floating dtype or int64).
 *   scalars[0].f = min, scalars[1].f = max (min < max). Each element x with min <= x <= max adds
 *   its weight (1 without weights) to bin (x - min) * bins / (max - min), truncated, the last bin
 *   taking x = max; others, NaN included, count nowhere. The bin is computed as PyTorch CPU's
 *   histc does for the floating dtypes, in the input's dtype with min and max rounded to it and
 *   every operation rounding, and as CUDA's for the integers (which CPU refuses), in int64 with
 *   min and max truncated, so bincount is HISTC of [0, bins]. Counts add exactly (weights in
 *   double) and round once. */
#ifndef TPU_OPS_SORT_H
#define TPU_OPS_SORT_H

#define TPU_OPS_SORT(X)                                                                            \
  X(SORT, "sort", TPU_ATTRS_BELOW(2))                                                              \
  X(SCAN, "scan", TPU_ATTRS_BELOW(2))                                                              \
  X(SEARCH, "search", TPU_ATTR(0))                                                                 \
  X(HISTC, "histc", 0)

#endif
