// var/std (with correction, and var_mean/std_mean), vector norms and logsumexp on the core's
// reduction engine. The norms' metadata comes from ATen's structured metas; var/std and logsumexp
// are not structured, so their output shapes and dtypes are computed here as PyTorch's kernels
// compute them.
#include <ATen/ops/add.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/imag.h>
#include <ATen/ops/real.h>
#include <ATen/ops/sqrt.h>
#include <ATen/ops/linalg_vector_norm.h>
#include <ATen/ops/logsumexp.h>
#include <ATen/ops/std.h>
#include <ATen/ops/std_mean.h>
#include <ATen/ops/var.h>
#include <ATen/ops/var_mean.h>
#include <ATen/ops/linalg_vector_norm_meta.h>
#include <ATen/ops/norm_meta.h>
#include <c10/core/DefaultDtype.h>
#include <torch/library.h>

#include <limits>

#include "ops/TpuReduce.h"
#include "ops/TpuStructured.h"

namespace torch_tpu {
namespace {

tpu_scalar float_scalar(double v) {
  tpu_scalar s;
  s.f = v;
  return s;
}

tpu_scalar int_scalar(int64_t v) {
  tpu_scalar s;
  s.i = v;
  return s;
}

// The shape of a reduction of self over mask.
std::vector<int64_t> reduced_shape(const at::Tensor& self, DimMask mask, bool keepdim) {
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < self.dim(); d++) {
    if (!mask[d]) {
      shape.push_back(self.size(d));
    } else if (keepdim) {
      shape.push_back(1);
    }
  }
  return shape;
}

// ---- var, std, var_mean, std_mean ----

void check_var_input(const at::Tensor& self) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type()),
              "std and var only support floating point and complex dtypes");
}

// Writes var (or std) and, when `mean` is defined, the mean, of self over dim; warns as PyTorch
// does when the correction leaves no degrees of freedom.
void run_var(const at::Tensor& self, at::OptionalIntArrayRef dim,
             const std::optional<at::Scalar>& correction, bool keepdim, bool take_sqrt,
             const at::Tensor& out, const at::Tensor& mean) {
  const double corr = correction ? correction->toDouble() : 1.0;
  const double factor =
      out.numel() > 0 ? static_cast<double>(self.numel()) / static_cast<double>(out.numel()) : 0;
  if (factor - corr <= 0) {
    const char* name = mean.defined() ? (take_sqrt ? "std_mean" : "var_mean")
                                      : (take_sqrt ? "std" : "var");
    TORCH_WARN(name, "(): degrees of freedom is <= 0. Correction should be strictly less than "
               "the reduction factor (input numel divided by output numel).");
  }
  if (self.is_complex()) {
    begin_host_fallback(take_sqrt ? "aten::std.correction" : "aten::var.correction");
    at::Tensor host = self.cpu();
    if (mean.defined()) {
      auto r = take_sqrt ? at::std_mean(host, dim, correction, keepdim)
                         : at::var_mean(host, dim, correction, keepdim);
      copy_into(std::get<0>(r), out, false);
      copy_into(std::get<1>(r), mean, false);
    } else {
      copy_into(take_sqrt ? at::std(host, dim, correction, keepdim)
                          : at::var(host, dim, correction, keepdim),
                out, false);
    }
    return;
  }
  DimMask mask = reduce_mask(self, dim);
  tpu_scalar s0 = float_scalar(corr), s1 = int_scalar(take_sqrt);
  if (mean.defined()) {
    launch_reduce(TPU_OP_VAR, self, {out, mean}, mask, self.scalar_type(), s0, s1);
  } else {
    launch_reduce(TPU_OP_VAR, self, {out}, mask, self.scalar_type(), s0, s1);
  }
}

// var/std into `out` as PyTorch's std_var_out: out's dtype is the one computed in. A real input is
// cast to it first (make_reduction), which must be a safe cast; a complex input is the variance
// of its real part plus that of its imaginary part, each computed in out's real dtype. A real
// input with a complex out is refused (the kernels take real dtypes), as on CUDA; CPU computes
// it when its fast path for a full reduction (std_var_all_cpu) takes the call.
at::Tensor& var_like_out(const at::Tensor& self, at::OptionalIntArrayRef dim,
                         const std::optional<at::Scalar>& correction, bool keepdim,
                         at::Tensor& out, bool take_sqrt) {
  check_var_input(self);
  TORCH_CHECK(out.device() == self.device(), "Expected out tensor to have device ", self.device(),
              ", but got ", out.device(), " instead");
  if (self.is_complex()) {
    const at::TensorOptions real = self.options().dtype(c10::toRealValueType(out.scalar_type()));
    at::Tensor real_out = at::empty({0}, real), imag_out = at::empty({0}, real);
    var_like_out(at::real(self), dim, correction, keepdim, real_out, false);
    var_like_out(at::imag(self), dim, correction, keepdim, imag_out, false);
    at::add_out(out, real_out, imag_out);
    return take_sqrt ? at::sqrt_out(out, out) : out;
  }
  at::native::resize_output(out, reduced_shape(self, reduce_mask(self, dim), keepdim));
  TORCH_CHECK(at::canCast(self.scalar_type(), out.scalar_type()), "result type ",
              self.scalar_type(), " can't be cast to the desired output type ", out.scalar_type());
  if (self.numel() == 0) {
    return out.fill_(std::numeric_limits<double>::quiet_NaN());
  }
  // As PyTorch's std_var kernels: real floating dtypes only.
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(out.scalar_type()), "\"",
                              take_sqrt ? "std" : "var", "\" not implemented for '",
                              out.scalar_type(), "' on tpu");
  const at::Tensor input =
      self.scalar_type() == out.scalar_type() ? self : self.to(out.scalar_type());
  run_var(input, dim, correction, keepdim, take_sqrt, out, at::Tensor());
  return out;
}

