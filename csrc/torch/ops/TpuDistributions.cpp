// exponential_, cauchy_, log_normal_, geometric_ and normal with tensor parameters: draws of the
// tpu generator's UNIFORM and NORMAL streams (TpuRandom.cpp) turned into each distribution by
// PyTorch CPU's transformations (ATen/core/TransformationHelper.h), all native ops, so a seed
// reproduces them on either driver. ATen's templates (DistributionTemplates.h) make CPU's
// parameter checks with its messages. float16 and bfloat16 draw and transform in float and
// round once, as CPU does.
#include <ATen/native/DistributionTemplates.h>
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>
#include <c10/util/MathConstants.h>
#include <torch/library.h>

#include "runtime/TpuGenerator.h"

namespace torch_tpu {
namespace {

void check_type(const at::Tensor& self, const char* kernel, bool integers) {
  const at::ScalarType type = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(
      at::isFloatingType(type) || (integers && at::isIntegralType(type, false)), "\"", kernel,
      "\" not implemented for '", type, "'");
}

// Where the draws are transformed: self itself when it is float32 or float64, else a float
// tensor of its sizes (a double one for int32 and int64, whose values float cannot all hold).
at::Tensor work_tensor(const at::Tensor& self) {
  const at::ScalarType type = self.scalar_type();
  if (type == at::kFloat || type == at::kDouble) {
    return self;
  }
  const bool wide = type == at::kInt || type == at::kLong;
  return at::empty(self.sizes(), self.options().dtype(wide ? at::kDouble : at::kFloat));
}

// Stores the transformed draws into self (rounding or truncating once) when they were not
// computed there.
void finish(const at::Tensor& self, const at::Tensor& work) {
  if (!work.is_same(self)) {
    at::Tensor(self).copy_(work);
  }
}

// exponential: -1 / lambda * log1p(-u), u uniform in [0, 1).
template <typename RNG>
struct ExponentialKernel {
  void operator()(at::TensorIteratorBase& iter, double lambda, std::optional<at::Generator> gen) {
    at::Tensor self = iter.tensor(0);
    TORCH_CHECK(at::isFloatingType(self.scalar_type()), "Exponential distribution is a "
                "continuous probability distribution. dtype must be a floating point but you "
                "specified ", self.scalar_type());
    at::Tensor work = work_tensor(self);
    work.uniform_(0, 1, std::move(gen)).neg_().log1p_().mul_(-1.0 / lambda);
    finish(self, work);
  }
};

// cauchy: median + sigma * tan(pi * (u - 0.5)).
template <typename RNG>
struct CauchyKernel {
  void operator()(at::TensorIteratorBase& iter, double median, double sigma,
                  std::optional<at::Generator> gen) {
    at::Tensor self = iter.tensor(0);
    at::Tensor work = work_tensor(self);
    work.uniform_(0, 1, std::move(gen)).sub_(0.5).mul_(c10::pi<double>).tan_();
    work.mul_(sigma).add_(median);
    finish(self, work);
  }
};

// log_normal: exp of a normal draw with the given mean and std.
template <typename RNG>
struct LogNormalKernel {
  void operator()(at::TensorIteratorBase& iter, double mean, double std,
                  std::optional<at::Generator> gen) {
    at::Tensor self = iter.tensor(0);
    check_type(self, "log_normal_cpu", false);
    at::Tensor work = work_tensor(self);
    work.normal_(mean, std, std::move(gen)).exp_();
    finish(self, work);
  }
};

// geometric: ceil(log(v) / log1p(-p)) with v = 1 - u in (0, 1], the number of Bernoulli(p)
// trials up to the first success. v = 1 (u = 0) would give 0, though every v in (1 - p, 1] gives
// 1: the clamp puts it there.
template <typename RNG>
struct GeometricKernel {
  void operator()(at::TensorIteratorBase& iter, double p, std::optional<at::Generator> gen) {
    at::Tensor self = iter.tensor(0);
    check_type(self, "geometric_cpu", true);
    at::Tensor work = work_tensor(self);
    work.uniform_(0, 1, std::move(gen)).neg_().log1p_().div_(std::log1p(-p)).ceil_();
    work.clamp_min_(1);
    finish(self, work);
  }
};

// The standard normal fill of ATen's normal templates: the tpu normal_.
template <typename RNG>
struct NormalKernel {
  void operator()(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
    self.normal_(mean, std, std::move(gen));
  }
};

at::Tensor& exponential(at::Tensor& self, double lambda, std::optional<at::Generator> gen) {
  return at::native::templates::exponential_impl_<ExponentialKernel, TpuGeneratorImpl*>(
      self, lambda, std::move(gen));
}

at::Tensor& cauchy(at::Tensor& self, double median, double sigma,
                   std::optional<at::Generator> gen) {
  return at::native::templates::cauchy_impl_<CauchyKernel, TpuGeneratorImpl*>(
      self, median, sigma, std::move(gen));
}

at::Tensor& log_normal(at::Tensor& self, double mean, double std,
                       std::optional<at::Generator> gen) {
  return at::native::templates::log_normal_impl_<LogNormalKernel, TpuGeneratorImpl*>(
      self, mean, std, std::move(gen));
}

at::Tensor& geometric(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  return at::native::templates::geometric_impl_<GeometricKernel, TpuGeneratorImpl*>(
      self, p, std::move(gen));
}

using at::native::templates::normal_impl;
using at::native::templates::normal_out_impl;

at::Tensor normal_tensor_float(const at::Tensor& mean, double std,
                               std::optional<at::Generator> gen) {
  return normal_impl<NormalKernel, TpuGeneratorImpl*>(mean, std, std::move(gen));
}

at::Tensor& normal_tensor_float_out(const at::Tensor& mean, double std,
                                    std::optional<at::Generator> gen, at::Tensor& out) {
  return normal_out_impl<NormalKernel, TpuGeneratorImpl*>(out, mean, std, std::move(gen));
}

at::Tensor normal_float_tensor(double mean, const at::Tensor& std,
                               std::optional<at::Generator> gen) {
  return normal_impl<NormalKernel, TpuGeneratorImpl*>(mean, std, std::move(gen));
}

at::Tensor& normal_float_tensor_out(double mean, const at::Tensor& std,
                                    std::optional<at::Generator> gen, at::Tensor& out) {
  return normal_out_impl<NormalKernel, TpuGeneratorImpl*>(out, mean, std, std::move(gen));
}

at::Tensor normal_tensor_tensor(const at::Tensor& mean, const at::Tensor& std,
                                std::optional<at::Generator> gen) {
  return normal_impl<NormalKernel, TpuGeneratorImpl*>(mean, std, std::move(gen));
}

at::Tensor& normal_tensor_tensor_out(const at::Tensor& mean, const at::Tensor& std,
                                     std::optional<at::Generator> gen, at::Tensor& out) {
  return normal_out_impl<NormalKernel, TpuGeneratorImpl*>(out, mean, std, std::move(gen));
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("exponential_", TORCH_FN(exponential));
  m.impl("cauchy_", TORCH_FN(cauchy));
  m.impl("log_normal_", TORCH_FN(log_normal));
  m.impl("geometric_", TORCH_FN(geometric));
  m.impl("normal.Tensor_float", TORCH_FN(normal_tensor_float));
  m.impl("normal.Tensor_float_out", TORCH_FN(normal_tensor_float_out));
  m.impl("normal.float_Tensor", TORCH_FN(normal_float_tensor));
  m.impl("normal.float_Tensor_out", TORCH_FN(normal_float_tensor_out));
  m.impl("normal.Tensor_Tensor", TORCH_FN(normal_tensor_tensor));
  m.impl("normal.Tensor_Tensor_out", TORCH_FN(normal_tensor_tensor_out));
}

} // namespace torch_tpu
