// The tpu_dist c10d backend (TpuDistBackend.cpp): its Python class for torch_tpu.distributed.
#pragma once

#include <pybind11/pybind11.h>

namespace torch_tpu {

// Adds `_TpuDistBackend(segment, rank, size, timeout_s, group)` to the module; torch.distributed
// must be imported first (its Backend class is the base).
void register_dist(pybind11::module& m);

} // namespace torch_tpu
