// trace, nansum, renorm, linalg_cross, linspace and logspace as compositions of native ops, each
// following PyTorch CPU's formula (RangeFactoriesKernel.cpp for the two ranges: the first half of
// the points counted up from start, the rest down from end), with its checks and messages.
#include <ATen/MemoryOverlap.h>
#include <ATen/AccumulateType.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/div.h>
#include <ATen/ops/linalg_cross_meta.h>
#include <ATen/ops/linalg_vector_norm.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/renorm_meta.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/where.h>
#include <c10/core/ScalarType.h>
#include <ATen/TensorOperators.h>
#include <torch/library.h>

#include <cmath>
#include <numeric>

#include "ops/TpuOps.h"
#include "ops/TpuStructured.h"

namespace torch_tpu {
namespace {

// ---- trace, nansum -----------------------------------------------------------------------

at::Tensor trace(const at::Tensor& self) {
  TORCH_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != at::kBool,
                              "\"trace\" not implemented for 'Bool'");
  const at::ScalarType type =
      at::isIntegralType(self.scalar_type(), false) ? at::kLong : self.scalar_type();
  return at::sum(self.diagonal(), at::OptionalIntArrayRef{}, false, type);
}

// NaN counts as zero; integers have none, so their nansum is their sum.
at::Tensor nan_as_zero(const at::Tensor& self) {
  TORCH_CHECK(!self.is_complex(), "nansum does not support complex inputs");
  return at::isFloatingType(self.scalar_type()) ? self.masked_fill(self.isnan(), 0) : self;
}

at::Tensor nansum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                  std::optional<at::ScalarType> dtype) {
  return at::sum(nan_as_zero(self), dim, keepdim, dtype);
}

at::Tensor& nansum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                       std::optional<at::ScalarType> dtype, at::Tensor& out) {
  return at::sum_out(out, nan_as_zero(self), dim, keepdim, dtype);
}

// ---- renorm ------------------------------------------------------------------------------

// CPU's renorm_out: each slice along dim scaled by maxnorm / (norm + 1e-7) where its p-norm
// exceeds maxnorm, the norm in float for float16 and bfloat16 and the factor rounded to the dtype.
void run_renorm(const at::Tensor& self, const at::Scalar& p, int64_t dim,
                const at::Scalar& maxnorm, const at::Tensor& out) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  std::vector<int64_t> reduce_dims(static_cast<size_t>(self.dim()));
  std::iota(reduce_dims.begin(), reduce_dims.end(), 0);
  reduce_dims.erase(reduce_dims.begin() + dim);
  const at::ScalarType type = self.scalar_type();
  const at::ScalarType acc = at::toAccumulateType(type, /*is_cuda=*/true);
  at::Tensor norm = acc != type
                        ? at::linalg_vector_norm(self, p.toDouble(), reduce_dims, true, acc)
                        : at::linalg_vector_norm(self, p.toDouble(), reduce_dims, true);
  at::Tensor limit = at::scalar_tensor(maxnorm, norm.options());
  at::Tensor factor = at::where(norm > limit, at::div(limit, norm + 1e-7), 1);
  if (acc != c10::toRealValueType(type)) {
    factor = factor.to(type);
  }
  at::mul_out(const_cast<at::Tensor&>(out), self, factor);
}

at::Tensor renorm(const at::Tensor& self, const at::Scalar& p, int64_t dim,
                  const at::Scalar& maxnorm) {
  Functional<at::meta::structured_renorm> op;
  op.meta(self, p, dim, maxnorm);
  run_renorm(self, p, dim, maxnorm, op.outputs_[0]);
  return std::move(op.outputs_[0]);
}

at::Tensor& renorm_(at::Tensor& self, const at::Scalar& p, int64_t dim,
                    const at::Scalar& maxnorm) {
  Inplace<at::meta::structured_renorm> op(self);
  op.meta(self, p, dim, maxnorm);
  run_renorm(self, p, dim, maxnorm, self);
  return self;
}

at::Tensor& renorm_out(const at::Tensor& self, const at::Scalar& p, int64_t dim,
                       const at::Scalar& maxnorm, at::Tensor& out) {
  Out<at::meta::structured_renorm> op(out);
  op.meta(self, p, dim, maxnorm);
  run_renorm(self, p, dim, maxnorm, out);
  return out;
}

// ---- linalg_cross ------------------------------------------------------------------------

// CPU's cross kernel per element: r_i = a_j * b_k - a_k * b_j, each product and the difference
// rounded to the dtype.
void run_cross(const at::Tensor& input, const at::Tensor& other, int64_t dim,
               const at::Tensor& out) {
  TORCH_CHECK_NOT_IMPLEMENTED(out.scalar_type() != at::kBool,
                              "\"cross\" not implemented for 'Bool'");
  TORCH_CHECK(other.scalar_type() == input.scalar_type(), "expected scalar type ",
              input.scalar_type(), " but found ", other.scalar_type());
  dim = at::maybe_wrap_dim(dim, input.dim());
  const at::Tensor a = input.expand(out.sizes()), b = other.expand(out.sizes());
  auto term = [&](int64_t j, int64_t k) {
    return a.select(dim, j) * b.select(dim, k) - a.select(dim, k) * b.select(dim, j);
  };
  copy_into(at::stack({term(1, 2), term(2, 0), term(0, 1)}, dim), out, false);
}

