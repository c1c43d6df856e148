// The device allocator PyTorch sees for PrivateUse1: storages get core buffers, whose identity is
// the DataPtr address; statistics and cache control come from the core's caching allocator.
#pragma once

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/StorageImpl.h>

#include "core/include/tpu.h"

namespace torch_tpu {

// Wraps a buffer (taking over the caller's reference) in a DataPtr owned by a storage.
c10::DataPtr wrap_buffer(tpu_buffer* buffer);

// Resizes a tpu storage to `nbytes`, keeping the leading bytes (Storage.resize_, Tensor.resize_).
void resize_storage_bytes(c10::StorageImpl* storage, size_t nbytes);

// Tensor.record_stream: the block of `data` stays out of the pool until `stream` ran the work
// queued so far. A pending buffer (fused mode) gets its memory first, so the record is not lost.
void record_data_on_stream(const c10::DataPtr& data, const c10::Stream& stream);

// Converts the core's statistics for `device` into PyTorch's struct.
c10::CachingDeviceAllocator::DeviceStats device_stats(c10::DeviceIndex device);

} // namespace torch_tpu
