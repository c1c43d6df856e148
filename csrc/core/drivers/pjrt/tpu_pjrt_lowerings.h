/* The PJRT driver's op -> lowering table, in the order of ops/tpu_op.h: how each op of the table
 * lowers to StableHLO (drivers/pjrt/tpu_pjrt_lower.h), or NONE with the reason it does not yet,
 * whose calls run through the core's counted driver fallback (ops/tpu_op_fallback.h). Kinds:
 * COPY, FILL and ARANGE lower in tpu_pjrt_lower.c; ELEMENTWISE, REDUCE and MATMUL through their
 * families' headers; FAMILY through the tpu_pjrt_family named (drivers/pjrt/tpu_pjrt_family.h).
 * A kind still checks each call (dtypes, views, operand counts): calls it refuses fall back too.
 * tpu_pjrt_lower.c builds its dispatch from this list and checks at build time that every op has
 * exactly one entry. */
#ifndef TPU_PJRT_LOWERINGS_H
#define TPU_PJRT_LOWERINGS_H

#define TPU_PJRT_LOWERINGS(X)                                                                      \
  X(COPY, COPY, NULL)                                                                              \
  X(FILL, FILL, NULL)                                                                              \
  X(UNIFORM, FAMILY, &tpu_pjrt_random_family)                                                      \
  X(NORMAL, FAMILY, &tpu_pjrt_random_family)                                                       \
  X(RANDOM, FAMILY, &tpu_pjrt_random_family)                                                       \
  X(BERNOULLI, FAMILY, &tpu_pjrt_random_family)                                                    \
  X(DROPOUT, FAMILY, &tpu_pjrt_random_family)                                                      \
  X(DROPOUT_BACKWARD, FAMILY, &tpu_pjrt_random_family)                                             \
  X(ADD, ELEMENTWISE, NULL)                                                                        \
  X(MUL, ELEMENTWISE, NULL)                                                                        \
  X(DIV, ELEMENTWISE, NULL)                                                                        \
  X(DIV_TRUNC, ELEMENTWISE, NULL)                                                                  \
  X(DIV_FLOOR, ELEMENTWISE, NULL)                                                                  \
  X(REMAINDER, ELEMENTWISE, NULL)                                                                  \
  X(FMOD, ELEMENTWISE, NULL)                                                                       \
  X(ATAN2, ELEMENTWISE, NULL)                                                                      \
  X(COPYSIGN, ELEMENTWISE, NULL)                                                                   \
  X(POW, ELEMENTWISE, NULL)                                                                        \
  X(MAXIMUM, ELEMENTWISE, NULL)                                                                    \
  X(MINIMUM, ELEMENTWISE, NULL)                                                                    \
  X(EQ, ELEMENTWISE, NULL)                                                                         \
  X(NE, ELEMENTWISE, NULL)                                                                         \
  X(LT, ELEMENTWISE, NULL)                                                                         \
  X(LE, ELEMENTWISE, NULL)                                                                         \
  X(GT, ELEMENTWISE, NULL)                                                                         \
  X(GE, ELEMENTWISE, NULL)                                                                         \
  X(LOGICAL_AND, ELEMENTWISE, NULL)                                                                \
  X(LOGICAL_OR, ELEMENTWISE, NULL)                                                                 \
  X(LOGICAL_XOR, ELEMENTWISE, NULL)                                                                \
  X(BITWISE_AND, ELEMENTWISE, NULL)                                                                \
  X(BITWISE_OR, ELEMENTWISE, NULL)                                                                 \
  X(BITWISE_XOR, ELEMENTWISE, NULL)                                                                \
  X(NEG, ELEMENTWISE, NULL)                                                                        \
  X(ABS, ELEMENTWISE, NULL)                                                                        \
  X(SIGN, ELEMENTWISE, NULL)                                                                       \
  X(SQRT, ELEMENTWISE, NULL)                                                                       \
  X(RSQRT, ELEMENTWISE, NULL)                                                                      \
  X(RECIPROCAL, ELEMENTWISE, NULL)                                                                 \
  X(EXP, ELEMENTWISE, NULL)                                                                        \
  X(EXP2, ELEMENTWISE, NULL)                                                                       \
  X(EXPM1, ELEMENTWISE, NULL)                                                                      \
  X(LOG, ELEMENTWISE, NULL)                                                                        \
  X(LOG2, ELEMENTWISE, NULL)                                                                       \
  X(LOG10, ELEMENTWISE, NULL)                                                                      \
  X(LOG1P, ELEMENTWISE, NULL)                                                                      \
  X(SIN, ELEMENTWISE, NULL)                                                                        \
  X(COS, ELEMENTWISE, NULL)                                                                        \
  X(TAN, ELEMENTWISE, NULL)                                                                        \
  X(TANH, ELEMENTWISE, NULL)                                                                       \
  X(SINH, ELEMENTWISE, NULL)                                                                       \
  X(COSH, ELEMENTWISE, NULL)                                                                       \
  X(ASIN, ELEMENTWISE, NULL)                                                                       \
  X(ACOS, ELEMENTWISE, NULL)                                                                       \
  X(ATAN, ELEMENTWISE, NULL)                                                                       \
  X(ERF, ELEMENTWISE, NULL)                                                                        \
  X(ERFC, ELEMENTWISE, NULL)                                                                       \
  X(SIGMOID, ELEMENTWISE, NULL)                                                                    \
  X(FLOOR, ELEMENTWISE, NULL)                                                                      \
  X(CEIL, ELEMENTWISE, NULL)                                                                       \
  X(ROUND, ELEMENTWISE, NULL)                                                                      \
  X(ROUND_DECIMALS, ELEMENTWISE, NULL)                                                             \
  X(TRUNC, ELEMENTWISE, NULL)                                                                      \
  X(FRAC, ELEMENTWISE, NULL)                                                                       \
  X(ERFINV, ELEMENTWISE, NULL)                                                                     \
  X(LOGIT, ELEMENTWISE, NULL)                                                                      \
  X(POW_SCALAR, ELEMENTWISE, NULL)                                                                 \
  X(BITWISE_NOT, ELEMENTWISE, NULL)                                                                \
  X(LOGICAL_NOT, ELEMENTWISE, NULL)                                                                \
  X(ISNAN, ELEMENTWISE, NULL)                                                                      \
  X(ISINF, ELEMENTWISE, NULL)                                                                      \
  X(ISPOSINF, ELEMENTWISE, NULL)                                                                   \
  X(ISNEGINF, ELEMENTWISE, NULL)                                                                   \
  X(ISFINITE, ELEMENTWISE, NULL)                                                                   \
  X(NAN_TO_NUM, ELEMENTWISE, NULL)                                                                 \
  X(CLAMP, ELEMENTWISE, NULL)                                                                      \
  X(CLAMP_MIN, ELEMENTWISE, NULL)                                                                  \
  X(CLAMP_MAX, ELEMENTWISE, NULL)                                                                  \
  X(CLAMP_TENSOR, ELEMENTWISE, NULL)                                                               \
  X(THRESHOLD, ELEMENTWISE, NULL)                                                                  \
  X(GELU, ELEMENTWISE, NULL)                                                                       \
  X(GELU_TANH, ELEMENTWISE, NULL)                                                                  \
  X(GELU_BACKWARD, ELEMENTWISE, NULL)                                                              \
  X(GELU_TANH_BACKWARD, ELEMENTWISE, NULL)                                                         \
  X(SILU, ELEMENTWISE, NULL)                                                                       \
  X(SILU_BACKWARD, ELEMENTWISE, NULL)                                                              \
  X(SIGMOID_BACKWARD, ELEMENTWISE, NULL)                                                           \
  X(TANH_BACKWARD, ELEMENTWISE, NULL)                                                              \
  X(MISH, ELEMENTWISE, NULL)                                                                       \
  X(MISH_BACKWARD, ELEMENTWISE, NULL)                                                              \
  X(SOFTPLUS, ELEMENTWISE, NULL)                                                                   \
  X(SOFTPLUS_BACKWARD, ELEMENTWISE, NULL)                                                          \
  X(ELU, ELEMENTWISE, NULL)                                                                        \
  X(ELU_BACKWARD, ELEMENTWISE, NULL)                                                               \
  X(LEAKY_RELU, ELEMENTWISE, NULL)                                                                 \
  X(LEAKY_RELU_BACKWARD, ELEMENTWISE, NULL)                                                        \
  X(HARDTANH_BACKWARD, ELEMENTWISE, NULL)                                                          \
  X(LOGIT_BACKWARD, ELEMENTWISE, NULL)                                                             \
  X(HARDSWISH, ELEMENTWISE, NULL)                                                                  \
  X(HARDSWISH_BACKWARD, ELEMENTWISE, NULL)                                                         \
  X(HARDSIGMOID, ELEMENTWISE, NULL)                                                                \
  X(HARDSIGMOID_BACKWARD, ELEMENTWISE, NULL)                                                       \
  X(WHERE, ELEMENTWISE, NULL)                                                                      \
  X(LERP, ELEMENTWISE, NULL)                                                                       \
  X(LERP_SCALAR, ELEMENTWISE, NULL)                                                                \
  X(ADDCMUL, ELEMENTWISE, NULL)                                                                    \
  X(ADDCDIV, ELEMENTWISE, NULL)                                                                    \
  X(SUM, REDUCE, NULL)                                                                             \
  X(PROD, FAMILY, &tpu_pjrt_reduce_stats_family)                                                   \
  X(AMAX, REDUCE, NULL)                                                                            \
  X(AMIN, REDUCE, NULL)                                                                            \
  X(MAX_DIM, FAMILY, &tpu_pjrt_reduce_pick_family)                                                 \
  X(MIN_DIM, FAMILY, &tpu_pjrt_reduce_pick_family)                                                 \
  X(ARGMAX, FAMILY, &tpu_pjrt_reduce_pick_family)                                                  \
  X(ARGMIN, FAMILY, &tpu_pjrt_reduce_pick_family)                                                  \
  X(VAR, FAMILY, &tpu_pjrt_reduce_stats_family)                                                    \
  X(NORM, FAMILY, &tpu_pjrt_reduce_stats_family)                                                   \
  X(LOGSUMEXP, FAMILY, &tpu_pjrt_reduce_stats_family)                                              \
  X(ANY, FAMILY, &tpu_pjrt_reduce_pick_family)                                                     \
  X(ALL, FAMILY, &tpu_pjrt_reduce_pick_family)                                                     \
  X(COUNT_NONZERO, FAMILY, &tpu_pjrt_reduce_pick_family)                                           \
  X(CUMSUM, FAMILY, &tpu_pjrt_reduce_stats_family)                                                 \
  X(MM, MATMUL, NULL)                                                                              \
  X(BMM, MATMUL, NULL)                                                                             \
  X(ADDMM, MATMUL, NULL)                                                                           \
  X(BADDBMM, MATMUL, NULL)                                                                         \
  X(ADDBMM, MATMUL, NULL)                                                                          \
  X(ADDMV, MATMUL, NULL)                                                                           \
  X(DOT, MATMUL, NULL)                                                                             \
  X(SOFTMAX, FAMILY, &tpu_pjrt_norm_family)                                                        \
  X(LOG_SOFTMAX, FAMILY, &tpu_pjrt_norm_family)                                                    \
  X(SOFTMAX_BACKWARD, FAMILY, &tpu_pjrt_norm_family)                                               \
  X(LOG_SOFTMAX_BACKWARD, FAMILY, &tpu_pjrt_norm_family)                                           \
  X(LAYER_NORM, FAMILY, &tpu_pjrt_norm_family)                                                     \
  X(LAYER_NORM_BACKWARD, FAMILY, &tpu_pjrt_norm_family)                                            \
  X(RMS_NORM, FAMILY, &tpu_pjrt_norm_family)                                                       \
  X(RMS_NORM_BACKWARD, FAMILY, &tpu_pjrt_norm_family)                                              \
  X(BATCH_NORM, FAMILY, &tpu_pjrt_batch_norm_family)                                               \
  X(BATCH_NORM_BACKWARD, FAMILY, &tpu_pjrt_batch_norm_family)                                      \
  X(BATCH_NORM_APPLY, FAMILY, &tpu_pjrt_batch_norm_family)                                         \
  X(EMBEDDING_BACKWARD, FAMILY, &tpu_pjrt_nn_family)                                               \
  X(NLL_LOSS, FAMILY, &tpu_pjrt_nn_family)                                                         \
  X(NLL_LOSS_BACKWARD, FAMILY, &tpu_pjrt_nn_family)                                                \
  X(MSE_LOSS, FAMILY, &tpu_pjrt_loss_family)                                                       \
  X(MSE_LOSS_BACKWARD, FAMILY, &tpu_pjrt_loss_family)                                              \
  X(CONV, FAMILY, &tpu_pjrt_conv_family)                                                           \
  X(CONV_BACKWARD_INPUT, FAMILY, &tpu_pjrt_conv_family)                                            \
  X(CONV_BACKWARD_WEIGHT, FAMILY, &tpu_pjrt_conv_family)                                           \
  X(CONV_BACKWARD_BIAS, FAMILY, &tpu_pjrt_conv_family)                                             \
  X(POOL, NONE, NULL) /* pooling windows (reduce_window) not written yet */                        \
  X(POOL_BACKWARD, NONE, NULL) /* pooling windows (reduce_window) not written yet */               \
  X(LSTM_CELL, FAMILY, &tpu_pjrt_rnn_family)                                                       \
  X(LSTM_CELL_BACKWARD, FAMILY, &tpu_pjrt_rnn_family)                                              \
  X(GRU_CELL, FAMILY, &tpu_pjrt_rnn_family)                                                        \
  X(GRU_CELL_BACKWARD, FAMILY, &tpu_pjrt_rnn_family)                                               \
  X(SDPA, FAMILY, &tpu_pjrt_attention_family)                                                      \
  X(SDPA_BACKWARD, FAMILY, &tpu_pjrt_attention_family)                                             \
  X(INDEX_SELECT, FAMILY, &tpu_pjrt_index_family)                                                  \
  X(GATHER, FAMILY, &tpu_pjrt_index_family)                                                        \
  X(SCATTER, FAMILY, &tpu_pjrt_index_family)                                                       \
  X(INDEX_ADD, FAMILY, &tpu_pjrt_index_family)                                                     \
  X(INDEX_COPY, FAMILY, &tpu_pjrt_index_family)                                                    \
  X(INDEX_FILL, FAMILY, &tpu_pjrt_index_family)                                                    \
  X(INDEX, NONE, NULL) /* advanced indexing over restrided views: not written yet */               \
  X(INDEX_PUT, NONE, NULL) /* advanced indexing over restrided views: not written yet */           \
  X(NONZERO_COUNT, FAMILY, &tpu_pjrt_reduce_pick_family)                                           \
  X(NONZERO, NONE, NULL) /* an output sized by the data: the host knows the count first */         \
  X(MASKED_SELECT, NONE, NULL) /* an output sized by the data: the host knows the count first */   \
  X(MASKED_SCATTER, NONE, NULL) /* not written yet */                                              \
  X(TRILU, FAMILY, &tpu_pjrt_trilu_family)                                                         \
  X(ARANGE, ARANGE, NULL)                                                                          \
  X(FUSED_ADAM, FAMILY, &tpu_pjrt_optim_family)                                                    \
  X(FUSED_SGD, FAMILY, &tpu_pjrt_optim_family)                                                     \
  X(AMP_UNSCALE, FAMILY, &tpu_pjrt_optim_family)                                                   \
  X(AMP_UPDATE_SCALE, FAMILY, &tpu_pjrt_optim_family)

#endif