at::Tensor linalg_cross(const at::Tensor& input, const at::Tensor& other, int64_t dim) {
  Functional<at::meta::structured_linalg_cross> op;
  op.meta(input, other, dim);
  run_cross(input, other, dim, op.outputs_[0]);
  return std::move(op.outputs_[0]);
}

at::Tensor& linalg_cross_out(const at::Tensor& input, const at::Tensor& other, int64_t dim,
                             at::Tensor& out) {
  at::assert_no_overlap(out, input);  // before out is resized, as on CPU
  at::assert_no_overlap(out, other);
  Out<at::meta::structured_linalg_cross> op(out);
  op.meta(input, other, dim);
  run_cross(input, other, dim, out);
  return out;
}

// ---- linspace, logspace ------------------------------------------------------------------

// The points i < steps / 2 as start + step * i, the others as end - step * (steps - 1 - i), in
// the dtype `work` (start, end and step given in it).
at::Tensor range_points(double start, double end, double step, int64_t steps,
                        const at::TensorOptions& work) {
  at::Tensor i = at::arange(steps, work);
  at::Tensor up = i * step + start;
  at::Tensor down = (i - static_cast<double>(steps - 1)) * step + end;
  return at::where(i < static_cast<double>(steps / 2), up, down);
}

// Resizes `out` to `steps`, refusing a negative count as CPU does; false when there are fewer
// than two points (one point is `first`).
bool begin_range(const at::Scalar& first, int64_t steps, at::Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  at::native::resize_output(out, {steps});
  if (steps == 1) {
    out.fill_(first);
  }
  return steps > 1;
}

at::Tensor& linspace_out(const at::Scalar& start, const at::Scalar& end, int64_t steps,
                         at::Tensor& out) {
  TORCH_CHECK_NOT_IMPLEMENTED(!out.is_complex() && out.scalar_type() != at::kBool,
                              "\"linspace_cpu\" not implemented for '", out.scalar_type(), "'");
  if (!begin_range(start, steps, out)) {
    return out;
  }
  double lo = 0, hi = 0, step = 0;
  at::ScalarType work = at::kDouble;
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "linspace_cpu", [&] {
    // CPU's step: in double for integers (their range may not fit), else in the dtype's op
    // math (CPU rounds each bfloat16 or half operation, by vector width; the kernel rounds once).
    using step_t = std::conditional_t<std::is_integral_v<scalar_t>, double,
                                      at::opmath_type<scalar_t>>;
    const scalar_t s = start.to<scalar_t>(), e = end.to<scalar_t>();
    const step_t st = (static_cast<step_t>(e) - static_cast<step_t>(s)) / (steps - 1);
    lo = static_cast<double>(s);
    hi = static_cast<double>(e);
    step = static_cast<double>(st);
    if constexpr (!std::is_integral_v<scalar_t>) {
      work = at::toOpMathType(out.scalar_type());
    }
  });
  copy_into(range_points(lo, hi, step, steps, out.options().dtype(work)), out, false);
  return out;
}

// CPU's logspace: base to the power of the linspace exponents, all in double (base in float for
// integer dtypes), rounded to the dtype once.
at::Tensor& logspace_out(const at::Scalar& start, const at::Scalar& end, int64_t steps,
                         double base, at::Tensor& out) {
  TORCH_CHECK_NOT_IMPLEMENTED(!out.is_complex() && out.scalar_type() != at::kBool,
                              "\"logspace_cpu\" not implemented for '", out.scalar_type(), "'");
  if (!begin_range(std::pow(base, start.toDouble()), steps, out)) {
    return out;
  }
  double lo = 0, hi = 0, b = base;
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "logspace_cpu", [&] {
    const scalar_t s = start.to<scalar_t>(), e = end.to<scalar_t>();
    lo = static_cast<double>(s);
    hi = static_cast<double>(e);
    if constexpr (std::is_integral_v<scalar_t>) {
      b = static_cast<double>(static_cast<float>(base));
    }
  });
  const double step = (hi - lo) / static_cast<double>(steps - 1);
  at::Tensor exponents = range_points(lo, hi, step, steps, out.options().dtype(at::kDouble));
  copy_into(at::pow(b, exponents), out, false);
  return out;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("trace", TORCH_FN(trace));
  m.impl("nansum", TORCH_FN(nansum));
  m.impl("nansum.out", TORCH_FN(nansum_out));
  m.impl("renorm", TORCH_FN(renorm));
  m.impl("renorm_", TORCH_FN(renorm_));
  m.impl("renorm.out", TORCH_FN(renorm_out));
  m.impl("linalg_cross", TORCH_FN(linalg_cross));
  m.impl("linalg_cross.out", TORCH_FN(linalg_cross_out));
  m.impl("linspace.out", TORCH_FN(linspace_out));
  m.impl("logspace.out", TORCH_FN(logspace_out));
}

} // namespace torch_tpu
