/* The sort family's ops: X(ID, "name", attribute scalars) per op; see ops/tpu_op.h. Ops that order
 * the elements of each row along one dimension: torch.sort, argsort and msort, and topk (the first
 * k of the order).
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
 *   unstable sort, topk). */
#ifndef TPU_OPS_SORT_H
#define TPU_OPS_SORT_H

#define TPU_OPS_SORT(X) X(SORT, "sort", TPU_ATTRS_BELOW(2))

#endif
