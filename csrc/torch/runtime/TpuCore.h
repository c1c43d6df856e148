// Translation between ATen and the C core: status codes to PyTorch's exceptions, dtypes, tensor
// views, and the current stream. Everything here is glue; the logic lives in csrc/core.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Stream.h>

extern "C" {
#include "core/exec/tpu_stream.h"
#include "core/ops/tpu_op.h"
#include "core/tensor/tpu_buffer.h"
#include "core/tensor/tpu_tensor.h"
}

namespace torch_tpu {

// Throws the exception PyTorch raises on CUDA for `status`, with the core's message.
[[noreturn]] void throw_status(tpu_status status, const char* context = nullptr);

// Throws when `status` is not TPU_OK.
inline void check(tpu_status status, const char* context = nullptr) {
  if (status != TPU_OK) {
    throw_status(status, context);
  }
}

// The core dtype of a scalar type; throws TypeError for types the device cannot hold.
tpu_dtype to_core_dtype(c10::ScalarType type);

// True when the device can store `type`.
bool is_storable(c10::ScalarType type);

// The core buffer behind a tpu tensor's storage.
tpu_buffer* buffer_of(const at::Tensor& tensor);

// A view for the core: a tpu tensor's buffer, or a CPU tensor's host memory.
tpu_tensor core_view(const at::Tensor& tensor);

// The same view with `tensor`'s data reinterpreted as `numel` contiguous bytes (dtype uint8).
tpu_tensor core_bytes(const at::Tensor& tensor);

// The core stream behind the current stream of `device`.
tpu_stream* current_core_stream(c10::DeviceIndex device);

// The core stream behind a c10::Stream of the tpu device.
tpu_stream* core_stream(const c10::Stream& stream);

// Launches `call` on the current stream of `device`; throws on a synchronous error.
void launch(c10::DeviceIndex device, tpu_op_call* call);

// Launches `call` and waits for it (copies to the host, scalar reads).
void launch_sync(c10::DeviceIndex device, tpu_op_call* call);

// A new op call; throws when out of host memory.
tpu_op_call* new_call(tpu_op_id op, int n_inputs, int n_outputs);

} // namespace torch_tpu
