// nll_loss (1-d/2-d input), nll_loss2d and mse_loss, forward and backward. The kernels see nll
// inputs as [N, C, S] and targets as [N, S] (nn_loss.c); ATen's structured metas give the
// nll_loss outputs, PyTorch's checks are repeated for nll_loss2d. cross_entropy reaches these
// through log_softmax and nll_loss_nd.
#include <ATen/ExpandUtils.h>
#include <ATen/core/Reduction.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mse_loss_meta.h>
#include <ATen/ops/nll_loss_backward_meta.h>
#include <ATen/ops/nll_loss_forward_meta.h>
#include <torch/library.h>

#include "ops/TpuIndexCommon.h"
#include "ops/TpuOps.h"
#include "ops/TpuStructured.h"

namespace torch_tpu {
namespace {

void check_floating(const at::Tensor& t, const char* name) {
  TORCH_CHECK_NOT_IMPLEMENTED(t.is_floating_point(), "\"", name, "\" not implemented for '",
                              t.scalar_type(), "'");
}

void check_target(const at::Tensor& target, bool allow_byte) {
  TORCH_CHECK(target.scalar_type() == at::kLong ||
                  (allow_byte && target.scalar_type() == at::kByte),
              "expected scalar type Long but found ", target.scalar_type());
}

// [N, C, S] and [N, S] views of an nll input and target: 1-d input [C] with a 0-d target is
// [1, C, 1]; 2-d [N, C] is [N, C, 1]; 4-d [N, C, H, W] is [N, C, H * W].
at::Tensor as_ncs(const at::Tensor& input) {
  if (input.dim() == 1) {
    return input.reshape({1, input.size(0), 1});
  }
  return input.dim() == 2 ? input.unsqueeze(2) : input.flatten(2);
}

at::Tensor as_ns(const at::Tensor& target, const at::Tensor& ncs) {
  return target.reshape({ncs.size(0), ncs.size(2)});
}

const at::Tensor* weight_of(const std::optional<at::Tensor>& weight) {
  return weight.has_value() && weight->defined() ? &*weight : nullptr;
}

at::OptionalTensorRef opt_ref(const std::optional<at::Tensor>& weight) {
  return weight_of(weight) ? at::OptionalTensorRef(*weight) : at::OptionalTensorRef();
}

// The kernel's reduction: PyTorch reduces a 1-d input even for reduction none (as a sum).
int64_t kernel_reduction(const at::Tensor& input, int64_t reduction) {
  bool reduce_1d = reduction == at::Reduction::None && input.dim() == 1;
  return reduce_1d ? static_cast<int64_t>(at::Reduction::Sum) : reduction;
}

void run_nll(const at::Tensor& input, const at::Tensor& target, const at::Tensor* weight,
             int64_t reduction, int64_t ignore_index, const at::Tensor& out,
             const at::Tensor& total_weight) {
  check_floating(input, "nll_loss_out_frame");
  check_same_device("nll_loss", input.device(), {&target, weight ? weight : &target, &out});
  at::Tensor x = as_ncs(input);
  at::Tensor t = as_ns(target, x);
  reduction = kernel_reduction(input, reduction);
  at::Tensor o = reduction == at::Reduction::None ? out.view({x.size(0), x.size(2)}) : out;
  TORCH_CHECK(o.is_alias_of(out) || out.numel() == 0, "nll_loss: out must be viewable as [N, S]");
  std::vector<tpu_tensor> inputs{core_view(x), core_view(t)};
  at::Tensor w;
  if (weight) {
    w = weight->contiguous();
    inputs.push_back(core_view(w));
  }
  OpCall call = make_call(TPU_OP_NLL_LOSS, inputs, {core_view(o), core_view(total_weight)});
  call->scalars[0].i = reduction;
  call->scalars[1].i = ignore_index;
  launch(input.device().index(), std::move(call));
}

void run_nll_backward(const at::Tensor& grad_output, const at::Tensor& input,
                      const at::Tensor& target, const at::Tensor* weight, int64_t reduction,
                      int64_t ignore_index, const at::Tensor& total_weight,
                      const at::Tensor& grad_input) {
  check_floating(input, "nll_loss_backward_out_frame");
  check_same_device("nll_loss_backward", input.device(),
                    {&grad_output, &target, &total_weight, weight ? weight : &target});
  if (grad_input.numel() == 0) {
    return;
  }
  // The kernel writes [N, C, S]; a layout that cannot be viewed so is written through a copy.
  at::Tensor gi = as_ncs(grad_input);
  const bool aliased = gi.is_alias_of(grad_input);
  if (!aliased) {
    gi = at::empty(gi.sizes(), grad_input.options());
  }
  at::Tensor t = as_ns(target, gi);
  reduction = kernel_reduction(input, reduction);
  at::Tensor go = reduction == at::Reduction::None
                      ? grad_output.reshape({gi.size(0), gi.size(2)})
                      : grad_output.reshape({});
  std::vector<tpu_tensor> inputs{core_view(go), core_view(t), core_view(total_weight.reshape({}))};
  at::Tensor w;
  if (weight) {
    w = weight->contiguous();
    inputs.push_back(core_view(w));
  }
  OpCall call = make_call(TPU_OP_NLL_LOSS_BACKWARD, inputs, {core_view(gi)});
  call->scalars[0].i = reduction;
  call->scalars[1].i = ignore_index;
  launch(input.device().index(), std::move(call));
  if (!aliased) {
    copy_into(gi.view(grad_input.sizes()), grad_input, false);
  }
}

std::tuple<at::Tensor, at::Tensor> nll_loss_forward(const at::Tensor& self,
                                                    const at::Tensor& target,
                                                    const std::optional<at::Tensor>& weight,
                                                    int64_t reduction, int64_t ignore_index) {
  Functional<at::meta::structured_nll_loss_forward, 2> op;
  op.meta(self, target, opt_ref(weight), reduction, ignore_index);
  check_target(target, true);
  run_nll(self, target, weight_of(weight), reduction, ignore_index, op.outputs_[0],
          op.outputs_[1]);
  return std::make_tuple(std::move(op.outputs_[0]), std::move(op.outputs_[1]));
}

std::tuple<at::Tensor&, at::Tensor&> nll_loss_forward_out(
    const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight,
    int64_t reduction, int64_t ignore_index, at::Tensor& output, at::Tensor& total_weight) {
  Out<at::meta::structured_nll_loss_forward, 2> op(output, total_weight);
  op.meta(self, target, opt_ref(weight), reduction, ignore_index);
  check_target(target, true);
  run_nll(self, target, weight_of(weight), reduction, ignore_index, output, total_weight);
  return {output, total_weight};
}

at::Tensor nll_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                             const at::Tensor& target, const std::optional<at::Tensor>& weight,
                             int64_t reduction, int64_t ignore_index,
                             const at::Tensor& total_weight) {
  Functional<at::meta::structured_nll_loss_backward> op;
  op.meta(grad_output, self, target, opt_ref(weight), reduction, ignore_index,
          total_weight);
  check_target(target, true);
  run_nll_backward(grad_output, self, target, weight_of(weight), reduction, ignore_index,
                   total_weight, op.outputs_[0]);
  return std::move(op.outputs_[0]);
}

at::Tensor& nll_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                  const at::Tensor& target,
                                  const std::optional<at::Tensor>& weight, int64_t reduction,
                                  int64_t ignore_index, const at::Tensor& total_weight,
                                  at::Tensor& grad_input) {
  Out<at::meta::structured_nll_loss_backward> op(grad_input);
  op.meta(grad_output, self, target, opt_ref(weight), reduction, ignore_index,
          total_weight);
  check_target(target, true);
  run_nll_backward(grad_output, self, target, weight_of(weight), reduction, ignore_index,
                   total_weight, grad_input);
  return grad_input;
}

