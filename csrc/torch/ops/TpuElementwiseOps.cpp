// The structured elementwise ops: one line per ATen op, naming its meta, the run function that
// picks the core op and its parameters, and the functional, in-place and out= schemas.
#include <ATen/native/Gelu.h>
#include <ATen/ops/acos_meta.h>
#include <ATen/ops/add_meta.h>
#include <ATen/ops/addcdiv_meta.h>
#include <ATen/ops/addcmul_meta.h>
#include <ATen/ops/asin_meta.h>
#include <ATen/ops/atan_meta.h>
#include <ATen/ops/atan2_meta.h>
#include <ATen/ops/bitwise_and_meta.h>
#include <ATen/ops/bitwise_not_meta.h>
#include <ATen/ops/bitwise_or_meta.h>
#include <ATen/ops/bitwise_xor_meta.h>
#include <ATen/ops/ceil_meta.h>
#include <ATen/ops/copysign_meta.h>
#include <ATen/ops/cos_meta.h>
#include <ATen/ops/cosh_meta.h>
#include <ATen/ops/div_meta.h>
#include <ATen/ops/elu_meta.h>
#include <ATen/ops/elu_backward_meta.h>
#include <ATen/ops/eq_meta.h>
#include <ATen/ops/erf_meta.h>
#include <ATen/ops/erfc_meta.h>
#include <ATen/ops/erfinv_meta.h>
#include <ATen/ops/exp_meta.h>
#include <ATen/ops/exp2_meta.h>
#include <ATen/ops/expm1_meta.h>
#include <ATen/ops/floor_meta.h>
#include <ATen/ops/fmod_meta.h>
#include <ATen/ops/frac_meta.h>
#include <ATen/ops/ge_meta.h>
#include <ATen/ops/gelu_meta.h>
#include <ATen/ops/gelu_backward_meta.h>
#include <ATen/ops/gt_meta.h>
#include <ATen/ops/hardsigmoid_meta.h>
#include <ATen/ops/hardsigmoid_backward_meta.h>
#include <ATen/ops/isneginf_meta.h>
#include <ATen/ops/isposinf_meta.h>
#include <ATen/ops/le_meta.h>
#include <ATen/ops/leaky_relu_meta.h>
#include <ATen/ops/leaky_relu_backward_meta.h>
#include <ATen/ops/lerp_meta.h>
#include <ATen/ops/log_meta.h>
#include <ATen/ops/logit_backward_meta.h>
#include <ATen/ops/log10_meta.h>
#include <ATen/ops/log1p_meta.h>
#include <ATen/ops/log2_meta.h>
#include <ATen/ops/lt_meta.h>
#include <ATen/ops/maximum_meta.h>
#include <ATen/ops/minimum_meta.h>
#include <ATen/ops/mish_meta.h>
#include <ATen/ops/mul_meta.h>
#include <ATen/ops/ne_meta.h>
#include <ATen/ops/neg_meta.h>
#include <ATen/ops/pow_meta.h>
#include <ATen/ops/reciprocal_meta.h>
#include <ATen/ops/remainder_meta.h>
#include <ATen/ops/round_meta.h>
#include <ATen/ops/rsqrt_meta.h>
#include <ATen/ops/sigmoid_meta.h>
#include <ATen/ops/sigmoid_backward_meta.h>
#include <ATen/ops/sign_meta.h>
#include <ATen/ops/silu_meta.h>
#include <ATen/ops/silu_backward_meta.h>
#include <ATen/ops/sin_meta.h>
#include <ATen/ops/sinh_meta.h>
#include <ATen/ops/softplus_meta.h>
#include <ATen/ops/softplus_backward_meta.h>
#include <ATen/ops/sqrt_meta.h>
#include <ATen/ops/sub_meta.h>
#include <ATen/ops/tan_meta.h>
#include <ATen/ops/tanh_meta.h>
#include <ATen/ops/tanh_backward_meta.h>
#include <ATen/ops/threshold_meta.h>
#include <ATen/ops/threshold_backward_meta.h>
#include <ATen/ops/trunc_meta.h>
#include <torch/library.h>

#include "ops/TpuElementwise.h"

