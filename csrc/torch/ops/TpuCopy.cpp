// Copies between tpu and CPU and within tpu, across dtypes, broadcasting and strided, as ordered
// work on the current stream. Host-to-device copies from pageable memory are staged (small) or
// synchronous (large); from pinned memory with non_blocking=True they stay asynchronous and the
// pinned block is kept from reuse until the copy ran. Device-to-host copies synchronize, except
// non_blocking ones into pinned memory.
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/CachingHostAllocator.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/alias.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/view_as_real.h>
#include <torch/library.h>

#include <cstdlib>
#include <cstring>

#include "ops/TpuOps.h"
#include "runtime/TpuCore.h"
#include "runtime/TpuStreams.h"

#include "core/include/tpu.h"

namespace torch_tpu {
namespace {

size_t staging_limit() {
  static const size_t limit = [] {
    uint64_t bytes = 1 << 20;
    tpu_parse_bytes(tpu_env_get("TORCH_TPU_STAGING_LIMIT"), &bytes);
    return static_cast<size_t>(bytes);
  }();
  return limit;
}

bool core_converts(c10::ScalarType a, c10::ScalarType b) {
  return a == b || (tpu_dtype_is_computable(to_core_dtype(a)) &&
                    tpu_dtype_is_computable(to_core_dtype(b)));
}

bool is_pinned(const at::Tensor& t) {
  return t.is_cpu() && at::getHostAllocator(at::kPrivateUse1) != nullptr &&
         at::detail::getPrivateUse1Hooks().isPinnedPtr(t.data_ptr());
}

void record_pinned_use(const at::Tensor& host, c10::DeviceIndex device) {
  c10::Stream stream = current_stream(device);
  at::getHostAllocator(at::kPrivateUse1)->record_event(host.data_ptr(), nullptr, stream);
}

void copy_host_to_device(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  c10::DeviceIndex device = dst.device().index();
  tpu_tensor dst_view = core_view(dst);
  if (non_blocking && is_pinned(src)) {
    tpu_tensor src_view = core_view(src.expand(dst.sizes()));
    launch(device, copy_call(src_view, dst_view));
    record_pinned_use(src, device);
    return;
  }
  const size_t nbytes = static_cast<size_t>(src.numel()) * src.element_size();
  if (nbytes > staging_limit()) {
    tpu_tensor src_view = core_view(src.expand(dst.sizes()));
    launch_sync(device, copy_call(src_view, dst_view));
    return;
  }
  // Stage a dense copy of the source so the caller may reuse its memory at once; the broadcast
  // strides are rebuilt over the staged bytes.
  at::Tensor dense = src.contiguous();
  void* staged = std::malloc(nbytes ? nbytes : 1);
  TORCH_CHECK_WITH(OutOfMemoryError, staged, "cannot stage ", nbytes, " bytes for a tpu copy");
  std::memcpy(staged, dense.data_ptr(), nbytes);
  at::Tensor staged_view =
      at::from_blob(staged, dense.sizes(), dense.options()).expand(dst.sizes());
  OpCall call = copy_call(core_view(staged_view), dst_view);
  call->cleanup = &std::free;
  call->cleanup_ctx = staged;
  launch(device, std::move(call));
}

void copy_device_to_host(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  c10::DeviceIndex device = src.device().index();
  OpCall call = copy_call(core_view(src.expand(dst.sizes())), core_view(dst));
  if (non_blocking && is_pinned(dst)) {
    launch(device, std::move(call));
    record_pinned_use(dst, device);
  } else {
    launch_sync(device, std::move(call));
  }
}

void copy_raw(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  if (src.is_privateuseone() && dst.is_privateuseone()) {
    if (src.device() == dst.device()) {
      at::assert_no_internal_overlap(dst);
      at::assert_no_partial_overlap(dst, src);
      launch(dst.device().index(), copy_call(core_view(src.expand(dst.sizes())), core_view(dst)));
    } else {
      // Across chips: on the destination's stream once the source's chip is idle, waited for so
      // that the source's stream cannot write it meanwhile; the driver moves it chip to chip.
      synchronize_device(src.device().index());
      launch_sync(dst.device().index(),
                  copy_call(core_view(src.expand(dst.sizes())), core_view(dst)));
    }
  } else if (src.is_cpu()) {
    copy_host_to_device(src, dst, non_blocking);
  } else {
    copy_device_to_host(src, dst, non_blocking);
  }
}

// `dst` holds the stored values of a tensor with `src`'s math bits: give them `dst`'s. The stored
// values are rewritten through an alias with the bits cleared, so the ops below dispatch as plain
// tensor ops; through `dst` itself a conjugate view would reach the Conjugate fallback, which
// writes back with copy_, which ends here again.
void apply_math_bits(const at::Tensor& src, const at::Tensor& dst) {
  const bool conj = src.is_conj() != dst.is_conj();
  const bool neg = src.is_neg() != dst.is_neg();
  if (!conj && !neg) {
    return;
  }
  // CPU's copy_ negates the destination after a raw copy too, and so refuses a bool one.
  TORCH_CHECK_NOT_IMPLEMENTED(!neg || dst.scalar_type() != at::kBool,
                              "\"neg\" not implemented for 'Bool' (copy_ of a negative view)");
  at::Tensor stored = at::alias(dst);
  stored._set_conj(false);
  stored._set_neg(false);
  if (!stored.is_complex()) {
    if (neg) { // conjugating real values changes nothing
      stored.neg_();
    }
    return;
  }
  // Complex: conjugation negates the imaginary parts, negation every part, both the real parts.
  at::Tensor parts = at::view_as_real(stored);
  if (neg) {
    parts.select(-1, 0).neg_();
  }
  if (conj != neg) {
    parts.select(-1, 1).neg_();
  }
}

} // namespace

void copy_into(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  if (dst.numel() == 0 || dst.is_same(src)) {
    return;
  }
  TORCH_CHECK(
      (src.is_cpu() || src.is_privateuseone()) && (dst.is_cpu() || dst.is_privateuseone()),
      "copy between ", src.device(), " and ", dst.device(), " is not supported by tpu");
  if (core_converts(src.scalar_type(), dst.scalar_type())) {
    copy_raw(src, dst, non_blocking);
    apply_math_bits(src, dst);
  } else if (dst.is_cpu()) {
    // The device cannot convert this pair: bring the stored values over, give them src's math
    // bits and let CPU's copy_ convert and apply them.
    at::Tensor host = at::empty(src.sizes(), src.options().device(at::kCPU));
    copy_raw(src, host, false);
    host._set_conj(src.is_conj());
    host._set_neg(src.is_neg());
    dst.copy_(host);
  } else {
    // to() resolves the bits: host holds values.
    at::Tensor host = src.to(at::kCPU).to(dst.scalar_type());
    copy_raw(host, dst, false);
    apply_math_bits(host, dst);
  }
}

void check_copy(const at::Tensor& src, const at::Tensor& dst) {
  const at::DimVector shape = at::infer_size_dimvector(dst.sizes(), src.sizes());
  TORCH_CHECK(shape == dst.sizes(), "output with shape ", dst.sizes(),
              " doesn't match the broadcast shape ", at::IntArrayRef(shape));
  at::assert_no_internal_overlap(dst);
  at::assert_no_partial_overlap(dst, src);
}

namespace {

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  check_copy(self, dst);
  copy_into(self, dst, non_blocking);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) {
    dst.resize_(self.sizes());
  }
  copy_into(self, dst, false);
  return dst;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
}

} // namespace torch_tpu

namespace torch_tpu {

// Conjugate and negative views reach _copy_from with their bits set: copy_into copies the stored
// values and applies the bits as CPU's copy_ does. Without these fallthroughs the math-bit
// fallbacks would resolve the source with clone(), which calls copy_, which calls _copy_from again.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

} // namespace torch_tpu
