#include "compile/TpuReplay.h"

#include <c10/core/DeviceGuard.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <algorithm>

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
    int slot = tpu_tape_slot_of(tape_.get(), buffer_of(*t), log.allocated.data(),
                                static_cast<int>(log.allocated.size()));
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
    std::string* why) {
  if (log.unusable) {
    *why = log.unusable;
    return nullptr;
  }
  std::unique_ptr<Replay> r(new Replay());
  r->device_ = device;
  r->layouts_ = std::move(layouts);
  tpu_tape* tape = nullptr;
  tpu_status st = tpu_tape_new(
      log.calls.data(), static_cast<int>(log.calls.size()), buffers.data(),
      static_cast<int>(buffers.size()), log.allocated.data(),
      static_cast<int>(log.allocated.size()), device, &tape);
  if (st == TPU_ERR_OUT_OF_MEMORY) {
    throw_status(st);
  }
  if (st != TPU_OK) {
    *why = tpu_last_error();
    return nullptr;
  }
  r->tape_.reset(tape);
  r->random_.assign(log.calls.size(), false);
  for (size_t c : log.random_calls) {
    r->random_[c] = true;
  }
  const char* refused = r->add_outputs(outputs, log);
  if (refused) {
    *why = refused;
    return nullptr;
  }
  return r;
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
  const int n_slots = tpu_tape_slots(tape_.get());
  std::vector<c10::Storage> storages(n_slots);
  std::vector<tpu_buffer*> buffers(n_slots);
  for (int s = 0; s < n_slots; s++) {
    size_t nbytes = 0;
    int input = tpu_tape_slot_input(tape_.get(), s, &nbytes);
    storages[s] = input >= 0 ? held[input].storage()
                             : c10::Storage(
                                   c10::Storage::use_byte_size_t(), nbytes,
                                   allocator->allocate(nbytes), allocator, /*resizable=*/true);
    buffers[s] = static_cast<tpu_buffer*>(storages[s].data_ptr().get_context());
  }
  for (int c = 0; c < tpu_tape_calls(tape_.get()); c++) {
    OpCall call(tpu_tape_call(tape_.get(), c, buffers.data()));
    TORCH_CHECK_WITH(OutOfMemoryError, call, "out of host memory");
    if (random_[c]) {
      // New numbers, drawn in the recorded order: what recording the call again would draw.
      PhiloxArgs args = philox_args(std::nullopt, device_);
      call->scalars[2].u = args.seed;
      call->scalars[3].u = args.offset;
    }
    launch(device_, std::move(call));
  }
  for (size_t k = 0; k < held.size(); k++) {
    if (tpu_tape_writes_input(tape_.get(), static_cast<int>(k)) && !held[k].is_inference()) {
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
