// torch.frexp: x = mantissa * 2^exponent with |mantissa| in [0.5, 1), composed of native integer
// ops on the element's bits; zeros, infinities and NaN keep themselves as the mantissa and get
// exponent 0, as C's frexp gives them to PyTorch CPU. CPU's checks and messages (UnaryOps.cpp);
// the functional form and autograd come from PyTorch's composites over this out= form.
#include <ATen/TensorIterator.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/bitwise_and.h>
#include <ATen/ops/bitwise_or.h>
#include <ATen/ops/div.h>
#include <ATen/ops/where.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

namespace torch_tpu {
namespace {

using at::Tensor;

// A floating dtype's bit layout: the same-sized integer dtype, mantissa bits, and the exponent
// field's all-ones value and bias.
struct FloatBits {
  at::ScalarType int_type;
  int mantissa_bits;
  int64_t exponent_ones;
  int64_t bias;
};

FloatBits bits_of(at::ScalarType type) {
  switch (type) {
  case at::kDouble: return {at::kLong, 52, 0x7ff, 1023};
  case at::kFloat: return {at::kInt, 23, 0xff, 127};
  case at::kHalf: return {at::kShort, 10, 0x1f, 15};
  default: return {at::kShort, 7, 0xff, 127}; // bfloat16
  }
}

// A normal number's mantissa (its exponent field set to bias - 1, which puts the magnitude in
// [0.5, 1); sign and fraction stay) and exponent, from its bits.
std::pair<Tensor, Tensor> split_normal(const Tensor& bits, const FloatBits& f) {
  const int64_t field_mask = f.exponent_ones << f.mantissa_bits;
  // The exponent field, masked (never negative) and divided down: the core has no shift op.
  const Tensor field = at::div(at::bitwise_and(bits, field_mask),
                               int64_t{1} << f.mantissa_bits, "trunc");
  const Tensor unit = at::bitwise_or(at::bitwise_and(bits, ~field_mask),
                                     (f.bias - 1) << f.mantissa_bits);
  return {unit, field - (f.bias - 1)};
}

std::tuple<Tensor&, Tensor&> frexp_out(const Tensor& self, Tensor& mantissa, Tensor& exponent) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "torch.frexp() only supports floating-point dtypes");
  TORCH_CHECK(mantissa.dtype() == self.dtype(), "torch.frexp() expects mantissa to have dtype ",
              self.dtype(), " but got ", mantissa.dtype());
  TORCH_CHECK(exponent.dtype() == at::kInt,
              "torch.frexp() expects exponent to have int dtype but got ", exponent.dtype());
  at::TensorIteratorConfig() // checks, sizes and lays out both outputs; native ops compute
      .add_output(mantissa)
      .add_output(exponent)
      .add_const_input(self)
      .check_all_same_dtype(false)
      .build();
  const FloatBits f = bits_of(self.scalar_type());
  const at::ScalarType type = self.scalar_type();
  // Integer ops only: a backend that flushes subnormal floats to zero (XLA's CPU plugin does)
  // would otherwise take them for zeros.
  const Tensor bits = self.contiguous().view(f.int_type);
  const int64_t field_mask = f.exponent_ones << f.mantissa_bits;
  const Tensor field = at::bitwise_and(bits, field_mask);
  const Tensor fraction = at::bitwise_and(bits, (int64_t{1} << f.mantissa_bits) - 1);
  const Tensor subnormal = (field == 0).logical_and(fraction != 0);
  const Tensor normal = (field != 0).logical_and(field != field_mask);
  auto [unit, power] = split_normal(bits, f);
  // A subnormal is fraction * 2^(1 - bias - mantissa bits); the fraction, an integer below
  // 2^52, is a normal float64 exactly, whose mantissa is the subnormal's.
  auto [sub_unit, sub_power] =
      split_normal(fraction.to(at::kDouble).view(at::kLong), bits_of(at::kDouble));
  const Tensor sub_magnitude = sub_unit.view(at::kDouble).to(type);
  const Tensor sub_mantissa = at::where(bits < 0, -sub_magnitude, sub_magnitude);
  const Tensor sub_exponent = sub_power + (1 - f.bias - f.mantissa_bits);
  mantissa.copy_(at::where(normal, unit.view(type), at::where(subnormal, sub_mantissa, self)));
  exponent.copy_(at::where(normal, power, at::where(subnormal, sub_exponent, 0)));
  return {mantissa, exponent};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("frexp.Tensor_out", TORCH_FN(frexp_out));
}

}  // namespace torch_tpu
