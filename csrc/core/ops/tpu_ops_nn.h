/* The nn family's ops: X(ID, "name", attribute scalars) per op; see ops/tpu_op.h. Embedding
 * backward and the losses.
 *
 * EMBEDDING_BACKWARD (embedding_dense_backward): tensors[0] = grad [N, D], [1] = indices [N]
 *   (int64 or int32); outputs [2] = grad_weight [V, D] and, with scale_grad_by_freq, [3] =
 *   counts, int64 scratch [V]. scalars[0].i = padding_idx, [1].i = scale_grad_by_freq.
 *   grad_weight[k] = sum over n with indices[n] == k of grad[n] (times 1 / count(k) with
 *   scale_grad_by_freq), added in increasing n, each addition rounded to the dtype as PyTorch
 *   CPU's add does; rows never indexed and the padding row are zero. An index equal to
 *   padding_idx is skipped (as on PyTorch CPU); any other index outside [0, V) is an IndexError,
 *   found before anything is written.
 *
 * EMBEDDING_BAG: tensors[0] = weight [V, D] (floating, rows contiguous), [1] = indices [N] (int64
 *   or int32), [2] = offsets [B] (the indices' dtype): bag b holds positions [offsets[b],
 *   offsets[b + 1]), the last one up to N; [3] = per_sample_weights [N] (weight's dtype; sum only,
 *   present when there are 4 inputs). Outputs: out [B, D] (weight's dtype, rows contiguous),
 *   offset2bag [N] int64 (each position's bag; written only when it has N elements, else [0]),
 *   bag_size [B] int64, max_indices [B, D] int64 for max, else [B]. scalars[0].i = mode (0 sum,
 *   1 mean, 2 max), [1].i = padding_idx (negative for none). Positions whose index is padding_idx
 *   are skipped. out[b]: the sum of the bag's weight rows (each times its per-sample weight) in
 *   position order, accumulated in float (double for float64) and rounded once; mean divides it
 *   by the bag's count; max takes each column's maximum, the first strictly greater value winning,
 *   and max_indices the row it came from. An empty bag is 0. bag_size is 0 for sum, else the
 *   count; for sum and mean max_indices repeats bag_size (as PyTorch CPU returns). offsets[0] != 0,
 *   an offset above N or below its predecessor, or an index outside [0, V), is a RuntimeError
 *   with PyTorch CPU's message.
 *
 * Losses. The reduction scalar uses ATen's codes: 0 none, 1 mean, 2 sum. Floating dtypes only
 * (float16, bfloat16, float32, float64). A reduced loss accumulates in double and rounds once.
 *   NLL_LOSS: tensors[0] = input [N, C, S], [1] = target [N, S] (int64 or uint8), [2] = weight
 *     [C] (optional: present when there are 3 inputs); outputs: out ([N, S] for reduction none,
 *     else 0-d), total_weight (0-d). scalars[0].i = reduction, [1].i = ignore_index. Element
 *     (n, s) contributes -input[n, t, s] * weight[t] with t = target[n, s], nothing when t is
 *     ignore_index; a target outside [0, C) is an IndexError. Reduced, out is the sum (divided
 *     by total_weight for mean: the sum of the contributing weights), total_weight 0 for none.
 *     (PyTorch reduces a 1-d input even for reduction none: callers pass sum then.)
 *   NLL_LOSS_BACKWARD: tensors[0] = grad_output ([N, S] for none, else 0-d), [1] = target,
 *     [2] = total_weight, [3] = weight (optional); scalars as NLL_LOSS's; output grad_input
 *     [N, C, S], zero except grad_input[n, t, s] = -weight[t] * g with g = grad_output[n, s]
 *     (none), grad_output (sum) or grad_output / total_weight (mean).
 *   MSE_LOSS: tensors[0] = input, [1] = target (same sizes); output out (the same sizes for
 *     none, else 0-d); scalars[0].i = reduction. The loss (input - target)^2 is computed as
 *     PyTorch CPU does in the dtype (float16 and bfloat16 round the difference, then the
 *     square).
 *   MSE_LOSS_BACKWARD: tensors[0] = grad_output, [1] = input, [2] = target (same sizes); output
 *     grad_input; scalars[0].f = norm (2 / numel for mean, else 2): grad_input = norm * (input -
 *     target) * grad_output, each step rounded to the dtype as on PyTorch CPU. */
#ifndef TPU_OPS_NN_H
#define TPU_OPS_NN_H

#define TPU_OPS_NN(X)                                                                              \
  X(EMBEDDING_BACKWARD, "embedding_backward", TPU_ATTR(0) | TPU_ATTR(1))                           \
  X(EMBEDDING_BAG, "embedding_bag", TPU_ATTR(0) | TPU_ATTR(1))                                     \
  X(NLL_LOSS, "nll_loss", TPU_ATTR(0) | TPU_ATTR(1))                                               \
  X(NLL_LOSS_BACKWARD, "nll_loss_backward", TPU_ATTR(0) | TPU_ATTR(1))                             \
  X(MSE_LOSS, "mse_loss", TPU_ATTR(0))                                                             \
  X(MSE_LOSS_BACKWARD, "mse_loss_backward", 0)

#endif
