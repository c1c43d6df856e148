// fill_, zero_ and _local_scalar_dense (Tensor.item()).
#include <ATen/Dispatch_v2.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "ops/TpuOps.h"
#include "runtime/TpuCore.h"

namespace torch_tpu {
namespace {

// The fill value in the scalar slots the FILL kernel reads for the tensor's dtype.
template <typename T>
void store_value(tpu_op_call* call, T v) {
  if constexpr (c10::is_complex<T>::value) {
    call->scalars[0].f = static_cast<double>(v.real());
    call->scalars[1].f = static_cast<double>(v.imag());
  } else if constexpr (std::is_integral_v<T>) {
    call->scalars[0].i = static_cast<int64_t>(v);
  } else {
    call->scalars[0].f = static_cast<double>(v);
  }
}

at::Tensor& fill_scalar(at::Tensor& self, const at::Scalar& value) {
  if (!tpu_dtype_is_computable(to_core_dtype(self.scalar_type()))) {
    // Storage-only dtypes: the host's fill_ converts the value; broadcast it over.
    copy_into(at::empty({}, self.options().device(at::kCPU)).fill_(value), self, false);
    return self;
  }
  const at::Scalar fill = converted(value, self.scalar_type());
  if (self.numel() == 0) {
    return self;
  }
  OpCall call = new_call(TPU_OP_FILL, 0, 1);
  call->tensors[0] = core_view(self);
  AT_DISPATCH_V2(self.scalar_type(), "fill_", AT_WRAP([&] {
    store_value(call, fill.to<scalar_t>());
  }), AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), at::kBool, at::kHalf, at::kBFloat16);
  launch(self.device().index(), std::move(call));
  return self;
}

at::Tensor& fill_tensor(at::Tensor& self, const at::Tensor& value) {
  TORCH_CHECK(
      value.dim() == 0,
      "fill_ only supports 0-dimension value tensor but got tensor with ", value.dim(),
      " dimensions.");
  if (value.is_privateuseone()) {
    // Stays on the device: no host round trip, no synchronization. PyTorch's fill_ is then
    // copy_, with its checks, from a clone when value is a view of self.
    const at::Tensor src = self.is_alias_of(value) ? value.clone() : value;
    check_copy(src, self);
    copy_into(src, self, false);
    return self;
  }
  return fill_scalar(self, value.item());
}

at::Tensor& zero(at::Tensor& self) {
  return fill_scalar(self, 0);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() > 0, "_local_scalar_dense: Empty tensor not supported");
  at::Tensor host = at::empty({}, self.options().device(at::kCPU));
  copy_into(self.reshape({}), host, false);
  return host.item();
}

} // namespace

at::Scalar converted(const at::Scalar& value, at::ScalarType type) {
  at::Scalar result;
  AT_DISPATCH_V2(type, "converted", AT_WRAP([&] { result = at::Scalar(value.to<scalar_t>()); }),
                 AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), at::kBool, at::kHalf, at::kBFloat16);
  return result;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("fill_.Scalar", TORCH_FN(fill_scalar));
  m.impl("fill_.Tensor", TORCH_FN(fill_tensor));
  m.impl("zero_", TORCH_FN(zero));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
}

} // namespace torch_tpu
