// PrivateUse1HooksInterface: every hook overridden, since the defaults throw.
#include <ATen/core/CachingHostAllocator.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>

#include "runtime/TpuAllocator.h"
#include "runtime/TpuCore.h"
#include "runtime/TpuGenerator.h"
#include "runtime/TpuStreams.h"

#include "core/include/tpu.h"

namespace torch_tpu {
namespace {

struct TpuHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override {
    return true;
  }

  bool isAvailable() const override {
    return device_count() > 0;
  }

  bool hasPrimaryContext(c10::DeviceIndex /*device*/) const override {
    return true;
  }

  void init() const override {
    check(tpu_device_check(current_device()));
  }

  c10::DeviceIndex deviceCount() const override {
    return device_count();
  }

  void setCurrentDevice(c10::DeviceIndex device) const override {
    set_current_device(device);
  }

  c10::DeviceIndex getCurrentDevice() const override {
    return current_device();
  }

  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    c10::DeviceIndex previous = current_device();
    set_current_device(device);
    return previous;
  }

  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    return exchangeDevice(device);
  }

  bool isPinnedPtr(const void* data) const override {
    return tpu_host_is_pinned(data);
  }

  at::Allocator* getPinnedMemoryAllocator() const override {
    return at::getHostAllocator(at::kPrivateUse1);
  }

  at::Device getDeviceFromPtr(void* data) const override {
    int device = tpu_buffer_device_of(data);
    TORCH_CHECK(device >= 0, "pointer ", data, " is not tpu memory");
    return at::Device(at::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device));
  }

  const at::Generator& getDefaultGenerator(c10::DeviceIndex device) const override {
    return default_generator(device);
  }

  at::Generator getNewGenerator(c10::DeviceIndex device) const override {
    return new_generator(device);
  }

  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t nbytes) const override {
    resize_storage_bytes(storage.unsafeGetStorageImpl(), nbytes);
  }
};

// Registered when the extension loads: it only stores a pointer, so nothing starts yet.
const bool registered = [] {
  at::RegisterPrivateUse1HooksInterface(new TpuHooks());
  return true;
}();

} // namespace
} // namespace torch_tpu
