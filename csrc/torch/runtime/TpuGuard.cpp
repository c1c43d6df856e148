// DeviceGuardImplInterface for PrivateUse1: devices, streams and events as c10 sees them, each
// forwarded to the core.
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "compile/TpuCapture.h"
#include "runtime/TpuAllocator.h"
#include "runtime/TpuCore.h"
#include "runtime/TpuStreams.h"

#include "core/include/tpu.h"

namespace torch_tpu {
namespace {

constexpr c10::DeviceType kTpu = c10::DeviceType::PrivateUse1;

tpu_event* ensure_event(void** event, c10::EventFlag flag) {
  if (!*event) {
    tpu_event* created = nullptr;
    check(tpu_event_create(flag == c10::EventFlag::BACKEND_DEFAULT, &created));
    *event = created;
  }
  return static_cast<tpu_event*>(*event);
}

struct TpuGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override {
    return kTpu;
  }

  c10::Device exchangeDevice(c10::Device device) const override {
    c10::Device previous = getDevice();
    if (device.index() != previous.index()) {
      set_current_device(device.index());
    }
    return previous;
  }

  c10::Device getDevice() const override {
    return c10::Device(kTpu, current_device());
  }

  void setDevice(c10::Device device) const override {
    set_current_device(device.index());
  }

  void uncheckedSetDevice(c10::Device device) const noexcept override {
    try {
      set_current_device(device.index());
    } catch (...) {
      // Restoring a device that was valid before cannot fail; nothing to do otherwise.
    }
  }

  c10::Stream getStream(c10::Device device) const override {
    return current_stream(device.index());
  }

  c10::Stream getDefaultStream(c10::Device device) const override {
    return default_stream(device.index());
  }

  c10::Stream getStreamFromGlobalPool(c10::Device device, bool high_priority) const override {
    return new_stream(device.index(), high_priority ? -1 : 0);
  }

  c10::Stream getNewStream(c10::Device device, int priority) const override {
    return new_stream(device.index(), priority);
  }

  c10::Stream exchangeStream(c10::Stream stream) const override {
    return exchange_stream(stream);
  }

  c10::DeviceIndex deviceCount() const noexcept override {
    return device_count();
  }

  c10::DeviceCapability getDeviceCapability(c10::Device /*device*/) const override {
    return c10::DeviceCapability();
  }

  bool queryStream(const c10::Stream& stream) const override {
    tpu_stream* s = core_stream(stream);
    check(tpu_fused_flush(s, TPU_CUT_QUERY));
    return tpu_stream_query(s);
  }

  void synchronizeStream(const c10::Stream& stream) const override {
    tpu_stream* s = core_stream(stream);
    check(tpu_fused_flush(s, TPU_CUT_SYNC));
    check(tpu_stream_synchronize(s));
  }

  void synchronizeDevice(const c10::DeviceIndex device) const override {
    synchronize_device(device < 0 ? current_device() : device);
  }

  void record(
      void** event,
      const c10::Stream& stream,
      const c10::DeviceIndex device,
      const c10::EventFlag flag) const override {
    TORCH_CHECK(
        device == -1 || device == stream.device_index(),
        "Event device index ", device, " does not match recording stream's device index ",
        stream.device_index(), ".");
    tpu_stream* s = core_stream(stream);
    capture_unusable("an event record");
    check(tpu_fused_flush(s, TPU_CUT_EVENT));
    check(tpu_event_record(ensure_event(event, flag), s));
  }

  void block(void* event, const c10::Stream& stream) const override {
    if (event) {
      tpu_stream* s = core_stream(stream);
      capture_unusable("a wait for an event");
      check(tpu_fused_flush(s, TPU_CUT_WAIT_STREAM));
      check(tpu_event_block(static_cast<tpu_event*>(event), s));
    }
  }

  bool queryEvent(void* event) const override {
    return !event || tpu_event_query(static_cast<tpu_event*>(event));
  }

  void synchronizeEvent(void* event) const override {
    if (event) {
      check(tpu_event_synchronize(static_cast<tpu_event*>(event)));
    }
  }

  void destroyEvent(void* event, const c10::DeviceIndex /*device*/) const noexcept override {
    tpu_event_destroy(static_cast<tpu_event*>(event));
  }

  double elapsedTime(void* start, void* end, const c10::DeviceIndex /*device*/) const override {
    TORCH_CHECK(start && end, "Both events must be recorded before calculating elapsed time.");
    double ms = 0;
    check(tpu_event_elapsed_ms(static_cast<tpu_event*>(start), static_cast<tpu_event*>(end), &ms));
    return ms;
  }

  void recordDataPtrOnStream(const c10::DataPtr& data, const c10::Stream& stream) const override {
    record_data_on_stream(data, stream);
  }
};

} // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, TpuGuardImpl);

} // namespace torch_tpu
