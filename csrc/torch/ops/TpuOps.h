// Helpers shared by the native ATen kernels.
#pragma once

#include <ATen/core/Tensor.h>

namespace torch_tpu {

// Copies `src` (broadcast to dst's shape, any supported dtype and device pair) into `dst`.
void copy_into(const at::Tensor& src, const at::Tensor& dst, bool non_blocking);

// Starts an op that runs on the host: raises NotImplementedError naming it when the CPU fallback
// is off (TORCH_TPU_CPU_FALLBACK=0), otherwise counts it as a fallback call.
void begin_host_fallback(const char* name);

} // namespace torch_tpu
