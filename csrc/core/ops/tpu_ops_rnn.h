/* The rnn family's ops: X(ID, "name", attribute scalars) per op; see ops/tpu_op.h. The fused LSTM
 * and GRU cells and their backward. Floating dtypes (float16, bfloat16, float32, float64); each op
 * computes in float or wider (double for float64) and rounds once per output element, as PyTorch
 * CPU does.
 *
 * Fused RNN cells, with the workspace layouts of PyTorch's CUDA kernels (which the backward ops
 * and autograd rely on): gates [B, 4H] (LSTM: i, f, g, o) or [B, 3H] (GRU: r, z, n), states
 * [B, H], biases 1-d; one dtype throughout. A bias gradient is the column sum of the (rounded)
 * gate gradients.
 * LSTM_CELL: tensors input_gates, hidden_gates, cx, [input_bias, hidden_bias]; outputs hy, cy,
 *   workspace [B, 4H] (the activated gates).
 * LSTM_CELL_BACKWARD: tensors [grad_hy], [grad_cy] (by TPU_RNN_* flags in scalars[0].u), cx, cy,
 *   workspace; outputs grad_gates [B, 4H], grad_cx, [grad_bias [4H]].
 * GRU_CELL: tensors input_gates, hidden_gates, hx, [input_bias, hidden_bias]; outputs hy,
 *   workspace [B, 5H] (r, z, n, hx, and the hidden n gate with its bias).
 * GRU_CELL_BACKWARD: tensors grad_hy, workspace; outputs grad_input_gates, grad_hidden_gates,
 *   grad_hx, [grad_input_bias, grad_hidden_bias]. */
#ifndef TPU_OPS_RNN_H
#define TPU_OPS_RNN_H

#define TPU_OPS_RNN(X)                                                                             \
  X(LSTM_CELL, "lstm_cell", 0)                                                                     \
  X(LSTM_CELL_BACKWARD, "lstm_cell_backward", TPU_ATTR(0))                                         \
  X(GRU_CELL, "gru_cell", 0)                                                                       \
  X(GRU_CELL_BACKWARD, "gru_cell_backward", 0)

/* LSTM_CELL_BACKWARD flags: which output gradients are given. */
enum { TPU_RNN_GRAD_HY = 1u << 0, TPU_RNN_GRAD_CY = 1u << 1 };

#endif