namespace torch_tpu::ew {
namespace {

using namespace at::meta;
using at::Scalar;
using at::Tensor;
using Iter = at::TensorIteratorBase;

void add(const Iter& it, const Tensor&, const Tensor&, const Scalar& alpha) {
  run(TPU_OP_ADD, it, {{alpha}});
}
void sub(const Iter& it, const Tensor&, const Tensor&, const Scalar& alpha) {
  run(TPU_OP_ADD, it, {{-alpha}}); // PyTorch's sub is add with -alpha
}
void div_mode(const Iter& it, const Tensor&, const Tensor&,
              std::optional<c10::string_view> mode) {
  tpu_op_id op = !mode ? TPU_OP_DIV : *mode == "trunc" ? TPU_OP_DIV_TRUNC : TPU_OP_DIV_FLOOR;
  run(op, it);
}
// PyTorch's parser of `approximate` refuses anything but "none" and "tanh", as CPU and CUDA do.
bool gelu_tanh(c10::string_view approximate) {
  return at::native::get_gelutype_enum(approximate) == at::native::GeluType::Tanh;
}
void gelu(const Iter& it, const Tensor&, c10::string_view approximate) {
  run(gelu_tanh(approximate) ? TPU_OP_GELU_TANH : TPU_OP_GELU, it);
}
void gelu_backward(const Iter& it, const Tensor&, const Tensor&, c10::string_view approximate) {
  run(gelu_tanh(approximate) ? TPU_OP_GELU_TANH_BACKWARD : TPU_OP_GELU_BACKWARD, it);
}
void softplus(const Iter& it, const Tensor&, const Scalar& beta, const Scalar& threshold) {
  run(TPU_OP_SOFTPLUS, it, {opmath(beta), opmath(threshold)});
}
void softplus_backward(const Iter& it, const Tensor&, const Tensor&, const Scalar& beta,
                       const Scalar& threshold) {
  run(TPU_OP_SOFTPLUS_BACKWARD, it, {opmath(beta), opmath(threshold)});
}
void elu(const Iter& it, const Tensor&, const Scalar& alpha, const Scalar& scale,
         const Scalar& input_scale) {
  run(TPU_OP_ELU, it, {opmath(alpha), opmath(scale), opmath(input_scale)});
}
void elu_backward(const Iter& it, const Tensor&, const Scalar& alpha, const Scalar& scale,
                  const Scalar& input_scale, bool is_result, const Tensor&) {
  Scalar result(is_result);
  run(TPU_OP_ELU_BACKWARD, it, {opmath(alpha), opmath(scale), opmath(input_scale), opmath(result)});
}
void leaky_relu(const Iter& it, const Tensor&, const Scalar& slope) {
  run(TPU_OP_LEAKY_RELU, it, {opmath(slope)});
}
void leaky_relu_backward(const Iter& it, const Tensor&, const Tensor&, const Scalar& slope, bool) {
  run(TPU_OP_LEAKY_RELU_BACKWARD, it, {opmath(slope)});
}
void threshold(const Iter& it, const Tensor&, const Scalar& threshold, const Scalar& value) {
  run(TPU_OP_THRESHOLD, it, {{threshold}, {value}});
}
void threshold_backward(const Iter& it, const Tensor&, const Tensor&, const Scalar& threshold) {
  static const Scalar zero(0);
  run(TPU_OP_THRESHOLD, it, {{threshold}, {zero}}); // inputs (self, grad): self <= t ? 0 : grad
}
void logit_backward(const Iter& it, const Tensor&, const Tensor&, std::optional<double> eps) {
  const Scalar e(eps.value_or(-1.0));
  run(TPU_OP_LOGIT_BACKWARD, it, {opmath(e)});
}
void lerp_scalar(const Iter& it, const Tensor&, const Tensor&, const Scalar& weight) {
  run(TPU_OP_LERP_SCALAR, it, {opmath(weight)});
}
void addcmul(const Iter& it, const Tensor&, const Tensor&, const Tensor&, const Scalar& value) {
  run(TPU_OP_ADDCMUL, it, {opmath(value)});
}
void addcdiv(const Iter& it, const Tensor&, const Tensor&, const Tensor&, const Scalar& value) {
  run(TPU_OP_ADDCDIV, it, {opmath(value)});
}

} // namespace

// Arithmetic, comparisons and bitwise ops.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  TPU_EW_OP(m, structured_add_Tensor, add, "add.Tensor", "add_.Tensor", "add.out");
  TPU_EW_OP(m, structured_sub_Tensor, sub, "sub.Tensor", "sub_.Tensor", "sub.out");
  TPU_EW_OP(m, structured_mul_Tensor, binary<TPU_OP_MUL>, "mul.Tensor", "mul_.Tensor", "mul.out");
  TPU_EW_OP(m, structured_div_Tensor, binary<TPU_OP_DIV>, "div.Tensor", "div_.Tensor", "div.out");
  TPU_EW_OP(m, structured_div_Tensor_mode, div_mode, "div.Tensor_mode", "div_.Tensor_mode",
            "div.out_mode");
// Binary ops: (core op, meta suffix, the schema's overload name after `name`, in-place, out=).
#define BINARY(op, meta, name, inplace, out)                                                       \
  TPU_EW_OP(m, structured_##meta, binary<TPU_OP_##op>, name, inplace, out)
  // clang-format off
  BINARY(ATAN2, atan2, "atan2", "atan2_", "atan2.out");
  BINARY(COPYSIGN, copysign_Tensor, "copysign.Tensor", "copysign_.Tensor", "copysign.out");
  BINARY(POW, pow_Tensor_Tensor, "pow.Tensor_Tensor", "pow_.Tensor", "pow.Tensor_Tensor_out");
  BINARY(MAXIMUM, maximum, "maximum", "", "maximum.out");
  BINARY(MINIMUM, minimum, "minimum", "", "minimum.out");
  BINARY(FMOD, fmod_Tensor, "fmod.Tensor", "fmod_.Tensor", "fmod.Tensor_out");
  BINARY(REMAINDER, remainder_Tensor, "remainder.Tensor", "remainder_.Tensor",
         "remainder.Tensor_out");
  BINARY(BITWISE_AND, bitwise_and_Tensor, "bitwise_and.Tensor", "bitwise_and_.Tensor",
         "bitwise_and.Tensor_out");
  BINARY(BITWISE_OR, bitwise_or_Tensor, "bitwise_or.Tensor", "bitwise_or_.Tensor",
         "bitwise_or.Tensor_out");
  BINARY(BITWISE_XOR, bitwise_xor_Tensor, "bitwise_xor.Tensor", "bitwise_xor_.Tensor",
         "bitwise_xor.Tensor_out");
  BINARY(SIGMOID_BACKWARD, sigmoid_backward, "sigmoid_backward", "",
         "sigmoid_backward.grad_input");
  BINARY(TANH_BACKWARD, tanh_backward, "tanh_backward", "", "tanh_backward.grad_input");
  BINARY(SILU_BACKWARD, silu_backward, "silu_backward", "", "silu_backward.grad_input");
  BINARY(HARDSIGMOID_BACKWARD, hardsigmoid_backward, "hardsigmoid_backward", "",
         "hardsigmoid_backward.grad_input");
#define COMPARISON(op, name)                                                                       \
  BINARY(op, name##_Tensor, #name ".Tensor", #name "_.Tensor", #name ".Tensor_out");               \
  TPU_EW_OP(m, structured_##name##_Scalar, with_scalar<TPU_OP_##op>, #name ".Scalar",             \
            #name "_.Scalar", #name ".Scalar_out")
  COMPARISON(EQ, eq);
  COMPARISON(NE, ne);
  COMPARISON(LT, lt);
  COMPARISON(LE, le);
  COMPARISON(GT, gt);
  COMPARISON(GE, ge);
  // clang-format on
#undef COMPARISON
#undef BINARY
  TPU_EW_OP(m, structured_lerp_Tensor, ternary<TPU_OP_LERP>,
            "lerp.Tensor", "lerp_.Tensor", "lerp.Tensor_out");
  TPU_EW_OP(m, structured_lerp_Scalar, lerp_scalar, "lerp.Scalar", "lerp_.Scalar",
            "lerp.Scalar_out");
  TPU_EW_OP(m, structured_addcmul, addcmul, "addcmul", "addcmul_", "addcmul.out");
  TPU_EW_OP(m, structured_addcdiv, addcdiv, "addcdiv", "addcdiv_", "addcdiv.out");
}

// Unary math, rounding and predicates.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
#define UNARY(op, name, inplace, out)                                                              \
  TPU_EW_OP(m, structured_##name, unary<TPU_OP_##op>, #name, inplace, out)
#define UNARY3(op, name) UNARY(op, name, #name "_", #name ".out")
  // clang-format off
  UNARY3(NEG, neg); UNARY3(SIGN, sign); UNARY3(SQRT, sqrt); UNARY3(RSQRT, rsqrt);
  UNARY3(RECIPROCAL, reciprocal); UNARY3(EXP, exp); UNARY3(EXP2, exp2); UNARY3(EXPM1, expm1);
  UNARY3(LOG, log); UNARY3(LOG2, log2); UNARY3(LOG10, log10); UNARY3(LOG1P, log1p);
  UNARY3(SIN, sin); UNARY3(COS, cos); UNARY3(TAN, tan); UNARY3(TANH, tanh); UNARY3(SINH, sinh);
  UNARY3(COSH, cosh); UNARY3(ASIN, asin); UNARY3(ACOS, acos); UNARY3(ATAN, atan);
  UNARY3(ERF, erf); UNARY3(ERFC, erfc); UNARY3(SIGMOID, sigmoid); UNARY3(FLOOR, floor);
  UNARY3(CEIL, ceil); UNARY3(ROUND, round); UNARY3(TRUNC, trunc); UNARY3(FRAC, frac);
  UNARY3(BITWISE_NOT, bitwise_not); UNARY3(SILU, silu); UNARY3(MISH, mish);
  UNARY3(HARDSIGMOID, hardsigmoid); UNARY3(ERFINV, erfinv);
  UNARY(ISNEGINF, isneginf, "", "isneginf.out");
  UNARY(ISPOSINF, isposinf, "", "isposinf.out");
  // clang-format on
#undef UNARY3
#undef UNARY
}

// Activations with parameters and their backward ops.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  TPU_EW_OP(m, structured_gelu, gelu, "gelu", "gelu_", "gelu.out");
  TPU_EW_OP(m, structured_gelu_backward, gelu_backward, "gelu_backward", "",
            "gelu_backward.grad_input");
  TPU_EW_OP(m, structured_softplus, softplus, "softplus", "", "softplus.out");
  TPU_EW_OP(m, structured_softplus_backward, softplus_backward, "softplus_backward", "",
            "softplus_backward.grad_input");
  TPU_EW_OP(m, structured_elu, elu, "elu", "elu_", "elu.out");
  TPU_EW_OP(m, structured_elu_backward, elu_backward, "elu_backward", "",
            "elu_backward.grad_input");
  TPU_EW_OP(m, structured_leaky_relu, leaky_relu, "leaky_relu", "leaky_relu_", "leaky_relu.out");
  TPU_EW_OP(m, structured_leaky_relu_backward, leaky_relu_backward, "leaky_relu_backward", "",
            "leaky_relu_backward.grad_input");
  TPU_EW_OP(m, structured_threshold, threshold, "threshold", "threshold_", "threshold.out");
  TPU_EW_OP(m, structured_logit_backward, logit_backward, "logit_backward", "",
            "logit_backward.grad_input");
  TPU_EW_OP(m, structured_threshold_backward, threshold_backward, "threshold_backward", "",
            "threshold_backward.grad_input");
}

} // namespace torch_tpu::ew

namespace torch_tpu::ew {

// silu_backward and mish_backward also have a CompositeImplicitAutograd kernel, which the tpu
// kernel hides from autograd. As on CUDA (whose kernels hide it the same way), autograd passes
// straight through to the kernel: the derivative formulas of silu and mish call a differentiable
// form instead when they build a graph (create_graph=True).
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("silu_backward", torch::CppFunction::makeFallthrough());
  m.impl("mish_backward", torch::CppFunction::makeFallthrough());
}

} // namespace torch_tpu::ew
