// The run of a torch.compile graph (src/torch_tpu/compile.py): one fused graph per call, recorded
// from the graph's Python code or replayed from a capture of its first call (TpuReplay.h).
#pragma once

#include <c10/core/Device.h>
#include <pybind11/pybind11.h>

#include "core/include/tpu.h"

namespace torch_tpu {

// While it lives, the calling thread records its ops on the current stream of `device` as one
// fused graph, cut when it starts and when exit() is called (the destructor exits as after an
// error when exit() was not).
class RegionScope {
 public:
  explicit RegionScope(c10::DeviceIndex device);
  ~RegionScope();
  RegionScope(const RegionScope&) = delete;
  RegionScope& operator=(const RegionScope&) = delete;

  // Cuts the graph and restores the modes; then raises the cut's error, unless `raised`.
  void exit(bool raised = false);

  tpu_stream* stream() const {
    return stream_;
  }

 private:
  tpu_stream* stream_ = nullptr;
  bool blocking_ = false; // work around the region completes at each call (debug mode)
  tpu_eager_mode thread_mode_ = TPU_EAGER_UNSET;
  tpu_eager_mode stream_mode_ = TPU_EAGER_UNSET;
  bool open_ = false;
};

// Adds `_CompiledRegion(device, inputs=None)`, a context manager around a compiled graph's Python
// code: its ops are recorded as one fused graph; given the graph's input list, it also captures
// the call, and `replay(outputs)` then gives a `_CompiledReplay` (TpuReplay.h) or None.
void register_compiled_region(pybind11::module& m);

} // namespace torch_tpu
