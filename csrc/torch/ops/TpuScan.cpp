// cumprod, cummax, cummin and logcumsumexp on the core's SCAN op (csrc/core/ops/tpu_ops_sort.h).
// cumprod's metadata comes from ATen's structured meta; cummax and cummin are ATen composites
// that size their outputs and call the _cummax_helper / _cummin_helper registered here, and
// logcumsumexp reaches _logcumsumexp the same way. Backward passes are ATen's formulas over these
// and other native ops.
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_logcumsumexp.h>
#include <ATen/ops/cumprod.h>
#include <ATen/ops/cumprod_meta.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>

#include "ops/TpuOps.h"
#include "ops/TpuStructured.h"
#include "runtime/TpuCore.h"

namespace torch_tpu {
namespace {

// SCAN's combine kinds.
enum ScanKind : int64_t { kProduct = 0, kMax = 1, kMin = 2, kLogSumExp = 3 };

bool core_scans(at::ScalarType type) {
  return is_storable(type) && tpu_dtype_is_computable(to_core_dtype(type)) &&
         !at::isComplexType(type);
}

// Launches SCAN of `self` (the outputs' dtype) along dim into values [and indices]. A 0-d
// input is a line of one element. Outputs that share the input's storage are computed into
// fresh tensors and copied in.
void launch_scan(const at::Tensor& self, int64_t dim, ScanKind kind, const at::Tensor& values,
                 const at::Tensor& indices) {
  if (values.numel() == 0) {
    return;
  }
  const bool indexed = kind == kMax || kind == kMin;
  if (values.storage().is_alias_of(self.storage()) ||
      (indexed && indices.storage().is_alias_of(self.storage()))) {
    at::Tensor v = at::empty_like(values), i = indexed ? at::empty_like(indices) : at::Tensor();
    launch_scan(self, dim, kind, v, i);
    copy_into(v, values, false);
    if (indexed) {
      copy_into(i, indices, false);
    }
    return;
  }
  const int n = indexed ? 3 : 2;
  tpu_tensor views[3] = {core_view(self), core_view(values)};
  if (indexed) {
    views[2] = core_view(indices);
  }
  if (self.dim() == 0) {
    for (int t = 0; t < n; t++) {
      views[t].ndim = 1;
      views[t].sizes[0] = 1;
      views[t].strides[0] = 1;
    }
  }
  OpCall call = new_call(TPU_OP_SCAN, 1, indexed ? 2 : 1);
  for (int t = 0; t < n; t++) {
    call->tensors[t] = views[t];
  }
  call->scalars[0].i = self.dim() == 0 ? 0 : at::maybe_wrap_dim(dim, self.dim());
  call->scalars[1].i = kind;
  launch(self.device().index(), std::move(call));
}

// ---- cumprod ----

// Each element is first cast to the result's dtype, as PyTorch's kernel does.
void run_cumprod(const at::Tensor& self, int64_t dim, const at::Tensor& out) {
  if (out.numel() == 0) {
    return;
  }
  const at::Tensor in = self.scalar_type() == out.scalar_type() ? self
                                                                 : self.to(out.scalar_type());
  if (!core_scans(out.scalar_type())) {
    begin_host_fallback("aten::cumprod.out");
    copy_into(at::cumprod(in.cpu(), dim), out, false);
    return;
  }
  launch_scan(in, dim, kProduct, out, at::Tensor());
}

at::Tensor cumprod(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  Functional<at::meta::structured_cumprod> op;
  op.meta(self, dim, dtype);
  run_cumprod(self, dim, op.outputs_[0]);
  return op.outputs_[0];
}

at::Tensor& cumprod_out(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype,
                        at::Tensor& out) {
  Out<at::meta::structured_cumprod> op(out);
  op.meta(self, dim, dtype);
  run_cumprod(self, dim, out);
  return out;
}

at::Tensor& cumprod_(at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  Inplace<at::meta::structured_cumprod> op(self);
  op.meta(self, dim, dtype);
  run_cumprod(self, dim, self);
  return self;
}

// ---- cummax, cummin ----

// The helpers receive outputs already sized like self and a wrapped dim of a tensor with
// elements (ATen's cummax / cummin handle 0-d and empty inputs).
void run_extreme(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim,
                 ScanKind kind, const char* name) {
  const at::ScalarType type = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(core_scans(type), "\"", name, "\" not implemented for '",
                              toString(type), "'");
  launch_scan(self, dim, kind, values, indices);
}

void cummax_helper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices,
                   int64_t dim) {
  run_extreme(self, values, indices, dim, kMax, "cummax_cpu");
}

void cummin_helper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices,
                   int64_t dim) {
  run_extreme(self, values, indices, dim, kMin, "cummin_cpu");
}

// ---- logcumsumexp ----

at::Tensor& logcumsumexp_out(const at::Tensor& self, int64_t dim, at::Tensor& out) {
  check_out_device(self, out);
  at::native::resize_output(out, self.sizes());
  const at::ScalarType type = self.scalar_type();
  if (at::isComplexType(type)) {
    begin_host_fallback("aten::_logcumsumexp.out");
    copy_into(at::_logcumsumexp(self.cpu(), dim), out, false);
    return out;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(type) && core_scans(type),
                              "\"logcumsumexp_out_cpu\" not implemented for '", toString(type),
                              "'");
  launch_scan(self, dim, kLogSumExp, out, at::Tensor());
  return out;
}

at::Tensor logcumsumexp(const at::Tensor& self, int64_t dim) {
  at::Tensor out = at::empty_like(self, at::MemoryFormat::Contiguous);
  logcumsumexp_out(self, dim, out);
  return out;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("cumprod", TORCH_FN(cumprod));
  m.impl("cumprod.out", TORCH_FN(cumprod_out));
  m.impl("cumprod_", TORCH_FN(cumprod_));
  m.impl("_cummax_helper", TORCH_FN(cummax_helper));
  m.impl("_cummin_helper", TORCH_FN(cummin_helper));
  m.impl("_logcumsumexp", TORCH_FN(logcumsumexp));
  m.impl("_logcumsumexp.out", TORCH_FN(logcumsumexp_out));
}

} // namespace torch_tpu
