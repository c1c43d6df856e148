// embedding_dense_backward, bernoulli_ and native_dropout with its backward. Random values come
// from the tpu generator's Philox (seed, offset) and each element's logical index, so the same
// seed gives the same mask in every eager mode (kernels/random/random_dropout.c).
#include <ATen/ExpandUtils.h>
#include <ATen/native/DistributionTemplates.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/ones_like.h>
#include <torch/library.h>

#include "ops/TpuIndexCommon.h"
#include "runtime/TpuGenerator.h"

namespace torch_tpu {
namespace {

at::Tensor embedding_dense_backward(const at::Tensor& grad_output, const at::Tensor& indices,
                                    int64_t num_weights, int64_t padding_idx,
                                    bool scale_grad_by_freq) {
  TORCH_CHECK(indices.scalar_type() == at::kLong || indices.scalar_type() == at::kInt,
              "Expected tensor for argument #2 'indices' to have one of the following scalar "
              "types: Long, Int; but got ", indices.scalar_type(), " instead (while checking "
              "arguments for embedding_backward)");
  check_same_device("embedding_dense_backward", grad_output.device(), {&indices});
  int64_t d = grad_output.size(-1);
  at::Tensor grad_weight = at::empty({num_weights, d}, grad_output.options());
  at::Tensor grad = grad_output.reshape({indices.numel(), d});
  at::Tensor flat = indices.reshape({-1});
  std::vector<tpu_tensor> outputs{core_view(grad_weight)};
  at::Tensor counts;
  if (scale_grad_by_freq) {
    counts = at::empty({num_weights}, indices.options().dtype(at::kLong));
    outputs.push_back(core_view(counts));
  }
  OpCall call =
      make_call(TPU_OP_EMBEDDING_BACKWARD, {core_view(grad), core_view(flat)}, outputs);
  call->scalars[0].i = padding_idx;
  call->scalars[1].i = scale_grad_by_freq ? 1 : 0;
  launch(grad_output.device().index(), std::move(call));
  return grad_weight;
}

// A random op's call with the generator's Philox arguments in scalars[2] and [3].
void launch_random(const at::Tensor& out, OpCall call, std::optional<at::Generator> gen) {
  PhiloxArgs args = philox_args(std::move(gen), out.device().index());
  call->scalars[2].u = args.seed;
  call->scalars[3].u = args.offset;
  launch(out.device().index(), std::move(call));
}

void check_bernoulli_dtype(const at::Tensor& self) {
  TORCH_CHECK_NOT_IMPLEMENTED(
      is_computable(self.scalar_type()) && !self.is_complex(),
      "\"bernoulli_\" not implemented for '", self.scalar_type(), "'");
}

// Functors for ATen's bernoulli_ templates (which check p and empty tensors as CPU does).
template <typename RNG>
struct BernoulliTensorKernel {
  void operator()(const at::TensorBase& base, const at::Tensor& p_, std::optional<at::Generator> gen) {
    at::Tensor self(base);
    TORCH_CHECK(self.is_privateuseone(), "Expected a 'tpu' tensor for a tpu generator, but got ",
                self.device());
    check_bernoulli_dtype(self);
    TORCH_CHECK_NOT_IMPLEMENTED(p_.is_floating_point(), "\"bernoulli_tensor_cpu_p_\" not "
                                "implemented for '", p_.scalar_type(), "'");
    at::Tensor p = p_.to(self.device());
    c10::MaybeOwned<at::Tensor> b_p = at::expand_inplace(self, p);
    launch_random(self, make_call(TPU_OP_BERNOULLI, {core_view(*b_p)}, {core_view(self)}),
                  std::move(gen));
  }
};

template <typename RNG>
struct BernoulliScalarKernel {
  void operator()(const at::TensorBase& base, double p, std::optional<at::Generator> gen) {
    at::Tensor self(base);
    TORCH_CHECK(self.is_privateuseone(), "Expected a 'tpu' tensor for a tpu generator, but got ",
                self.device());
    check_bernoulli_dtype(self);
    OpCall call = make_call(TPU_OP_BERNOULLI, {}, {core_view(self)});
    call->scalars[0].f = p;
    launch_random(self, std::move(call), std::move(gen));
  }
};

at::Tensor& bernoulli_tensor(at::Tensor& self, const at::Tensor& p,
                             std::optional<at::Generator> gen) {
  return at::native::templates::bernoulli_impl_<BernoulliTensorKernel, TpuGeneratorImpl*>(
      self, p, std::move(gen));
}

at::Tensor& bernoulli_scalar(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  return at::native::templates::bernoulli_impl_<BernoulliScalarKernel, TpuGeneratorImpl*>(
      self, p, std::move(gen));
}

at::Tensor& bernoulli_out(const at::Tensor& self, std::optional<at::Generator> gen,
                          at::Tensor& out) {
  return at::native::templates::bernoulli_out_impl<BernoulliTensorKernel, TpuGeneratorImpl*>(
      out, self, std::move(gen));
}

bool dropout_kernel_dtype(const at::Tensor& t) {
  return t.is_floating_point() || t.is_complex();
}

// PyTorch CPU's native_dropout: in training mask ~ Bernoulli(1 - p) and out = input * mask *
// 1 / (1 - p) (0 when p = 1); otherwise an all-true mask and a copy.
std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p,
                                                  std::optional<bool> train) {
  if (input.numel() == 0) {
    return std::make_tuple(input, at::empty_like(input, input.options()));
  }
  if (train.has_value() && !*train) {
    return std::make_tuple(input.clone(), at::ones_like(input, input.options().dtype(at::kBool)));
  }
  double keep = 1. - p;
  double scale = keep == 0 ? 0. : 1. / keep;
  at::Tensor mask = at::empty_like(input, input.options().dtype(at::kBool));
  if (!dropout_kernel_dtype(input)) {
    // Integer inputs: PyTorch's own arithmetic (and its errors) on the native mask.
    bernoulli_scalar(mask, keep, std::nullopt);
    return std::make_tuple(input.mul(mask).mul_(scale), mask);
  }
  at::Tensor out = at::empty_like(input);
  OpCall call = make_call(TPU_OP_DROPOUT, {core_view(input)},
                                {core_view(out), core_view(mask)});
  call->scalars[0].f = keep;
  call->scalars[1].f = scale;
  launch_random(out, std::move(call), std::nullopt);
  return std::make_tuple(out, mask);
}

at::Tensor native_dropout_backward(const at::Tensor& grad, const at::Tensor& mask,
                                   double scale) {
  bool kernel = dropout_kernel_dtype(grad) && grad.sizes() == mask.sizes() &&
                (mask.scalar_type() == at::kBool || mask.scalar_type() == at::kByte) &&
                mask.device() == grad.device();
  if (!kernel) {
    return grad.mul(mask).mul(scale);  // PyTorch's definition, dispatched op by op
  }
  at::Tensor out = at::empty_like(grad);
  OpCall call = make_call(TPU_OP_DROPOUT_BACKWARD, {core_view(grad), core_view(mask)},
                                {core_view(out)});
  call->scalars[0].f = scale;
  launch(grad.device().index(), std::move(call));
  return out;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("embedding_dense_backward", TORCH_FN(embedding_dense_backward));
  m.impl("bernoulli_.Tensor", TORCH_FN(bernoulli_tensor));
  m.impl("bernoulli_.float", TORCH_FN(bernoulli_scalar));
  m.impl("bernoulli.out", TORCH_FN(bernoulli_out));
  m.impl("native_dropout", TORCH_FN(native_dropout));
  m.impl("native_dropout_backward", TORCH_FN(native_dropout_backward));
}

} // namespace torch_tpu
