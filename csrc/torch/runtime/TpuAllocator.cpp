#include "runtime/TpuAllocator.h"

#include <c10/core/DeviceGuard.h>


#include "compile/TpuCapture.h"
#include "runtime/TpuCore.h"
#include "runtime/TpuStreams.h"

#include "core/include/tpu.h"

namespace torch_tpu {

namespace {

void release_buffer(void* ctx) {
  tpu_buffer_release_storage(static_cast<tpu_buffer*>(ctx));
}

c10::CachingAllocator::Stat to_stat(const tpu_mem_stat& s) {
  c10::CachingAllocator::Stat stat;
  stat.current = s.current;
  stat.peak = s.peak;
  stat.allocated = s.allocated;
  stat.freed = s.freed;
  return stat;
}

void to_stat_array(c10::CachingAllocator::StatArray& out, const tpu_mem_stat in[TPU_POOL_COUNT]) {
  for (int pool = 0; pool < TPU_POOL_COUNT; pool++) {
    out[pool] = to_stat(in[pool]);
  }
}

struct TpuDeviceAllocator final : public c10::DeviceAllocator {
  c10::DataPtr allocate(size_t nbytes) override {
    c10::DeviceIndex device = current_device();
    c10::Stream stream = current_stream(device);
    tpu_buffer* buffer = nullptr;
    check(tpu_submit_buffer(core_stream(stream), nbytes, &buffer));
    capture_allocation(buffer);
    return wrap_buffer(buffer);
  }

  c10::DeleterFnPtr raw_deleter() const override {
    return nullptr;
  }

  // PyTorch calls this to materialize copy-on-write storages, which tpu does not support: device
  // memory is only written by ordered work on a stream, never by a host memcpy.
  void copy_data(void* /*dest*/, const void* /*src*/, std::size_t /*count*/) const override {
    TORCH_CHECK_NOT_IMPLEMENTED(false, "copy-on-write storages are not supported on tpu");
  }

  bool initialized() override {
    return true;
  }

  void emptyCache(c10::MempoolId_t /*mempool_id*/) override {
    for (int device = 0; device < tpu_device_count(); device++) {
      check(tpu_mem_empty_cache(device));
    }
  }

  void recordStream(const c10::DataPtr& ptr, c10::Stream stream) override {
    record_data_on_stream(ptr, stream);
  }

  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    return device_stats(device);
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    check(tpu_device_check(device));
    tpu_mem_reset_accumulated(device);
  }

  void resetPeakStats(c10::DeviceIndex device) override {
    check(tpu_device_check(device));
    tpu_mem_reset_peak(device);
  }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    check(tpu_device_check(device));
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    tpu_mem_info(device, &free_bytes, &total_bytes);
    return {free_bytes, total_bytes};
  }
};

TpuDeviceAllocator global_allocator;

} // namespace

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &global_allocator)

void record_data_on_stream(const c10::DataPtr& data, const c10::Stream& stream) {
  auto* buffer = static_cast<tpu_buffer*>(data.get_context());
  if (!buffer) {
    return;
  }
  capture_unusable("record_stream");
  // Memory a pending buffer got later would not know of the stream's use, and could be reused
  // while that stream still reads it.
  if (!tpu_buffer_is_live(buffer)) {
    check(tpu_buffer_materialize(buffer));
  }
  tpu_mem_record_stream(tpu_buffer_memory(buffer), static_cast<int>(stream.id()));
}

c10::DataPtr wrap_buffer(tpu_buffer* buffer) {
  return c10::DataPtr(
      tpu_buffer_identity(buffer),
      buffer,
      &release_buffer,
      c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(tpu_buffer_device(buffer))));
}

void resize_storage_bytes(c10::StorageImpl* storage, size_t nbytes) {
  TORCH_CHECK(storage->resizable(), "Trying to resize storage that is not resizable");
  c10::DeviceIndex device = storage->device().index();
  c10::DeviceGuard guard(storage->device());
  c10::DataPtr fresh = global_allocator.allocate(nbytes);
  size_t keep = std::min(nbytes, storage->nbytes());
  auto* old_buffer = static_cast<tpu_buffer*>(storage->data_ptr().get_context());
  if (keep > 0 && old_buffer) {
    OpCall call = new_call(TPU_OP_COPY, 1, 1);
    for (int i = 0; i < 2; i++) {
      tpu_tensor& t = call->tensors[i];
      t.buf = i == 0 ? old_buffer : static_cast<tpu_buffer*>(fresh.get_context());
      t.dtype = TPU_UINT8;
      t.ndim = 1;
      t.sizes[0] = static_cast<int64_t>(keep);
      t.strides[0] = 1;
    }
    launch(device, std::move(call));
  }
  storage->set_data_ptr_noswap(std::move(fresh));
  storage->set_nbytes(nbytes);
}

c10::CachingDeviceAllocator::DeviceStats device_stats(c10::DeviceIndex device) {
  check(tpu_device_check(device));
  tpu_mem_stats s{};
  tpu_mem_get_stats(device, &s);
  c10::CachingDeviceAllocator::DeviceStats stats;
  to_stat_array(stats.allocation, s.allocation);
  to_stat_array(stats.segment, s.segment);
  to_stat_array(stats.active, s.active);
  to_stat_array(stats.inactive_split, s.inactive_split);
  to_stat_array(stats.allocated_bytes, s.allocated_bytes);
  to_stat_array(stats.reserved_bytes, s.reserved_bytes);
  to_stat_array(stats.active_bytes, s.active_bytes);
  to_stat_array(stats.inactive_split_bytes, s.inactive_split_bytes);
  to_stat_array(stats.requested_bytes, s.requested_bytes);
  stats.num_alloc_retries = s.num_alloc_retries;
  stats.num_ooms = s.num_ooms;
  stats.oversize_allocations = to_stat(s.oversize_allocations);
  stats.oversize_segments = to_stat(s.oversize_segments);
  stats.num_sync_all_streams = s.num_sync_all_streams;
  stats.num_device_alloc = s.num_device_alloc;
  stats.num_device_free = s.num_device_free;
  stats.max_split_size = s.max_split_size;
  return stats;
}

} // namespace torch_tpu
