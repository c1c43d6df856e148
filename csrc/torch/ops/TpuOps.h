// Helpers shared by the native ATen kernels.
#pragma once

#include <ATen/core/Tensor.h>

namespace torch_tpu {

// Copies `src` (broadcast to dst's shape, any supported dtype and device pair) into `dst`.
void copy_into(const at::Tensor& src, const at::Tensor& dst, bool non_blocking);

} // namespace torch_tpu
