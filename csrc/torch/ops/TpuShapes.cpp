// Allocation, views, resize_ and set_: metadata only, no kernel touches memory here (except the
// ordered copy when resize_ grows a storage). Views share their base's buffer, as on CUDA.
#include <ATen/EmptyTensor.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <ATen/TensorUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <torch/library.h>

#include "runtime/TpuAllocator.h"
#include "runtime/TpuCore.h"

namespace torch_tpu {
namespace {

constexpr c10::DispatchKeySet kTpuKeys(c10::DispatchKey::PrivateUse1);

void check_factory_args(
    c10::Device device,
    c10::ScalarType dtype,
    std::optional<c10::Layout> layout,
    std::optional<bool> pin_memory) {
  TORCH_CHECK(device.is_privateuseone(), "expected a tpu device, got ", device);
  TORCH_CHECK_NOT_IMPLEMENTED(
      c10::layout_or_default(layout) == c10::Layout::Strided,
      "only strided tensors are supported on tpu, got layout ", c10::layout_or_default(layout));
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory), "Only dense CPU tensors can be pinned");
  TORCH_CHECK_TYPE(is_storable(dtype), "tpu tensors do not support dtype ", dtype);
}

at::Tensor empty_memory_format(
    at::IntArrayRef size,
    std::optional<c10::ScalarType> dtype,
    std::optional<c10::Layout> layout,
    std::optional<c10::Device> device,
    std::optional<bool> pin_memory,
    std::optional<c10::MemoryFormat> memory_format) {
  auto dev = c10::device_or_default(device);
  auto type = c10::dtype_or_default(dtype);
  check_factory_args(dev, type, layout, pin_memory);
  c10::DeviceGuard guard(dev);
  return at::detail::empty_generic(
      size, c10::GetAllocator(c10::DeviceType::PrivateUse1), kTpuKeys, type, memory_format);
}

at::Tensor empty_strided(
    at::IntArrayRef size,
    at::IntArrayRef stride,
    std::optional<c10::ScalarType> dtype,
    std::optional<c10::Layout> layout,
    std::optional<c10::Device> device,
    std::optional<bool> pin_memory) {
  auto dev = c10::device_or_default(device);
  auto type = c10::dtype_or_default(dtype);
  check_factory_args(dev, type, layout, pin_memory);
  c10::DeviceGuard guard(dev);
  return at::detail::empty_strided_generic(
      size, stride, c10::GetAllocator(c10::DeviceType::PrivateUse1), kTpuKeys, type);
}

// Like CUDA's resize_impl_cuda_: set the sizes, then grow the storage if the view needs more.
void resize_impl(
    at::TensorImpl* self,
    at::IntArrayRef size,
    at::OptionalIntArrayRef stride) {
  if (self->sizes() == size && (!stride || self->strides() == stride.value())) {
    return;
  }
  const auto itemsize = self->dtype().itemsize();
  const auto offset = self->storage_offset();
  size_t needed = 0;
  if (stride) {
    self->set_sizes_and_strides(size, *stride);
    needed = at::detail::computeStorageNbytes(size, *stride, itemsize, offset);
  } else {
    self->set_sizes_contiguous(size);
    needed = at::detail::computeStorageNbytesContiguous(size, itemsize, offset);
  }
  if (self->numel() > 0 && needed > self->storage().nbytes()) {
    resize_storage_bytes(self->storage().unsafeGetStorageImpl(), needed);
  }
}

const at::Tensor& resize_(
    const at::Tensor& self,
    at::IntArrayRef size,
    std::optional<c10::MemoryFormat> memory_format) {
  for (auto s : size) {
    TORCH_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", size);
  }
  resize_impl(self.unsafeGetTensorImpl(), size, std::nullopt);
  if (memory_format) {
    TORCH_CHECK(
        *memory_format != c10::MemoryFormat::Preserve,
        "Unsupported memory format", *memory_format);
    self.unsafeGetTensorImpl()->empty_tensor_restride(*memory_format);
  }
  return self;
}

at::Tensor& set_storage(
    at::Tensor& self,
    c10::Storage source,
    int64_t storage_offset,
    at::IntArrayRef size,
    at::IntArrayRef stride) {
  at::native::checkSetStorage(self, source, storage_offset, size, stride);
  self.unsafeGetTensorImpl()->set_storage_offset(storage_offset);
  at::OptionalIntArrayRef stride_opt =
      stride.data() != nullptr ? at::OptionalIntArrayRef(stride) : std::nullopt;
  resize_impl(self.unsafeGetTensorImpl(), size, stride_opt);
  return self;
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source) {
  int64_t numel = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return set_storage(self, std::move(source), 0, {numel}, {});
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  if (self.is_same(source)) {
    return self;
  }
  return set_storage(
      self, source.storage(), source.storage_offset(), source.sizes(), source.strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::Storage storage(
      c10::Storage::use_byte_size_t(),
      0,
      c10::GetAllocator(c10::DeviceType::PrivateUse1),
      /*resizable=*/true);
  return set_storage(self, std::move(storage), 0, {0}, {});
}

// Tensor.record_stream: the block stays out of the pool until `stream` ran the work queued so far.
void record_stream(at::Tensor& self, c10::Stream stream) {
  c10::impl::getDeviceGuardImpl(c10::DeviceType::PrivateUse1)
      ->recordDataPtrOnStream(self.storage().data_ptr(), stream);
}

// Lets Module.to() swap a parameter's data between CPU and tpu in place, as it does for CUDA, so
// parameters keep their identity and tied weights stay tied.
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  auto dense = [](const at::Tensor& t) {
    return t.layout() == c10::Layout::Strided && (t.is_cpu() || t.is_privateuseone());
  };
  return dense(self) && dense(from);
}

} // namespace

// A CompositeImplicitAutograd op: overriding it for PrivateUse1 needs the autograd key too (it
// returns a bool, so there is nothing to differentiate).
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(has_compatible_shallow_copy_type));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(has_compatible_shallow_copy_type));
  m.impl("record_stream", TORCH_FN(record_stream));
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("as_strided", TORCH_FN(at::native::as_strided_tensorimpl));
  m.impl("view", TORCH_FN(at::native::view));
  m.impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
  m.impl("unfold", TORCH_FN(at::native::unfold));
  m.impl("view_as_real", TORCH_FN(at::native::view_as_real));
  m.impl("view_as_complex", TORCH_FN(at::native::view_as_complex));
  m.impl("resize_", TORCH_FN(resize_));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_storage));
  m.impl("set_.source_Storage", TORCH_FN(set_source_storage));
  m.impl("set_.source_Tensor", TORCH_FN(set_source_tensor));
  m.impl("set_", TORCH_FN(set_empty));
}

} // namespace torch_tpu
