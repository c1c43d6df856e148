// A compiled graph is one graph of fused mode (docs/ARCHITECTURE.md, torch.compile): whatever eager
// mode is around it, its ops are deferred, the open graph is cut before and after it (reason
// "compiled"), and the node cap is lifted so that a long graph is not cut in the middle. In debug
// mode the graph's errors still raise at the call: the stream is synchronized after it.
#include "compile/TpuCompiledRegion.h"

#include <torch/csrc/utils/pybind.h>

#include "runtime/TpuCore.h"

#include "core/include/tpu.h"

namespace py = pybind11;

namespace torch_tpu {
namespace {

// Nodes a compiled graph may hold before it is cut all the same (a bound on planning's memory).
constexpr int kCompiledGraphCap = 1 << 20;

class CompiledRegion {
 public:
  explicit CompiledRegion(c10::DeviceIndex device) : device_(device) {}

  void enter() {
    stream_ = current_core_stream(device_);
    around_ = eager_mode_for(stream_);
    thread_mode_ = thread_eager_mode();
    stream_mode_ = tpu_stream_eager_mode(stream_);
    check(tpu_fused_flush(stream_, TPU_CUT_COMPILED));
    set_thread_eager_mode(TPU_EAGER_FUSED);
    tpu_stream_set_eager_mode(stream_, TPU_EAGER_FUSED);
    tpu_fused_set_graph_cap(stream_, kCompiledGraphCap);
  }

  // Cuts the graph and restores the modes; the cut's error (planning, memory) raises after that,
  // unless the block itself raised.
  void exit(bool raised) {
    tpu_status st = tpu_fused_flush(stream_, TPU_CUT_COMPILED);
    tpu_fused_set_graph_cap(stream_, 0);
    tpu_stream_set_eager_mode(stream_, stream_mode_);
    set_thread_eager_mode(thread_mode_);
    if (raised) {
      return;
    }
    check(st);
    if (around_ == TPU_EAGER_DEBUG) {
      py::gil_scoped_release no_gil;
      check(tpu_stream_synchronize(stream_));
    }
  }

 private:
  c10::DeviceIndex device_;
  tpu_stream* stream_ = nullptr;
  tpu_eager_mode around_ = TPU_EAGER_UNSET;
  tpu_eager_mode thread_mode_ = TPU_EAGER_UNSET;
  tpu_eager_mode stream_mode_ = TPU_EAGER_UNSET;
};

} // namespace

void register_compiled_region(py::module& m) {
  py::class_<CompiledRegion>(m, "_CompiledRegion")
      .def(py::init<c10::DeviceIndex>())
      .def("__enter__", &CompiledRegion::enter)
      .def("__exit__", [](CompiledRegion& self, const py::object& type, const py::object&,
                          const py::object&) {
        self.exit(!type.is_none());
        return false;
      });
}

} // namespace torch_tpu
