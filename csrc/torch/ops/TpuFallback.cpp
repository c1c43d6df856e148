// The one boxed fallback for ops without a native kernel: it checks devices as CUDA would, counts
// the call in the core, mirrors the arguments on the host (TpuHostMirror.h; the copy synchronizes
// the stream), runs the CPU kernel, writes mutated inputs back (ordered after the queued work) and
// returns outputs on the device. In-place and out= semantics and the aliasing of mutable outputs are kept; view ops
// never get here, they all have native kernels. TORCH_TPU_CPU_FALLBACK=0 turns it into an error.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/_copy_from_and_resize.h>
#include <torch/library.h>

#include "ops/TpuHostMirror.h"
#include "ops/TpuOps.h"
#include "runtime/TpuCore.h"
#include "runtime/TpuGenerator.h"
#include "runtime/TpuStreams.h"

#include "core/include/tpu.h"

namespace torch_tpu {

void begin_host_fallback(const char* name) {
  static const bool enabled = tpu_env_flag("TORCH_TPU_CPU_FALLBACK", true);
  TORCH_CHECK_NOT_IMPLEMENTED(
      enabled, "The operator '", name, "' is not currently implemented for the tpu device, and "
      "the CPU fallback is off (TORCH_TPU_CPU_FALLBACK=0).");
  tpu_op_count_fallback(name);
  if (tpu_submit_blocks(current_core_stream(current_device()))) {
    // Debug mode says where time goes to the host; Python shows it once per call site.
    TORCH_WARN("tpu op '", name, "' has no native kernel: it runs on the CPU (fallback)");
  }
  // The CPU reads and writes device tensors through synchronous copies: cut every open graph so
  // the fallback sees (and is ordered after) all work queued before it.
  check(tpu_fused_flush_device(-1, TPU_CUT_FALLBACK));
}

namespace {

std::string full_name(const c10::OperatorHandle& op) {
  const auto& name = op.schema().operator_name();
  return name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
}

// Index tensors may live on the CPU, as on CUDA (x_tpu[cpu_index]); other arguments may not.
bool accepts_host_tensors(const c10::Argument& arg) {
  return arg.name() == "indices";
}

// Every tensor in the arguments, lists included.
template <typename Fn>
void for_each_tensor(const c10::IValue& value, Fn&& fn) {
  if (value.isTensor()) {
    fn(value.toTensor());
  } else if (value.isTensorList()) {
    for (const at::Tensor& t : value.toTensorVector()) {
      fn(t);
    }
  } else if (value.isOptionalTensorList()) {
    for (const auto& t : value.toOptionalTensorVector()) {
      if (t.has_value()) {
        fn(*t);
      }
    }
  }
}

// The tpu device the op runs for, after checking all tensors agree the way CUDA kernels check.
c10::Device target_device(
    const std::string& name, const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args) {
  std::optional<c10::Device> tpu;
  std::optional<c10::Device> device_arg;
  std::optional<c10::Device> other;
  for (size_t i = 0; i < args.size(); i++) {
    const c10::IValue& arg = args[i];
    const bool host_ok = accepts_host_tensors(schema.arguments()[i]);
    // A 0-d CPU tensor is a scalar operand, but never a destination (out=, self of an in-place op).
    const auto* alias = schema.arguments()[i].alias_info();
    const bool written = alias && alias->isWrite();
    if (arg.isDevice() && arg.toDevice().is_privateuseone()) {
      device_arg = arg.toDevice();
    }
    for_each_tensor(arg, [&](const at::Tensor& t) {
      if (!t.defined()) {
        return;
      }
      TORCH_CHECK_NOT_IMPLEMENTED(
          t.layout() == c10::Layout::Strided, "Could not run '", name, "' with ", t.layout(),
          " tensors on tpu: only strided tensors are supported");
      bool host_scalar = t.is_cpu() && t.dim() == 0 && !written;
      if (t.is_privateuseone() && !tpu) {
        tpu = t.device();
      } else if (t.device() != tpu && !host_scalar && !host_ok && !other) {
        other = t.device();
      }
    });
  }
  if (!tpu) {
    tpu = device_arg;
  }
  TORCH_INTERNAL_ASSERT(tpu, "tpu fallback for ", name, " without a tpu tensor or device");
  TORCH_CHECK(
      !other, "Expected all tensors to be on the same device, but found at least two devices, ",
      *tpu, " and ", *other, "! (when running ", name, ")");
  return *tpu;
}

// A CPU generator seeded from the tpu generator, so fallback random ops follow torch.tpu's seed.
at::Generator host_generator(const c10::IValue& arg, c10::DeviceIndex device) {
  std::optional<at::Generator> tpu_gen;
  if (arg.isGenerator()) {
    tpu_gen = arg.toGenerator();
  }
  PhiloxArgs args = philox_args(tpu_gen, device);
  return at::detail::createCPUGenerator(args.seed ^ (args.offset * 0x9e3779b97f4a7c15ull));
}

bool is_generator_arg(const c10::Argument& arg) {
  return arg.type()->str().find("Generator") != std::string::npos;
}

// Seeded ops without a Generator argument (dropout) draw from the CPU default generator: reseed it
// from the tpu generator for the call and restore it after, so they follow torch.tpu's seed
// without disturbing the CPU stream. Another thread drawing CPU numbers meanwhile would see the
// temporary seed.
class HostSeedScope {
 public:
  HostSeedScope(bool active, c10::DeviceIndex device) : active_(active) {
    if (!active_) {
      return;
    }
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    PhiloxArgs args = philox_args(std::nullopt, device);
    std::lock_guard<std::mutex> lock(gen.mutex());
    saved_ = gen.get_state();
    gen.set_current_seed(args.seed ^ (args.offset * 0x9e3779b97f4a7c15ull));
  }
  ~HostSeedScope() {
    if (active_) {
      at::Generator gen = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(saved_);
    }
  }
  HostSeedScope(const HostSeedScope&) = delete;
  HostSeedScope& operator=(const HostSeedScope&) = delete;

