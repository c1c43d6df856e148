// Later calls of a torch.compile graph: the op calls its first call launched (TpuCapture.h) are
// launched again inside one RegionScope, each with the buffers of the new inputs and of new
// storages for what the graph makes, so they form the same fused graph (the compile cache hits)
// without the graph's Python code, the dispatcher or the kernels' argument handling. A call whose
// inputs are laid out otherwise than the captured call's (device, dtype, sizes, strides, offset,
// storage size, which inputs share a storage) is refused, and the caller records it as usual.
#pragma once

#include <ATen/core/Tensor.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "compile/TpuCapture.h"

namespace torch_tpu {

// One input as the capture saw it: a tensor's layout, or a number (a symbolic size's value).
struct InputLayout {
  pybind11::object number; // an int, float or bool input; null for a tensor
  at::ScalarType dtype;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t offset;
  size_t nbytes;
  size_t alias; // the first input on the same storage (its own index when none before it)
};

// The layout and buffer (null for a number) of each input in `inputs`; a reason (a literal), with
// nothing filled, when one is neither a dense tpu tensor of `device` nor a number.
const char* read_inputs(
    const pybind11::list& inputs, c10::DeviceIndex device, std::vector<InputLayout>* layouts,
    std::vector<tpu_buffer*>* buffers);

class Replay {
 public:
  // From a finished capture whose inputs were `layouts` on `buffers` and whose outputs are
  // `outputs` (a tuple or list of tensors, numbers and Nones: numbers depend only on the inputs'
  // layouts and numbers, as a value read from the device would have refused the capture); null,
  // with `*why` set, when it cannot be replayed.
  static std::unique_ptr<Replay> build(
      const CaptureLog& log, std::vector<InputLayout> layouts,
      const std::vector<tpu_buffer*>& buffers, const pybind11::handle& outputs,
      c10::DeviceIndex device, std::string* why);

  // Runs the captured calls on `inputs` (AOTAutograd's boxed list: cleared once read) and returns
  // the outputs; None, leaving the list as it was, when the inputs are laid out otherwise. A random
  // op draws new Philox arguments from the chip's default generator, as a recorded call would.
  pybind11::object run(const pybind11::list& inputs) const;

 private:
  struct Output {
    pybind11::object constant; // a number or None, returned as it is; null for a tensor
    int slot;                  // the tape's slot (ops/tpu_tape.h) of a tensor's storage
    at::ScalarType dtype;
    std::vector<int64_t> sizes, strides;
    int64_t offset;
  };
  struct TapeFree {
    void operator()(tpu_tape* tape) const {
      tpu_tape_free(tape);
    }
  };

  Replay() = default;
  const char* add_outputs(const pybind11::handle& outputs, const CaptureLog& log);
  bool matches(const pybind11::list& inputs, std::vector<at::Tensor>* held) const;

  c10::DeviceIndex device_ = 0;
  std::vector<InputLayout> layouts_;
  std::unique_ptr<tpu_tape, TapeFree> tape_; // the calls, their buffers named by slot
  std::vector<bool> random_; // per call: draws Philox arguments from the default generator
  std::vector<Output> outputs_;
  bool tuple_ = true;
};

// Adds the `_CompiledReplay` class (made by `_CompiledRegion.replay`), with `run(inputs)`.
void register_replay(pybind11::module& m);

} // namespace torch_tpu
