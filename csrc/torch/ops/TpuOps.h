// Helpers shared by the native ATen kernels.
#pragma once

#include <ATen/core/Tensor.h>

namespace torch_tpu {

// Copies `src` (broadcast to dst's shape, any supported dtype and device pair) into `dst`.
void copy_into(const at::Tensor& src, const at::Tensor& dst, bool non_blocking);

// The checks of copy_'s TensorIterator, which _copy_from does not get: src broadcasts to exactly
// dst's sizes, dst has no element twice and does not partly overlap src. Empty tensors too.
void check_copy(const at::Tensor& src, const at::Tensor& dst);

// The device check of PyTorch's out= wrappers, for kernels without a meta that makes it: `out`
// lives on `input`'s device (a CPU out= never takes a tpu result by a silent copy).
inline void check_out_device(const at::Tensor& input, const at::Tensor& out) {
  TORCH_CHECK(out.device() == input.device(), "Expected out tensor to have device ",
              input.device(), ", but got ", out.device(), " instead");
}

// Starts an op that runs on the host: raises NotImplementedError naming it when the CPU fallback
// is off (TORCH_TPU_CPU_FALLBACK=0), otherwise counts it as a fallback call.
void begin_host_fallback(const char* name);

// `value` in `type` as PyTorch's kernels convert it (`value.to<scalar_t>()`): rounded, with a
// RuntimeError when it is out of the type's range. Kernels convert before looking at the sizes,
// so an op with nothing to write refuses such a value too.
at::Scalar converted(const at::Scalar& value, at::ScalarType type);

} // namespace torch_tpu
