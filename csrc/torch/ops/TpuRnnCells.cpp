// On a PrivateUse1 device ATen's LSTM and GRU run their cells through the fused cell ops (CUDA's
// path): here they run on the rnn family's kernels (LSTM_CELL, GRU_CELL and their backward), with
// CUDA's workspace layouts, which the backward ops (and autograd's formulas) expect. Outputs are
// contiguous, as on CUDA.
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "ops/TpuConvCommon.h"
#include "ops/TpuIndexCommon.h"
#include "ops/TpuRnn.h"

namespace torch_tpu {
namespace {

void check_cell(const char* name, const at::Tensor& state,
                std::initializer_list<const at::Tensor*> others) {
  TORCH_CHECK_NOT_IMPLEMENTED(is_conv_float(state.scalar_type()), "\"", name,
                              "\" not implemented for '", state.scalar_type(), "'");
  TORCH_CHECK(state.dim() == 2, name, ": expected 2-d states, got ", state.dim(), "-d");
  check_device(name, state.device(), others);
  for (const at::Tensor* t : others) {
    TORCH_CHECK(!t || t->scalar_type() == state.scalar_type(), name,
                ": expected all tensors to have dtype ", state.scalar_type(), ", got ",
                t->scalar_type());
  }
}

void check_gates(const char* name, const at::Tensor& gates, int64_t b, int64_t cols) {
  TORCH_CHECK(gates.dim() == 2 && gates.size(0) == b && gates.size(1) == cols, name,
              ": expected gates of size [", b, ", ", cols, "], got ", gates.sizes());
}

// The forward cells' checks: gates [B, gates * H] for states [B, H], and both biases (each
// [gates * H]) or neither.
void check_forward(const char* name, const at::Tensor& state, const at::Tensor& input_gates,
                   const at::Tensor& hidden_gates, const at::Tensor* ib, const at::Tensor* hb,
                   int64_t gates) {
  check_cell(name, state, {&input_gates, &hidden_gates, ib, hb});
  TORCH_CHECK((ib == nullptr) == (hb == nullptr), name, ": expected both biases or neither");
  int64_t cols = gates * state.size(1);
  check_gates(name, input_gates, state.size(0), cols);
  check_gates(name, hidden_gates, state.size(0), cols);
  for (const at::Tensor* bias : {ib, hb}) {
    TORCH_CHECK(!bias || (bias->dim() == 1 && bias->size(0) == cols), name,
                ": expected biases of ", cols, " elements");
  }
}

at::Tensor empty(at::IntArrayRef sizes, const at::Tensor& like) {
  return at::empty(sizes, like.options().memory_format(at::MemoryFormat::Contiguous));
}

std::vector<tpu_tensor> views(std::initializer_list<const at::Tensor*> tensors) {
  std::vector<tpu_tensor> out;
  for (const at::Tensor* t : tensors) {
    if (t) {
      out.push_back(core_view(*t));
    }
  }
  return out;
}

} // namespace

void launch_lstm_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                      const at::Tensor& cx, const at::Tensor* input_bias,
                      const at::Tensor* hidden_bias, const at::Tensor& hy, const at::Tensor& cy,
                      const at::Tensor& workspace) {
  launch(cx.device().index(),
         make_call(TPU_OP_LSTM_CELL,
                   views({&input_gates, &hidden_gates, &cx, input_bias, hidden_bias}),
                   views({&hy, &cy, &workspace})));
}

void launch_lstm_cell_backward(const at::Tensor* grad_hy, const at::Tensor* grad_cy,
                               const at::Tensor& cx, const at::Tensor& cy,
                               const at::Tensor& workspace, const at::Tensor& grad_gates,
                               const at::Tensor& grad_cx, const at::Tensor* grad_bias) {
  OpCall call =
      make_call(TPU_OP_LSTM_CELL_BACKWARD, views({grad_hy, grad_cy, &cx, &cy, &workspace}),
                views({&grad_gates, &grad_cx, grad_bias}));
  call->scalars[0].u = (grad_hy ? TPU_RNN_GRAD_HY : 0) | (grad_cy ? TPU_RNN_GRAD_CY : 0);
  launch(cx.device().index(), std::move(call));
}

void launch_gru_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                     const at::Tensor& hx, const at::Tensor* input_bias,
                     const at::Tensor* hidden_bias, const at::Tensor& hy,
                     const at::Tensor& workspace) {
  launch(hx.device().index(),
         make_call(TPU_OP_GRU_CELL,
                   views({&input_gates, &hidden_gates, &hx, input_bias, hidden_bias}),
                   views({&hy, &workspace})));
}

