#include "ops/TpuHostMirror.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include <algorithm>

namespace torch_tpu {
namespace {

// Element sizes are powers of two up to 16 (complex128): a span starting at a multiple of 16
// keeps every view's offset a whole number of its elements.
constexpr int64_t kAlign = 16;

// The bytes [first, last) of its storage that `t` reaches.
std::pair<int64_t, int64_t> bytes_reached(const at::Tensor& t) {
  int64_t last = 0;
  for (int64_t d = 0; d < t.dim(); d++) {
    last += (t.size(d) - 1) * t.stride(d);
  }
  const int64_t size = static_cast<int64_t>(t.element_size());
  return {t.storage_offset() * size, (t.storage_offset() + last + 1) * size};
}

bool mirrored(const at::Tensor& t) {
  return t.defined() && t.is_privateuseone() && t.numel() > 0;
}

} // namespace

const HostMirror::Span* HostMirror::find(const at::Tensor& t) const {
  const c10::StorageImpl* impl = t.storage().unsafeGetStorageImpl();
  for (const Span& span : spans_) {
    if (span.device == impl) {
      return &span;
    }
  }
  return nullptr;
}

void HostMirror::reach(const at::Tensor& t) {
  if (!mirrored(t)) {
    return;
  }
  auto [first, last] = bytes_reached(t);
  first -= first % kAlign;
  if (const Span* found = find(t)) {
    Span& span = spans_[found - spans_.data()];
    span.begin = std::min(span.begin, first);
    span.end = std::max(span.end, last);
    return;
  }
  spans_.push_back({t.storage().unsafeGetStorageImpl(), first, last, t.storage(), {}});
}

void HostMirror::copy_in() {
  for (Span& span : spans_) {
    at::Tensor bytes = at::empty({0}, at::TensorOptions().dtype(at::kByte).device(
                                          span.device_storage.device()));
    bytes.set_(span.device_storage, span.begin, {span.end - span.begin}, {1});
    span.host = bytes.to(at::kCPU).storage();
  }
}

at::Tensor HostMirror::view(const at::Tensor& t) {
  if (!t.defined() || !t.is_privateuseone()) {
    return t;
  }
  for (const auto& [impl, host] : views_) {
    if (impl == t.unsafeGetTensorImpl()) {
      return host;
    }
  }
  at::TensorOptions options = t.options().device(at::kCPU);
  at::Tensor host;
  if (const Span* span = mirrored(t) ? find(t) : nullptr) {
    const int64_t offset = t.storage_offset() - span->begin / t.element_size();
    host = at::empty({0}, options).set_(span->host, offset, t.sizes(), t.strides());
  } else {
    host = at::empty_strided(t.sizes(), t.strides(), options);
  }
  host._set_conj(t.is_conj());
  host._set_neg(t.is_neg());
  views_.emplace_back(t.unsafeGetTensorImpl(), host);
  return host;
}

} // namespace torch_tpu
