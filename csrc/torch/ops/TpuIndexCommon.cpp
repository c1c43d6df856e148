#include "ops/TpuIndexCommon.h"

#include <ATen/Dispatch_v2.h>

#include <new>

namespace torch_tpu {

tpu_tensor core_view_1d(const at::Tensor& t) {
  return core_view(t.dim() == 0 ? t.reshape({1}) : t);
}

OpCall make_call(tpu_op_id op, const std::vector<tpu_tensor>& inputs,
                 const std::vector<tpu_tensor>& outputs) {
  OpCall call = new_call(op, static_cast<int>(inputs.size()), static_cast<int>(outputs.size()));
  int i = 0;
  for (const tpu_tensor& t : inputs) {
    call->tensors[i++] = t;
  }
  for (const tpu_tensor& t : outputs) {
    call->tensors[i++] = t;
  }
  return call;
}

void set_scalar_tensor(tpu_op_call* call, int index, int slot, const at::Scalar& value,
                       c10::ScalarType dtype, at::IntArrayRef sizes) {
  tpu_scalar* where = &call->scalars[slot];
  AT_DISPATCH_V2(dtype, "set_scalar_tensor", AT_WRAP([&] {
    static_assert(sizeof(scalar_t) <= 2 * sizeof(tpu_scalar));
    new (where) scalar_t(value.to<scalar_t>());
  }), AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), at::kBool, at::kHalf, at::kBFloat16);
  tpu_tensor& t = call->tensors[index];
  t = tpu_tensor{};
  t.host = where;
  t.dtype = to_core_dtype(dtype);
  t.ndim = static_cast<int32_t>(sizes.size());
  for (size_t d = 0; d < sizes.size(); d++) {
    t.sizes[d] = sizes[d];
    t.strides[d] = 0;
  }
}

void check_same_device(const char* name, const at::Device& device,
                       std::initializer_list<const at::Tensor*> tensors) {
  for (const at::Tensor* t : tensors) {
    TORCH_CHECK(
        !t->defined() || t->device() == device,
        "Expected all tensors to be on the same device, but found at least two devices, ",
        device, " and ", t->device(), "! (when checking argument for ", name, ")");
  }
}

bool is_computable(c10::ScalarType type) {
  return is_storable(type) && tpu_dtype_is_computable(to_core_dtype(type));
}

} // namespace torch_tpu
