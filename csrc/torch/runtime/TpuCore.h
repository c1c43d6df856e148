// Translation between ATen and the C core: status codes to PyTorch's exceptions, dtypes, tensor
// views, and the current stream. Everything here is glue; the logic lives in csrc/core.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Stream.h>

#include "core/include/tpu.h"

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

// Cuts the open fused graphs of `device` and waits for all its streams; throws the first error.
void synchronize_device(c10::DeviceIndex device);

// True once an op was launched from a backward pass, i.e. autograd has started a thread for a
// chip (torch.tpu's exit drain is needed only then).
bool backward_ran();

// An op call being built: it owns the call until launch hands it to the core, and frees it when
// an exception leaves the builder first. Converts to the raw call for the helpers that fill it.
class OpCall {
 public:
  // A new call; throws when out of host memory.
  OpCall(tpu_op_id op, int n_inputs, int n_outputs);
  // Adopts a call made by the core (a tape's copy).
  explicit OpCall(tpu_op_call* call) : call_(call) {}
  OpCall(OpCall&& other) noexcept : call_(other.release()) {}
  OpCall& operator=(OpCall&& other) noexcept;
  OpCall(const OpCall&) = delete;
  OpCall& operator=(const OpCall&) = delete;
  ~OpCall() {
    tpu_op_call_free(call_);
  }
  tpu_op_call* operator->() const {
    return call_;
  }
  operator tpu_op_call*() const {
    return call_;
  }
  // Gives the call up (to the core).
  tpu_op_call* release() noexcept {
    tpu_op_call* call = call_;
    call_ = nullptr;
    return call;
  }

 private:
  tpu_op_call* call_;
};

// Submits `call` to the current stream of `device` (exec/tpu_submit.h routes it by eager mode);
// throws on a synchronous error.
void launch(c10::DeviceIndex device, OpCall call);

// Submits `call` and waits for it (copies to the host, scalar reads).
void launch_sync(c10::DeviceIndex device, OpCall call);

// A new op call; throws when out of host memory.
OpCall new_call(tpu_op_id op, int n_inputs, int n_outputs);

// A copy call reading `src` (already broadcast to dst's shape) into `dst`.
OpCall copy_call(const tpu_tensor& src, const tpu_tensor& dst);

} // namespace torch_tpu
