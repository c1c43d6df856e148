// softmax and log_softmax (with their backward), layer_norm (native_layer_norm and its backward)
// and rms_norm (_fused_rms_norm and its backward) on the core's row kernels. softmax's metadata
// comes from ATen's structured metas; the norms compute theirs as PyTorch's meta functions do
// (statistics in float for float16 and bfloat16 inputs, as on CUDA).
//
// F.rms_norm is CompositeImplicitAutograd and calls _fused_rms_norm, itself
// CompositeImplicitAutograd with a derivative that only CUDA's kernels use; so _fused_rms_norm gets
// an AutogradPrivateUse1 kernel here whose backward is the native _fused_rms_norm_backward (or,
// when a graph of the gradient is wanted, the gradient of the composite formula).
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/_fused_rms_norm.h>
#include <ATen/ops/_fused_rms_norm_backward.h>
#include <ATen/ops/_log_softmax.h>
#include <ATen/ops/_log_softmax_backward_data.h>
#include <ATen/ops/_log_softmax_backward_data_meta.h>
#include <ATen/ops/_log_softmax_meta.h>
#include <ATen/ops/_softmax.h>
#include <ATen/ops/_softmax_backward_data.h>
#include <ATen/ops/_softmax_backward_data_meta.h>
#include <ATen/ops/_softmax_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/native_layer_norm.h>
#include <ATen/ops/native_layer_norm_backward.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/zeros.h>
#include <ATen/TensorOperators.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <limits>
#include <sstream>

#include "ops/TpuReduce.h"
#include "ops/TpuStructured.h"

