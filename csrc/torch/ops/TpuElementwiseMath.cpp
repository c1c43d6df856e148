// The elementwise math ops (core/ops/tpu_ops_elementwise.h, "Math"): inverse hyperbolic
// functions, logaddexp, fmax and fmin, hypot, nextafter, heaviside, xlogy, signbit, sgn, angle and
// the special functions (lgamma, digamma, polygamma, zeta, the i0 family, ndtri, log_ndtr, erfcx,
// igamma). Each is one core call from ATen's own meta; dtypes CPU has no kernel for raise CPU's
// NotImplementedError with its message.
#include <ATen/native/Resize.h>
#include <ATen/ops/acosh_meta.h>
#include <ATen/ops/angle.h>
#include <ATen/ops/asinh_meta.h>
#include <ATen/ops/atanh_meta.h>
#include <ATen/ops/digamma_meta.h>
#include <ATen/ops/fmax_meta.h>
#include <ATen/ops/fmin_meta.h>
#include <ATen/ops/heaviside_meta.h>
#include <ATen/ops/hypot_meta.h>
#include <ATen/ops/i0_meta.h>
#include <ATen/ops/igamma_meta.h>
#include <ATen/ops/igammac_meta.h>
#include <ATen/ops/lgamma_meta.h>
#include <ATen/ops/logaddexp2_meta.h>
#include <ATen/ops/logaddexp_meta.h>
#include <ATen/ops/mvlgamma.h>
#include <ATen/ops/nextafter_meta.h>
#include <ATen/ops/polygamma.h>
#include <ATen/ops/polygamma_meta.h>
#include <ATen/ops/sgn_meta.h>
#include <ATen/ops/sigmoid_meta.h>
#include <ATen/ops/signbit_meta.h>
#include <ATen/ops/sinc_meta.h>
#include <ATen/ops/special_entr_meta.h>
#include <ATen/ops/special_erfcx_meta.h>
#include <ATen/ops/special_i0e_meta.h>
#include <ATen/ops/special_i1_meta.h>
#include <ATen/ops/special_i1e_meta.h>
#include <ATen/ops/special_log_ndtr_meta.h>
#include <ATen/ops/special_ndtri_meta.h>
#include <ATen/ops/special_xlog1py_meta.h>
#include <ATen/ops/special_zeta_meta.h>
#include <ATen/ops/xlogy_meta.h>
#include <torch/library.h>

#include "ops/TpuElementwise.h"

