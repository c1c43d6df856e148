// tpu_dist across hosts (TpuDistHierarchy.cpp): its Python class for torch_tpu.distributed.
#pragma once

#include <pybind11/pybind11.h>

namespace torch_tpu {

// Adds `_TpuDistHierarchy(rank, size, host_of, local, leaders, world)` to the module: a backend
// over this host's `_TpuDistBackend` and the Gloo groups of host leaders (None on other ranks) and
// of every rank. torch.distributed must be imported first.
void register_dist_hierarchy(pybind11::module& m);

} // namespace torch_tpu
