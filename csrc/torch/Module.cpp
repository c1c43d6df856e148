// The torch_tpu._C Python module: thin wrappers the torch.tpu package builds on.
#include <ATen/Context.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/utils/device_lazy_init.h>
#include <torch/csrc/utils/pybind.h>

#include <chrono>
#include <thread>

#include "compile/TpuCompiledRegion.h"
#include "dist/TpuDistBackend.h"
#include "dist/TpuDistHierarchy.h"
#include "runtime/TpuAllocator.h"
#include "runtime/TpuCore.h"
#include "runtime/TpuGenerator.h"
#include "runtime/TpuStreams.h"

#include "core/drivers/host/host.h"
#include "core/drivers/pjrt/pjrt.h"
#include "core/include/tpu.h"

namespace py = pybind11;

namespace torch_tpu {
namespace {

py::tuple stream_tuple(const c10::Stream& s) {
  return py::make_tuple(
      s.id(), s.device_index(), static_cast<int64_t>(c10::DeviceType::PrivateUse1));
}

py::dict op_stats() {
  py::dict native;
  for (int op = 0; op < TPU_OP_COUNT; op++) {
    uint64_t count = tpu_op_native_count(static_cast<tpu_op_id>(op));
    if (count) {
      native[py::str(tpu_op_name(static_cast<tpu_op_id>(op)))] = count;
    }
  }
  py::dict driver_fallback;
  for (int op = 0; op < TPU_OP_COUNT; op++) {
    uint64_t count = tpu_op_driver_fallback_count(static_cast<tpu_op_id>(op));
    if (count) {
      driver_fallback[py::str(tpu_op_name(static_cast<tpu_op_id>(op)))] = count;
    }
  }
  py::dict fallback;
  tpu_op_fallback_counts(
      [](const char* name, uint64_t count, void* ctx) {
        (*static_cast<py::dict*>(ctx))[py::str(name)] = count;
      },
      &fallback);
  py::dict stats;
  stats["native"] = native;
  stats["fallback"] = fallback;
  stats["driver_fallback"] = driver_fallback;
  return stats;
}

tpu_eager_mode parse_mode(const std::string& text) {
  tpu_eager_mode mode = tpu_eager_mode_parse(text.c_str());
  TORCH_CHECK_VALUE(mode != TPU_EAGER_UNSET, "unknown eager mode '", text, "'");
  return mode;
}

py::object mode_or_none(tpu_eager_mode mode) {
  return mode == TPU_EAGER_UNSET ? py::object(py::none()) : py::str(tpu_eager_mode_name(mode));
}

tpu_stream* stream_at(int64_t id, int device) {
  return core_stream(c10::Stream(
      c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device)),
      static_cast<c10::StreamId>(id)));
}

py::dict fused_stats() {
  tpu_fused_stats s{};
  tpu_fused_get_stats(&s);
  py::dict cuts;
  for (int r = 0; r < TPU_CUT_COUNT; r++) {
    if (s.cuts[r]) {
      cuts[py::str(tpu_cut_reason_name(static_cast<tpu_cut_reason>(r)))] = s.cuts[r];
    }
  }
  py::dict stats;
  stats["flushes"] = cuts;
  stats["nodes"] = s.nodes;
  stats["recomputed"] = s.recomputed;
  stats["recomputed_bytes"] = s.recomputed_bytes;
  tpu_graph_run_stats run{};
  if (auto graph_stats = reinterpret_cast<tpu_host_graph_stats_fn>(
          tpu_driver_proc(TPU_HOST_GRAPH_STATS))) {
    graph_stats(&run);
  }
  stats["steps"] = run.steps;
  stats["fused_steps"] = run.fused_steps;
  stats["fused_nodes"] = run.fused_nodes;
  stats["gemm_epilogues"] = run.gemm_epilogues;
  return stats;
}

py::dict compile_cache_stats() {
  tpu_compile_cache_stats s{};
  tpu_compile_cache* cache = tpu_compile_cache_global();
  TORCH_CHECK_WITH(OutOfMemoryError, cache, "cannot create the compile cache");
  tpu_compile_cache_get_stats(cache, &s);
  py::dict stats;
  stats["hits"] = s.hits;
  stats["misses"] = s.misses;
  stats["compiles"] = s.compiles;
  stats["evictions"] = s.evictions;
  stats["entries"] = s.entries;
  stats["capacity"] = s.capacity;
  stats["plan_us"] = s.plan_us;
  stats["compile_us"] = s.compile_us;
  stats["first_compiles"] = s.first_compiles;
  for (int r = 0; r < TPU_RECOMPILE_REASONS; r++) {
    stats[py::str(std::string("recompiles_") +
                  tpu_recompile_reason_name(static_cast<tpu_recompile_reason>(r)))] =
        s.recompiles[r];
  }
  // A compiling driver (PJRT) also reports its executables; the host driver has none.
  auto executable_stats =
      reinterpret_cast<tpu_pjrt_executable_stats_fn>(tpu_driver_proc(TPU_PJRT_EXECUTABLE_STATS));
  if (executable_stats) {
    tpu_executable_stats e{};
    executable_stats(&e);
    stats["executables_compiled"] = e.compiles;
    stats["executables_loaded"] = e.disk_loads;
    stats["executables_stored"] = e.disk_stores;
    stats["executable_compile_us"] = e.compile_us;
    stats["executable_load_us"] = e.load_us;
    stats["executable_runs"] = e.runs;
    stats["executable_run_us"] = e.run_us;
    stats["modules_lowered"] = e.lowerings;
    stats["modules_reused"] = e.program_hits;
    stats["modules_unkeyed"] = e.unkeyed;
    stats["device_copies"] = e.device_copies;
  }
  return stats;
}