namespace torch_tpu {
namespace {

bool real_floating(const at::Tensor& t) {
  return !t.defined() || at::isFloatingType(t.scalar_type());
}

// ---- softmax, log_softmax ----

// half_to_float (CUDA's fused float16 -> float32 softmax) takes float16 inputs only, as on CUDA.
void check_half_to_float(const at::Tensor& self, bool half_to_float) {
  TORCH_CHECK(!half_to_float || self.scalar_type() == at::kHalf,
              "conversion is supported for Half type only");
}

void run_softmax(tpu_op_id op, const at::Tensor& self, int64_t dim, const at::Tensor& out) {
  tpu_tensor in = core_view(self), result = core_view(out);
  OpCall call = new_call(op, 1, 1);
  call->tensors[0] = in;
  call->tensors[1] = result;
  call->scalars[0].i = at::maybe_wrap_dim(dim, self.dim());
  launch(self.device().index(), std::move(call));
}

template <typename Meta, bool Log>
at::Tensor softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  check_half_to_float(self, half_to_float);
  Functional<Meta> op;
  op.meta(self, dim, half_to_float);
  at::Tensor& out = op.outputs_[0];
  if (!real_floating(self)) {
    on_host(Log ? "aten::_log_softmax" : "aten::_softmax", out, [&] {
      return Log ? at::_log_softmax(self.cpu(), dim, half_to_float)
                 : at::_softmax(self.cpu(), dim, half_to_float);
    });
  } else if (out.numel() > 0) {
    run_softmax(Log ? TPU_OP_LOG_SOFTMAX : TPU_OP_SOFTMAX, self, dim, out);
  }
  return out;
}

template <typename Meta, bool Log>
at::Tensor& softmax_out(const at::Tensor& self, int64_t dim, bool half_to_float,
                        at::Tensor& out) {
  check_half_to_float(self, half_to_float);
  Out<Meta> op(out);
  op.meta(self, dim, half_to_float);
  if (!real_floating(self)) {
    on_host(Log ? "aten::_log_softmax.out" : "aten::_softmax.out", out, [&] {
      return Log ? at::_log_softmax(self.cpu(), dim, half_to_float)
                 : at::_softmax(self.cpu(), dim, half_to_float);
    });
  } else if (out.numel() > 0) {
    run_softmax(Log ? TPU_OP_LOG_SOFTMAX : TPU_OP_SOFTMAX, self, dim, out);
  }
  return out;
}

void run_softmax_backward(tpu_op_id op, const at::Tensor& grad_output, const at::Tensor& output,
                          int64_t dim, const at::Tensor& grad_input) {
  tpu_tensor g = core_view(grad_output), y = core_view(output), gi = core_view(grad_input);
  OpCall call = new_call(op, 2, 1);
  call->tensors[0] = g;
  call->tensors[1] = y;
  call->tensors[2] = gi;
  call->scalars[0].i = at::maybe_wrap_dim(dim, output.dim());
  launch(output.device().index(), std::move(call));
}

template <typename Meta, bool Log>
void softmax_backward_into(const at::Tensor& grad_output, const at::Tensor& output, int64_t dim,
                           at::ScalarType input_dtype, const at::Tensor& grad_input) {
  if (!real_floating(grad_output) || !real_floating(output) || !real_floating(grad_input)) {
    on_host(Log ? "aten::_log_softmax_backward_data" : "aten::_softmax_backward_data",
            grad_input, [&] {
              return Log ? at::_log_softmax_backward_data(grad_output.cpu(), output.cpu(), dim,
                                                          input_dtype)
                         : at::_softmax_backward_data(grad_output.cpu(), output.cpu(), dim,
                                                      input_dtype);
            });
  } else if (grad_input.numel() > 0) {
    run_softmax_backward(Log ? TPU_OP_LOG_SOFTMAX_BACKWARD : TPU_OP_SOFTMAX_BACKWARD, grad_output,
                         output, dim, grad_input);
  }
}

template <typename Meta, bool Log>
at::Tensor softmax_backward(const at::Tensor& grad_output, const at::Tensor& output, int64_t dim,
                            at::ScalarType input_dtype) {
  Functional<Meta> op;
  op.meta(grad_output, output, dim, input_dtype);
  softmax_backward_into<Meta, Log>(grad_output, output, dim, input_dtype, op.outputs_[0]);
  return op.outputs_[0];
}

template <typename Meta, bool Log>
at::Tensor& softmax_backward_out(const at::Tensor& grad_output, const at::Tensor& output,
                                 int64_t dim, at::ScalarType input_dtype, at::Tensor& out) {
  Out<Meta> op(out);
  op.meta(grad_output, output, dim, input_dtype);
  softmax_backward_into<Meta, Log>(grad_output, output, dim, input_dtype, out);
  return out;
}

// ---- shared by the norms ----

// The rows [M, N] of an input normalized over its last normalized_shape.size() dimensions, after
// PyTorch's argument checks.
struct NormShape {
  int64_t m = 1, n = 1;
  std::vector<int64_t> stat_shape; // the input's leading sizes, then 1s
};

NormShape norm_shape(const at::Tensor& input, at::IntArrayRef normalized_shape,
                     const at::Tensor& weight, const at::Tensor& bias) {
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  TORCH_CHECK(k >= 1, "Expected normalized_shape to be at least 1-dimensional, i.e., ",
              "containing at least one element, but got normalized_shape = ", normalized_shape);
  TORCH_CHECK(!weight.defined() || weight.sizes().equals(normalized_shape),
              "Expected weight to be of same shape as normalized_shape, but got ",
              "weight of shape ", weight.sizes(), " and normalized_shape = ", normalized_shape);
  TORCH_CHECK(!bias.defined() || bias.sizes().equals(normalized_shape),
              "Expected bias to be of same shape as normalized_shape, but got ",
              "bias of shape ", bias.sizes(), " and normalized_shape = ", normalized_shape);
  const int64_t ndim = input.dim();
  bool ok = ndim >= k && input.sizes().slice(ndim - k).equals(normalized_shape);
  if (!ok) {
    std::ostringstream ss;
    ss << "Given normalized_shape=" << normalized_shape << ", expected input with shape [*";
    for (int64_t s : normalized_shape) {
      ss << ", " << s;
    }
    ss << "], but got input of size" << input.sizes();
    TORCH_CHECK(false, ss.str());
  }
  NormShape ns;
  for (int64_t d = 0; d < ndim; d++) {
    if (d < ndim - k) {
      ns.m *= input.size(d);
      ns.stat_shape.push_back(input.size(d));
    } else {
      ns.n *= input.size(d);
      ns.stat_shape.push_back(1);
    }
  }
  return ns;
}

// A view for the kernels: rows [m, n], a row of n, or a column of m, of a contiguous tensor; an
// absent tensor is an empty one. A tensor without elements keeps its shape (rows of n = 0
// elements are rows all the same), on a base that is never read.
tpu_tensor rows_view(const at::Tensor& t, int64_t m, int64_t n) {
  static char nothing;
  tpu_tensor v{};
  v.dtype = TPU_FLOAT32;
  v.ndim = 1;
  v.host = &nothing;
  if (!t.defined()) {
    return v;
  }
  if (t.numel() > 0) {
    v = core_view(t);
  } else {
    v.dtype = to_core_dtype(t.scalar_type());
  }
  v.ndim = m < 0 ? 1 : 2;
  v.sizes[0] = m < 0 ? n : m;
  v.strides[0] = m < 0 ? 1 : n;
  v.sizes[1] = n;
  v.strides[1] = 1;
  return v;
}

// A new contiguous tensor like t; zeros when `zeroed` (a gradient summed over no rows).
at::Tensor dense_like(const at::Tensor& t, bool zeroed = false) {
  at::TensorOptions options = t.options().memory_format(at::MemoryFormat::Contiguous);
  return zeroed ? at::zeros(t.sizes(), options) : at::empty(t.sizes(), options);
}

at::Tensor contiguous_or_none(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined() ? t->contiguous() : at::Tensor();
}

// Weight and bias share the input's dtype, or are float32 for a float16 or bfloat16 input (the
// mixed case PyTorch CPU accepts).
void check_param_dtype(const at::Tensor& input, const at::Tensor& param) {
  if (!param.defined() || param.scalar_type() == input.scalar_type()) {
    return;
  }
  const bool reduced = input.scalar_type() == at::kHalf || input.scalar_type() == at::kBFloat16;
  TORCH_CHECK(reduced && param.scalar_type() == at::kFloat,
              "mixed dtype (CPU): all inputs must share same datatype.");
}

// The dtype statistics are kept in: float for float16 and bfloat16 (and mixed inputs), as on CUDA.
at::ScalarType stat_dtype(const at::Tensor& input) {
  return input.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

void launch_rows(tpu_op_id op, c10::DeviceIndex device, const std::vector<tpu_tensor>& inputs,
                 const std::vector<tpu_tensor>& outputs, double eps) {
  OpCall call =
      new_call(op, static_cast<int>(inputs.size()), static_cast<int>(outputs.size()));
  size_t i = 0;
  for (const tpu_tensor& t : inputs) {
    call->tensors[i++] = t;
  }
  for (const tpu_tensor& t : outputs) {
    call->tensors[i++] = t;
  }
  call->scalars[0].f = eps;
  launch(device, std::move(call));
}

// ---- layer_norm ----

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm(
    const at::Tensor& input, at::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight_opt, const std::optional<at::Tensor>& bias_opt,
    double eps) {
  at::Tensor weight = contiguous_or_none(weight_opt), bias = contiguous_or_none(bias_opt);
  NormShape ns = norm_shape(input, normalized_shape, weight, bias);
  check_param_dtype(input, weight);
  check_param_dtype(input, bias);
  if (!real_floating(input) || !real_floating(weight) || !real_floating(bias)) {
    begin_host_fallback("aten::native_layer_norm");
    auto r = at::native_layer_norm(input.cpu(), normalized_shape,
                                   weight.defined() ? weight.cpu() : weight,
                                   bias.defined() ? bias.cpu() : bias, eps);
    const c10::Device device = input.device();
    return {std::get<0>(r).to(device), std::get<1>(r).to(device), std::get<2>(r).to(device)};
  }
  at::Tensor x = input.contiguous();
  at::Tensor out = dense_like(input);
  at::TensorOptions stat = input.options().dtype(stat_dtype(input));
  at::Tensor mean = at::empty(ns.stat_shape, stat), rstd = at::empty(ns.stat_shape, stat);
  if (ns.m > 0) {
    launch_rows(TPU_OP_LAYER_NORM, input.device().index(),
                {rows_view(x, ns.m, ns.n), rows_view(weight, -1, ns.n), rows_view(bias, -1, ns.n)},
                {rows_view(out, ns.m, ns.n), rows_view(mean, -1, ns.m), rows_view(rstd, -1, ns.m)},
                eps);
  }
  return {out, mean, rstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, at::IntArrayRef normalized_shape,
    const at::Tensor& mean, const at::Tensor& rstd, const std::optional<at::Tensor>& weight_opt,
    const std::optional<at::Tensor>& bias_opt, std::array<bool, 3> mask) {
  at::Tensor weight = contiguous_or_none(weight_opt), bias = contiguous_or_none(bias_opt);
  NormShape ns = norm_shape(input, normalized_shape, weight, bias);
  at::Tensor dx, dw, db;
  if (mask[0]) {
    dx = dense_like(input);
  }
  if (mask[1] && weight.defined()) {
    dw = dense_like(weight, ns.m == 0);
  }
  if (mask[2] && bias.defined()) {
    db = dense_like(bias, ns.m == 0);
  }
  if (!real_floating(input) || !real_floating(grad_out) || !real_floating(weight)) {
    begin_host_fallback("aten::native_layer_norm_backward");
    auto host = [](const at::Tensor& t) { return t.defined() ? t.cpu() : t; };
    auto r = at::native_layer_norm_backward(host(grad_out), host(input), normalized_shape,
                                            host(mean), host(rstd), host(weight), host(bias), mask);
    if (dx.defined()) copy_into(std::get<0>(r), dx, false);
    if (dw.defined()) copy_into(std::get<1>(r), dw, false);
    if (db.defined()) copy_into(std::get<2>(r), db, false);
    return {dx, dw, db};
  }
  if (ns.m > 0 && ns.n > 0) {
    at::Tensor g = grad_out.contiguous(), x = input.contiguous();
    launch_rows(TPU_OP_LAYER_NORM_BACKWARD, input.device().index(),
                {rows_view(g, ns.m, ns.n), rows_view(x, ns.m, ns.n),
                 rows_view(mean.contiguous(), -1, ns.m), rows_view(rstd.contiguous(), -1, ns.m),
                 rows_view(weight, -1, ns.n)},
                {rows_view(dx, ns.m, ns.n), rows_view(dw, -1, ns.n), rows_view(db, -1, ns.n)}, 0);
  }
  return {dx, dw, db};
}

// ---- rms_norm ----

double rms_eps(const at::Tensor& input, std::optional<double> eps) {
  return eps.value_or(input.scalar_type() == at::kDouble
                          ? std::numeric_limits<double>::epsilon()
                          : static_cast<double>(std::numeric_limits<float>::epsilon()));
}

std::tuple<at::Tensor, at::Tensor> fused_rms_norm(const at::Tensor& input,
                                                  at::IntArrayRef normalized_shape,
                                                  const std::optional<at::Tensor>& weight_opt,
                                                  std::optional<double> eps) {
  at::Tensor weight = contiguous_or_none(weight_opt);
  NormShape ns = norm_shape(input, normalized_shape, weight, at::Tensor());
  if (!real_floating(input) || !real_floating(weight)) {
    begin_host_fallback("aten::_fused_rms_norm");
    auto r = at::_fused_rms_norm(input.cpu(), normalized_shape,
                                 weight.defined() ? std::optional<at::Tensor>(weight.cpu())
                                                  : std::nullopt,
                                 eps);
    return {std::get<0>(r).to(input.device()), std::get<1>(r).to(input.device())};
  }
  at::Tensor x = input.contiguous();
  at::Tensor out = dense_like(input);
  at::Tensor rstd = at::empty(ns.stat_shape, input.options().dtype(stat_dtype(input)));
  if (ns.m > 0) {
    launch_rows(TPU_OP_RMS_NORM, input.device().index(),
                {rows_view(x, ns.m, ns.n), rows_view(weight, -1, ns.n)},
                {rows_view(out, ns.m, ns.n), rows_view(rstd, -1, ns.m)}, rms_eps(input, eps));
  }
  return {out, rstd};
}

std::tuple<at::Tensor, at::Tensor> fused_rms_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, at::IntArrayRef normalized_shape,
    const at::Tensor& rstd, const std::optional<at::Tensor>& weight_opt, std::array<bool, 2> mask) {
  at::Tensor weight = contiguous_or_none(weight_opt);
  NormShape ns = norm_shape(input, normalized_shape, weight, at::Tensor());
  at::Tensor dx, dw;
  if (mask[0]) {
    dx = dense_like(input, ns.m == 0 || ns.n == 0);
  }
  if (mask[1] && weight.defined()) {
    dw = dense_like(weight, ns.m == 0);
  }
  if (ns.m > 0 && ns.n > 0) {
    at::Tensor g = grad_out.contiguous(), x = input.contiguous();
    launch_rows(TPU_OP_RMS_NORM_BACKWARD, input.device().index(),
                {rows_view(g, ns.m, ns.n), rows_view(x, ns.m, ns.n),
                 rows_view(rstd.contiguous(), -1, ns.m), rows_view(weight, -1, ns.n)},
                {rows_view(dx, ns.m, ns.n), rows_view(dw, -1, ns.n)}, 0);
  }
  return {dx, dw};
}

// The composite formula of rms_norm (PyTorch's rms_norm_composite), differentiable op by op.
at::Tensor rms_composite(const at::Tensor& input, at::IntArrayRef normalized_shape,
                         const at::Tensor& weight, double eps) {
  std::vector<int64_t> dims;
  for (size_t i = 0; i < normalized_shape.size(); i++) {
    dims.push_back(input.dim() - 1 - static_cast<int64_t>(i));
  }
  at::Tensor up = input.to(stat_dtype(input));
  at::Tensor y = up * at::rsqrt(up.pow(2).mean(dims, /*keepdim=*/true) + eps);
  if (weight.defined()) {
    y = y * weight;
  }
  return y.to(input.scalar_type());
}

// Autograd for _fused_rms_norm on tpu: the native kernels, and the gradient of the composite when
// the backward itself must be differentiable (create_graph).
struct FusedRmsNormFunction : public torch::autograd::Function<FusedRmsNormFunction> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const at::Tensor& input,
                                                at::IntArrayRef normalized_shape,
                                                const std::optional<at::Tensor>& weight,
                                                std::optional<double> eps) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto [out, rstd] = at::_fused_rms_norm(input, normalized_shape, weight, eps);
    ctx->save_for_backward({input, rstd, weight.value_or(at::Tensor())});
    ctx->saved_data["shape"] = normalized_shape.vec();
    ctx->saved_data["eps"] = rms_eps(input, eps);
    ctx->mark_non_differentiable({rstd});
    return {out, rstd};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor &input = saved[0], &rstd = saved[1], &weight = saved[2];
    std::vector<int64_t> shape = ctx->saved_data["shape"].toIntVector();
    // Edges exist for the tensor arguments only: input, then weight when there is one.
    const bool want_x = ctx->needs_input_grad(0);
    const bool want_w = weight.defined() && ctx->needs_input_grad(1);
    at::Tensor dx, dw;
    if (grads[0].defined() && at::GradMode::is_enabled()) {
      std::vector<at::Tensor> wrt;
      if (want_x) wrt.push_back(input);
      if (want_w) wrt.push_back(weight);
      at::Tensor y = rms_composite(input, shape, weight, ctx->saved_data["eps"].toDouble());
      auto g = torch::autograd::grad({y}, wrt, {grads[0]}, /*retain_graph=*/true,
                                     /*create_graph=*/true);
      dx = want_x ? g[0] : at::Tensor();
      dw = want_w ? g[want_x ? 1 : 0] : at::Tensor();
    } else if (grads[0].defined()) {
      std::tie(dx, dw) = at::_fused_rms_norm_backward(
          grads[0], input, shape, rstd,
          weight.defined() ? std::optional<at::Tensor>(weight) : std::nullopt, {want_x, want_w});
    }
    return {dx, at::Tensor(), dw, at::Tensor()};
  }
};

