// The calling thread's current device and, per device, its current stream (as torch.cuda keeps
// them). A c10::Stream of the tpu device carries the core stream index as its id.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/Stream.h>

namespace torch_tpu {

// Current device of the calling thread (0 until set).
c10::DeviceIndex current_device();

// Sets the current device after validating it.
void set_current_device(c10::DeviceIndex device);

// Current stream of `device` (-1: the current device) for the calling thread.
c10::Stream current_stream(c10::DeviceIndex device = -1);

// Makes `stream` current for its device; returns the previous current stream of that device.
c10::Stream exchange_stream(const c10::Stream& stream);

// The default stream (index 0) of `device`.
c10::Stream default_stream(c10::DeviceIndex device);

// A stream from the device's pool (torch.tpu.Stream()).
c10::Stream new_stream(c10::DeviceIndex device, int priority);

// Number of chips; 0 when the runtime cannot be used (e.g. in a bad fork). Never throws.
c10::DeviceIndex device_count() noexcept;

} // namespace torch_tpu