at::Tensor var_like(const at::Tensor& self, at::OptionalIntArrayRef dim,
                    const std::optional<at::Scalar>& correction, bool keepdim, bool take_sqrt) {
  check_var_input(self);
  at::Tensor out = at::empty(reduced_shape(self, reduce_mask(self, dim), keepdim),
                             self.options().dtype(c10::toRealValueType(self.scalar_type())));
  return var_like_out(self, dim, correction, keepdim, out, take_sqrt);
}

at::Tensor var(const at::Tensor& self, at::OptionalIntArrayRef dim,
               const std::optional<at::Scalar>& correction, bool keepdim) {
  return var_like(self, dim, correction, keepdim, false);
}

at::Tensor std_(const at::Tensor& self, at::OptionalIntArrayRef dim,
                const std::optional<at::Scalar>& correction, bool keepdim) {
  return var_like(self, dim, correction, keepdim, true);
}

at::Tensor& var_out(const at::Tensor& self, at::OptionalIntArrayRef dim,
                    const std::optional<at::Scalar>& correction, bool keepdim, at::Tensor& out) {
  return var_like_out(self, dim, correction, keepdim, out, false);
}

at::Tensor& std_out(const at::Tensor& self, at::OptionalIntArrayRef dim,
                    const std::optional<at::Scalar>& correction, bool keepdim, at::Tensor& out) {
  return var_like_out(self, dim, correction, keepdim, out, true);
}

std::tuple<at::Tensor, at::Tensor> var_mean_like(const at::Tensor& self,
                                                 at::OptionalIntArrayRef dim,
                                                 const std::optional<at::Scalar>& correction,
                                                 bool keepdim, bool take_sqrt) {
  check_var_input(self);
  auto shape = reduced_shape(self, reduce_mask(self, dim), keepdim);
  at::Tensor out =
      at::empty(shape, self.options().dtype(c10::toRealValueType(self.scalar_type())));
  at::Tensor mean = at::empty(shape, self.options());
  run_var(self, dim, correction, keepdim, take_sqrt, out, mean);
  return {out, mean};
}

std::tuple<at::Tensor, at::Tensor> var_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                            const std::optional<at::Scalar>& correction,
                                            bool keepdim) {
  return var_mean_like(self, dim, correction, keepdim, false);
}

std::tuple<at::Tensor, at::Tensor> std_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                            const std::optional<at::Scalar>& correction,
                                            bool keepdim) {
  return var_mean_like(self, dim, correction, keepdim, true);
}

// ---- vector norms ----

// out = the p-norm of self over dim, computed in out's (real) dtype after casting self to it.
void run_norm(const char* name, const at::Tensor& self, double p, at::OptionalIntArrayRef dim,
              bool keepdim, const at::Tensor& out) {
  if (!core_computes(self.scalar_type()) || !core_computes(out.scalar_type())) {
    on_host(name, out, [&] {
      return at::linalg_vector_norm(self.cpu(), p, dim, keepdim, out.scalar_type());
    });
    return;
  }
  launch_reduce(TPU_OP_NORM, self, {out}, reduce_mask(self, dim), out.scalar_type(),
                float_scalar(p));
}

at::Tensor vector_norm(const at::Tensor& self, const at::Scalar& ord, at::OptionalIntArrayRef dim,
                       bool keepdim, std::optional<at::ScalarType> dtype) {
  Functional<at::meta::structured_linalg_vector_norm> op;
  op.meta(self, ord, dim, keepdim, dtype);
  run_norm("aten::linalg_vector_norm", self, ord.toDouble(), dim, keepdim, op.outputs_[0]);
  return op.outputs_[0];
}

at::Tensor& vector_norm_out(const at::Tensor& self, const at::Scalar& ord,
                            at::OptionalIntArrayRef dim, bool keepdim,
                            std::optional<at::ScalarType> dtype, at::Tensor& out) {
  Out<at::meta::structured_linalg_vector_norm> op(out);
  op.meta(self, ord, dim, keepdim, dtype);
  run_norm("aten::linalg_vector_norm.out", self, ord.toDouble(), dim, keepdim, out);
  return out;
}

at::OptionalScalarRef scalar_ref(const std::optional<at::Scalar>& p) {
  return p.has_value() ? at::OptionalScalarRef(&p.value()) : at::OptionalScalarRef();
}

double p_value(const std::optional<at::Scalar>& p) {
  return p.has_value() ? p->toDouble() : 2.0;
}

