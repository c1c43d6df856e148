// native_batch_norm (and the _native_batch_norm_legit forms of AOTAutograd's graphs) and
// native_batch_norm_backward (what F.batch_norm and its autograd reach on a PrivateUse1 device) on
// the core's batch-norm kernels. The output takes the memory format batch_norm_cpu chooses (see
// output_format); the saved statistics are CUDA's: of size C (float32 for float16 and bfloat16
// inputs) in evaluation too (CPU returns empty ones there).
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/native_batch_norm.h>
#include <ATen/ops/native_batch_norm_backward.h>
#include <torch/library.h>

#include "ops/TpuOps.h"
#include "ops/TpuReduce.h"

namespace torch_tpu {
namespace {

bool floating_or_none(const at::Tensor& t) {
  return !t.defined() || at::isFloatingType(t.scalar_type());
}

at::Tensor opt(const std::optional<at::Tensor>& t) {
  return t.has_value() ? *t : at::Tensor();
}

at::Tensor host(const at::Tensor& t) {
  return t.defined() ? t.cpu() : t;
}

// The [N, C, S] view the kernels take: the spatial dimensions merged (after making the tensor
// dense in its memory format when they cannot be).
struct NCS {
  at::Tensor tensor; // keeps a dense copy alive
  tpu_tensor view;
};

bool spatial_mergeable(const at::Tensor& t) {
  int64_t expected = -1;
  for (int64_t d = t.dim() - 1; d >= 2; d--) {
    if (t.size(d) == 1) {
      continue;
    }
    if (expected != -1 && t.stride(d) != expected) {
      return false;
    }
    expected = t.stride(d) * t.size(d);
  }
  return true;
}

NCS ncs_view(const at::Tensor& t) {
  NCS r{spatial_mergeable(t) ? t : t.contiguous(t.suggest_memory_format()), {}};
  tpu_tensor v = core_view(r.tensor);
  // s_stride: the innermost non-trivial spatial dimension's (0 when broadcast, as the gradient
  // of a sum is).
  int64_t s = 1, s_stride = 1;
  bool found = false;
  for (int64_t d = r.tensor.dim() - 1; d >= 2; d--) {
    s *= r.tensor.size(d);
    if (r.tensor.size(d) != 1 && !found) {
      s_stride = r.tensor.stride(d);
      found = true;
    }
  }
  v.ndim = 3;
  v.sizes[0] = r.tensor.size(0);
  v.strides[0] = r.tensor.stride(0);
  v.sizes[1] = r.tensor.size(1);
  v.strides[1] = r.tensor.stride(1);
  v.sizes[2] = s;
  v.strides[2] = s_stride;
  r.view = v;
  return r;
}

// A per-channel tensor (1-d: see check_channels) as a core view, or an empty one when absent.
tpu_tensor channels_view(const at::Tensor& t) {
  static char nothing; // the base of a view without elements: never read
  tpu_tensor v{};
  if (!t.defined() || t.numel() == 0) {
    v.dtype = TPU_FLOAT32;
    v.ndim = 1;
    v.host = &nothing;
    return v;
  }
  v = core_view(t);
  v.ndim = 1;
  v.sizes[0] = t.numel();
  v.strides[0] = t.stride(0);
  return v;
}

// PyTorch's frontends check only the element count; CUDA's kernels (and CPU's backward) read
// per-channel tensors through 1-d accessors, which refuse other ranks.
void check_channels(const at::Tensor& t, int64_t c, const char* name) {
  TORCH_CHECK(!t.defined() || t.numel() == c, name, " should contain ", c, " elements not ",
              t.defined() ? t.numel() : 0);
  TORCH_CHECK(!t.defined() || t.dim() == 1, "TensorAccessor expected 1 dims but tensor has ",
              t.dim(), " (batch_norm's ", name, ")");
}

// The output's memory format as batch_norm_cpu chooses it: the format the input is contiguous in
// when it and every per-channel tensor are contiguous, else the format its strides suggest.
at::MemoryFormat output_format(const at::Tensor& input,
                               std::initializer_list<const at::Tensor*> per_channel) {
  bool all_contiguous = input.is_contiguous() ||
                        input.is_contiguous(at::MemoryFormat::ChannelsLast) ||
                        input.is_contiguous(at::MemoryFormat::ChannelsLast3d);
  for (const at::Tensor* t : per_channel) {
    all_contiguous = all_contiguous && (!t->defined() || t->is_contiguous());
  }
  if (!all_contiguous) {
    return input.suggest_memory_format();
  }
  return input.is_contiguous()                                      ? at::MemoryFormat::Contiguous
         : input.is_contiguous(at::MemoryFormat::ChannelsLast3d) ? at::MemoryFormat::ChannelsLast3d
                                                                   : at::MemoryFormat::ChannelsLast;
}

at::ScalarType stat_dtype(const at::Tensor& input) {
  return input.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm(
    const at::Tensor& input, const std::optional<at::Tensor>& weight_opt,
    const std::optional<at::Tensor>& bias_opt, const std::optional<at::Tensor>& running_mean_opt,
    const std::optional<at::Tensor>& running_var_opt, bool training, double momentum,
    double eps) {
  at::Tensor weight = opt(weight_opt), bias = opt(bias_opt), rmean = opt(running_mean_opt),
             rvar = opt(running_var_opt);
  TORCH_CHECK(input.dim() >= 2, "batch_norm: expected an input with at least 2 dimensions");
  const int64_t c = input.size(1);
  check_channels(weight, c, "weight");
  check_channels(bias, c, "bias");
  check_channels(rmean, c, "running_mean");
  check_channels(rvar, c, "running_var");
  TORCH_CHECK(training || (rmean.defined() && rvar.defined()),
              "running_mean and running_var must be defined in evaluation mode");
  at::Tensor out = at::empty_like(input, output_format(input, {&weight, &bias, &rmean, &rvar}));
  at::TensorOptions stats = input.options().dtype(stat_dtype(input));
  at::Tensor save_mean = at::empty({c}, stats), save_invstd = at::empty({c}, stats);
  if (!floating_or_none(input) || !floating_or_none(weight) || !floating_or_none(bias) ||
      !floating_or_none(rmean) || !floating_or_none(rvar)) {
    begin_host_fallback("aten::native_batch_norm");
    at::Tensor hm = host(rmean), hv = host(rvar);
    auto r = at::native_batch_norm(host(input), host(weight), host(bias), hm, hv, training,
                                   momentum, eps);
    copy_into(std::get<0>(r), out, false);
    if (rmean.defined()) {
      copy_into(hm, rmean, false);
      copy_into(hv, rvar, false);
    }
    return {out, save_mean, save_invstd};
  }
  NCS x = ncs_view(input), y = ncs_view(out);
  std::array<tpu_tensor, 8> views = {
      x.view,          channels_view(weight),      channels_view(bias),
      y.view,          channels_view(save_mean),   channels_view(save_invstd),
      channels_view(rmean), channels_view(rvar)};
  OpCall call = new_call(TPU_OP_BATCH_NORM, 3, 5);
  for (size_t i = 0; i < views.size(); i++) {
    call->tensors[i] = views[i];
  }
  call->scalars[0].f = eps;
  call->scalars[1].f = momentum;
  call->scalars[2].i = training;
  launch(input.device().index(), std::move(call));
  return {out, save_mean, save_invstd};
}

// The out= form gives what the functional form gives (CUDA's saved statistics of size C), resized
// into the outs as CUDA's out= kernels resize; the CPU kernel the fallback would run leaves them
// empty in evaluation.
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> batch_norm_out(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& running_mean,
    const std::optional<at::Tensor>& running_var, bool training, double momentum, double eps,
    at::Tensor& out, at::Tensor& save_mean, at::Tensor& save_invstd) {
  for (const at::Tensor* dst : {&out, &save_mean, &save_invstd}) {
    check_out_device(input, *dst);
  }
  auto results = batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                            eps);
  for (auto [from, to] : {std::pair{std::get<0>(results), &out},
                          std::pair{std::get<1>(results), &save_mean},
                          std::pair{std::get<2>(results), &save_invstd}}) {
    TORCH_CHECK(at::can_cast(from.scalar_type(), to->scalar_type()), "result type ",
                from.scalar_type(), " can't be cast to the desired output type ",
                to->scalar_type());
    at::native::resize_output(*to, from.sizes());
    to->copy_(from);
  }
  return {out, save_mean, save_invstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input,
    const std::optional<at::Tensor>& weight_opt, const std::optional<at::Tensor>& running_mean_opt,
    const std::optional<at::Tensor>& running_var_opt,
    const std::optional<at::Tensor>& save_mean_opt,
    const std::optional<at::Tensor>& save_invstd_opt, bool train, double eps,
    std::array<bool, 3> mask) {
  at::Tensor weight = opt(weight_opt), rmean = opt(running_mean_opt), rvar = opt(running_var_opt),
             smean = opt(save_mean_opt), sinvstd = opt(save_invstd_opt);
  const int64_t c = input.size(1);
  at::Tensor mean = train ? smean : rmean, stat = train ? sinvstd : rvar;
  TORCH_CHECK(mean.defined() && stat.defined(), "batch_norm backward: the ",
              train ? "saved" : "running", " statistics must be defined");
  check_channels(weight, c, "weight");
  check_channels(mean, c, train ? "save_mean" : "running_mean");
  check_channels(stat, c, train ? "save_invstd" : "running_var");
  at::TensorOptions param = weight.defined() ? weight.options() : input.options();
  at::Tensor dx, dw, db;
  if (mask[0]) {
    dx = at::empty_like(input, input.suggest_memory_format());
  }
  if (mask[1]) {
    dw = at::empty({c}, param);
  }
  if (mask[2]) {
    db = at::empty({c}, param);
  }
  if (!floating_or_none(input) || !floating_or_none(grad_out) || !floating_or_none(weight)) {
    begin_host_fallback("aten::native_batch_norm_backward");
    auto r = at::native_batch_norm_backward(host(grad_out), host(input), host(weight), host(rmean),
                                            host(rvar), host(smean), host(sinvstd), train, eps,
                                            mask);
    for (auto [from, to] : {std::pair{std::get<0>(r), dx}, std::pair{std::get<1>(r), dw},
                            std::pair{std::get<2>(r), db}}) {
      if (to.defined()) {
        copy_into(from, to, false);
      }
    }
    return {dx, dw, db};
  }
  NCS g = ncs_view(grad_out), x = ncs_view(input);
  NCS d = dx.defined() ? ncs_view(dx) : NCS{};
  std::array<tpu_tensor, 8> views = {
      g.view,           x.view,           channels_view(weight), channels_view(mean),
      channels_view(stat), dx.defined() ? d.view : channels_view(at::Tensor()),
      channels_view(dw), channels_view(db)};
  OpCall call = new_call(TPU_OP_BATCH_NORM_BACKWARD, 5, 3);
  for (size_t i = 0; i < views.size(); i++) {
    call->tensors[i] = views[i];
  }
  call->scalars[0].f = eps;
  call->scalars[2].i = train;
  launch(input.device().index(), std::move(call));
  return {dx, dw, db};
}

// The forms AOTAutograd's graphs (torch.compile) call: with running statistics, and without.
std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_legit(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, at::Tensor& running_mean, at::Tensor& running_var,
    bool training, double momentum, double eps) {
  return batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_legit_no_stats(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, bool training, double momentum, double eps) {
  return batch_norm(input, weight, bias, std::nullopt, std::nullopt, training, momentum, eps);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_batch_norm", TORCH_FN(batch_norm));
  m.impl("native_batch_norm.out", TORCH_FN(batch_norm_out));
  m.impl("_native_batch_norm_legit", TORCH_FN(batch_norm_legit));
  m.impl("_native_batch_norm_legit.no_stats", TORCH_FN(batch_norm_legit_no_stats));
  m.impl("native_batch_norm_backward", TORCH_FN(batch_norm_backward));
}

} // namespace torch_tpu
