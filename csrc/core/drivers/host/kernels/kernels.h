/* The host driver's kernels: the op -> kernel table of each family, in the order of ops/tpu_op.h.
 * host_driver.c builds its table from these lists and checks at build time that every op has
 * exactly one entry. Each kernel runs one op call on host memory as its family's header in ops/
 * says; it trusts views that passed tpu_tensor_check and returns an error status (with tpu_error's
 * message) for bad input found while running, such as an index out of range. */
#ifndef TPU_HOST_KERNELS_H
#define TPU_HOST_KERNELS_H

#include "ops/tpu_op.h"

/* Runs one op call: reads call->tensors (inputs, then outputs) and call->scalars. */
typedef tpu_status (*tpu_kernel_fn)(const tpu_op_call *call);

#define TPU_HOST_KERNELS_BASE(X)                                                                   \
  X(COPY, tpu_kernel_copy)                                                                         \
  X(FILL, tpu_kernel_fill)

#define TPU_HOST_KERNELS_RANDOM(X)                                                                 \
  X(UNIFORM, tpu_kernel_uniform)                                                                   \
  X(NORMAL, tpu_kernel_normal)                                                                     \
  X(RANDOM, tpu_kernel_random)                                                                     \
  X(BERNOULLI, tpu_kernel_bernoulli)                                                               \
  X(DROPOUT, tpu_kernel_dropout)                                                                   \
  X(DROPOUT_BACKWARD, tpu_kernel_dropout_backward)                                                 \
  X(MULTINOMIAL, tpu_kernel_multinomial)

