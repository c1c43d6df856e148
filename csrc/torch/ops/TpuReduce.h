// Helpers shared by the reduce and norm families' bindings: which dimensions a reduction covers,
// the keepdim-shaped output views the core's reduction kernels take, and the counted host path
// for the few dtypes those kernels do not cover.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include <array>
#include <bitset>
#include <initializer_list>

#include "ops/TpuOps.h"
#include "runtime/TpuCore.h"

namespace torch_tpu {

using DimMask = std::bitset<64>;

// The dimensions of `self` a reduction over `dims` covers (wrapped, checked for repeats). No list
// means every dimension; so does an empty list unless `empty_is_none` (any and all).
DimMask reduce_mask(const at::Tensor& self, at::OptionalIntArrayRef dims,
                    bool empty_is_none = false);

// `out` as the core's reduction kernels take it: the input's rank, size 1 in each reduced
// dimension (a keepdim=False output gets those dimensions back, with stride 0).
tpu_tensor keepdim_view(const at::Tensor& out, const at::Tensor& self, DimMask mask);

// Launches reduction `op` of `self` into `outs` over `mask`, computing in `compute`, with up to
// two scalars. Does nothing when the outputs are empty.
void launch_reduce(tpu_op_id op, const at::Tensor& self, std::initializer_list<at::Tensor> outs,
                   DimMask mask, at::ScalarType compute, tpu_scalar s0 = {}, tpu_scalar s1 = {});


// True when the core's kernels compute on `type` (not the storage-only dtypes).
bool core_computes(at::ScalarType type);

// The counted CPU path for inputs the kernels do not cover (complex products, storage-only
// dtypes): counts `name` as a fallback (or raises when the fallback is off), then copies the
// result computed on host copies into `out`.
template <typename F>
void on_host(const char* name, const at::Tensor& out, F&& compute) {
  begin_host_fallback(name);
  copy_into(compute(), out, false);
}

} // namespace torch_tpu
