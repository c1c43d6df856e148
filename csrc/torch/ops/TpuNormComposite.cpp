// Norms that PyTorch implements with CPU and CUDA kernels only, composed here of native tpu ops in
// PyTorch CPU's formulas, with statistics and sums in float for float16 and bfloat16 inputs as on
// CUDA: native_group_norm_backward (the forward's CompositeExplicitAutograd kernel, batch norm over
// the grouped view, already runs on tpu) and weight norm's fused _weight_norm_interface with its
// backward.
#include <ATen/ATen.h>
#include <ATen/OpMathType.h>
#include <torch/library.h>

#include <vector>

namespace torch_tpu {
namespace {

using at::Tensor;

// x̂ = (x - mean) * rstd per (sample, group); with g = dy * gamma,
// dx = rstd * (g - mean(g) - x̂ * mean(g * x̂)), the means over each group's channels and pixels.
std::tuple<Tensor, Tensor, Tensor> group_norm_backward(
    const Tensor& grad_out, const Tensor& input, const Tensor& mean, const Tensor& rstd,
    const std::optional<Tensor>& weight, c10::SymInt n_sym, c10::SymInt c_sym,
    c10::SymInt hxw_sym, int64_t group, std::array<bool, 3> output_mask) {
  const int64_t N = n_sym.expect_int(), C = c_sym.expect_int(), HxW = hxw_sym.expect_int();
  TORCH_CHECK(group > 0 && C % group == 0, "Expected number of channels in input to be ",
              "divisible by num_groups, but got input of shape ", input.sizes(), " and num_groups=",
              group);
  TORCH_CHECK(input.numel() == N * C * HxW, "Expected input to have ", N * C * HxW,
              " elements, but got ", input.numel());
  const bool has_weight = weight.has_value() && weight->defined();
  const at::TensorOptions param_options = has_weight ? weight->options() : input.options();
  const at::ScalarType acc = at::toOpMathType(input.scalar_type());
  const int64_t D = C / group;

  Tensor dy = grad_out.reshape({N, group, D, HxW}).to(acc);
  Tensor x = input.reshape({N, group, D, HxW}).to(acc);
  Tensor m = mean.reshape({N, group, 1, 1}).to(acc);
  Tensor r = rstd.reshape({N, group, 1, 1}).to(acc);
  Tensor x_hat = (x - m) * r;

  Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0]) {
    if (input.numel() == 0) {
      grad_input = at::zeros_like(input);
    } else {
      Tensor g = has_weight ? dy * weight->reshape({1, group, D, 1}).to(acc) : dy;
      Tensor mean_g = g.mean({2, 3}, true);
      Tensor mean_gx = (g * x_hat).mean({2, 3}, true);
      grad_input = (r * (g - mean_g - x_hat * mean_gx)).reshape(input.sizes()).to(input.dtype());
    }
  }
  if (output_mask[1])
    grad_weight = (dy * x_hat).sum({0, 3}).reshape({C}).to(param_options.dtype());
  if (output_mask[2])
    grad_bias = dy.sum({0, 3}).reshape({C}).to(param_options.dtype());
  return {grad_input, grad_weight, grad_bias};
}

// The dimensions weight norm sums over: all but dim (the fused kernels take the first or last).
std::vector<int64_t> weight_norm_dims(const Tensor& v, int64_t dim) {
  TORCH_CHECK(dim == 0 || dim == v.dim() - 1,
              "fused kernels can only be applied for first or last dim");
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < v.dim(); ++d)
    if (d != dim) dims.push_back(d);
  return dims;
}

// The norm is float for a bfloat16 g, as on CPU and CUDA.
at::ScalarType weight_norm_dtype(const Tensor& g) {
  return g.scalar_type() == at::kBFloat16 ? at::kFloat : g.scalar_type();
}

// w = v * g / ||v||, the norm over all dimensions but dim, shaped like g.
std::tuple<Tensor, Tensor> weight_norm(const Tensor& v, const Tensor& g, int64_t dim) {
  const std::vector<int64_t> dims = weight_norm_dims(v, dim);
  const at::ScalarType acc = at::toOpMathType(v.scalar_type());
  Tensor v_acc = v.to(acc);
  Tensor norm = v_acc.square().sum(dims, true).sqrt();
  Tensor w = (v_acc * (g.to(acc) / norm)).to(v.scalar_type()).contiguous();
  return {w, norm.reshape(g.sizes()).to(weight_norm_dtype(g))};
}

// With s = sum(grad_w * v) over the norm's dimensions: grad_g = s / n and
// grad_v = (g / n) * (grad_w - v * s / n²).
std::tuple<Tensor, Tensor> weight_norm_backward(const Tensor& grad_w, const Tensor& v,
                                                const Tensor& g, const Tensor& norm,
                                                int64_t dim) {
  const std::vector<int64_t> dims = weight_norm_dims(v, dim);
  const at::ScalarType acc = at::toOpMathType(v.scalar_type());
  Tensor v_acc = v.to(acc);
  Tensor n = norm.to(acc).reshape(v_acc.sum(dims, true).sizes());
  Tensor s = (grad_w.to(acc) * v_acc).sum(dims, true);
  Tensor g_acc = g.to(acc).reshape(n.sizes());
  Tensor grad_v = (g_acc / n) * (grad_w.to(acc) - v_acc * (s / (n * n)));
  Tensor grad_g = (s / n).reshape(g.sizes());
  return {grad_v.to(v.scalar_type()), grad_g.to(g.scalar_type())};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_group_norm_backward", TORCH_FN(group_norm_backward));
  m.impl("_weight_norm_interface", TORCH_FN(weight_norm));
  m.impl("_weight_norm_interface_backward", TORCH_FN(weight_norm_backward));
}

} // namespace torch_tpu
