#include "runtime/TpuStreams.h"

#include <array>

#include "runtime/TpuCore.h"

#include "core/include/tpu.h"

namespace torch_tpu {

namespace {
thread_local c10::DeviceIndex tls_device = 0;
thread_local std::array<c10::StreamId, TPU_MAX_DEVICES> tls_streams{};

c10::DeviceIndex resolve(c10::DeviceIndex device) {
  return device < 0 ? tls_device : device;
}
} // namespace

c10::DeviceIndex device_count() noexcept {
  if (tpu_runtime_in_bad_fork()) {
    return 0;
  }
  return static_cast<c10::DeviceIndex>(tpu_device_count());
}

c10::DeviceIndex current_device() {
  return tls_device;
}

void set_current_device(c10::DeviceIndex device) {
  check(tpu_device_check(device));
  tls_device = device;
}

c10::Stream current_stream(c10::DeviceIndex device) {
  device = resolve(device);
  check(tpu_device_check(device));
  return c10::Stream(
      c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device), tls_streams[device]);
}

c10::Stream exchange_stream(const c10::Stream& stream) {
  c10::DeviceIndex device = stream.device_index();
  c10::Stream previous = current_stream(device);
  core_stream(stream); // validates the id
  tls_streams[device] = stream.id();
  return previous;
}

c10::Stream default_stream(c10::DeviceIndex device) {
  device = resolve(device);
  check(tpu_device_check(device));
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device), 0);
}

c10::Stream new_stream(c10::DeviceIndex device, int priority) {
  device = resolve(device);
  int index = 0;
  check(tpu_stream_create(device, priority, &index));
  return c10::Stream(
      c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device), index);
}

} // namespace torch_tpu