// nll_loss2d: PyTorch CPU's checks (LossNLL2d.cpp), outputs sized as its kernel sizes them.
void check_nll2d(const at::Tensor& input, const at::Tensor& target, const at::Tensor* weight) {
  TORCH_CHECK(target.dim() == 3, "only batches of spatial targets supported (3D tensors) but got "
              "targets of dimension: ", target.dim());
  TORCH_CHECK(input.dim() == 4, "only batches of spatial inputs supported (4D tensors), but got "
              "input of dimension: ", input.dim());
  TORCH_CHECK(!weight || weight->numel() == input.size(1),
              "weight tensor should be defined either for all or no classes");
  TORCH_CHECK(input.size(0) == target.size(0) && input.size(2) == target.size(1) &&
                  input.size(3) == target.size(2),
              "size mismatch (got input: ", input.sizes(), " , target: ", target.sizes());
  check_target(target, false);
}

std::tuple<at::Tensor&, at::Tensor&> nll_loss2d_forward_out(
    const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight,
    int64_t reduction, int64_t ignore_index, at::Tensor& output, at::Tensor& total_weight) {
  check_nll2d(self, target, weight_of(weight));
  total_weight.resize_({});
  if (reduction == at::Reduction::None) {
    at::native::resize_output(output, {self.size(0), self.size(2), self.size(3)});
  } else {
    at::native::resize_output(output, {});
  }
  run_nll(self, target, weight_of(weight), reduction, ignore_index, output, total_weight);
  return {output, total_weight};
}

std::tuple<at::Tensor, at::Tensor> nll_loss2d_forward(const at::Tensor& self,
                                                      const at::Tensor& target,
                                                      const std::optional<at::Tensor>& weight,
                                                      int64_t reduction, int64_t ignore_index) {
  at::Tensor output = at::empty({0}, self.options());
  at::Tensor total_weight = at::empty({0}, self.options());
  nll_loss2d_forward_out(self, target, weight, reduction, ignore_index, output, total_weight);
  return std::make_tuple(output, total_weight);
}

