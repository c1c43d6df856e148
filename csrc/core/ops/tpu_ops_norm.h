/* The norm family's ops: X(ID, "name", attribute scalars) per op; see ops/tpu_op.h. Floating
 * dtypes only (float16, bfloat16, float32, float64); each row or element computes in float (double
 * for float64) and is rounded once, as PyTorch CPU does.
 *
 * SOFTMAX, LOG_SOFTMAX: tensors[0] = input, tensors[1] = output of the same sizes (float32 for a
 *   float16 or bfloat16 input with half_to_float), scalars[0].i = the dimension. Along it,
 *   softmax is y = exp(x - max) * (1 / sum) and log_softmax y = (x - max) - log(sum).
 * SOFTMAX_BACKWARD, LOG_SOFTMAX_BACKWARD: tensors[0] = grad_output, tensors[1] = the forward's
 *   output, tensors[2] = grad_input (the forward input's dtype), scalars[0].i = the dimension:
 *   gi = y * (g - sum(g * y)) and gi = g - exp(y) * sum(g).
 * Any strides; 0-d tensors are one row of one element.
 *
 * Layer and RMS normalization over the last N elements of M rows. Every row tensor is a 2-d view
 * [M, N] and every per-row statistic a 1-d view [M] (any strides); an absent weight, bias or
 * gradient is an empty tensor. scalars[0].f = eps. Rows may be empty (N = 0): the forward ops
 * then write only the statistics of an empty row, mean 0 and rstd NaN (0 / 0 variance), as
 * PyTorch's kernels do.
 *   LAYER_NORM: X, W, B -> Y, mean, rstd. rstd = 1 / sqrt(max(var, 0) + eps) with the biased
 *     variance; Y = (X * rstd - mean * rstd) * W + B, PyTorch CPU's order of operations.
 *   LAYER_NORM_BACKWARD: dY, X, mean, rstd, W -> dX, dW, dB:
 *     dX = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dY * W, xhat = (X - mean) * rstd;
 *     dW = sum over rows of dY * xhat, dB = sum of dY.
 *   RMS_NORM: X, W -> Y, rstd. rstd = 1 / sqrt(mean(X^2) + eps); Y = (X * rstd) * W.
 *   RMS_NORM_BACKWARD: dY, X, rstd, W -> dX, dW:
 *     dX = (g - xhat * sum(g * xhat) / N) * rstd with xhat = X * rstd; dW = sum of dY * xhat.
 *
 * Batch normalization over the channels C of a [N, C, S] view (S: the spatial elements, any
 * strides, so channels-last layouts work too). Per-channel tensors are 1-d [C]; an absent one is
 * an empty tensor.
 *   BATCH_NORM: X, W, B -> Y, save_mean, save_invstd, running_mean, running_var (the last two are
 *     read, and updated in training); scalars[0].f = eps, [1].f = momentum, [2].i = training.
 *     Training takes the batch's mean and biased variance and moves the running statistics
 *     towards them (the variance unbiased); evaluation uses the running ones. Y = (X - mean) *
 *     alpha + B with alpha = invstd * W, or ((X - mean) * invstd) * W + B in a channel whose
 *     alpha overflows the compute type: CPU's contiguous path folds B - mean * alpha into one
 *     term, which cancels against X * alpha or overflows, and CUDA's (X - mean) * invstd can
 *     overflow before W scales it down; these forms do neither. save_mean and save_invstd
 *     receive the statistics used, and Y takes the mean as they store it (rounded to the compute
 *     type), so BATCH_NORM_APPLY recomputes Y bit for bit from them.
 *   BATCH_NORM_APPLY: X, W, B, mean, invstd -> Y: the forward's Y from statistics it saved (fused
 *     mode recomputes a normalized value in backward instead of keeping it, exec/tpu_remat.h).
 *   BATCH_NORM_BACKWARD: dY, X, W, mean, invstd -> dX, dW, dB; scalars[0].f = eps, [2].i =
 *     training. In evaluation `mean` and `invstd` are the running mean and variance (the invstd
 *     is derived here). With sum = sum(dY) and dot = sum(dY * (X - mean)) per channel over
 *     N * S: dW = dot * invstd, dB = sum, and dX = (dY - sum / n - (X - mean) * dot * invstd^2 /
 *     n) * invstd * W in training, dY * invstd * W in evaluation. */
#ifndef TPU_OPS_NORM_H
#define TPU_OPS_NORM_H

#define TPU_OPS_NORM(X)                                                                            \
  X(SOFTMAX, "softmax", TPU_ATTR(0))                                                               \
  X(LOG_SOFTMAX, "log_softmax", TPU_ATTR(0))                                                       \
  X(SOFTMAX_BACKWARD, "softmax_backward", TPU_ATTR(0))                                             \
  X(LOG_SOFTMAX_BACKWARD, "log_softmax_backward", TPU_ATTR(0))                                     \
  X(LAYER_NORM, "layer_norm", 0)                                                                   \
  X(LAYER_NORM_BACKWARD, "layer_norm_backward", 0)                                                 \
  X(RMS_NORM, "rms_norm", 0)                                                                       \
  X(RMS_NORM_BACKWARD, "rms_norm_backward", 0)                                                     \
  X(BATCH_NORM, "batch_norm", TPU_ATTR(2))                                                         \
  X(BATCH_NORM_BACKWARD, "batch_norm_backward", TPU_ATTR(2))                                       \
  X(BATCH_NORM_APPLY, "batch_norm_apply", 0)

#endif
