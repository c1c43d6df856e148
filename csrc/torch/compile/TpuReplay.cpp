#include "compile/TpuReplay.h"

#include <c10/core/DeviceGuard.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <algorithm>
#include <unordered_set>

#include "compile/TpuCompiledRegion.h"
#include "runtime/TpuCore.h"
#include "runtime/TpuGenerator.h"

namespace py = pybind11;

namespace torch_tpu {
namespace {

std::vector<int64_t> to_vector(c10::IntArrayRef values) {
  return std::vector<int64_t>(values.begin(), values.end());
}

// The tpu tensor in `obj` on `device` with a buffer, else nullopt.
std::optional<at::Tensor> device_tensor(const py::handle& obj, c10::DeviceIndex device) {
  if (!THPVariable_Check(obj.ptr())) {
    return std::nullopt;
  }
  const at::Tensor& t = THPVariable_Unpack(obj.ptr());
  if (!t.is_privateuseone() || t.device().index() != device || t.layout() != at::kStrided ||
      !t.storage().data_ptr().get_context()) {
    return std::nullopt;
  }
  return t;
}

// Whether host memory of a tensor of `call` is a scalar the call holds (tpu_op_set_scalar_input).
bool held_in_call(const tpu_op_call* call, const tpu_tensor& t) {
  const char* lo = reinterpret_cast<const char*>(call->scalars);
  const char* p = static_cast<const char*>(t.host);
  return p >= lo && p < lo + sizeof call->scalars;
}

bool is_number(const py::handle& obj) {
  return py::isinstance<py::int_>(obj) || py::isinstance<py::float_>(obj);
}

// Equal numbers of one type (True is not 1, 1.0 is not 1).
bool same_number(const py::handle& a, const py::handle& b) {
  return Py_TYPE(a.ptr()) == Py_TYPE(b.ptr()) && a.equal(b);
}

} // namespace

const char* read_inputs(
    const py::list& inputs, c10::DeviceIndex device, std::vector<InputLayout>* layouts,
    std::vector<tpu_buffer*>* buffers) {
  std::vector<InputLayout> out;
  std::vector<tpu_buffer*> bufs;
  for (const py::handle& obj : inputs) {
    if (is_number(obj)) {
      out.push_back(InputLayout{py::reinterpret_borrow<py::object>(obj), at::kFloat, {}, {}, 0, 0,
                                bufs.size()});
      bufs.push_back(nullptr);
      continue;
    }
    std::optional<at::Tensor> t = device_tensor(obj, device);
    if (!t) {
      return "an input that is neither a tensor of the graph's chip nor a number";
    }
    tpu_buffer* b = buffer_of(*t);
    size_t alias = std::find(bufs.begin(), bufs.end(), b) - bufs.begin();
    out.push_back(InputLayout{
        py::object(), t->scalar_type(), to_vector(t->sizes()), to_vector(t->strides()),
        t->storage_offset(), t->storage().nbytes(), std::min(alias, bufs.size())});
    bufs.push_back(b);
  }
  *layouts = std::move(out);
  *buffers = std::move(bufs);
  return nullptr;
}

int Replay::slot_of(tpu_buffer* buffer, const CaptureLog& log) {
  auto known = std::find(keys_.begin(), keys_.end(), buffer);
  if (known != keys_.end()) {
    return static_cast<int>(known - keys_.begin());
  }
  // Made while the graph was recorded: each run gets a new storage of its size.
  if (std::find(log.allocated.begin(), log.allocated.end(), buffer) == log.allocated.end() ||
      tpu_buffer_device(buffer) != device_) {
    return -1;
  }
  keys_.push_back(buffer);
  slots_.push_back(Slot{-1, tpu_buffer_nbytes(buffer)});
  return static_cast<int>(slots_.size()) - 1;
}

const char* Replay::add_outputs(const py::handle& outputs, const CaptureLog& log) {
  if (!py::isinstance<py::tuple>(outputs) && !py::isinstance<py::list>(outputs)) {
    return "outputs that are not a tuple or list";
  }
  tuple_ = py::isinstance<py::tuple>(outputs);
  for (const py::handle& obj : outputs) {
    if (obj.is_none() || is_number(obj)) {
      outputs_.push_back(Output{py::reinterpret_borrow<py::object>(obj), -1, at::kFloat, {}, {}, 0});
      continue;
    }
    std::optional<at::Tensor> t = device_tensor(obj, device_);
    if (!t) {
      return "an output that is neither a tensor of the graph's chip nor a number";
    }
    int slot = slot_of(buffer_of(*t), log);
    if (slot < 0) {
      return "an output made outside the graph";
    }
    outputs_.push_back(Output{
        py::object(), slot, t->scalar_type(), to_vector(t->sizes()), to_vector(t->strides()),
        t->storage_offset()});
  }
  return nullptr;
}

std::unique_ptr<Replay> Replay::build(
    const CaptureLog& log, std::vector<InputLayout> layouts,
    const std::vector<tpu_buffer*>& buffers, const py::handle& outputs, c10::DeviceIndex device,
    const char** why) {
  *why = log.unusable;
  if (*why) {
    return nullptr;
  }
  std::unique_ptr<Replay> r(new Replay());
  r->device_ = device;
  r->layouts_ = std::move(layouts);
  for (size_t k = 0; k < buffers.size(); k++) {
    if (buffers[k] && r->layouts_[k].alias == k) {
      r->keys_.push_back(buffers[k]);
      r->slots_.push_back(Slot{static_cast<int>(k), 0});
    }
  }
  std::unordered_set<size_t> written;
  for (const tpu_op_call* captured : log.calls) {
    tpu_op_call* call = tpu_op_call_clone(captured);
    TORCH_CHECK_WITH(OutOfMemoryError, call, "out of host memory");
    r->calls_.push_back(call);
    for (int i = 0; i < call->n_inputs + call->n_outputs; i++) {
      tpu_tensor& t = call->tensors[i];
      int slot = -1;
      if (t.buf) {
        slot = r->slot_of(t.buf, log);
        if (slot < 0) {
          *why = "a tensor made outside the graph";
          return nullptr;
        }
        int input = r->slots_[slot].input;
        if (i >= call->n_inputs && input >= 0) {
          written.insert(static_cast<size_t>(input));
        }
      } else if (t.host && tpu_tensor_numel(&t) > 0 && !held_in_call(call, t)) {
        *why = "host memory";
        return nullptr;
      }
      t.buf = nullptr;
      r->tensor_slots_.push_back(slot);
    }
  }
  r->written_inputs_.assign(written.begin(), written.end());
  r->random_.assign(r->calls_.size(), false);
  for (size_t c : log.random_calls) {
    r->random_[c] = true;
  }
  *why = r->add_outputs(outputs, log);
  return *why ? nullptr : std::move(r);
}

Replay::~Replay() {
  for (tpu_op_call* call : calls_) {
    tpu_op_call_free(call);
  }
}

bool Replay::matches(const py::list& inputs, std::vector<at::Tensor>* held) const {
  if (inputs.size() != layouts_.size()) {
    return false;
  }
  std::vector<tpu_buffer*> buffers;
  for (size_t k = 0; k < layouts_.size(); k++) {
    const InputLayout& l = layouts_[k];
    if (l.number) {
      if (!same_number(inputs[k], l.number)) {
        return false;
      }
      buffers.push_back(nullptr);
      held->emplace_back();
      continue;
    }
    std::optional<at::Tensor> t = device_tensor(inputs[k], device_);
    if (!t || t->scalar_type() != l.dtype || t->sizes() != c10::IntArrayRef(l.sizes) ||
        t->strides() != c10::IntArrayRef(l.strides) || t->storage_offset() != l.offset ||
        t->storage().nbytes() != l.nbytes) {
      return false;
    }
    tpu_buffer* b = buffer_of(*t);
    size_t alias = std::find(buffers.begin(), buffers.end(), b) - buffers.begin();
    if (std::min(alias, buffers.size()) != l.alias) {
      return false;
    }
    buffers.push_back(b);
    held->push_back(*std::move(t));
  }
  return true;
}

py::object Replay::run(const py::list& inputs) const {
  std::vector<at::Tensor> held;
  if (!matches(inputs, &held)) {
    return py::none();
  }
  inputs.attr("clear")();
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, device_));
  RegionScope region(device_);
  c10::Allocator* allocator = c10::GetAllocator(c10::DeviceType::PrivateUse1);
  std::vector<c10::Storage> storages(slots_.size());
  std::vector<tpu_buffer*> buffers(slots_.size());
  for (size_t s = 0; s < slots_.size(); s++) {
    if (slots_[s].input >= 0) {
      storages[s] = held[slots_[s].input].storage();
    } else {
      storages[s] = c10::Storage(
          c10::Storage::use_byte_size_t(), slots_[s].nbytes, allocator->allocate(slots_[s].nbytes),
          allocator, /*resizable=*/true);
    }
    buffers[s] = static_cast<tpu_buffer*>(storages[s].data_ptr().get_context());
  }
  size_t next = 0;
  for (size_t c = 0; c < calls_.size(); c++) {
    tpu_op_call* call = tpu_op_call_clone(calls_[c]);
    TORCH_CHECK_WITH(OutOfMemoryError, call, "out of host memory");
    if (random_[c]) {
      // New numbers, drawn in the recorded order: what recording the call again would draw.
      PhiloxArgs args = philox_args(std::nullopt, device_);
      call->scalars[2].u = args.seed;
      call->scalars[3].u = args.offset;
    }
    for (int i = 0; i < call->n_inputs + call->n_outputs; i++, next++) {
      if (tensor_slots_[next] >= 0) {
        call->tensors[i].buf = buffers[tensor_slots_[next]];
      }
    }
    launch(device_, call);
  }
  for (size_t k : written_inputs_) {
    if (!held[k].is_inference()) {
      held[k].unsafeGetTensorImpl()->bump_version();
    }
  }
  py::list results;
  for (const Output& o : outputs_) {
    if (o.constant) {
      results.append(o.constant);
      continue;
    }
    at::Tensor t = at::detail::make_tensor<c10::TensorImpl>(
        c10::Storage(storages[o.slot]), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
        caffe2::TypeMeta::fromScalarType(o.dtype));
    t.unsafeGetTensorImpl()->set_sizes_and_strides(o.sizes, o.strides, o.offset);
    results.append(py::cast(std::move(t)));
  }
  // What only the graph reads dies before the cut, as the recorded graph's intermediates do.
  held.clear();
  storages.clear();
  region.exit();
  return tuple_ ? py::object(py::tuple(results)) : py::object(results);
}

void register_replay(py::module& m) {
  py::class_<Replay>(m, "_CompiledReplay").def("run", &Replay::run);
}

} // namespace torch_tpu