py::list env_vars() {
  size_t count = 0;
  const tpu_env_var* vars = tpu_env_list(&count);
  py::list out;
  for (size_t i = 0; i < count; i++) {
    out.append(py::make_tuple(
        vars[i].name, vars[i].default_value, vars[i].meaning, tpu_env_stage_name(vars[i].stage)));
  }
  return out;
}

py::list trace_tensors(const tpu_trace_tensor* tensors, int n) {
  py::list out;
  for (int i = 0; i < n; i++) {
    const tpu_trace_tensor& t = tensors[i];
    out.append(py::make_tuple(
        tpu_dtype_name(t.dtype), std::vector<int64_t>(t.sizes, t.sizes + t.ndim), t.host));
  }
  return out;
}

// Ends one op-trace collection: (op, inputs, outputs, us, ok, line) per op, each tensor as
// (dtype name, sizes, on the host).
py::list end_op_trace(uint64_t mark) {
  struct Records {
    tpu_trace_record** data = nullptr;
    size_t count = 0;
    ~Records() { tpu_op_trace_free(data, count); }
  } records;
  check(tpu_op_trace_end(mark, &records.data, &records.count));
  py::list out;
  for (size_t i = 0; i < records.count; i++) {
    const tpu_trace_record* r = records.data[i];
    char line[2048];
    tpu_op_trace_format(r, line, sizeof line);
    out.append(py::make_tuple(
        tpu_op_name(r->op), trace_tensors(r->tensors, r->n_inputs),
        trace_tensors(r->tensors + r->n_inputs, r->n_outputs), r->us, r->status == TPU_OK,
        std::string(line)));
  }
  return out;
}

} // namespace
} // namespace torch_tpu

