#include "runtime/TpuCore.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/graph_task.h>

#include <atomic>

#include "runtime/TpuStreams.h"

#include "core/drivers/host/host.h"
#include "core/include/tpu.h"

namespace torch_tpu {

void throw_status(tpu_status status, const char* context) {
  std::string message = tpu_last_error();
  if (context) {
    message = std::string(context) + ": " + message;
  }
  switch (status) {
    case TPU_OK:
      TORCH_INTERNAL_ASSERT(false, "throw_status called with TPU_OK");
    case TPU_ERR_VALUE:
      TORCH_CHECK_VALUE(false, message);
    case TPU_ERR_TYPE:
      TORCH_CHECK_TYPE(false, message);
    case TPU_ERR_INDEX:
      TORCH_CHECK_INDEX(false, message);
    case TPU_ERR_OUT_OF_MEMORY:
      TORCH_CHECK_WITH(OutOfMemoryError, false, message);
    case TPU_ERR_NOT_IMPLEMENTED:
      TORCH_CHECK_NOT_IMPLEMENTED(false, message);
    case TPU_ERR_DIST:
      C10_THROW_ERROR(DistBackendError, message);
    case TPU_ERR_RUNTIME:
    case TPU_ERR_BAD_FORK:
      break;
  }
  TORCH_CHECK(false, message);
}

bool is_storable(c10::ScalarType type) {
  switch (type) {
    case c10::kBool:
    case c10::kByte:
    case c10::kChar:
    case c10::kShort:
    case c10::kInt:
    case c10::kLong:
    case c10::kHalf:
    case c10::kBFloat16:
    case c10::kFloat:
    case c10::kDouble:
    case c10::kComplexFloat:
    case c10::kComplexDouble:
    case c10::kUInt16:
    case c10::kUInt32:
    case c10::kUInt64:
    case c10::kFloat8_e4m3fn:
    case c10::kFloat8_e5m2:
      return true;
    default:
      return false;
  }
}

tpu_dtype to_core_dtype(c10::ScalarType type) {
  switch (type) {
    case c10::kBool: return TPU_BOOL;
    case c10::kByte: return TPU_UINT8;
    case c10::kChar: return TPU_INT8;
    case c10::kShort: return TPU_INT16;
    case c10::kInt: return TPU_INT32;
    case c10::kLong: return TPU_INT64;
    case c10::kHalf: return TPU_FLOAT16;
    case c10::kBFloat16: return TPU_BFLOAT16;
    case c10::kFloat: return TPU_FLOAT32;
    case c10::kDouble: return TPU_FLOAT64;
    case c10::kComplexFloat: return TPU_COMPLEX64;
    case c10::kComplexDouble: return TPU_COMPLEX128;
    case c10::kUInt16: return TPU_UINT16;
    case c10::kUInt32: return TPU_UINT32;
    case c10::kUInt64: return TPU_UINT64;
    case c10::kFloat8_e4m3fn: return TPU_FLOAT8_E4M3FN;
    case c10::kFloat8_e5m2: return TPU_FLOAT8_E5M2;
    default:
      TORCH_CHECK_TYPE(false, "tpu tensors do not support dtype ", type);
  }
}

tpu_buffer* buffer_of(const at::Tensor& tensor) {
  auto* buffer = static_cast<tpu_buffer*>(tensor.storage().data_ptr().get_context());
  TORCH_CHECK(buffer, "tpu tensor has no device buffer (its storage was released)");
  return buffer;
}

static void fill_shape(tpu_tensor& view, const at::Tensor& tensor) {
  TORCH_CHECK(
      tensor.dim() <= TPU_MAX_DIMS,
      "tpu tensors support at most ", TPU_MAX_DIMS, " dimensions, got ", tensor.dim());
  view.ndim = static_cast<int32_t>(tensor.dim());
  for (int64_t d = 0; d < tensor.dim(); d++) {
    view.sizes[d] = tensor.size(d);
    view.strides[d] = tensor.stride(d);
  }
}

tpu_tensor core_view(const at::Tensor& tensor) {
  tpu_tensor view{};
  view.dtype = to_core_dtype(tensor.scalar_type());
  fill_shape(view, tensor);
  if (tensor.is_privateuseone()) {
    view.buf = buffer_of(tensor);
    view.offset = tensor.storage_offset() * static_cast<int64_t>(tensor.element_size());
  } else {
    TORCH_INTERNAL_ASSERT(tensor.is_cpu(), "core_view of a ", tensor.device(), " tensor");
    view.host = tensor.data_ptr();
  }
  return view;
}

tpu_tensor core_bytes(const at::Tensor& tensor) {
  tpu_tensor view = core_view(tensor);
  view.dtype = TPU_UINT8;
  view.ndim = 1;
  view.sizes[0] = tensor.numel() * static_cast<int64_t>(tensor.element_size());
  view.strides[0] = 1;
  return view;
}

tpu_stream* core_stream(const c10::Stream& stream) {
  check(tpu_device_check(stream.device_index()));
  tpu_stream* s = tpu_stream_get(stream.device_index(), static_cast<int>(stream.id()));
  TORCH_CHECK(s, "invalid tpu stream id ", stream.id());
  return s;
}

tpu_stream* current_core_stream(c10::DeviceIndex device) {
  return core_stream(current_stream(device));
}

OpCall::OpCall(tpu_op_id op, int n_inputs, int n_outputs)
    : call_(tpu_op_call_new(op, n_inputs, n_outputs)) {
  TORCH_CHECK_WITH(OutOfMemoryError, call_, "cannot allocate a tpu op call");
}

OpCall& OpCall::operator=(OpCall&& other) noexcept {
  if (this != &other) {
    tpu_op_call_free(call_);
    call_ = other.release();
  }
  return *this;
}

OpCall new_call(tpu_op_id op, int n_inputs, int n_outputs) {
  return OpCall(op, n_inputs, n_outputs);
}

OpCall copy_call(const tpu_tensor& src, const tpu_tensor& dst) {
  OpCall call(TPU_OP_COPY, 1, 1);
  call->tensors[0] = src;
  call->tensors[1] = dst;
  return call;
}

// Kernels split their work over as many threads as torch.set_num_threads() allows, on a driver
// that runs them on the host's threads (the process's driver never changes: looked up once).
static void follow_torch_threads() {
  static const auto set_threads =
      reinterpret_cast<tpu_host_set_threads_fn>(tpu_driver_proc(TPU_HOST_SET_THREADS));
  if (set_threads) {
    set_threads(at::get_num_threads());
  }
}

void synchronize_device(c10::DeviceIndex device) {
  check(tpu_fused_flush_device(device, TPU_CUT_SYNC));
  check(tpu_device_synchronize(device));
}

// A backward pass cuts the open graphs of every chip where it starts and where it ends, once per
// autograd graph task: the forward graph runs while autograd records the backward, and the
// backward graph while Python records the optimizer step (in strict mode execution overlaps
// recording op by op; this keeps most of that overlap; with no graph open a cut does nothing).
// The thread-local id makes it one cut and one engine callback per graph task on each thread that
// launches. Also notes that autograd has a thread for the chip (see backward_ran in the header).
namespace {

std::atomic<bool> backward_seen{false};

void note_backward() {
  static thread_local int seen = -1;
  int task = torch::autograd::get_current_graph_task_id();
  if (task == -1 || task == seen) {
    return;
  }
  seen = task;
  backward_seen.store(true, std::memory_order_relaxed);
  check(tpu_fused_flush_device(-1, TPU_CUT_BACKWARD_START));
  torch::autograd::Engine::get_default_engine().queue_callback(
      [] { check(tpu_fused_flush_device(-1, TPU_CUT_BACKWARD)); });
}

} // namespace

bool backward_ran() {
  return backward_seen.load(std::memory_order_relaxed);
}

void launch(c10::DeviceIndex device, OpCall call) {
  follow_torch_threads();
  note_backward();
  tpu_stream* stream = current_core_stream(device);
  if (tpu_op_debug_requested() && !tpu_submit_blocks(stream)) {
    TORCH_WARN_ONCE(
        "the NaN/Inf check and the op trace (TORCH_TPU_CHECK_NAN, TORCH_TPU_OP_TRACE, "
        "torch.tpu.set_debug_nan_check, set_debug_op_trace, debug_op_trace) apply in debug mode "
        "only: ops in strict and fused mode are neither checked nor traced");
  }
  check(tpu_submit(stream, call.release()));
}

void launch_sync(c10::DeviceIndex device, OpCall call) {
  follow_torch_threads();
  note_backward();
  check(tpu_submit_sync(current_core_stream(device), call.release()));
}

} // namespace torch_tpu
