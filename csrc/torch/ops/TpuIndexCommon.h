// Helpers shared by the index and nn families' bindings: building op calls from tensor views,
// device checks, and scalars the kernels read as broadcast tensors.
#pragma once

#include <ATen/core/Tensor.h>

#include <initializer_list>
#include <vector>

#include "ops/TpuStructured.h"

#include "runtime/TpuCore.h"

namespace torch_tpu {

// A view for the core with at least one dimension: a 0-d tensor reads as 1-d of size 1, the
// convention of the gather and scatter kernels.
tpu_tensor core_view_1d(const at::Tensor& t);

// A new call of `op` holding `inputs` then `outputs`.
OpCall make_call(tpu_op_id op, const std::vector<tpu_tensor>& inputs,
                 const std::vector<tpu_tensor>& outputs);

// Stores `value` converted to `dtype` in call->scalars[slot] (and slot + 1 for 16-byte dtypes)
// and points call->tensors[index] at it: a host view with `sizes` and every stride 0, so the
// kernel reads the value as a broadcast tensor that lives as long as the call.
void set_scalar_tensor(tpu_op_call* call, int index, int slot, const at::Scalar& value,
                       c10::ScalarType dtype, at::IntArrayRef sizes);

// Raises CUDA's device-mismatch error unless every defined tensor is on `device`.
void check_same_device(const char* name, const at::Device& device,
                       std::initializer_list<const at::Tensor*> tensors);

// True when the core's kernels compute on `type` (bool through complex128).
bool is_computable(c10::ScalarType type);

} // namespace torch_tpu