namespace torch_tpu::ew {
namespace {

using namespace at::meta;
using at::Scalar;
using at::Tensor;
using Iter = at::TensorIteratorBase;

// Which compute dtypes CPU's kernel of an op has.
enum Accepts { kFloats, kFloatsNoHalf };

// Raises what CPU raises for a compute dtype its kernel `cpu_name` lacks.
void check_dtype(const Iter& it, const char* cpu_name, Accepts accepts) {
  const at::ScalarType t = it.common_dtype();
  const bool half = t == at::kHalf || t == at::kBFloat16;
  const bool ok = at::isFloatingType(t) && !(half && accepts == kFloatsNoHalf);
  TORCH_CHECK_NOT_IMPLEMENTED(ok, "\"", cpu_name, "\" not implemented for '", c10::toString(t),
                              "'");
}

// A float op with CPU's dtype check.
template <tpu_op_id Op, const char* CpuName, Accepts A, typename... Args>
void checked(const Iter& it, Args...) {
  check_dtype(it, CpuName, A);
  run(Op, it);
}

#define CPU_NAME(name) constexpr char name##_cpu[] = #name "_cpu"
CPU_NAME(hypot);
CPU_NAME(logaddexp);
CPU_NAME(logaddexp2);
CPU_NAME(nextafter);
CPU_NAME(igamma);
CPU_NAME(igammac);
CPU_NAME(zeta);
CPU_NAME(ndtri);
CPU_NAME(log_ndtr);
CPU_NAME(erfcx);
#undef CPU_NAME

template <tpu_op_id Op, const char* CpuName, Accepts A = kFloats>
constexpr auto checked_binary = &checked<Op, CpuName, A, const Tensor&, const Tensor&>;
template <tpu_op_id Op, const char* CpuName>
constexpr auto checked_unary = &checked<Op, CpuName, kFloatsNoHalf, const Tensor&>;

// polygamma(n, self): ATen's meta takes the order first, so it has kernels of its own.
template <typename It>
void polygamma_apply(It& it, const Tensor& dst, int64_t n, const Tensor& self) {
  if (!is_native(it)) {
    begin_host_fallback("polygamma");
    copy_into(at::polygamma(n, to_host(self)), dst, false);
    return;
  }
  const Scalar order(static_cast<double>(n));
  run(TPU_OP_POLYGAMMA, it, {opmath(order)});
}
Tensor polygamma_functional(int64_t n, const Tensor& self) {
  Functional<structured_polygamma> it;
  it.meta(n, self);
  polygamma_apply(it, it.outputs_[0], n, self);
  return std::move(it.outputs_[0]);
}
Tensor& polygamma_out(int64_t n, const Tensor& self, Tensor& out) {
  Out<structured_polygamma> it(out);
  it.meta(n, self);
  polygamma_apply(it, out, n, self);
  return out;
}

// angle of a real tensor: a unary float op (integers promote); complex ones run on the host.
struct AngleMeta : structured_sigmoid {};
Tensor angle_functional(const Tensor& self) {
  if (self.is_complex()) {
    begin_host_fallback("angle");
    return at::angle(to_host(self)).to(self.device());
  }
  Functional<AngleMeta> it;
  it.meta(self);
  if (!is_native(it)) {
    begin_host_fallback("angle");
    copy_into(at::angle(to_host(self)), it.outputs_[0], false);
  } else {
    run(TPU_OP_ANGLE, it);
  }
  return std::move(it.outputs_[0]);
}
Tensor& angle_out(const Tensor& self, Tensor& out) {
  at::Tensor result = angle_functional(self);
  TORCH_CHECK(at::canCast(result.scalar_type(), out.scalar_type()), "result type ",
              result.scalar_type(), " can't be cast to the desired output type ",
              out.scalar_type());
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

// mvlgamma's out= form: the composite functional (lgamma, a sum) into `out`, as ATen's.
Tensor& mvlgamma_out(const Tensor& self, int64_t p, Tensor& out) {
  at::Tensor result = at::mvlgamma(self, p);
  TORCH_CHECK(at::canCast(result.scalar_type(), out.scalar_type()), "mvlgamma: result type ",
              result.scalar_type(), " can't be cast to the desired output type ",
              out.scalar_type());
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
#define UNARY(op, name, inplace, out)                                                              \
  TPU_EW_OP(m, structured_##name, unary<TPU_OP_##op>, #name, inplace, out)
#define UNARY3(op, name) UNARY(op, name, #name "_", #name ".out")
#define SPECIAL(op, name) UNARY(op, special_##name, "", "special_" #name ".out")
#define SPECIAL_CHECKED(op, name)                                                                  \
  TPU_EW_OP(m, structured_special_##name, (checked_unary<TPU_OP_##op, name##_cpu>),              \
            "special_" #name, "", "special_" #name ".out")
  // clang-format off
  UNARY3(ACOSH, acosh); UNARY3(ASINH, asinh); UNARY3(ATANH, atanh); UNARY3(LGAMMA, lgamma);
  UNARY3(DIGAMMA, digamma); UNARY3(I0, i0); UNARY3(SINC, sinc); UNARY3(SIGN, sgn);
  UNARY(SIGNBIT, signbit, "", "signbit.out");
  SPECIAL(I0E, i0e); SPECIAL(I1, i1); SPECIAL(I1E, i1e); SPECIAL(ENTR, entr);
  SPECIAL_CHECKED(NDTRI, ndtri); SPECIAL_CHECKED(LOG_NDTR, log_ndtr);
  SPECIAL_CHECKED(ERFCX, erfcx);
  // clang-format on
#undef SPECIAL_CHECKED
#undef SPECIAL
#undef UNARY3
#undef UNARY

#define BINARY(op, meta, name, inplace, out)                                                       \
  TPU_EW_OP(m, structured_##meta, binary<TPU_OP_##op>, name, inplace, out)
#define CHECKED(op, cpu, accepts, name, inplace, out)                                              \
  TPU_EW_OP(m, structured_##name, (checked_binary<TPU_OP_##op, cpu##_cpu, accepts>), #name,      \
            inplace, out)
  // clang-format off
  BINARY(FMAX, fmax, "fmax", "", "fmax.out");
  BINARY(FMIN, fmin, "fmin", "", "fmin.out");
  BINARY(HEAVISIDE, heaviside, "heaviside", "heaviside_", "heaviside.out");
  BINARY(XLOGY, xlogy_Tensor, "xlogy.Tensor", "xlogy_.Tensor", "xlogy.OutTensor");
  BINARY(XLOG1PY, special_xlog1py, "special_xlog1py", "", "special_xlog1py.out");
  CHECKED(HYPOT, hypot, kFloats, hypot, "hypot_", "hypot.out");
  CHECKED(LOGADDEXP, logaddexp, kFloats, logaddexp, "", "logaddexp.out");
  CHECKED(LOGADDEXP2, logaddexp2, kFloats, logaddexp2, "", "logaddexp2.out");
  CHECKED(NEXTAFTER, nextafter, kFloats, nextafter, "nextafter_", "nextafter.out");
  CHECKED(IGAMMA, igamma, kFloats, igamma, "igamma_", "igamma.out");
  CHECKED(IGAMMAC, igammac, kFloats, igammac, "igammac_", "igammac.out");
  CHECKED(ZETA, zeta, kFloatsNoHalf, special_zeta, "", "special_zeta.out");
  // clang-format on
#undef CHECKED
#undef BINARY

  m.impl("polygamma", TORCH_FN(polygamma_functional));
  m.impl("polygamma.out", TORCH_FN(polygamma_out));
  m.impl("angle", TORCH_FN(angle_functional));
  m.impl("angle.out", TORCH_FN(angle_out));
  m.impl("mvlgamma.out", TORCH_FN(mvlgamma_out));
}

} // namespace torch_tpu::ew
