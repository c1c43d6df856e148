// The elementwise ops whose ATen kernels are not plain structured ones: clamps (optional bounds,
// NaN bounds), pow with a scalar, where and masked_fill, the logical ops, and the backend ops
// ATen writes by hand (relu, hardtanh, hardswish, abs, isnan, nan_to_num, floor_divide, rsub).
// Where ATen has no meta, a structured meta with the same TensorIterator rules stands in for it.
#include <ATen/MemoryOverlap.h>
#include <ATen/ExpandUtils.h>
#include <ATen/TensorUtils.h>
#include <ATen/ScalarOps.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/clamp_max_meta.h>
#include <ATen/ops/clamp_meta.h>
#include <ATen/ops/clamp_min_meta.h>
#include <ATen/ops/div_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/eq_meta.h>
#include <ATen/ops/neg_meta.h>
#include <ATen/ops/pow_meta.h>
#include <ATen/ops/remainder_meta.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/logical_not.h>
#include <ATen/ops/nan_to_num.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/where.h>
#include <ATen/ops/round_meta.h>
#include <ATen/ops/sigmoid_backward_meta.h>
#include <ATen/ops/sigmoid_meta.h>
#include <ATen/ops/sub_meta.h>
#include <torch/library.h>

#include <cmath>
#include <limits>

#include "ops/TpuElementwise.h"

