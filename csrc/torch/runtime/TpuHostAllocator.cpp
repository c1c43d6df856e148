// Pinned host memory for PrivateUse1 (Tensor.pin_memory(), DataLoader's pin thread): the core's
// pinned allocator, which keeps a block from reuse until the copies that use it have run.
#include <ATen/core/CachingHostAllocator.h>

#include "runtime/TpuCore.h"

#include "core/include/tpu.h"

namespace torch_tpu {
namespace {

void free_pinned(void* ptr) {
  tpu_host_free(ptr);
}

struct TpuHostAllocator final : public at::HostAllocator {
  at::DataPtr allocate(size_t nbytes) override {
    void* ptr = nullptr;
    check(tpu_host_alloc(nbytes, &ptr));
    return {ptr, ptr, &free_pinned, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override {
    return &free_pinned;
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }

  bool record_event(void* ptr, void* /*ctx*/, c10::Stream stream) override {
    return tpu_host_record_use(ptr, stream.device_index(), static_cast<int>(stream.id()));
  }

  void empty_cache() override {
    tpu_host_empty_cache();
  }

  at::HostStats get_stats() override {
    tpu_host_stats s{};
    tpu_host_get_stats(&s);
    at::HostStats stats;
    stats.active_requests.current = s.allocations;
    stats.active_bytes.current = s.allocated_bytes;
    stats.active_bytes.peak = s.peak_allocated_bytes;
    stats.allocated_bytes.current = s.reserved_bytes;
    stats.num_host_alloc = s.num_host_alloc;
    stats.num_host_free = s.num_host_free;
    return stats;
  }

  void reset_accumulated_stats() override {}

  void reset_peak_stats() override {
    tpu_host_reset_peak();
  }
};

TpuHostAllocator host_allocator;

} // namespace

REGISTER_HOST_ALLOCATOR(at::kPrivateUse1, &host_allocator)

} // namespace torch_tpu
