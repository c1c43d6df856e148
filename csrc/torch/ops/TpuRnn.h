// The fused LSTM and GRU cells' launches (TpuRnnCells.cpp), shared with the whole-sequence layers
// (TpuRnnLayers.cpp), which write each step's results straight into views of their sequences.
#pragma once

#include <ATen/core/Tensor.h>

namespace torch_tpu {

// Launches LSTM_CELL (core/ops/tpu_ops_rnn.h) writing hy, cy and the workspace into the given
// tensors; biases may be null. The caller has checked the call's sizes, dtypes and device.
void launch_lstm_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                      const at::Tensor& cx, const at::Tensor* input_bias,
                      const at::Tensor* hidden_bias, const at::Tensor& hy, const at::Tensor& cy,
                      const at::Tensor& workspace);

// Launches LSTM_CELL_BACKWARD: either output gradient and grad_bias may be null.
void launch_lstm_cell_backward(const at::Tensor* grad_hy, const at::Tensor* grad_cy,
                               const at::Tensor& cx, const at::Tensor& cy,
                               const at::Tensor& workspace, const at::Tensor& grad_gates,
                               const at::Tensor& grad_cx, const at::Tensor* grad_bias);

// Launches GRU_CELL writing hy and the workspace into the given tensors; biases may be null.
void launch_gru_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                     const at::Tensor& hx, const at::Tensor* input_bias,
                     const at::Tensor* hidden_bias, const at::Tensor& hy,
                     const at::Tensor& workspace);

// Launches GRU_CELL_BACKWARD; the bias gradients may be null (both or neither).
void launch_gru_cell_backward(const at::Tensor& grad_hy, const at::Tensor& workspace,
                              const at::Tensor& grad_input_gates,
                              const at::Tensor& grad_hidden_gates, const at::Tensor& grad_hx,
                              const at::Tensor* grad_input_bias,
                              const at::Tensor* grad_hidden_bias);

} // namespace torch_tpu