std::tuple<at::Tensor, at::Tensor> fused_rms_norm_autograd(
    const at::Tensor& input, at::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight, std::optional<double> eps) {
  auto outs = FusedRmsNormFunction::apply(input, normalized_shape, weight, eps);
  return {outs[0], outs[1]};
}

using at::meta::structured__log_softmax;
using at::meta::structured__log_softmax_backward_data;
using at::meta::structured__softmax;
using at::meta::structured__softmax_backward_data;

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_softmax", TORCH_FN((softmax<structured__softmax, false>)));
  m.impl("_softmax.out", TORCH_FN((softmax_out<structured__softmax, false>)));
  m.impl("_log_softmax", TORCH_FN((softmax<structured__log_softmax, true>)));
  m.impl("_log_softmax.out", TORCH_FN((softmax_out<structured__log_softmax, true>)));
  m.impl("_softmax_backward_data",
         TORCH_FN((softmax_backward<structured__softmax_backward_data, false>)));
  m.impl("_softmax_backward_data.out",
         TORCH_FN((softmax_backward_out<structured__softmax_backward_data, false>)));
  m.impl("_log_softmax_backward_data",
         TORCH_FN((softmax_backward<structured__log_softmax_backward_data, true>)));
  m.impl("_log_softmax_backward_data.out",
         TORCH_FN((softmax_backward_out<structured__log_softmax_backward_data, true>)));
  m.impl("native_layer_norm", TORCH_FN(layer_norm));
  m.impl("native_layer_norm_backward", TORCH_FN(layer_norm_backward));
  m.impl("_fused_rms_norm", TORCH_FN(fused_rms_norm));
  m.impl("_fused_rms_norm_backward", TORCH_FN(fused_rms_norm_backward));
}

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("_fused_rms_norm", TORCH_FN(fused_rms_norm_autograd));
}

} // namespace torch_tpu