#define TPU_HOST_KERNELS_ELEMENTWISE(X)                                                            \
  X(ADD, tpu_kernel_add)                                                                           \
  X(MUL, tpu_kernel_mul)                                                                           \
  X(DIV, tpu_kernel_div)                                                                           \
  X(DIV_TRUNC, tpu_kernel_div_trunc)                                                               \
  X(DIV_FLOOR, tpu_kernel_div_floor)                                                               \
  X(REMAINDER, tpu_kernel_remainder)                                                               \
  X(FMOD, tpu_kernel_fmod)                                                                         \
  X(ATAN2, tpu_kernel_atan2)                                                                       \
  X(COPYSIGN, tpu_kernel_copysign)                                                                 \
  X(POW, tpu_kernel_pow)                                                                           \
  X(MAXIMUM, tpu_kernel_maximum)                                                                   \
  X(MINIMUM, tpu_kernel_minimum)                                                                   \
  X(EQ, tpu_kernel_eq)                                                                             \
  X(NE, tpu_kernel_ne)                                                                             \
  X(LT, tpu_kernel_lt)                                                                             \
  X(LE, tpu_kernel_le)                                                                             \
  X(GT, tpu_kernel_gt)                                                                             \
  X(GE, tpu_kernel_ge)                                                                             \
  X(LOGICAL_AND, tpu_kernel_logical_and)                                                           \
  X(LOGICAL_OR, tpu_kernel_logical_or)                                                             \
  X(LOGICAL_XOR, tpu_kernel_logical_xor)                                                           \
  X(BITWISE_AND, tpu_kernel_bitwise_and)                                                           \
  X(BITWISE_OR, tpu_kernel_bitwise_or)                                                             \
  X(BITWISE_XOR, tpu_kernel_bitwise_xor)                                                           \
  X(NEG, tpu_kernel_neg)                                                                           \
  X(ABS, tpu_kernel_abs)                                                                           \
  X(SIGN, tpu_kernel_sign)                                                                         \
  X(SQRT, tpu_kernel_sqrt)                                                                         \
  X(RSQRT, tpu_kernel_rsqrt)                                                                       \
  X(RECIPROCAL, tpu_kernel_reciprocal)                                                             \
  X(EXP, tpu_kernel_exp)                                                                           \
  X(EXP2, tpu_kernel_exp2)                                                                         \
  X(EXPM1, tpu_kernel_expm1)                                                                       \
  X(LOG, tpu_kernel_log)                                                                           \
  X(LOG2, tpu_kernel_log2)                                                                         \
  X(LOG10, tpu_kernel_log10)                                                                       \
  X(LOG1P, tpu_kernel_log1p)                                                                       \
  X(SIN, tpu_kernel_sin)                                                                           \
  X(COS, tpu_kernel_cos)                                                                           \
  X(TAN, tpu_kernel_tan)                                                                           \
  X(TANH, tpu_kernel_tanh)                                                                         \
  X(SINH, tpu_kernel_sinh)                                                                         \
  X(COSH, tpu_kernel_cosh)                                                                         \
  X(ASIN, tpu_kernel_asin)                                                                         \
  X(ACOS, tpu_kernel_acos)                                                                         \
  X(ATAN, tpu_kernel_atan)                                                                         \
  X(ERF, tpu_kernel_erf)                                                                           \
  X(ERFC, tpu_kernel_erfc)                                                                         \
  X(SIGMOID, tpu_kernel_sigmoid)                                                                   \
  X(FLOOR, tpu_kernel_floor)                                                                       \
  X(CEIL, tpu_kernel_ceil)                                                                         \
  X(ROUND, tpu_kernel_round)                                                                       \
  X(ROUND_DECIMALS, tpu_kernel_round_decimals)                                                     \
  X(TRUNC, tpu_kernel_trunc)                                                                       \
  X(FRAC, tpu_kernel_frac)                                                                         \
  X(ERFINV, tpu_kernel_erfinv)                                                                     \
  X(ACOSH, tpu_kernel_acosh)                                                                       \
  X(ASINH, tpu_kernel_asinh)                                                                       \
  X(ATANH, tpu_kernel_atanh)                                                                       \
  X(SIGNBIT, tpu_kernel_signbit)                                                                   \
  X(SINC, tpu_kernel_sinc)                                                                         \
  X(ANGLE, tpu_kernel_angle)                                                                       \
  X(ENTR, tpu_kernel_entr)                                                                         \
  X(LGAMMA, tpu_kernel_lgamma)                                                                     \
  X(DIGAMMA, tpu_kernel_digamma)                                                                   \
  X(POLYGAMMA, tpu_kernel_polygamma)                                                               \
  X(I0, tpu_kernel_i0)                                                                             \
  X(I0E, tpu_kernel_i0e)                                                                           \
  X(I1, tpu_kernel_i1)                                                                             \
  X(I1E, tpu_kernel_i1e)                                                                           \
  X(NDTRI, tpu_kernel_ndtri)                                                                       \
  X(LOG_NDTR, tpu_kernel_log_ndtr)                                                                 \
  X(ERFCX, tpu_kernel_erfcx)                                                                       \
  X(LOGADDEXP, tpu_kernel_logaddexp)                                                               \
  X(LOGADDEXP2, tpu_kernel_logaddexp2)                                                             \
  X(HYPOT, tpu_kernel_hypot)                                                                       \
  X(XLOGY, tpu_kernel_xlogy)                                                                       \
  X(XLOG1PY, tpu_kernel_xlog1py)                                                                   \
  X(ZETA, tpu_kernel_zeta)                                                                         \
  X(IGAMMA, tpu_kernel_igamma)                                                                     \
  X(IGAMMAC, tpu_kernel_igammac)                                                                   \
  X(FMAX, tpu_kernel_fmax)                                                                         \
  X(FMIN, tpu_kernel_fmin)                                                                         \
  X(HEAVISIDE, tpu_kernel_heaviside)                                                               \
  X(NEXTAFTER, tpu_kernel_nextafter)                                                               \
  X(LOGIT, tpu_kernel_logit)                                                                       \
  X(POW_SCALAR, tpu_kernel_pow_scalar)                                                             \
  X(BITWISE_NOT, tpu_kernel_bitwise_not)                                                           \
  X(LOGICAL_NOT, tpu_kernel_logical_not)                                                           \
  X(ISNAN, tpu_kernel_isnan)                                                                       \
  X(ISINF, tpu_kernel_isinf)                                                                       \
  X(ISPOSINF, tpu_kernel_isposinf)                                                                 \
  X(ISNEGINF, tpu_kernel_isneginf)                                                                 \
  X(ISFINITE, tpu_kernel_isfinite)                                                                 \
  X(NAN_TO_NUM, tpu_kernel_nan_to_num)                                                             \
  X(CLAMP, tpu_kernel_clamp)                                                                       \
  X(CLAMP_MIN, tpu_kernel_clamp_min)                                                               \
  X(CLAMP_MAX, tpu_kernel_clamp_max)                                                               \
  X(CLAMP_TENSOR, tpu_kernel_clamp_tensor)                                                         \
  X(THRESHOLD, tpu_kernel_threshold)                                                               \
  X(GELU, tpu_kernel_gelu)                                                                         \
  X(GELU_TANH, tpu_kernel_gelu_tanh)                                                               \
  X(GELU_BACKWARD, tpu_kernel_gelu_backward)                                                       \
  X(GELU_TANH_BACKWARD, tpu_kernel_gelu_tanh_backward)                                             \
  X(SILU, tpu_kernel_silu)                                                                         \
  X(SILU_BACKWARD, tpu_kernel_silu_backward)                                                       \
  X(SIGMOID_BACKWARD, tpu_kernel_sigmoid_backward)                                                 \
  X(TANH_BACKWARD, tpu_kernel_tanh_backward)                                                       \
  X(MISH, tpu_kernel_mish)                                                                         \
  X(MISH_BACKWARD, tpu_kernel_mish_backward)                                                       \
  X(SOFTPLUS, tpu_kernel_softplus)                                                                 \
  X(SOFTPLUS_BACKWARD, tpu_kernel_softplus_backward)                                               \
  X(ELU, tpu_kernel_elu)                                                                           \
  X(ELU_BACKWARD, tpu_kernel_elu_backward)                                                         \
  X(LEAKY_RELU, tpu_kernel_leaky_relu)                                                             \
  X(LEAKY_RELU_BACKWARD, tpu_kernel_leaky_relu_backward)                                           \
  X(HARDTANH_BACKWARD, tpu_kernel_hardtanh_backward)                                               \
  X(LOGIT_BACKWARD, tpu_kernel_logit_backward)                                                     \
  X(HARDSWISH, tpu_kernel_hardswish)                                                               \
  X(HARDSWISH_BACKWARD, tpu_kernel_hardswish_backward)                                             \
  X(HARDSIGMOID, tpu_kernel_hardsigmoid)                                                           \
  X(HARDSIGMOID_BACKWARD, tpu_kernel_hardsigmoid_backward)                                         \
  X(SOFTSHRINK, tpu_kernel_softshrink)                                                             \
  X(HARDSHRINK, tpu_kernel_hardshrink)                                                             \
  X(SHRINK_BACKWARD, tpu_kernel_shrink_backward)                                                   \
  X(LOG_SIGMOID, tpu_kernel_log_sigmoid)                                                           \
  X(LOG_SIGMOID_BACKWARD, tpu_kernel_log_sigmoid_backward)                                         \
  X(WHERE, tpu_kernel_where)                                                                       \
  X(LERP, tpu_kernel_lerp)                                                                         \
  X(LERP_SCALAR, tpu_kernel_lerp_scalar)                                                           \
  X(ADDCMUL, tpu_kernel_addcmul)                                                                   \
  X(ADDCDIV, tpu_kernel_addcdiv)

