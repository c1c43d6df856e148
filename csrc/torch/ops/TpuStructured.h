// Runs an ATen structured op's meta function so a native tpu kernel gets exactly the output sizes,
// strides and dtype that CPU and CUDA would produce (broadcasting, type promotion, memory format).
// The three wrappers mirror what PyTorch's code generator emits for a backend: the functional form
// allocates its outputs on tpu, the out= form checks and resizes the given tensors, the in-place
// form checks that self can hold the result. For TensorIterator-based metas the iterator's own
// bookkeeping runs too, so common_dtype() and friends are available after meta().
#pragma once

#include <ATen/TensorIterator.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include <array>
#include <type_traits>

namespace torch_tpu {

namespace detail {

template <typename Meta>
void record_output(Meta& meta, int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                   at::TensorOptions options) {
  if constexpr (std::is_base_of_v<at::TensorIteratorBase, Meta>) {
    meta.at::TensorIteratorBase::set_output_raw_strided(i, sizes, strides, options);
  }
}

// The out= checks of PyTorch's generated wrappers: same dtype and device, then resized if needed.
inline void resize_out(const at::Tensor& out, at::IntArrayRef sizes, at::IntArrayRef strides,
                       const at::TensorOptions& options) {
  TORCH_CHECK(options.dtype() == out.dtype(), "Expected out tensor to have dtype ",
              options.dtype(), ", but got ", out.dtype(), " instead");
  TORCH_CHECK(options.device() == out.device(), "Expected out tensor to have device ",
              options.device(), ", but got ", out.device(), " instead");
  // Only a resized output takes the meta's (advisory) strides, as in the generated wrappers.
  if (at::native::resize_output(out, sizes)) {
    if (!strides.empty()) {
      out.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, strides);
    } else if (options.memory_format_opt().has_value()) {
      out.unsafeGetTensorImpl()->empty_tensor_restride(*options.memory_format_opt());
    }
  }
}

inline void check_inplace(const at::Tensor& self, at::IntArrayRef sizes,
                          const at::TensorOptions& options) {
  TORCH_CHECK(options.dtype() == self.dtype(), "Bad in-place call: input tensor dtype ",
              self.dtype(), " and output tensor dtype ", options.dtype(), " should match");
  TORCH_CHECK(options.device() == self.device(), "Bad in-place call: input tensor device ",
              self.device(), " and output tensor device ", options.device(), " should match");
  TORCH_CHECK(sizes == self.sizes(), "Bad in-place call: input tensor size ", self.sizes(),
              " and output tensor size ", sizes, " should match");
}

} // namespace detail

// Functional form: outputs are allocated on tpu with the meta's sizes and strides.
template <typename Meta, size_t N = 1>
struct Functional final : Meta {
  void set_output_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::TensorOptions options) override {
    // TensorIterator passes no strides for a contiguous output.
    outputs_[i] = strides.empty() ? at::empty(sizes, options)
                                  : at::empty_strided(sizes, strides, options);
    detail::record_output<Meta>(*this, i, sizes, strides, options);
  }
  void set_output_raw_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                              at::TensorOptions options) override {
    set_output_strided(i, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t i) override {
    return outputs_[i];
  }
  std::array<at::Tensor, N> outputs_;
};

// out= form: the caller's tensors, checked and resized.
template <typename Meta, size_t N = 1>
struct Out final : Meta {
  template <typename... Outs>
  explicit Out(Outs&... outs) : outputs_{std::ref(outs)...} {}
  void set_output_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::TensorOptions options) override {
    detail::resize_out(outputs_[i], sizes, strides, options);
    detail::record_output<Meta>(*this, i, sizes, strides, options);
  }
  void set_output_raw_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                              at::TensorOptions options) override {
    set_output_strided(i, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t i) override {
    return outputs_[i];
  }
  std::array<std::reference_wrapper<at::Tensor>, N> outputs_;
};

// In-place form: self is the output.
template <typename Meta>
struct Inplace final : Meta {
  explicit Inplace(at::Tensor& self) : self_(self) {}
  void set_output_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::TensorOptions options) override {
    detail::check_inplace(self_, sizes, options);
    detail::record_output<Meta>(*this, i, sizes, strides, options);
  }
  void set_output_raw_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                              at::TensorOptions options) override {
    set_output_strided(i, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t /*i*/) override {
    return self_;
  }
  at::Tensor& self_;
};

} // namespace torch_tpu
