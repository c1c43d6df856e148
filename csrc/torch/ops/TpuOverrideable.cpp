// ATen sends convolutions on PrivateUse1 to the *_overrideable hooks, which the boxed fallback
// cannot serve (their CPU "kernels" only throw). Until the native kernels land, these run
// at::convolution on host copies: counted and controlled exactly like the boxed fallback.
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <torch/library.h>

#include "ops/TpuOps.h"

namespace torch_tpu {
namespace {

at::Tensor host(const at::Tensor& t) {
  return t.defined() ? t.cpu() : t;
}

at::Tensor device_like(const at::Tensor& t, const at::Tensor& like) {
  return t.defined() ? t.to(like.device()) : t;
}

at::Tensor convolution_overrideable(
    const at::Tensor& input,
    const at::Tensor& weight,
    const std::optional<at::Tensor>& bias,
    at::IntArrayRef stride,
    at::IntArrayRef padding,
    at::IntArrayRef dilation,
    bool transposed,
    at::IntArrayRef output_padding,
    int64_t groups) {
  begin_host_fallback("aten::convolution_overrideable");
  std::optional<at::Tensor> host_bias;
  if (bias && bias->defined()) {
    host_bias = host(*bias);
  }
  at::Tensor out = at::convolution(
      host(input), host(weight), host_bias, stride, padding, dilation, transposed,
      output_padding, groups);
  return device_like(out, input);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output,
    const at::Tensor& input,
    const at::Tensor& weight,
    at::IntArrayRef stride,
    at::IntArrayRef padding,
    at::IntArrayRef dilation,
    bool transposed,
    at::IntArrayRef output_padding,
    int64_t groups,
    std::array<bool, 3> output_mask) {
  begin_host_fallback("aten::convolution_backward_overrideable");
  int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
  auto [grad_input, grad_weight, grad_bias] = at::convolution_backward(
      host(grad_output), host(input), host(weight),
      output_mask[2] ? at::OptionalIntArrayRef({out_channels}) : std::nullopt, stride, padding,
      dilation, transposed, output_padding, groups, output_mask);
  return {device_like(grad_input, input), device_like(grad_weight, input),
          device_like(grad_bias, input)};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", TORCH_FN(convolution_overrideable));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward_overrideable));
}

} // namespace torch_tpu
