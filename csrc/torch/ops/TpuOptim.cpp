// Fused optimizers (torch.optim Adam/AdamW/SGD with fused=True) and GradScaler's two kernels: one
// core op per parameter, in place, in stream order.
#include <torch/library.h>

#include "runtime/TpuCore.h"

namespace torch_tpu {
namespace {

// The tpu view of an optional one-element tensor (lr, grad_scale, found_inf). A CPU learning-rate
// tensor is read on the host instead: its value is known now.
bool add_aux(std::vector<tpu_tensor>& views, const std::optional<at::Tensor>& t) {
  if (!t || !t->defined()) {
    return false;
  }
  TORCH_CHECK(t->is_privateuseone(), "expected a tpu tensor, got one on ", t->device());
  views.push_back(core_view(*t));
  return true;
}

void check_lists(c10::ArrayRef<at::TensorList> lists, const char* op) {
  for (const auto& list : lists) {
    TORCH_CHECK(list.size() == lists[0].size(), op,
                ": every tensor list must have one entry per parameter");
  }
  for (const at::Tensor& p : lists[0]) {
    TORCH_CHECK(p.is_privateuseone(), op, ": expected tpu parameters, got one on ", p.device());
  }
}

OpCall make_call(tpu_op_id op, const std::vector<tpu_tensor>& inputs,
                 const std::vector<at::Tensor>& outputs) {
  OpCall call = new_call(op, static_cast<int>(inputs.size()), static_cast<int>(outputs.size()));
  for (size_t i = 0; i < inputs.size(); i++) {
    call->tensors[i] = inputs[i];
  }
  for (size_t o = 0; o < outputs.size(); o++) {
    call->tensors[inputs.size() + o] = core_view(outputs[o]);
  }
  return call;
}

void fused_adam_impl(bool decoupled, at::TensorList params, at::TensorList grads,
                     at::TensorList exp_avgs, at::TensorList exp_avg_sqs,
                     at::TensorList max_exp_avg_sqs, at::TensorList state_steps, double lr,
                     const std::optional<at::Tensor>& lr_tensor, double beta1, double beta2,
                     double weight_decay, double eps, bool amsgrad, bool maximize,
                     const std::optional<at::Tensor>& grad_scale,
                     const std::optional<at::Tensor>& found_inf) {
  const char* name = decoupled ? "_fused_adamw_" : "_fused_adam_";
  check_lists({params, grads, exp_avgs, exp_avg_sqs, state_steps}, name);
  TORCH_CHECK(!amsgrad || max_exp_avg_sqs.size() == params.size(), name,
              ": amsgrad needs one max_exp_avg_sq per parameter");
  std::optional<at::Tensor> device_lr;
  if (lr_tensor && lr_tensor->is_cpu()) {
    lr = lr_tensor->item<double>();
  } else {
    device_lr = lr_tensor;
  }
  for (size_t i = 0; i < params.size(); i++) {
    std::vector<tpu_tensor> inputs{core_view(state_steps[i])};
    uint64_t flags = (amsgrad ? TPU_ADAM_AMSGRAD : 0) | (maximize ? TPU_ADAM_MAXIMIZE : 0) |
                     (decoupled ? TPU_ADAM_DECOUPLED : 0);
    flags |= add_aux(inputs, device_lr) ? TPU_ADAM_LR_TENSOR : 0;
    flags |= add_aux(inputs, grad_scale) ? TPU_ADAM_GRAD_SCALE : 0;
    flags |= add_aux(inputs, found_inf) ? TPU_ADAM_FOUND_INF : 0;
    std::vector<at::Tensor> outputs{params[i], grads[i], exp_avgs[i], exp_avg_sqs[i]};
    if (amsgrad) {
      outputs.push_back(max_exp_avg_sqs[i]);
    }
    OpCall call = make_call(TPU_OP_FUSED_ADAM, inputs, outputs);
    call->scalars[0].f = lr;
    call->scalars[1].f = beta1;
    call->scalars[2].f = beta2;
    call->scalars[3].f = weight_decay;
    call->scalars[4].f = eps;
    call->scalars[5].u = flags;
    launch(params[i].device().index(), std::move(call));
  }
}

template <bool Decoupled>
void fused_adam(at::TensorList params, at::TensorList grads, at::TensorList exp_avgs,
                at::TensorList exp_avg_sqs, at::TensorList max_exp_avg_sqs,
                at::TensorList state_steps, double lr, double beta1, double beta2,
                double weight_decay, double eps, bool amsgrad, bool maximize,
                const std::optional<at::Tensor>& grad_scale,
                const std::optional<at::Tensor>& found_inf) {
  fused_adam_impl(Decoupled, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                  lr, std::nullopt, beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale,
                  found_inf);
}

template <bool Decoupled>
void fused_adam_tensor_lr(at::TensorList params, at::TensorList grads, at::TensorList exp_avgs,
                          at::TensorList exp_avg_sqs, at::TensorList max_exp_avg_sqs,
                          at::TensorList state_steps, const at::Tensor& lr, double beta1,
                          double beta2, double weight_decay, double eps, bool amsgrad,
                          bool maximize, const std::optional<at::Tensor>& grad_scale,
                          const std::optional<at::Tensor>& found_inf) {
  fused_adam_impl(Decoupled, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                  0.0, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale,
                  found_inf);
}

void fused_sgd_impl(at::TensorList params, at::TensorList grads, at::TensorList momentum_buffers,
                    double weight_decay, double momentum, double lr,
                    const std::optional<at::Tensor>& lr_tensor, double dampening, bool nesterov,
                    bool maximize, bool is_first_step, const std::optional<at::Tensor>& grad_scale,
                    const std::optional<at::Tensor>& found_inf) {
  check_lists({params, grads}, "_fused_sgd_");
  TORCH_CHECK(momentum == 0.0 || momentum_buffers.size() == params.size(),
              "_fused_sgd_: momentum needs one buffer per parameter");
  std::optional<at::Tensor> device_lr;
  if (lr_tensor && lr_tensor->is_cpu()) {
    lr = lr_tensor->item<double>();
  } else {
    device_lr = lr_tensor;
  }
  for (size_t i = 0; i < params.size(); i++) {
    std::vector<tpu_tensor> inputs;
    uint64_t flags = (nesterov ? TPU_SGD_NESTEROV : 0) | (maximize ? TPU_SGD_MAXIMIZE : 0) |
                     (is_first_step ? TPU_SGD_FIRST_STEP : 0);
    flags |= add_aux(inputs, device_lr) ? TPU_SGD_LR_TENSOR : 0;
    flags |= add_aux(inputs, grad_scale) ? TPU_SGD_GRAD_SCALE : 0;
    flags |= add_aux(inputs, found_inf) ? TPU_SGD_FOUND_INF : 0;
    std::vector<at::Tensor> outputs{params[i], grads[i]};
    if (momentum != 0.0) {
      outputs.push_back(momentum_buffers[i]);
    }
    OpCall call = make_call(TPU_OP_FUSED_SGD, inputs, outputs);
    call->scalars[0].f = lr;
    call->scalars[1].f = weight_decay;
    call->scalars[2].f = momentum;
    call->scalars[3].f = dampening;
    call->scalars[4].u = flags;
    launch(params[i].device().index(), std::move(call));
  }
}

void fused_sgd(at::TensorList params, at::TensorList grads, at::TensorList momentum_buffers,
               double weight_decay, double momentum, double lr, double dampening, bool nesterov,
               bool maximize, bool is_first_step, const std::optional<at::Tensor>& grad_scale,
               const std::optional<at::Tensor>& found_inf) {
  fused_sgd_impl(params, grads, momentum_buffers, weight_decay, momentum, lr, std::nullopt,
                 dampening, nesterov, maximize, is_first_step, grad_scale, found_inf);
}

void fused_sgd_tensor_lr(at::TensorList params, at::TensorList grads,
                         at::TensorList momentum_buffers, double weight_decay, double momentum,
                         const at::Tensor& lr, double dampening, bool nesterov, bool maximize,
                         bool is_first_step, const std::optional<at::Tensor>& grad_scale,
                         const std::optional<at::Tensor>& found_inf) {
  fused_sgd_impl(params, grads, momentum_buffers, weight_decay, momentum, 0.0, lr, dampening,
                 nesterov, maximize, is_first_step, grad_scale, found_inf);
}

void amp_unscale(at::TensorList grads, at::Tensor& found_inf, const at::Tensor& inv_scale) {
  TORCH_CHECK(inv_scale.is_privateuseone() && found_inf.is_privateuseone(),
              "inv_scale and found_inf must be tpu tensors");
  TORCH_CHECK(inv_scale.numel() == 1 && found_inf.numel() == 1,
              "inv_scale and found_inf must be one-element tensors");
  TORCH_CHECK(inv_scale.scalar_type() == at::kFloat && found_inf.scalar_type() == at::kFloat,
              "inv_scale and found_inf must be float tensors");
  for (const at::Tensor& grad : grads) {
    TORCH_CHECK(grad.device() == inv_scale.device(), "grads and inv_scale must share a device");
    launch(grad.device().index(), make_call(TPU_OP_AMP_UNSCALE, {core_view(inv_scale)},
                                            {grad, found_inf}));
  }
}

at::Tensor& amp_update_scale(at::Tensor& scale, at::Tensor& growth_tracker,
                             const at::Tensor& found_inf, double growth_factor,
                             double backoff_factor, int64_t growth_interval) {
  TORCH_CHECK(scale.is_privateuseone() && growth_tracker.is_privateuseone() &&
                  found_inf.is_privateuseone(),
              "scale, growth_tracker and found_inf must be tpu tensors");
  TORCH_CHECK(growth_tracker.scalar_type() == at::kInt, "growth_tracker must be an int tensor");
  TORCH_CHECK(scale.scalar_type() == at::kFloat, "current_scale must be a float tensor");
  OpCall call = make_call(TPU_OP_AMP_UPDATE_SCALE, {core_view(found_inf)},
                                {scale, growth_tracker});
  call->scalars[0].f = growth_factor;
  call->scalars[1].f = backoff_factor;
  call->scalars[2].i = growth_interval;
  launch(scale.device().index(), std::move(call));
  return scale;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fused_adam_", TORCH_FN(fused_adam<false>));
  m.impl("_fused_adam_.tensor_lr", TORCH_FN(fused_adam_tensor_lr<false>));
  m.impl("_fused_adamw_", TORCH_FN(fused_adam<true>));
  m.impl("_fused_adamw_.tensor_lr", TORCH_FN(fused_adam_tensor_lr<true>));
  m.impl("_fused_sgd_", TORCH_FN(fused_sgd));
  m.impl("_fused_sgd_.tensor_lr", TORCH_FN(fused_sgd_tensor_lr));
  m.impl("_amp_foreach_non_finite_check_and_unscale_", TORCH_FN(amp_unscale));
  m.impl("_amp_update_scale_", TORCH_FN(amp_update_scale));
}

} // namespace torch_tpu