#define TPU_HOST_KERNELS_REDUCE(X)                                                                 \
  X(SUM, tpu_kernel_sum)                                                                           \
  X(PROD, tpu_kernel_prod)                                                                         \
  X(AMAX, tpu_kernel_amax)                                                                         \
  X(AMIN, tpu_kernel_amin)                                                                         \
  X(MAX_DIM, tpu_kernel_max_dim)                                                                   \
  X(MIN_DIM, tpu_kernel_min_dim)                                                                   \
  X(ARGMAX, tpu_kernel_argmax)                                                                     \
  X(ARGMIN, tpu_kernel_argmin)                                                                     \
  X(VAR, tpu_kernel_var)                                                                           \
  X(NORM, tpu_kernel_norm)                                                                         \
  X(LOGSUMEXP, tpu_kernel_logsumexp)                                                               \
  X(ANY, tpu_kernel_any)                                                                           \
  X(ALL, tpu_kernel_all)                                                                           \
  X(COUNT_NONZERO, tpu_kernel_count_nonzero)                                                       \
  X(CUMSUM, tpu_kernel_cumsum)

#define TPU_HOST_KERNELS_MATMUL(X)                                                                 \
  X(MM, tpu_kernel_gemm)                                                                           \
  X(BMM, tpu_kernel_gemm)                                                                          \
  X(ADDMM, tpu_kernel_gemm)                                                                        \
  X(BADDBMM, tpu_kernel_gemm)                                                                      \
  X(ADDBMM, tpu_kernel_gemm)                                                                       \
  X(ADDMV, tpu_kernel_gemm)                                                                        \
  X(DOT, tpu_kernel_gemm)                                                                          \
  X(INT_MM, tpu_kernel_int_mm)