 private:
  bool active_;
  at::Tensor saved_;
};

void tpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const std::string name = full_name(op);
  const auto& schema = op.schema();
  const size_t n_args = schema.arguments().size();
  const size_t begin = stack->size() - n_args;
  c10::ArrayRef<c10::IValue> args(stack->data() + begin, n_args);
  const c10::Device device = target_device(name, schema, args);
  begin_host_fallback(name.c_str());
  bool has_generator = false;
  for (const auto& arg : schema.arguments()) {
    has_generator = has_generator || is_generator_arg(arg);
  }

  // Arguments to the host (see TpuHostMirror.h), keeping the originals for write-back and
  // aliasing.
  std::vector<c10::IValue> originals(args.begin(), args.end());
  HostMirror mirror;
  for (const c10::IValue& arg : originals) {
    for_each_tensor(arg, [&](const at::Tensor& t) { mirror.reach(t); });
  }
  mirror.copy_in();
  for (size_t i = 0; i < n_args; i++) {
    c10::IValue& arg = (*stack)[begin + i];
    if (arg.isTensor()) {
      arg = mirror.view(arg.toTensor());
    } else if (arg.isTensorList()) {
      std::vector<at::Tensor> host;
      for (const at::Tensor& t : arg.toTensorVector()) {
        host.push_back(mirror.view(t));
      }
      arg = c10::IValue(c10::List<at::Tensor>(host));
    } else if (arg.isOptionalTensorList()) {
      c10::List<std::optional<at::Tensor>> host;
      for (const auto& t : arg.toOptionalTensorVector()) {
        host.push_back(t.has_value() ? std::optional<at::Tensor>(mirror.view(*t)) : std::nullopt);
      }
      arg = c10::IValue(host);
    } else if (arg.isDevice()) {
      arg = c10::IValue(c10::Device(at::kCPU));
    } else if (is_generator_arg(schema.arguments()[i])) {
      arg = c10::IValue(host_generator(arg, device.index()));
    }
  }
  std::vector<c10::IValue> host_args((*stack).begin() + begin, (*stack).end());

  {
    HostSeedScope seed(op.hasTag(at::Tag::nondeterministic_seeded) && !has_generator,
                       device.index());
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
  }

  // Mutated inputs: write the host results back into the device tensors.
  for (size_t i = 0; i < n_args; i++) {
    const auto* alias = schema.arguments()[i].alias_info();
    if (!alias || !alias->isWrite()) {
      continue;
    }
    if (originals[i].isTensor() && originals[i].toTensor().defined()) {
      at::_copy_from_and_resize(host_args[i].toTensor(), originals[i].toTensor());
    } else if (originals[i].isTensorList()) {
      auto dst = originals[i].toTensorVector();
      auto src = host_args[i].toTensorVector();
      for (size_t j = 0; j < dst.size(); j++) {
        if (dst[j].defined()) {
          at::_copy_from_and_resize(src[j], dst[j]);
        }
      }
    }
  }

  // Outputs: mutable aliases are the original inputs; everything else goes to the device.
  const auto& returns = schema.returns();
  const size_t out_begin = stack->size() - returns.size();
  for (size_t r = 0; r < returns.size(); r++) {
    c10::IValue& out = (*stack)[out_begin + r];
    const auto* alias = returns[r].alias_info();
    if (alias && alias->isWrite()) {
      bool found = false;
      for (size_t i = 0; i < n_args && !found; i++) {
        const auto* arg_alias = schema.arguments()[i].alias_info();
        if (arg_alias && *arg_alias == *alias) {
          out = originals[i];
          found = true;
        }
      }
      TORCH_CHECK(found, "tpu fallback: no input aliases output ", r, " of ", name);
      continue;
    }
    TORCH_CHECK(
        !alias, "The operator ", name, " is a view operator without a tpu kernel; views cannot "
        "fall back to the CPU because storage cannot be shared across devices.");
    for_each_tensor(out, [&](const at::Tensor& t) {
      TORCH_CHECK_NOT_IMPLEMENTED(
          !t.defined() || t.layout() == c10::Layout::Strided,
          "Could not run '", name, "' on tpu: it returns ", t.layout(), " tensors, and only "
          "strided tensors are supported");
    });
    if (out.isTensor() && out.toTensor().defined()) {
      out = out.toTensor().to(device);
    } else if (out.isTensorList()) {
      std::vector<at::Tensor> moved;
      for (const at::Tensor& t : out.toTensorVector()) {
        moved.push_back(t.defined() ? t.to(device) : t);
      }
      out = c10::IValue(c10::List<at::Tensor>(moved));
    }
  }
}

void sparse_unsupported(const c10::OperatorHandle& op, torch::jit::Stack* /*stack*/) {
  TORCH_CHECK_NOT_IMPLEMENTED(
      false, "Could not run '", full_name(op), "' with sparse tensors on tpu: sparse tensors are "
      "not supported on the tpu device");
}

} // namespace

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&tpu_fallback>());
}

// conj_physical_'s composite kernel wins over the backend fallback but calls a DispatchStub with
// no tpu entry: run it whole on the host instead.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("conj_physical_", torch::CppFunction::makeFromBoxedFunction<&tpu_fallback>());
}

TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&sparse_unsupported>());
}

} // namespace torch_tpu
