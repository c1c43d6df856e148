// Helpers shared by the bindings of the conv and rnn families (convolution, pooling, RNN cells).
#pragma once

#include <ATen/core/Tensor.h>

#include <initializer_list>
#include <vector>

#include "runtime/TpuCore.h"

namespace torch_tpu {

// True for the floating dtypes the conv and rnn families' kernels compute on.
inline bool is_conv_float(c10::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

// Packs up to three non-negative parameters (the last values.size() of three slots, the others
// `missing`) as ops/tpu_ops_conv.h's tpu_conv_pack; `what` names them in the range error.
inline uint64_t conv_pack(at::IntArrayRef values, int64_t missing, const char* what) {
  int64_t v[3] = {missing, missing, missing};
  TORCH_CHECK(values.size() <= 3, what, ": expected at most 3 spatial dimensions");
  for (size_t i = 0; i < values.size(); i++) {
    TORCH_CHECK(values[i] >= 0 && values[i] <= TPU_CONV_PARAM_MAX, what, " ", values[i],
                " is out of range for the tpu device");
    v[3 - values.size() + i] = values[i];
  }
  return tpu_conv_pack(v[0], v[1], v[2]);
}

// An optional tensor as a pointer (nullptr when absent or undefined).
inline const at::Tensor* opt(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined() ? &*t : nullptr;
}

// Raises CUDA's device-mismatch error unless every given (non-null, defined) tensor is on
// `device`.
inline void check_device(const char* name, const at::Device& device,
                         std::initializer_list<const at::Tensor*> tensors) {
  for (const at::Tensor* t : tensors) {
    TORCH_CHECK(!t || !t->defined() || t->device() == device,
                "Expected all tensors to be on the same device, but found at least two devices, ",
                device, " and ", t->device(), "! (when checking argument for ", name, ")");
  }
}

} // namespace torch_tpu