#define TPU_HOST_KERNELS_NORM(X)                                                                   \
  X(SOFTMAX, tpu_kernel_softmax)                                                                   \
  X(LOG_SOFTMAX, tpu_kernel_log_softmax)                                                           \
  X(SOFTMAX_BACKWARD, tpu_kernel_softmax_backward)                                                 \
  X(LOG_SOFTMAX_BACKWARD, tpu_kernel_log_softmax_backward)                                         \
  X(LAYER_NORM, tpu_kernel_layer_norm)                                                             \
  X(LAYER_NORM_BACKWARD, tpu_kernel_layer_norm_backward)                                           \
  X(RMS_NORM, tpu_kernel_rms_norm)                                                                 \
  X(RMS_NORM_BACKWARD, tpu_kernel_rms_norm_backward)                                               \
  X(BATCH_NORM, tpu_kernel_batch_norm)                                                             \
  X(BATCH_NORM_BACKWARD, tpu_kernel_batch_norm_backward)                                           \
  X(BATCH_NORM_APPLY, tpu_kernel_batch_norm_apply)

#define TPU_HOST_KERNELS_NN(X)                                                                     \
  X(EMBEDDING_BACKWARD, tpu_kernel_embedding_backward)                                             \
  X(EMBEDDING_BAG, tpu_kernel_embedding_bag)                                                       \
  X(NLL_LOSS, tpu_kernel_nll_loss)                                                                 \
  X(NLL_LOSS_BACKWARD, tpu_kernel_nll_loss_backward)                                               \
  X(MSE_LOSS, tpu_kernel_mse_loss)                                                                 \
  X(MSE_LOSS_BACKWARD, tpu_kernel_mse_loss_backward)

#define TPU_HOST_KERNELS_CONV(X)                                                                   \
  X(CONV, tpu_kernel_conv)                                                                         \
  X(CONV_BACKWARD_INPUT, tpu_kernel_conv_backward_input)                                           \
  X(CONV_BACKWARD_WEIGHT, tpu_kernel_conv_backward_weight)                                         \
  X(CONV_BACKWARD_BIAS, tpu_kernel_conv_backward_bias)                                             \
  X(POOL, tpu_kernel_pool)                                                                         \
  X(POOL_BACKWARD, tpu_kernel_pool_backward)

