// A compiled graph is one graph of fused mode (docs/ARCHITECTURE.md, torch.compile): whatever eager
// mode is around it, its ops are deferred, the open graph is cut before and after it (reason
// "compiled"), and the node cap is lifted so that a long graph is not cut in the middle. In debug
// mode the graph's errors still raise at the call: the stream is synchronized after it. A capture
// (TpuCapture.h) is usable only when every op call it noted is a node of that one graph: no cut
// inside, nothing launched elsewhere.
#include "compile/TpuCompiledRegion.h"

#include <torch/csrc/utils/pybind.h>

#include <optional>

#include "compile/TpuReplay.h"
#include "runtime/TpuCore.h"

namespace py = pybind11;

namespace torch_tpu {
namespace {

// Nodes a compiled graph may hold before it is cut all the same (a bound on planning's memory).
constexpr int kCompiledGraphCap = 1 << 20;

uint64_t total_cuts() {
  tpu_fused_stats stats{};
  tpu_fused_get_stats(&stats);
  uint64_t total = 0;
  for (uint64_t n : stats.cuts) {
    total += n;
  }
  return total;
}

// The Python context manager: a RegionScope, and the capture of the call when asked for.
class CompiledRegion {
 public:
  CompiledRegion(c10::DeviceIndex device, std::optional<py::list> inputs)
      : device_(device), inputs_(std::move(inputs)) {}

  ~CompiledRegion() {
    for (tpu_buffer* b : input_buffers_) {
      if (b) {
        tpu_buffer_release(b);
      }
    }
  }

  void enter() {
    scope_.emplace(device_);
    if (!inputs_) {
      return;
    }
    if (!tpu_env_flag("TORCH_TPU_COMPILE_REPLAY", true)) {
      why_ = "TORCH_TPU_COMPILE_REPLAY=0";
      return;
    }
    log_ = std::make_unique<CaptureLog>(scope_->stream());
    log_->unusable = read_inputs(*inputs_, device_, &layouts_, &input_buffers_);
    for (tpu_buffer* b : input_buffers_) {
      if (b) {
        tpu_buffer_retain(b); // so that no buffer made meanwhile takes its address
      }
    }
    inputs_.reset();
    cuts_ = total_cuts();
    before_ = set_active_capture(log_.get());
  }

  void exit(bool raised) {
    if (!scope_) {
      return;
    }
    if (log_) {
      set_active_capture(before_);
      if (raised) {
        log_->unusable = "the call raised";
      } else if (!log_->unusable && log_->drawn) {
        log_->unusable = "random numbers drawn for no op";
      } else if (!log_->unusable &&
                 (tpu_fused_pending_nodes(scope_->stream()) !=
                      static_cast<int>(log_->calls.size()) ||
                  total_cuts() != cuts_)) {
        log_->unusable = "the graph was cut inside the call";
      }
    }
    scope_->exit(raised); // closed even when it raises the cut's error
    scope_.reset();
  }

  // After the block: the capture as a _CompiledReplay of the call that returned `outputs`, or
  // None (`why` then says why). Once only.
  py::object replay(const py::handle& outputs) {
    if (!log_) {
      why_ = why_.empty() ? "nothing was captured" : why_;
      return py::none();
    }
    std::unique_ptr<CaptureLog> log = std::move(log_);
    std::unique_ptr<Replay> r =
        Replay::build(*log, std::move(layouts_), input_buffers_, outputs, device_, &why_);
    return r ? py::cast(std::move(r)) : py::none();
  }

  const std::string& why() const {
    return why_;
  }

 private:
  c10::DeviceIndex device_;
  std::optional<py::list> inputs_;
  std::optional<RegionScope> scope_;
  std::unique_ptr<CaptureLog> log_;
  CaptureLog* before_ = nullptr;
  std::vector<InputLayout> layouts_;
  std::vector<tpu_buffer*> input_buffers_; // retained; null for a number
  uint64_t cuts_ = 0;
  std::string why_;
};

} // namespace

RegionScope::RegionScope(c10::DeviceIndex device) {
  stream_ = current_core_stream(device);
  blocking_ = tpu_submit_blocks(stream_);
  thread_mode_ = tpu_thread_eager_mode();
  stream_mode_ = tpu_stream_eager_mode(stream_);
  check(tpu_fused_flush(stream_, TPU_CUT_COMPILED));
  tpu_set_thread_eager_mode(TPU_EAGER_FUSED);
  tpu_stream_set_eager_mode(stream_, TPU_EAGER_FUSED);
  tpu_fused_set_graph_cap(stream_, kCompiledGraphCap);
  open_ = true;
}

RegionScope::~RegionScope() {
  if (open_) {
    exit(/*raised=*/true);
  }
}

void RegionScope::exit(bool raised) {
  open_ = false;
  tpu_status st = tpu_fused_flush(stream_, TPU_CUT_COMPILED);
  tpu_fused_set_graph_cap(stream_, 0);
  tpu_stream_set_eager_mode(stream_, stream_mode_);
  tpu_set_thread_eager_mode(thread_mode_);
  if (raised) {
    return;
  }
  check(st);
  if (blocking_) {
    py::gil_scoped_release no_gil;
    check(tpu_stream_synchronize(stream_));
  }
}

void register_compiled_region(py::module& m) {
  py::class_<CompiledRegion>(m, "_CompiledRegion")
      .def(py::init<c10::DeviceIndex, std::optional<py::list>>(), py::arg("device"),
           py::arg("inputs") = py::none())
      .def("__enter__", &CompiledRegion::enter)
      .def("__exit__",
           [](CompiledRegion& self, const py::object& type, const py::object&, const py::object&) {
             self.exit(!type.is_none());
             return false;
           })
      .def("replay", &CompiledRegion::replay)
      .def_property_readonly("why", &CompiledRegion::why);
  register_replay(m);
}

} // namespace torch_tpu