at::Tensor norm_dim(const at::Tensor& self, const std::optional<at::Scalar>& p,
                    at::IntArrayRef dim, bool keepdim) {
  Functional<at::meta::structured_norm_ScalarOpt_dim> op;
  op.meta(self, scalar_ref(p), dim, keepdim);
  run_norm("aten::norm.ScalarOpt_dim", self, p_value(p), dim, keepdim, op.outputs_[0]);
  return op.outputs_[0];
}

at::Tensor& norm_dim_out(const at::Tensor& self, const std::optional<at::Scalar>& p,
                         at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  Out<at::meta::structured_norm_ScalarOpt_dim> op(out);
  op.meta(self, scalar_ref(p), dim, keepdim);
  run_norm("aten::norm.out", self, p_value(p), dim, keepdim, out);
  return out;
}

at::Tensor norm_dim_dtype(const at::Tensor& self, const std::optional<at::Scalar>& p,
                          at::IntArrayRef dim, bool keepdim, at::ScalarType dtype) {
  Functional<at::meta::structured_norm_ScalarOpt_dim_dtype> op;
  op.meta(self, scalar_ref(p), dim, keepdim, dtype);
  run_norm("aten::norm.ScalarOpt_dim_dtype", self, p_value(p), dim, keepdim, op.outputs_[0]);
  return op.outputs_[0];
}

at::Tensor& norm_dim_dtype_out(const at::Tensor& self, const std::optional<at::Scalar>& p,
                               at::IntArrayRef dim, bool keepdim, at::ScalarType dtype,
                               at::Tensor& out) {
  Out<at::meta::structured_norm_ScalarOpt_dim_dtype> op(out);
  op.meta(self, scalar_ref(p), dim, keepdim, dtype);
  run_norm("aten::norm.dtype_out", self, p_value(p), dim, keepdim, out);
  return out;
}

// ---- logsumexp ----

// As PyTorch's kernel: integer inputs compute in the default float dtype; the result must be
// floating; an empty dim list with keepdim=False fails as it does there (the maxima keep their
// reduced dimensions and do not broadcast into a 0-d result).
at::Tensor& logsumexp_out(const at::Tensor& self, at::IntArrayRef dims, bool keepdim,
                          at::Tensor& out) {
  check_out_device(self, out);
  TORCH_CHECK(at::isFloatingType(out.scalar_type()) || at::isComplexType(out.scalar_type()),
              "logsumexp(): Expected floating point type for result tensor, but got: ",
              out.scalar_type());
  DimMask mask = reduce_mask(self, dims);
  TORCH_CHECK(!dims.empty() || keepdim || self.dim() == 0 || self.numel() == 0,
              "output with shape [] doesn't match the broadcast shape ",
              std::vector<int64_t>(self.dim(), 1));
  at::native::resize_output(out, reduced_shape(self, mask, keepdim));
  at::ScalarType compute = at::isIntegralType(self.scalar_type(), /*includeBool=*/true)
                               ? c10::get_default_dtype_as_scalartype()
                               : self.scalar_type();
  if (self.is_complex() || out.is_complex() || !core_computes(self.scalar_type())) {
    // PyTorch's composite (amax, exp, sum into out, log) for every device: a complex input
    // with a real out= is summed into that out as it is there.
    on_host("aten::logsumexp.out", out, [&] {
      at::Tensor host_out = at::empty({0}, out.options().device(at::kCPU));
      return at::logsumexp_out(host_out, self.cpu(), dims, keepdim);
    });
    return out;
  }
  launch_reduce(TPU_OP_LOGSUMEXP, self, {out}, mask, compute);
  return out;
}

at::Tensor logsumexp(const at::Tensor& self, at::IntArrayRef dims, bool keepdim) {
  at::ScalarType type = at::isIntegralType(self.scalar_type(), /*includeBool=*/true)
                            ? c10::get_default_dtype_as_scalartype()
                            : self.scalar_type();
  at::Tensor out = at::empty({0}, self.options().dtype(type));
  return logsumexp_out(self, dims, keepdim, out);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("var.correction", TORCH_FN(var));
  m.impl("var.correction_out", TORCH_FN(var_out));
  m.impl("std.correction", TORCH_FN(std_));
  m.impl("std.correction_out", TORCH_FN(std_out));
  m.impl("var_mean.correction", TORCH_FN(var_mean));
  m.impl("std_mean.correction", TORCH_FN(std_mean));
  m.impl("linalg_vector_norm", TORCH_FN(vector_norm));
  m.impl("linalg_vector_norm.out", TORCH_FN(vector_norm_out));
  m.impl("norm.ScalarOpt_dim", TORCH_FN(norm_dim));
  m.impl("norm.out", TORCH_FN(norm_dim_out));
  m.impl("norm.ScalarOpt_dim_dtype", TORCH_FN(norm_dim_dtype));
  m.impl("norm.dtype_out", TORCH_FN(norm_dim_dtype_out));
  m.impl("logsumexp", TORCH_FN(logsumexp));
  m.impl("logsumexp.out", TORCH_FN(logsumexp_out));
}

} // namespace torch_tpu
