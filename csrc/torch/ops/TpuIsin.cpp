// isin in its three forms (tensor/tensor, tensor/scalar, scalar/tensor), functional and out=.
// ATen's structured metas refuse the dtypes CPU refuses and size the output; both inputs are
// converted to their promoted dtype, as CPU's kernel does, and the core's ISIN compares them
// (kernels/index/index_isin.c). assume_unique is ignored, as CUDA may: the kernels never need it.
// The tensor/scalar form is eq or ne with the scalar, as on CPU and CUDA.
#include <ATen/ScalarOps.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/isin_meta.h>
#include <ATen/ops/ne.h>
#include <torch/library.h>

#include "ops/TpuIndexCommon.h"
#include "ops/TpuStructured.h"

namespace torch_tpu {
namespace {

void run_isin(const at::Tensor& elements, const at::Tensor& test, bool invert,
              const at::Tensor& out) {
  if (elements.numel() == 0) {
    return;
  }
  check_same_device("isin", out.device(), {&elements, &test});
  at::ScalarType common = at::result_type(elements, test);
  TORCH_CHECK_NOT_IMPLEMENTED(is_computable(common), "\"isin_default_cpu\" not implemented for '",
                              common, "'");
  if (test.numel() == 0) {
    out.fill_(invert);
    return;
  }
  at::Tensor e = elements.to(common);
  at::Tensor t = test.to(common).reshape({-1});
  OpCall call = make_call(TPU_OP_ISIN, {core_view(e), core_view(t)}, {core_view(out)});
  call->scalars[0].i = invert ? 1 : 0;
  launch(out.device().index(), std::move(call));
}

at::Tensor isin(const at::Tensor& elements, const at::Tensor& test, bool assume_unique,
                bool invert) {
  Functional<at::meta::structured_isin_Tensor_Tensor> op;
  op.meta(elements, test, assume_unique, invert);
  run_isin(elements, test, invert, op.outputs_[0]);
  return std::move(op.outputs_[0]);
}

at::Tensor& isin_out(const at::Tensor& elements, const at::Tensor& test, bool assume_unique,
                     bool invert, at::Tensor& out) {
  Out<at::meta::structured_isin_Tensor_Tensor> op(out);
  op.meta(elements, test, assume_unique, invert);
  run_isin(elements, test, invert, out);
  return out;
}

at::Tensor& isin_tensor_scalar_out(const at::Tensor& elements, const at::Scalar& test,
                                   bool assume_unique, bool invert, at::Tensor& out) {
  Out<at::meta::structured_isin_Tensor_Scalar> op(out);
  op.meta(elements, test, assume_unique, invert);
  return invert ? at::ne_out(out, elements, test) : at::eq_out(out, elements, test);
}

at::Tensor isin_tensor_scalar(const at::Tensor& elements, const at::Scalar& test,
                              bool assume_unique, bool invert) {
  Functional<at::meta::structured_isin_Tensor_Scalar> op;
  op.meta(elements, test, assume_unique, invert);
  return isin_tensor_scalar_out(elements, test, assume_unique, invert, op.outputs_[0]);
}

// The element becomes a 0-d tensor on the test elements' device, a wrapped number for type
// promotion, as CPU's kernel makes it.
at::Tensor& isin_scalar_tensor_out(const at::Scalar& element, const at::Tensor& test,
                                   bool assume_unique, bool invert, at::Tensor& out) {
  Out<at::meta::structured_isin_Scalar_Tensor> op(out);
  op.meta(element, test, assume_unique, invert);
  at::Tensor wrapped = c10::scalar_to_tensor(element, test.device());
  wrapped.unsafeGetTensorImpl()->set_wrapped_number(true);
  return isin_out(wrapped, test, assume_unique, invert, out);
}

at::Tensor isin_scalar_tensor(const at::Scalar& element, const at::Tensor& test,
                              bool assume_unique, bool invert) {
  Functional<at::meta::structured_isin_Scalar_Tensor> op;
  op.meta(element, test, assume_unique, invert);
  return isin_scalar_tensor_out(element, test, assume_unique, invert, op.outputs_[0]);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("isin.Tensor_Tensor", TORCH_FN(isin));
  m.impl("isin.Tensor_Tensor_out", TORCH_FN(isin_out));
  m.impl("isin.Tensor_Scalar", TORCH_FN(isin_tensor_scalar));
  m.impl("isin.Tensor_Scalar_out", TORCH_FN(isin_tensor_scalar_out));
  m.impl("isin.Scalar_Tensor", TORCH_FN(isin_scalar_tensor));
  m.impl("isin.Scalar_Tensor_out", TORCH_FN(isin_scalar_tensor_out));
}

} // namespace torch_tpu
