// The host side of a CPU fallback call: the device storages its tensor arguments reach, each
// copied once (the span of bytes the arguments reach), and every argument a view of its copy
// with the device tensor's sizes, strides, storage offset and conjugate and negative bits. The
// CPU kernel then sees what it would see on the host: layouts (some kernels choose their
// algorithm by them, and outputs follow them), aliasing between arguments (in-place semantics,
// the kernels' overlap checks) and lazy conjugation.
#pragma once

#include <ATen/core/Tensor.h>

#include <utility>
#include <vector>

namespace torch_tpu {

class HostMirror {
 public:
  // Notes the bytes of a device tensor the call will read or write; other tensors are ignored.
  void reach(const at::Tensor& t);

  // Copies every noted span to the host (synchronizing with the work queued before).
  void copy_in();

  // The host view of `t` (after copy_in); `t` itself when it is not a tpu tensor. The same tensor
  // gets the same view (PyTorch's overlap checks take one tensor passed twice as a full overlap).
  at::Tensor view(const at::Tensor& t);

 private:
  struct Span {
    const c10::StorageImpl* device; // identity of the device storage
    int64_t begin, end;             // bytes, begin aligned to every element size
    at::Storage device_storage;
    at::Storage host;
  };
  const Span* find(const at::Tensor& t) const;
  std::vector<Span> spans_;
  std::vector<std::pair<const c10::TensorImpl*, at::Tensor>> views_;
};

} // namespace torch_tpu
