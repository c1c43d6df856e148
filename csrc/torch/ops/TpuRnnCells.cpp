// On a PrivateUse1 device ATen's LSTM and GRU run their cells through the fused cell ops, which
// only CUDA implements. Until native kernels land, these compute the same math on host copies:
// counted and controlled like the boxed fallback. The workspace layouts follow CUDA's, which the
// backward ops (and autograd's formulas) expect.
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include "ops/TpuOps.h"

namespace torch_tpu {
namespace {

at::Tensor host(const at::Tensor& t) {
  return t.defined() ? t.cpu() : t;
}

at::Tensor host(const std::optional<at::Tensor>& t) {
  return t && t->defined() ? t->cpu() : at::Tensor();
}

at::Tensor on(const at::Tensor& t, const at::Tensor& like) {
  return t.defined() ? t.to(like.device()) : t;
}

at::Tensor with_bias(at::Tensor gates, const at::Tensor& bias) {
  return bias.defined() ? gates + bias : gates;
}

// Returns (hy, cy, workspace = the activated gates i, f, g, o).
std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell(
    const at::Tensor& input_gates,
    const at::Tensor& hidden_gates,
    const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias,
    const std::optional<at::Tensor>& hidden_bias) {
  begin_host_fallback("aten::_thnn_fused_lstm_cell");
  at::Tensor gates = with_bias(with_bias(host(input_gates) + host(hidden_gates), host(input_bias)),
                               host(hidden_bias));
  auto chunks = gates.chunk(4, 1);
  at::Tensor i = chunks[0].sigmoid(), f = chunks[1].sigmoid(), g = chunks[2].tanh(),
             o = chunks[3].sigmoid();
  at::Tensor cy = f * host(cx) + i * g;
  at::Tensor hy = o * cy.tanh();
  at::Tensor workspace = at::cat({i, f, g, o}, 1);
  return {on(hy, cx), on(cy, cx), on(workspace, cx)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell_backward(
    const std::optional<at::Tensor>& grad_hy_opt,
    const std::optional<at::Tensor>& grad_cy_opt,
    const at::Tensor& cx_dev,
    const at::Tensor& cy_dev,
    const at::Tensor& workspace_dev,
    bool has_bias) {
  begin_host_fallback("aten::_thnn_fused_lstm_cell_backward_impl");
  at::Tensor cx = host(cx_dev), cy = host(cy_dev);
  auto w = host(workspace_dev).chunk(4, 1);
  at::Tensor i = w[0], f = w[1], g = w[2], o = w[3];
  at::Tensor grad_hy = host(grad_hy_opt), grad_cy = host(grad_cy_opt);
  at::Tensor tanh_cy = cy.tanh();
  at::Tensor grad_c = grad_cy.defined() ? grad_cy.clone() : at::zeros_like(cy);
  at::Tensor grad_o = at::zeros_like(o);
  if (grad_hy.defined()) {
    grad_c += grad_hy * o * (1 - tanh_cy * tanh_cy);
    grad_o = grad_hy * tanh_cy * o * (1 - o);
  }
  at::Tensor grad_gates = at::cat(
      {grad_c * g * i * (1 - i), grad_c * cx * f * (1 - f), grad_c * i * (1 - g * g), grad_o}, 1);
  at::Tensor grad_cx = grad_c * f;
  at::Tensor grad_bias = has_bias ? grad_gates.sum(0) : at::Tensor();
  return {on(grad_gates, cx_dev), on(grad_cx, cx_dev), on(grad_bias, cx_dev)};
}

// Returns (hy, workspace = r, z, n, hx, and the hidden n-gate including its bias).
std::tuple<at::Tensor, at::Tensor> fused_gru_cell(
    const at::Tensor& input_gates,
    const at::Tensor& hidden_gates,
    const at::Tensor& hx_dev,
    const std::optional<at::Tensor>& input_bias,
    const std::optional<at::Tensor>& hidden_bias) {
  begin_host_fallback("aten::_thnn_fused_gru_cell");
  auto ig = with_bias(host(input_gates), host(input_bias)).chunk(3, 1);
  auto hg = with_bias(host(hidden_gates), host(hidden_bias)).chunk(3, 1);
  at::Tensor hx = host(hx_dev);
  at::Tensor r = (ig[0] + hg[0]).sigmoid(), z = (ig[1] + hg[1]).sigmoid();
  at::Tensor n = (ig[2] + r * hg[2]).tanh();
  at::Tensor hy = n + z * (hx - n);
  return {on(hy, hx_dev), on(at::cat({r, z, n, hx, hg[2]}, 1), hx_dev)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_gru_cell_backward(
    const at::Tensor& grad_hy_dev, const at::Tensor& workspace_dev, bool has_bias) {
  begin_host_fallback("aten::_thnn_fused_gru_cell_backward");
  at::Tensor grad_hy = host(grad_hy_dev);
  auto w = host(workspace_dev).chunk(5, 1);
  at::Tensor r = w[0], z = w[1], n = w[2], hx = w[3], hn = w[4];
  at::Tensor grad_n = grad_hy * (1 - z) * (1 - n * n);
  at::Tensor grad_r = grad_n * hn * r * (1 - r);
  at::Tensor grad_z = grad_hy * (hx - n) * z * (1 - z);
  at::Tensor grad_input_gates = at::cat({grad_r, grad_z, grad_n}, 1);
  at::Tensor grad_hidden_gates = at::cat({grad_r, grad_z, grad_n * r}, 1);
  at::Tensor grad_hx = grad_hy * z;
  at::Tensor grad_input_bias = has_bias ? grad_input_gates.sum(0) : at::Tensor();
  at::Tensor grad_hidden_bias = has_bias ? grad_hidden_gates.sum(0) : at::Tensor();
  const at::Tensor& like = grad_hy_dev;
  return {on(grad_input_gates, like), on(grad_hidden_gates, like), on(grad_hx, like),
          on(grad_input_bias, like), on(grad_hidden_bias, like)};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(fused_lstm_cell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(fused_lstm_cell_backward));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(fused_gru_cell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(fused_gru_cell_backward));
}

} // namespace torch_tpu