#define TPU_HOST_KERNELS_RNN(X)                                                                    \
  X(LSTM_CELL, tpu_kernel_lstm_cell)                                                               \
  X(LSTM_CELL_BACKWARD, tpu_kernel_lstm_cell_backward)                                             \
  X(GRU_CELL, tpu_kernel_gru_cell)                                                                 \
  X(GRU_CELL_BACKWARD, tpu_kernel_gru_cell_backward)

#define TPU_HOST_KERNELS_ATTENTION(X)                                                              \
  X(SDPA, tpu_kernel_sdpa)                                                                         \
  X(SDPA_BACKWARD, tpu_kernel_sdpa_backward)

#define TPU_HOST_KERNELS_INDEX(X)                                                                  \
  X(INDEX_SELECT, tpu_kernel_index_select)                                                         \
  X(GATHER, tpu_kernel_gather)                                                                     \
  X(SCATTER, tpu_kernel_scatter)                                                                   \
  X(INDEX_ADD, tpu_kernel_scatter)                                                                 \
  X(INDEX_COPY, tpu_kernel_scatter)                                                                \
  X(INDEX_FILL, tpu_kernel_scatter)                                                                \
  X(INDEX, tpu_kernel_index)                                                                       \
  X(INDEX_PUT, tpu_kernel_index_put)                                                               \
  X(NONZERO_COUNT, tpu_kernel_nonzero_count)                                                       \
  X(NONZERO, tpu_kernel_nonzero)                                                                   \
  X(MASKED_SELECT, tpu_kernel_masked_select)                                                       \
  X(MASKED_SCATTER, tpu_kernel_masked_scatter)                                                     \
  X(ISIN, tpu_kernel_isin)                                                                         \
  X(TRILU, tpu_kernel_trilu)                                                                       \
  X(ARANGE, tpu_kernel_arange)

#define TPU_HOST_KERNELS_OPTIM(X)                                                                  \
  X(FUSED_ADAM, tpu_kernel_fused_adam)                                                             \
  X(FUSED_SGD, tpu_kernel_fused_sgd)                                                               \
  X(AMP_UNSCALE, tpu_kernel_amp_unscale)                                                           \
  X(AMP_UPDATE_SCALE, tpu_kernel_amp_update_scale)

#define TPU_HOST_KERNELS_VISION(X)                                                                 \
  X(RESAMPLE, tpu_kernel_resample)                                                                 \
  X(RESAMPLE_BACKWARD, tpu_kernel_resample_backward)

#define TPU_HOST_KERNELS_SORT(X)                                                                   \
  X(SORT, tpu_kernel_sort)                                                                         \
  X(SCAN, tpu_kernel_scan)                                                                         \
  X(SEARCH, tpu_kernel_search)                                                                     \
  X(HISTC, tpu_kernel_histc)

