// ATen sends convolutions on PrivateUse1 to the *_overrideable hooks (after its own shape checks,
// with 1-d convolutions already viewed as 2-d). Floating dtypes run on the conv family's kernels
// (ops/tpu_ops_conv.h): a convolution is CONV, its input gradient CONV_BACKWARD_INPUT, and a
// transposed convolution swaps the two, so every direction is one of three kernels. Outputs are
// channels-last when the input or the weight is, as PyTorch CPU's (and cuDNN's) are. Integer and
// complex dtypes, which models do not train in, run at::convolution on host copies, counted like
// the boxed fallback.
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "ops/TpuConvCommon.h"
#include "ops/TpuIndexCommon.h"
#include "ops/TpuOps.h"

namespace torch_tpu {
namespace {

// Channels-last output when either operand is channels-last, as on CPU and CUDA.
at::MemoryFormat conv_format(const at::Tensor& input, const at::Tensor& weight) {
  if (input.dim() == 4 && (input.suggest_memory_format() == at::MemoryFormat::ChannelsLast ||
                           weight.suggest_memory_format() == at::MemoryFormat::ChannelsLast)) {
    return at::MemoryFormat::ChannelsLast;
  }
  if (input.dim() == 5 && (input.suggest_memory_format() == at::MemoryFormat::ChannelsLast3d ||
                           weight.suggest_memory_format() == at::MemoryFormat::ChannelsLast3d)) {
    return at::MemoryFormat::ChannelsLast3d;
  }
  return at::MemoryFormat::Contiguous;
}

struct Params {
  uint64_t stride, padding, dilation;
};

Params params_of(at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation) {
  return {conv_pack(stride, 1, "convolution: stride"), conv_pack(padding, 0, "convolution: padding"),
          conv_pack(dilation, 1, "convolution: dilation")};
}

void run(tpu_op_id op, const Params& p, const std::vector<tpu_tensor>& inputs,
         const at::Tensor& out) {
  OpCall call = make_call(op, inputs, {core_view(out)});
  call->scalars[0].u = p.stride;
  call->scalars[1].u = p.padding;
  call->scalars[2].u = p.dilation;
  launch(out.device().index(), std::move(call));
}

void check_operands(const at::Tensor& input, const at::Tensor& weight, const at::Tensor* bias) {
  check_device("convolution", input.device(), {&weight, bias});
  TORCH_CHECK(weight.scalar_type() == input.scalar_type(), "expected scalar type ",
              input.scalar_type(), " but found ", weight.scalar_type());
  TORCH_CHECK(!bias || bias->scalar_type() == input.scalar_type(), "Input type (",
              c10::toString(input.scalar_type()), ") and bias type (",
              c10::toString(bias ? bias->scalar_type() : input.scalar_type()),
              ") should be the same");
}

std::vector<int64_t> output_size(const at::Tensor& input, const at::Tensor& weight,
                                 at::IntArrayRef stride, at::IntArrayRef padding,
                                 at::IntArrayRef dilation, bool transposed,
                                 at::IntArrayRef output_padding, int64_t groups) {
  std::vector<int64_t> sizes{input.size(0), transposed ? weight.size(1) * groups : weight.size(0)};
  for (int64_t d = 2; d < input.dim(); d++) {
    int64_t i = d - 2, reach = dilation[i] * (weight.size(d) - 1);
    sizes.push_back(transposed
                        ? (input.size(d) - 1) * stride[i] - 2 * padding[i] + reach +
                              output_padding[i] + 1
                        : (input.size(d) + 2 * padding[i] - reach - 1) / stride[i] + 1);
  }
  return sizes;
}

// ---- host fallback for the dtypes the kernels do not cover ----

at::Tensor host(const at::Tensor& t) {
  return t.defined() ? t.cpu() : t;
}

at::Tensor device_like(const at::Tensor& t, const at::Tensor& like) {
  return t.defined() ? t.to(like.device()) : t;
}

at::Tensor host_convolution(const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor* bias, at::IntArrayRef stride,
                            at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                            at::IntArrayRef output_padding, int64_t groups) {
  begin_host_fallback("aten::convolution_overrideable");
  std::optional<at::Tensor> host_bias;
  if (bias) {
    host_bias = host(*bias);
  }
  at::Tensor out = at::convolution(host(input), host(weight), host_bias, stride, padding,
                                   dilation, transposed, output_padding, groups);
  return device_like(out, input);
}

// ---- the hooks ----

at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias_opt,
                                    at::IntArrayRef stride, at::IntArrayRef padding,
                                    at::IntArrayRef dilation, bool transposed,
                                    at::IntArrayRef output_padding, int64_t groups) {
  const at::Tensor* bias = opt(bias_opt);
  if (!is_conv_float(input.scalar_type())) {
    return host_convolution(input, weight, bias, stride, padding, dilation, transposed,
                            output_padding, groups);
  }
  check_operands(input, weight, bias);
  Params p = params_of(stride, padding, dilation);
  at::Tensor out =
      at::empty(output_size(input, weight, stride, padding, dilation, transposed, output_padding,
                            groups),
                input.options().memory_format(conv_format(input, weight)));
  if (out.numel() == 0) {
    return out;
  }
  std::vector<tpu_tensor> inputs{core_view(input), core_view(weight)};
  if (bias) {
    inputs.push_back(core_view(*bias));
  }
  // A transposed convolution is the input gradient of the convolution it transposes.
  run(transposed ? TPU_OP_CONV_BACKWARD_INPUT : TPU_OP_CONV, p, inputs, out);
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> host_convolution_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
    at::IntArrayRef output_padding, int64_t groups, std::array<bool, 3> output_mask) {
  begin_host_fallback("aten::convolution_backward_overrideable");
  int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
  auto [grad_input, grad_weight, grad_bias] = at::convolution_backward(
      host(grad_output), host(input), host(weight),
      output_mask[2] ? at::OptionalIntArrayRef({out_channels}) : std::nullopt, stride, padding,
      dilation, transposed, output_padding, groups, output_mask);
  return {device_like(grad_input, input), device_like(grad_weight, input),
          device_like(grad_bias, input)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
    at::IntArrayRef output_padding, int64_t groups, std::array<bool, 3> output_mask) {
  if (!is_conv_float(input.scalar_type())) {
    return host_convolution_backward(grad_output, input, weight, stride, padding, dilation,
                                     transposed, output_padding, groups, output_mask);
  }
  check_operands(input, weight, nullptr);
  check_device("convolution_backward", input.device(), {&grad_output});
  TORCH_CHECK(grad_output.scalar_type() == input.scalar_type(), "expected scalar type ",
              input.scalar_type(), " but found ", grad_output.scalar_type());
  Params p = params_of(stride, padding, dilation);
  at::MemoryFormat format = conv_format(input, weight);
  at::Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0]) {
    grad_input = at::empty(input.sizes(), input.options().memory_format(format));
    if (grad_input.numel() > 0) {
      // Transposed: the input gradient of a transposed convolution is a plain convolution.
      run(transposed ? TPU_OP_CONV : TPU_OP_CONV_BACKWARD_INPUT, p,
          {core_view(grad_output), core_view(weight)}, grad_input);
    }
  }
  if (output_mask[1]) {
    grad_weight = at::empty(weight.sizes(), weight.options().memory_format(format));
    if (grad_weight.numel() > 0) {
      // The kernel takes the y-like tensor, then the x-like one.
      const at::Tensor& y = transposed ? input : grad_output;
      const at::Tensor& x = transposed ? grad_output : input;
      run(TPU_OP_CONV_BACKWARD_WEIGHT, p, {core_view(y), core_view(x)}, grad_weight);
    }
  }
  if (output_mask[2]) {
    grad_bias = at::empty({grad_output.size(1)}, grad_output.options());
    if (grad_bias.numel() > 0) {
      run(TPU_OP_CONV_BACKWARD_BIAS, p, {core_view(grad_output)}, grad_bias);
    }
  }
  return {grad_input, grad_weight, grad_bias};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", TORCH_FN(convolution_overrideable));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward_overrideable));
}

} // namespace torch_tpu
