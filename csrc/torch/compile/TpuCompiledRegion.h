// The run of a torch.compile graph (src/torch_tpu/compile.py): its Python class for the backend.
#pragma once

#include <pybind11/pybind11.h>

namespace torch_tpu {

// Adds `_CompiledRegion(device)`, a context manager: inside it the calling thread records its ops
// on the current stream of `device` as one fused graph, cut when the block starts and ends.
void register_compiled_region(pybind11::module& m);

} // namespace torch_tpu