at::Tensor& nll_loss2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    const at::Tensor& target,
                                    const std::optional<at::Tensor>& weight, int64_t reduction,
                                    int64_t ignore_index, const at::Tensor& total_weight,
                                    at::Tensor& grad_input) {
  check_nll2d(self, target, weight_of(weight));
  TORCH_CHECK(total_weight.numel() == 1, "expected total_weight to be a single element tensor, "
              "got: ", total_weight.sizes(), " (", total_weight.numel(), " elements)");
  if (reduction == at::Reduction::None) {
    TORCH_CHECK(grad_output.dim() == 3, "grad_output must have same dimension as target (3) but "
                "got dimension: ", grad_output.sizes());
    TORCH_CHECK(grad_output.sizes() == target.sizes(), "size mismatch (got grad_output: ",
                grad_output.sizes(), " target: ", target.sizes());
  } else {
    TORCH_CHECK(grad_output.dim() <= 1 && grad_output.numel() == 1,
                "Expected a single element grad_output tensor, but got: ", grad_output.sizes());
  }
  grad_input.resize_as_(self);
  run_nll_backward(grad_output, self, target, weight_of(weight), reduction, ignore_index,
                   total_weight, grad_input);
  return grad_input;
}

at::Tensor nll_loss2d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                               const at::Tensor& target, const std::optional<at::Tensor>& weight,
                               int64_t reduction, int64_t ignore_index,
                               const at::Tensor& total_weight) {
  at::Tensor grad_input = at::empty_like(self);
  return nll_loss2d_backward_out(grad_output, self, target, weight, reduction, ignore_index,
                                 total_weight, grad_input);
}

// ---- mse_loss ------------------------------------------------------------------------------

void run_mse(const at::Tensor& input, const at::Tensor& target, int64_t reduction,
             const at::Tensor& out) {
  check_floating(out, "mse_cpu");
  check_same_device("mse_loss", out.device(), {&input, &target});
  std::vector<int64_t> shape = at::infer_size(input.sizes(), target.sizes());
  at::Tensor a = input.to(out.scalar_type()).expand(shape);
  at::Tensor b = target.to(out.scalar_type()).expand(shape);
  OpCall call = make_call(TPU_OP_MSE_LOSS, {core_view(a), core_view(b)}, {core_view(out)});
  call->scalars[0].i = reduction;
  launch(out.device().index(), std::move(call));
}

at::Tensor& mse_loss_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                         at::Tensor& out) {
  Out<at::meta::structured_mse_loss> op(out);
  op.meta(self, target, reduction);
  run_mse(self, target, reduction, out);
  return out;
}

at::Tensor mse_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction) {
  Functional<at::meta::structured_mse_loss> op;
  op.meta(self, target, reduction);
  run_mse(self, target, reduction, op.outputs_[0]);
  return std::move(op.outputs_[0]);
}

at::Tensor& mse_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                  const at::Tensor& target, int64_t reduction,
                                  at::Tensor& grad_input) {
  check_floating(self, "mse_backward_cpu_out");
  check_same_device("mse_loss_backward", self.device(), {&grad_output, &target, &grad_input});
  at::native::resize_output(grad_input, self.sizes());
  at::IntArrayRef shape = grad_input.sizes();
  auto as_input = [&](const at::Tensor& t) { return t.to(self.scalar_type()).expand(shape); };
  at::Tensor go = as_input(grad_output), a = as_input(self), b = as_input(target);
  OpCall call = make_call(TPU_OP_MSE_LOSS_BACKWARD,
                                {core_view(go), core_view(a), core_view(b)},
                                {core_view(grad_input)});
  call->scalars[0].f =
      reduction == at::Reduction::Mean ? 2. / static_cast<double>(self.numel()) : 2.;
  launch(self.device().index(), std::move(call));
  return grad_input;
}

at::Tensor mse_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                             const at::Tensor& target, int64_t reduction) {
  at::Tensor grad_input = at::empty_like(self, at::MemoryFormat::Contiguous);
  return mse_loss_backward_out(grad_output, self, target, reduction, grad_input);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nll_loss_forward", TORCH_FN(nll_loss_forward));
  m.impl("nll_loss_forward.output", TORCH_FN(nll_loss_forward_out));
  m.impl("nll_loss_backward", TORCH_FN(nll_loss_backward));
  m.impl("nll_loss_backward.grad_input", TORCH_FN(nll_loss_backward_out));
  m.impl("nll_loss2d_forward", TORCH_FN(nll_loss2d_forward));
  m.impl("nll_loss2d_forward.output", TORCH_FN(nll_loss2d_forward_out));
  m.impl("nll_loss2d_backward", TORCH_FN(nll_loss2d_backward));
  m.impl("nll_loss2d_backward.grad_input", TORCH_FN(nll_loss2d_backward_out));
  m.impl("mse_loss", TORCH_FN(mse_loss));
  m.impl("mse_loss.out", TORCH_FN(mse_loss_out));
  m.impl("mse_loss_backward", TORCH_FN(mse_loss_backward));
  m.impl("mse_loss_backward.grad_input", TORCH_FN(mse_loss_backward_out));
}

} // namespace torch_tpu