PYBIND11_MODULE(_C, m) {
  using namespace torch_tpu;
  m.doc() = "torch_tpu native module";
  // Makes the built-in drivers selectable; TORCH_TPU_DRIVER picks one on first use.
  check(tpu_drivers_register_builtin());
  register_compiled_region(m);
  register_dist(m);
  register_dist_hierarchy(m);

  m.def("_lazy_init", [] {
    torch::utils::register_fork_handler_for_device_init(at::kPrivateUse1);
    at::globalContext().lazyInitDevice(c10::DeviceType::PrivateUse1);
  });
  m.def("_is_in_bad_fork", [] {
    return torch::utils::is_device_in_bad_fork(at::kPrivateUse1) || tpu_runtime_in_bad_fork();
  });
  m.def("_device_count", [] { return static_cast<int>(device_count()); });
  m.def("_current_device", [] { return static_cast<int>(current_device()); });
  m.def("_set_device", [](int device) { set_current_device(static_cast<c10::DeviceIndex>(device)); });
  m.def("_device_properties", [](int device) {
    check(tpu_device_check(device));
    const tpu_device_props* props = tpu_device_props_of(device);
    py::dict d;
    d["name"] = std::string(props->name);
    d["total_memory"] = props->memory_bytes;
    d["kind"] = std::string(tpu_device_kind_name(props->kind));
    d["driver"] = std::string(tpu_driver()->name);
    return d;
  });
  m.def("_synchronize", [](int device) {
    py::gil_scoped_release no_gil;
    synchronize_device(static_cast<c10::DeviceIndex>(device));
  });

  m.def("_current_stream", [](int device) {
    return stream_tuple(current_stream(static_cast<c10::DeviceIndex>(device)));
  });
  m.def("_default_stream", [](int device) {
    return stream_tuple(default_stream(static_cast<c10::DeviceIndex>(device)));
  });
  m.def("_set_stream", [](int64_t id, int device) {
    exchange_stream(c10::Stream(
        c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device), id));
  });

  m.def("_get_default_generator", [](int device) {
    torch::utils::register_fork_handler_for_device_init(at::kPrivateUse1);
    return py::reinterpret_steal<py::object>(
        THPGenerator_initDefaultGenerator(default_generator(static_cast<c10::DeviceIndex>(device))));
  });

  m.def("_memory_summary", [](int device) {
    check(tpu_device_check(device));
    std::string text(8192, '\0');
    tpu_mem_summary(device, text.data(), text.size());
    text.resize(std::strlen(text.c_str()));
    return text;
  });
  m.def("_host_memory_stats", [] {
    tpu_host_stats s{};
    tpu_host_get_stats(&s);
    py::dict d;
    d["allocations"] = s.allocations;
    d["allocated_bytes"] = s.allocated_bytes;
    d["reserved_bytes"] = s.reserved_bytes;
    d["peak_allocated_bytes"] = s.peak_allocated_bytes;
    d["num_host_alloc"] = s.num_host_alloc;
    d["num_host_free"] = s.num_host_free;
    return d;
  });

  m.def("_op_stats", &op_stats);
  m.def("_reset_op_stats", [] { tpu_op_reset_counts(); });
  m.def("_env_vars", &env_vars);
  m.def("_set_nan_check", [](bool on) { tpu_set_nan_check(on); });
  m.def("_nan_check", [] { return tpu_nan_check(); });
  m.def("_set_op_trace", [](bool on) { tpu_set_op_trace(on); });
  m.def("_op_trace", [] { return tpu_op_trace(); });
  m.def("_begin_op_trace", [] { return tpu_op_trace_begin(); });
  m.def("_end_op_trace", &end_op_trace);
  m.def("_launch_blocking", [] { return tpu_launch_blocking(); });
  m.def("_backward_ran", &backward_ran);

  // Test hook: queues work that sleeps on the current stream, so tests can hold later work back
  // deterministically and provoke the hazards of asynchronous execution.
  m.def("_stall_stream", [](int device, double ms) {
    auto* delay = new double(ms);
    check(tpu_stream_submit(
        current_core_stream(static_cast<c10::DeviceIndex>(device)), "stall",
        [](void* ctx) {
          double until = tpu_now_us() + *static_cast<double*>(ctx) * 1000.0;
          while (tpu_now_us() < until) {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
          }
          return TPU_OK;
        },
        [](void* ctx) { delete static_cast<double*>(ctx); }, delay));
  });
  m.def("_set_eager_mode", [](const std::string& mode) {
    check(tpu_fused_flush_device(-1, TPU_CUT_MODE_SWITCH));
    tpu_set_default_eager_mode(parse_mode(mode));
  });
  m.def("_get_eager_mode", [] {
    return tpu_eager_mode_name(tpu_eager_mode_for(nullptr));
  });
  m.def("_thread_eager_mode", [] { return mode_or_none(tpu_thread_eager_mode()); });
  m.def("_set_thread_eager_mode", [](const std::optional<std::string>& mode) {
    check(tpu_fused_flush_device(-1, TPU_CUT_MODE_SWITCH));
    tpu_set_thread_eager_mode(mode ? parse_mode(*mode) : TPU_EAGER_UNSET);
  });
  m.def("_stream_eager_mode", [](int64_t id, int device) {
    return mode_or_none(tpu_stream_eager_mode(stream_at(id, device)));
  });
  m.def("_set_stream_eager_mode", [](int64_t id, int device, const std::optional<std::string>& mode) {
    tpu_stream* s = stream_at(id, device);
    check(tpu_fused_flush(s, TPU_CUT_MODE_SWITCH));
    tpu_stream_set_eager_mode(s, mode ? parse_mode(*mode) : TPU_EAGER_UNSET);
  });
  m.def("_fused_stats", &fused_stats);
  m.def("_reset_fused_stats", [] {
    tpu_fused_reset_stats();
    if (auto reset = reinterpret_cast<tpu_host_reset_graph_stats_fn>(
            tpu_driver_proc(TPU_HOST_RESET_GRAPH_STATS))) {
      reset();
    }
  });
  m.def("_compile_cache_stats", &compile_cache_stats);
  m.def("_reset_compile_cache_stats", [] {
    tpu_compile_cache* cache = tpu_compile_cache_global();
    if (cache) {
      tpu_compile_cache_reset_stats(cache);
    }
    auto reset = reinterpret_cast<tpu_pjrt_reset_executable_stats_fn>(
        tpu_driver_proc(TPU_PJRT_RESET_EXECUTABLE_STATS));
    if (reset) {
      reset();
    }
  });
  m.def("_dump_pending_graph", [](int device, bool dot) {
    char* text = tpu_fused_dump(current_core_stream(static_cast<c10::DeviceIndex>(device)), dot);
    TORCH_CHECK_WITH(OutOfMemoryError, text, "cannot dump the pending graph");
    std::string out(text);
    std::free(text);
    return out;
  });
  m.def("_is_materialized", [](const at::Tensor& t) {
    TORCH_CHECK(t.is_privateuseone(), "expected a tpu tensor, got ", t.device());
    return tpu_buffer_is_live(buffer_of(t));
  });
}