#define TPU_HOST_KERNELS_SPECIAL(X)                                                                \
  X(CHEBYSHEV_T, tpu_kernel_chebyshev_t)                                                           \
  X(CHEBYSHEV_U, tpu_kernel_chebyshev_u)                                                           \
  X(CHEBYSHEV_V, tpu_kernel_chebyshev_v)                                                           \
  X(CHEBYSHEV_W, tpu_kernel_chebyshev_w)                                                           \
  X(SHIFTED_CHEBYSHEV_T, tpu_kernel_shifted_chebyshev_t)                                           \
  X(SHIFTED_CHEBYSHEV_U, tpu_kernel_shifted_chebyshev_u)                                           \
  X(SHIFTED_CHEBYSHEV_V, tpu_kernel_shifted_chebyshev_v)                                           \
  X(SHIFTED_CHEBYSHEV_W, tpu_kernel_shifted_chebyshev_w)                                           \
  X(HERMITE_H, tpu_kernel_hermite_h)                                                               \
  X(HERMITE_HE, tpu_kernel_hermite_he)                                                             \
  X(LAGUERRE_L, tpu_kernel_laguerre_l)                                                             \
  X(LEGENDRE_P, tpu_kernel_legendre_p)                                                             \
  X(AIRY_AI, tpu_kernel_airy_ai)                                                                   \
  X(BESSEL_J0, tpu_kernel_bessel_j0)                                                               \
  X(BESSEL_J1, tpu_kernel_bessel_j1)                                                               \
  X(BESSEL_Y0, tpu_kernel_bessel_y0)                                                               \
  X(BESSEL_Y1, tpu_kernel_bessel_y1)                                                               \
  X(MODIFIED_BESSEL_I0, tpu_kernel_modified_bessel_i0)                                             \
  X(MODIFIED_BESSEL_I1, tpu_kernel_modified_bessel_i1)                                             \
  X(MODIFIED_BESSEL_K0, tpu_kernel_modified_bessel_k0)                                             \
  X(MODIFIED_BESSEL_K1, tpu_kernel_modified_bessel_k1)                                             \
  X(SCALED_MODIFIED_BESSEL_K0, tpu_kernel_scaled_modified_bessel_k0)                               \
  X(SCALED_MODIFIED_BESSEL_K1, tpu_kernel_scaled_modified_bessel_k1)                               \
  X(SPHERICAL_BESSEL_J0, tpu_kernel_spherical_bessel_j0)

#define TPU_HOST_KERNELS_LINALG(X)                                                                 \
  X(CHOLESKY, tpu_kernel_cholesky)                                                                 \
  X(TRIANGULAR_SOLVE, tpu_kernel_triangular_solve)                                                 \
  X(LU_FACTOR, tpu_kernel_lu_factor)                                                               \
  X(LU_SOLVE, tpu_kernel_lu_solve)                                                                 \
  X(EIGH, tpu_kernel_eigh)

#define TPU_HOST_KERNELS(X)                                                                        \
  TPU_HOST_KERNELS_BASE(X)                                                                         \
  TPU_HOST_KERNELS_RANDOM(X)                                                                       \
  TPU_HOST_KERNELS_ELEMENTWISE(X)                                                                  \
  TPU_HOST_KERNELS_REDUCE(X)                                                                       \
  TPU_HOST_KERNELS_MATMUL(X)                                                                       \
  TPU_HOST_KERNELS_NORM(X)                                                                         \
  TPU_HOST_KERNELS_NN(X)                                                                           \
  TPU_HOST_KERNELS_CONV(X)                                                                         \
  TPU_HOST_KERNELS_RNN(X)                                                                          \
  TPU_HOST_KERNELS_ATTENTION(X)                                                                    \
  TPU_HOST_KERNELS_INDEX(X)                                                                        \
  TPU_HOST_KERNELS_OPTIM(X)                                                                        \
  TPU_HOST_KERNELS_SORT(X)                                                                         \
  TPU_HOST_KERNELS_SPECIAL(X)                                                                      \
  TPU_HOST_KERNELS_VISION(X)                                                                       \
  TPU_HOST_KERNELS_LINALG(X)

/* Declares every kernel; kernels shared by several ops are declared more than once, which C
 * allows. */
#define TPU_HOST_DECLARE_KERNEL(id, kernel) tpu_status kernel(const tpu_op_call *call);
TPU_HOST_KERNELS(TPU_HOST_DECLARE_KERNEL)
#undef TPU_HOST_DECLARE_KERNEL

/* nll_loss_backward then log_softmax_backward (dim 1) as one row kernel, for the fused planner's
 * cross-entropy pair (fuse/fuse.h): from nll's inputs and log_softmax's output y [N, C] it writes
 * log_softmax_backward's grad_input [N, C] (dense float32/float64; it may be y's memory) without
 * the mostly-zero gradient between them: row n is -exp(y) * g_n plus g_n at the target class, g_n
 * being what nll_loss_backward writes there. */
tpu_status tpu_kernel_nll_log_softmax_backward(const tpu_op_call *nll, const tpu_op_call *lsm);

#endif