void launch_gru_cell_backward(const at::Tensor& grad_hy, const at::Tensor& workspace,
                              const at::Tensor& grad_input_gates,
                              const at::Tensor& grad_hidden_gates, const at::Tensor& grad_hx,
                              const at::Tensor* grad_input_bias,
                              const at::Tensor* grad_hidden_bias) {
  launch(grad_hy.device().index(),
         make_call(TPU_OP_GRU_CELL_BACKWARD, views({&grad_hy, &workspace}),
                   views({&grad_input_gates, &grad_hidden_gates, &grad_hx, grad_input_bias,
                          grad_hidden_bias})));
}

namespace {

// Returns (hy, cy, workspace = the activated gates i, f, g, o).
std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  const at::Tensor *ib = opt(input_bias), *hb = opt(hidden_bias);
  check_forward("_thnn_fused_lstm_cell", cx, input_gates, hidden_gates, ib, hb, 4);
  int64_t b = cx.size(0), h = cx.size(1);
  at::Tensor hy = empty({b, h}, cx), cy = empty({b, h}, cx), ws = empty({b, 4 * h}, cx);
  if (hy.numel() > 0) {
    launch_lstm_cell(input_gates, hidden_gates, cx, ib, hb, hy, cy, ws);
  }
  return {hy, cy, ws};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell_backward(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy,
    const at::Tensor& cx, const at::Tensor& cy, const at::Tensor& workspace, bool has_bias) {
  const at::Tensor *ghy = opt(grad_hy), *gcy = opt(grad_cy);
  check_cell("_thnn_fused_lstm_cell_backward_impl", cx, {ghy, gcy, &cy, &workspace});
  int64_t b = cx.size(0), h = cx.size(1);
  check_gates("_thnn_fused_lstm_cell_backward_impl", workspace, b, 4 * h);
  for (const at::Tensor* t : {ghy, gcy, &cy}) {
    TORCH_CHECK(!t || t->sizes() == cx.sizes(),
                "_thnn_fused_lstm_cell_backward_impl: expected states of size ", cx.sizes());
  }
  at::Tensor grad_gates = empty({b, 4 * h}, cx), grad_cx = empty({b, h}, cx);
  at::Tensor grad_bias = has_bias ? empty({4 * h}, cx) : at::Tensor();
  if (grad_gates.numel() > 0) {
    launch_lstm_cell_backward(ghy, gcy, cx, cy, workspace, grad_gates, grad_cx,
                              has_bias ? &grad_bias : nullptr);
  } else if (has_bias) {
    grad_bias.zero_();
  }
  return {grad_gates, grad_cx, grad_bias};
}

// Returns (hy, workspace = r, z, n, hx, and the hidden n gate with its bias).
std::tuple<at::Tensor, at::Tensor> fused_gru_cell(const at::Tensor& input_gates,
                                                  const at::Tensor& hidden_gates,
                                                  const at::Tensor& hx,
                                                  const std::optional<at::Tensor>& input_bias,
                                                  const std::optional<at::Tensor>& hidden_bias) {
  const at::Tensor *ib = opt(input_bias), *hb = opt(hidden_bias);
  check_forward("_thnn_fused_gru_cell", hx, input_gates, hidden_gates, ib, hb, 3);
  int64_t b = hx.size(0), h = hx.size(1);
  at::Tensor hy = empty({b, h}, hx), ws = empty({b, 5 * h}, hx);
  if (hy.numel() > 0) {
    launch_gru_cell(input_gates, hidden_gates, hx, ib, hb, hy, ws);
  }
  return {hy, ws};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_gru_cell_backward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias) {
  check_cell("_thnn_fused_gru_cell_backward", grad_hy, {&workspace});
  int64_t b = grad_hy.size(0), h = grad_hy.size(1);
  check_gates("_thnn_fused_gru_cell_backward", workspace, b, 5 * h);
  at::Tensor gig = empty({b, 3 * h}, grad_hy), ghg = empty({b, 3 * h}, grad_hy);
  at::Tensor ghx = empty({b, h}, grad_hy);
  at::Tensor gib = has_bias ? empty({3 * h}, grad_hy) : at::Tensor();
  at::Tensor ghb = has_bias ? empty({3 * h}, grad_hy) : at::Tensor();
  if (gig.numel() > 0) {
    launch_gru_cell_backward(grad_hy, workspace, gig, ghg, ghx, has_bias ? &gib : nullptr,
                             has_bias ? &ghb : nullptr);
  } else if (has_bias) {
    gib.zero_();
    ghb.zero_();
  }
  return {gig, ghg, ghx, gib, ghb};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(fused_lstm_cell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(fused_lstm_cell_backward));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(fused_gru_cell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(fused_gru_cell_backward));
}

} // namespace torch_tpu