namespace torch_tpu::ew {
namespace {

using namespace at::meta;
using at::Scalar;
using at::Tensor;
using Iter = at::TensorIteratorBase;

// Metas for ATen kernels that have none: the structured meta with the same iterator rules.
struct FloorDivideMeta : structured_div_Tensor_mode {
  void meta(const Tensor& self, const Tensor& other) {
    structured_div_Tensor_mode::meta(self, other, "floor");
  }
};
struct LogicalMeta : structured_eq_Tensor {}; // comparison rules: any output dtype, bool default
struct UnaryMeta : structured_neg { // neg's iterator rules, without its refusal of bool
  void meta(const Tensor& self) { build_borrowing_unary_op(maybe_get_output(), self); }
};
struct LogitMeta : structured_sigmoid { // a unary float op: integers promote
  void meta(const Tensor& self, std::optional<double>) { structured_sigmoid::meta(self); }
};
struct GradMeta : structured_sigmoid_backward {}; // a binary op of (grad, input)
struct HardtanhBackwardMeta : structured_sigmoid_backward {
  void meta(const Tensor& grad, const Tensor& self, const Scalar&, const Scalar&) {
    structured_sigmoid_backward::meta(grad, self);
  }
};

// Runs `fn` (an ATen call on host copies) for dtypes the kernels do not compute on, counted as a
// fallback of `name`, and copies its result into `dst`.
template <typename Fn>
Tensor& on_host(const char* name, Tensor& dst, Fn fn) {
  begin_host_fallback(name);
  copy_into(fn(), dst, false);
  return dst;
}

bool is_nan(const Scalar& s) {
  return s.isFloatingPoint() && std::isnan(s.toDouble());
}

// Fills out with a NaN bound, as ATen's clamps do before looking at the input.
bool fill_if_nan(const Iter& it, const Scalar& bound) {
  if (!is_nan(bound)) {
    return false;
  }
  at::Tensor(it.output_base(0)).fill_(bound);
  return true;
}

void clamp_min(const Iter& it, const Tensor&, const Scalar& min) {
  if (!fill_if_nan(it, min)) {
    run(TPU_OP_CLAMP_MIN, it, {{min}});
  }
}
void clamp_max(const Iter& it, const Tensor&, const Scalar& max) {
  if (!fill_if_nan(it, max)) {
    run(TPU_OP_CLAMP_MAX, it, {{max}});
  }
}
void pow_scalar(const Iter& it, const Tensor& self, const Scalar& exponent) {
  at::Tensor out(it.output_base(0));
  if (exponent.equal(0.0) || exponent.equal(false)) {
    out.fill_(1);
  } else if (exponent.equal(1.0) || exponent.equal(true)) {
    out.copy_(self);
  } else {
    run(TPU_OP_POW_SCALAR, it, {{exponent}}); // rounded to the compute dtype, as CPU does
  }
}
void round_decimals(const Iter& it, const Tensor&, int64_t decimals) {
  if (decimals == 0) {
    run(TPU_OP_ROUND, it);
    return;
  }
  const Scalar ten_pow(std::pow(10.0, static_cast<double>(std::abs(decimals))));
  const Scalar negative(decimals < 0 ? 1.0 : 0.0);
  run(TPU_OP_ROUND_DECIMALS, it, {opmath(ten_pow), opmath(negative)});
}
void logit(const Iter& it, const Tensor&, std::optional<double> eps) {
  const Scalar e(eps.value_or(-1.0));
  run(TPU_OP_LOGIT, it, {opmath(e)});
}
void hardtanh_backward(const Iter& it, const Tensor&, const Tensor&, const Scalar& min,
                       const Scalar& max) {
  run(TPU_OP_HARDTANH_BACKWARD, it, {opmath(min), opmath(max)});
}

// clamp with optional scalar bounds: which kernel runs depends on the bounds given.
template <typename M>
void run_clamp(M& it, const Tensor& self, const std::optional<Scalar>& min,
               const std::optional<Scalar>& max) {
  it.meta(self, min ? at::OptionalScalarRef(&*min) : at::OptionalScalarRef(),
          max ? at::OptionalScalarRef(&*max) : at::OptionalScalarRef());
  if (!is_native(it)) {
    TORCH_CHECK_NOT_IMPLEMENTED(false, "clamp is not implemented for ", self.scalar_type(),
                                " on tpu");
  }
  if (min && max) {
    if (!fill_if_nan(it, *min) && !fill_if_nan(it, *max)) {
      run(TPU_OP_CLAMP, it, {{*min}, {*max}});
    }
  } else if (min) {
    clamp_min(it, self, *min);
  } else {
    clamp_max(it, self, *max);
  }
}
Tensor clamp_scalar(const Tensor& self, const std::optional<Scalar>& min,
             const std::optional<Scalar>& max) {
  Functional<structured_clamp> it;
  run_clamp(it, self, min, max);
  return std::move(it.outputs_[0]);
}
Tensor& clamp_scalar_(Tensor& self, const std::optional<Scalar>& min,
                      const std::optional<Scalar>& max) {
  Inplace<structured_clamp> it(self);
  run_clamp(it, self, min, max);
  return self;
}
Tensor& clamp_scalar_out(const Tensor& self, const std::optional<Scalar>& min,
                  const std::optional<Scalar>& max, Tensor& out) {
  Out<structured_clamp> it(out);
  run_clamp(it, self, min, max);
  return out;
}

// clamp with optional tensor bounds: maximum and minimum when only one is given.
template <typename M>
void run_clamp_tensor(M& it, const Tensor& self, const std::optional<Tensor>& min,
                      const std::optional<Tensor>& max) {
  auto ref = [](const std::optional<Tensor>& t) {
    return t && t->defined() ? at::OptionalTensorRef(*t) : at::OptionalTensorRef();
  };
  it.meta(self, ref(min), ref(max));
  TORCH_CHECK_NOT_IMPLEMENTED(is_native(it), "clamp is not implemented for ",
                              self.scalar_type(), " on tpu");
  const bool has_min = min && min->defined(), has_max = max && max->defined();
  run(has_min && has_max ? TPU_OP_CLAMP_TENSOR : has_min ? TPU_OP_MAXIMUM : TPU_OP_MINIMUM, it);
}
Tensor clamp_tensor(const Tensor& self, const std::optional<Tensor>& min,
                    const std::optional<Tensor>& max) {
  Functional<structured_clamp_Tensor> it;
  run_clamp_tensor(it, self, min, max);
  return std::move(it.outputs_[0]);
}
Tensor& clamp_tensor_(Tensor& self, const std::optional<Tensor>& min,
                      const std::optional<Tensor>& max) {
  Inplace<structured_clamp_Tensor> it(self);
  run_clamp_tensor(it, self, min, max);
  return self;
}
Tensor& clamp_tensor_out(const Tensor& self, const std::optional<Tensor>& min,
                         const std::optional<Tensor>& max, Tensor& out) {
  Out<structured_clamp_Tensor> it(out);
  run_clamp_tensor(it, self, min, max);
  return out;
}

// relu and hardtanh are clamps, as in ATen.
Tensor relu(const Tensor& self) {
  TORCH_CHECK(self.scalar_type() != at::kBool, "Boolean inputs not supported for relu");
  return clamp_scalar(self, Scalar(0), std::nullopt);
}
Tensor& relu_(Tensor& self) {
  TORCH_CHECK(self.scalar_type() != at::kBool, "Boolean inputs not supported for relu");
  return clamp_scalar_(self, Scalar(0), std::nullopt);
}
// hardtanh's bounds do not promote an integer input: they are truncated to integers first.
std::pair<Scalar, Scalar> hardtanh_bounds(const Tensor& self, const Scalar& min,
                                          const Scalar& max) {
  TORCH_CHECK(self.scalar_type() != at::kBool, "Bool inputs not supported for hardtanh");
  if (!at::isIntegralType(self.scalar_type(), /*includeBool=*/false)) {
    return {min, max};
  }
  const int64_t lo = min.toLong(), hi = max.toLong();
  TORCH_CHECK(self.scalar_type() != at::kByte || (lo >= 0 && hi >= 0),
              "cannot do hardtanh on an unsigned type with negative limits");
  return {Scalar(lo), Scalar(hi)};
}
Tensor& hardtanh_out(const Tensor& self, const Scalar& min, const Scalar& max, Tensor& out) {
  auto [lo, hi] = hardtanh_bounds(self, min, max);
  return clamp_scalar_out(self, lo, hi, out);
}
Tensor hardtanh(const Tensor& self, const Scalar& min, const Scalar& max) {
  auto [lo, hi] = hardtanh_bounds(self, min, max);
  return clamp_scalar(self, lo, hi);
}
Tensor& hardtanh_(Tensor& self, const Scalar& min, const Scalar& max) {
  auto [lo, hi] = hardtanh_bounds(self, min, max);
  return clamp_scalar_(self, lo, hi);
}

// pow(Scalar, Tensor): ATen's meta sizes the output; a base of 1 fills it.
Tensor& pow_scalar_base_out(const Scalar& base, const Tensor& exponent, Tensor& out) {
  const at::ScalarType dtype = at::result_type(base, exponent);
  if (!is_native(dtype)) {
    return on_host("pow.Scalar", out, [&] { return at::pow(base, to_host(exponent)); });
  }
  if (base.equal(1.0)) {
    out.fill_(1);
  } else {
    run(TPU_OP_POW, dtype, {Input(base), Input(exponent)}, {&out});
  }
  return out;
}
Tensor pow_scalar_base(const Scalar& base, const Tensor& exponent) {
  Functional<structured_pow_Scalar> it;
  it.meta(base, exponent);
  return pow_scalar_base_out(base, exponent, it.outputs_[0]);
}
Tensor& pow_scalar_base_out_checked(const Scalar& base, const Tensor& exponent, Tensor& out) {
  Out<structured_pow_Scalar> it(out);
  it.meta(base, exponent);
  return pow_scalar_base_out(base, exponent, out);
}

// A number as ATen's wrapped scalar tensor (a CPU 0-dim tensor that promotes like a number).
Tensor wrapped(const Scalar& s) {
  Tensor t = c10::scalar_to_tensor(s);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

constexpr char kRemainder[] = "remainder.Tensor";
constexpr char kSub[] = "sub.Tensor";
using RemainderOps = Structured<structured_remainder_Tensor, kRemainder,
                                binary<TPU_OP_REMAINDER>>;
void sub_run(const Iter& it, const Tensor&, const Tensor&, const Scalar& alpha) {
  run(TPU_OP_ADD, it, {{-alpha}});
}
using SubOps = Structured<structured_sub_Tensor, kSub, sub_run>;

Tensor remainder_scalar_tensor(const Scalar& self, const Tensor& other) {
  return RemainderOps::functional(wrapped(self), other);
}
Tensor rsub(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return SubOps::functional(other, self, alpha);
}

// Device checks of the hand-written ops: a CPU tensor may only be a 0-dim scalar, as on CUDA.
void check_devices(const Tensor& out, std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors) {
    TORCH_CHECK(t->device() == out.device() || (t->is_cpu() && t->dim() == 0),
                "Expected all tensors to be on the same device, but found at least two devices, ",
                out.device(), " and ", t->device(), "!");
  }
}

// The layout of t.to(dtype) without the copy: ATen's where converts self and other to the result
// dtype on every device before its TensorIterator chooses out's layout, and the conversion makes
// an overlapping or non-dense input dense (empty_like's preserve format). The core computes from
// t itself; this meta tensor only stands in for it when the layout is chosen.
Tensor converted_layout(const Tensor& t, at::ScalarType dtype) {
  if (t.scalar_type() == dtype || t.is_non_overlapping_and_dense()) {
    return t;
  }
  return at::empty_strided(t.sizes(), at::infer_dense_strides(t.sizes(), t.strides()),
                           t.options().dtype(dtype).device(at::kMeta));
}

// where(condition, self, other), as ATen's where_self_out: the output in self and other's
// promoted dtype, any of the three a CPU 0-dim scalar (CUDA moves such operands to the device;
// here they travel in the call), a uint8 condition taken as bool with a deprecation warning, and
// a resized output laid out by TensorIterator like the inputs.
Tensor& where_out(const Tensor& condition, const Tensor& self, const Tensor& other, Tensor& out) {
  const at::ScalarType dtype = at::result_type(self, other);
  TORCH_CHECK(out.scalar_type() == dtype, "Expected out type to be ", dtype, " but got ",
              out.scalar_type());
  Tensor cond = condition;
  if (cond.scalar_type() == at::kByte) {
    TORCH_WARN_ONCE("where received a uint8 condition tensor. This behavior is deprecated and will "
                    "be removed in a future version of PyTorch. Use a boolean condition instead.");
    cond = cond.to(at::kBool);
  }
  TORCH_CHECK(cond.scalar_type() == at::kBool,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              cond.scalar_type());
  check_devices(out, {&cond, &self, &other});
  const Tensor self_layout = converted_layout(self, dtype);
  const Tensor other_layout = converted_layout(other, dtype);
  at::TensorIteratorConfig() // sizes and lays out out; the core op computes
      .check_all_same_dtype(false)
      .check_all_same_device(false) // CPU scalars: checked above; layouts are meta tensors
      .add_output(out)
      .add_const_input(cond)
      .add_const_input(self_layout)
      .add_const_input(other_layout)
      .build();
  if (!is_native(dtype)) {
    return on_host("where.self", out, [&] {
      return at::where(to_host(cond), to_host(self), to_host(other));
    });
  }
  run(TPU_OP_WHERE, dtype, {Input(cond), Input(self), Input(other)}, {&out});
  return out;
}
Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other) {
  c10::Device device = condition.device();
  for (const Tensor* t : {&self, &other}) {
    if (device.is_cpu()) {
      device = t->device();
    }
  }
  Tensor out = at::empty({0}, self.options().dtype(at::result_type(self, other)).device(device));
  return where_out(condition, self, other, out);
}

// masked_fill_: self = where(mask, value, self). The value is converted to self's dtype as
// PyTorch's kernels do (`value.to<scalar_t>()`, refusing one out of its range); the mask is on
// self's device, as CUDA requires.
void check_mask(const Tensor& self, const Tensor& mask) {
  TORCH_CHECK(mask.device() == self.device(), "expected self and mask to be on the same device, "
              "but got mask on ", mask.device(), " and self on ", self.device());
  TORCH_CHECK(mask.scalar_type() == at::kBool,
              "masked_fill_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  at::expand_inplace(self, mask, "masked_fill_");
}
Tensor& masked_fill_scalar(Tensor& self, const Tensor& mask, const Scalar& value) {
  check_mask(self, mask);
  if (!is_native(self.scalar_type())) {
    return on_host("masked_fill_.Scalar", self, [&] {
      return to_host(self).masked_fill_(to_host(mask), value);
    });
  }
  const Scalar fill = converted(value, self.scalar_type());
  run(TPU_OP_WHERE, self.scalar_type(), {Input(mask), Input(fill), Input(self)}, {&self});
  return self;
}
Tensor& masked_fill_tensor(Tensor& self, const Tensor& mask, const Tensor& value) {
  TORCH_CHECK(value.dim() == 0,
              "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  check_mask(self, mask);
  if (!is_native(self.scalar_type()) || !is_native(value.scalar_type())) {
    return on_host("masked_fill_.Tensor", self, [&] {
      return to_host(self).masked_fill_(to_host(mask), to_host(value));
    });
  }
  // Read now, as CUDA's kernel reads it (value.item()), so that its conversion is checked.
  return masked_fill_scalar(self, mask, value.item());
}

// The logical ops write any output dtype (bool by default): comparison rules.
template <tpu_op_id Op>
void logical(const Iter& it, const Tensor&, const Tensor&) {
  run(Op, it);
}
// logical_not: comparison rules over (self, self) give ATen's logical_not_out iterator: any out
// dtype, self's layout.
Tensor& logical_not_out(const Tensor& self, Tensor& out) {
  Out<LogicalMeta> it(out);
  it.meta(self, self);
  if (!is_native(self.scalar_type()) || !is_native(out.scalar_type())) {
    return on_host("logical_not", out, [&] { return at::logical_not(to_host(self)); });
  }
  run(TPU_OP_LOGICAL_NOT, self.scalar_type(), {Input(self)}, {&out});
  return out;
}

// abs of a complex tensor is real: such inputs run on the host, after ATen's check that the
// real result casts to out's dtype (made for empty tensors too).
Tensor& abs_out(const Tensor& self, Tensor& out) {
  if (!is_native(self.scalar_type())) {
    check_out_device(self, out);
    // TensorIterator's checks, which the native path's meta makes.
    at::assert_no_internal_overlap(out);
    at::assert_no_partial_overlap(out, self);
    const at::ScalarType real = c10::toRealValueType(self.scalar_type());
    TORCH_CHECK(at::canCast(real, out.scalar_type()), "result type ", real,
                " can't be cast to the desired output type ", out.scalar_type());
    at::native::resize_output(out, self.sizes());
    return on_host("abs", out, [&] { return at::abs(to_host(self)); });
  }
  Out<UnaryMeta> it(out);
  it.meta(self);
  run(TPU_OP_ABS, it);
  return out;
}

Tensor isnan(const Tensor& self) {
  Tensor out = at::empty_like(self, self.options().dtype(at::kBool));
  if (!is_native(self.scalar_type())) {
    return on_host("isnan", out, [&] { return at::isnan(to_host(self)); });
  }
  run(TPU_OP_ISNAN, self.scalar_type(), {Input(self)}, {&out});
  return out;
}

// nan_to_num as ATen's nan_to_num_out: integers are copied into a plainly resized output, floats
// go through a unary TensorIterator (laid out like the input) and the replacements are cast to
// the dtype as its kernel casts them (out of range: infinite).
Tensor& nan_to_num_out(const Tensor& self, std::optional<double> nan,
                       std::optional<double> posinf, std::optional<double> neginf, Tensor& out) {
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "nan_to_num: dtype of out: ",
              out.scalar_type(), " should be same as input: ", self.scalar_type());
  if (!is_native(self.scalar_type())) {
    Out<UnaryMeta> it(out); // the unary TensorIterator's checks (an overlapping out=) and layout
    it.meta(self);
    return on_host("nan_to_num", out, [&] {
      return at::nan_to_num(to_host(self), nan, posinf, neginf);
    });
  }
  if (at::isIntegralType(self.scalar_type(), /*includeBool=*/true)) {
    at::native::resize_output(out, self.sizes());
    return out.copy_(self); // nothing to replace, as on CPU
  }
  Out<UnaryMeta> it(out);
  it.meta(self);
  double max = std::numeric_limits<double>::max();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "nan_to_num", [&] {
    max = static_cast<double>(std::numeric_limits<scalar_t>::max());
  });
  const Scalar nan_value(nan.value_or(0.0)), pos(posinf.value_or(max)), neg(neginf.value_or(-max));
  run(TPU_OP_NAN_TO_NUM, it, {cast(nan_value), cast(pos), cast(neg)});
  return out;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("clamp", TORCH_FN(clamp_scalar));
  m.impl("clamp_", TORCH_FN(clamp_scalar_));
  m.impl("clamp.out", TORCH_FN(clamp_scalar_out));
  m.impl("clamp.Tensor", TORCH_FN(clamp_tensor));
  m.impl("clamp_.Tensor", TORCH_FN(clamp_tensor_));
  m.impl("clamp.Tensor_out", TORCH_FN(clamp_tensor_out));
  TPU_EW_OP(m, structured_clamp_min, clamp_min, "clamp_min", "clamp_min_", "clamp_min.out");
  TPU_EW_OP(m, structured_clamp_max, clamp_max, "clamp_max", "clamp_max_", "clamp_max.out");
  TPU_EW_OP(m, structured_clamp_min_Tensor, binary<TPU_OP_MAXIMUM>,
            "clamp_min.Tensor", "clamp_min_.Tensor", "clamp_min.Tensor_out");
  TPU_EW_OP(m, structured_clamp_max_Tensor, binary<TPU_OP_MINIMUM>,
            "clamp_max.Tensor", "clamp_max_.Tensor", "clamp_max.Tensor_out");
  m.impl("relu", TORCH_FN(relu));
  m.impl("relu_", TORCH_FN(relu_));
  m.impl("hardtanh", TORCH_FN(hardtanh));
  m.impl("hardtanh_", TORCH_FN(hardtanh_));
  m.impl("hardtanh.out", TORCH_FN(hardtanh_out));
  TPU_EW_STRUCTURED(m, HardtanhBackwardMeta, hardtanh_backward, "hardtanh_backward",
                    "hardtanh_backward", "", "hardtanh_backward.grad_input");
  TPU_EW_STRUCTURED(m, LogitMeta, logit, "logit", "logit", "logit_", "logit.out");
  TPU_EW_STRUCTURED(m, UnaryMeta, unary<TPU_OP_HARDSWISH>, "hardswish",
                    "hardswish", "hardswish_", "hardswish.out");
  TPU_EW_STRUCTURED(m, GradMeta, binary<TPU_OP_HARDSWISH_BACKWARD>,
                    "hardswish_backward", "hardswish_backward", "", "");
  TPU_EW_STRUCTURED(m, GradMeta, binary<TPU_OP_MISH_BACKWARD>, "mish_backward", "mish_backward",
                    "", "");
  TPU_EW_STRUCTURED(m, FloorDivideMeta, binary<TPU_OP_DIV_FLOOR>,
                    "floor_divide", "floor_divide", "floor_divide_.Tensor", "floor_divide.out");
  m.impl("abs.out", TORCH_FN(abs_out));
  TPU_EW_OP(m, structured_pow_Tensor_Scalar, pow_scalar, "pow.Tensor_Scalar", "pow_.Scalar",
            "pow.Tensor_Scalar_out");
  m.impl("pow.Scalar", TORCH_FN(pow_scalar_base));
  m.impl("pow.Scalar_out", TORCH_FN(pow_scalar_base_out_checked));
  TPU_EW_OP(m, structured_round_decimals, round_decimals, "round.decimals", "round_.decimals",
            "round.decimals_out");
  m.impl("remainder.Scalar_Tensor", TORCH_FN(remainder_scalar_tensor));
  m.impl("rsub.Tensor", TORCH_FN(rsub));
  m.impl("where.self", TORCH_FN(where));
  m.impl("where.self_out", TORCH_FN(where_out));
  m.impl("masked_fill_.Scalar", TORCH_FN(masked_fill_scalar));
  m.impl("masked_fill_.Tensor", TORCH_FN(masked_fill_tensor));
  TPU_EW_STRUCTURED(m, LogicalMeta, logical<TPU_OP_LOGICAL_AND>, "logical_and", "", "",
                    "logical_and.out");
  TPU_EW_STRUCTURED(m, LogicalMeta, logical<TPU_OP_LOGICAL_OR>, "logical_or", "", "",
                    "logical_or.out");
  TPU_EW_STRUCTURED(m, LogicalMeta, logical<TPU_OP_LOGICAL_XOR>, "logical_xor", "", "",
                    "logical_xor.out");
  m.impl("logical_not.out", TORCH_FN(logical_not_out));
  m.impl("isnan", TORCH_FN(isnan));
  m.impl("nan_to_num.out", TORCH_FN(nan_to_num_out));
}

} // namespace torch_tpu::ew
