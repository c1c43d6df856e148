// The device allocator PyTorch sees for PrivateUse1: storages get core buffers, whose identity is
// the DataPtr address; statistics and cache control come from the core's caching allocator.
#pragma once

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/StorageImpl.h>

extern "C" {
#include "core/tensor/tpu_buffer.h"
}

namespace torch_tpu {

// Wraps a buffer (taking over the caller's reference) in a DataPtr owned by a storage.
c10::DataPtr wrap_buffer(tpu_buffer* buffer);

// Resizes a tpu storage to `nbytes`, keeping the leading bytes (Storage.resize_, Tensor.resize_).
void resize_storage_bytes(c10::StorageImpl* storage, size_t nbytes);

// Converts the core's statistics for `device` into PyTorch's struct.
c10::CachingDeviceAllocator::DeviceStats device_stats(c10::DeviceIndex device);

} // namespace torch_tpu
