// torch.complex and torch.polar: a complex tensor built from two real ones, as native copies of
// the real and imaginary parts into the output's real view (polar's parts being abs * cos(angle)
// and abs * sin(angle), native elementwise ops), with PyTorch CPU's checks and messages
// (TensorFactories.cpp). Their functional forms and autograd come from PyTorch's composites over
// these out= forms.
#include <ATen/TensorIterator.h>
#include <ATen/ops/cos.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/sin.h>
#include <ATen/ops/view_as_real.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

namespace torch_tpu {
namespace {

using at::Tensor;

bool is_part_dtype(at::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf;
}

// Checks the parts and the output as PyTorch CPU does, then sizes and lays out the output as its
// iterator would (following the parts' layout), checking devices and overlaps; no stub runs.
void prepare(const Tensor& result, const Tensor& a, const Tensor& b) {
  TORCH_CHECK(is_part_dtype(a.scalar_type()) && is_part_dtype(b.scalar_type()),
              "Expected both inputs to be Half, Float or Double tensors but got ", a.scalar_type(),
              " and ", b.scalar_type());
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "Expected object of scalar type ",
              a.scalar_type(), " but got scalar type ", b.scalar_type(), " for second argument");
  TORCH_CHECK(result.scalar_type() == c10::toComplexType(a.scalar_type()),
              "Expected object of scalar type ", c10::toComplexType(a.scalar_type()),
              " but got scalar type ", result.scalar_type(), " for argument 'out'");
  at::TensorIteratorConfig()
      .check_all_same_dtype(false)
      .add_output(result)
      .add_const_input(a)
      .add_const_input(b)
      .build();
}

// result = re + i im, re and im broadcasting to its shape.
Tensor& write_parts(const Tensor& re, const Tensor& im, Tensor& result) {
  Tensor parts = at::view_as_real(result);
  parts.select(-1, 0).copy_(re);
  parts.select(-1, 1).copy_(im);
  return result;
}

Tensor& complex_out(const Tensor& real, const Tensor& imag, Tensor& result) {
  prepare(result, real, imag);
  return write_parts(real, imag, result);
}

// PyTorch CPU's c10::polar: (abs * cos(angle), abs * sin(angle)).
Tensor& polar_out(const Tensor& abs, const Tensor& angle, Tensor& result) {
  prepare(result, abs, angle);
  return write_parts(at::mul(abs, at::cos(angle)), at::mul(abs, at::sin(angle)), result);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("complex.out", TORCH_FN(complex_out));
  m.impl("polar.out", TORCH_FN(polar_out));
}

}  // namespace torch_tpu
