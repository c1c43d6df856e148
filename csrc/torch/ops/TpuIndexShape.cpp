// Shape and creation ops: cat (stack goes through it), flip, roll, tril/triu, narrow_copy,
// arange and eye. cat, flip, roll and narrow_copy are copies between views (the core's COPY kernel,
// which converts dtypes and reads negative strides); tril/triu and arange have kernels.
#include <ATen/Dispatch_v2.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/native/RangeUtils.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cat_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/roll.h>
#include <ATen/ops/tril_meta.h>
#include <ATen/ops/triu_meta.h>
#include <torch/library.h>

#include "ops/TpuIndexCommon.h"
#include "ops/TpuOps.h"
#include "ops/TpuStructured.h"

namespace torch_tpu {
namespace {

// ---- cat ---------------------------------------------------------------------------------

// Copies each input into its slice of `out` along `dim` (converting dtypes as the promotion the
// meta computed requires); 1-d empty inputs are skipped, as PyTorch's legacy rule says.
void run_cat(const at::ITensorListRef& tensors, int64_t dim, const at::Tensor& out) {
  int64_t offset = 0;
  for (const at::Tensor& t : tensors) {
    check_same_device("cat", out.device(), {&t});
    if (t.numel() == 0 && t.dim() == 1) {
      continue;
    }
    int64_t size = t.size(dim);
    if (size > 0 && out.numel() > 0) {
      copy_into(t, out.narrow(dim, offset, size), false);
    }
    offset += size;
  }
}

at::Tensor cat(const at::ITensorListRef& tensors, int64_t dim) {
  Functional<at::meta::structured_cat> op;
  auto pre = op.meta(tensors, dim);
  run_cat(tensors, pre.dim, op.outputs_[0]);
  return std::move(op.outputs_[0]);
}

at::Tensor& cat_out(const at::ITensorListRef& tensors, int64_t dim, at::Tensor& out) {
  Out<at::meta::structured_cat> op(out);
  auto pre = op.meta(tensors, dim);
  run_cat(tensors, pre.dim, out);
  return out;
}

// ---- flip, roll, narrow_copy ----------------------------------------------------------------

// PyTorch CPU's flip: a copy into empty_like(self) from a view of self whose flipped dimensions
// start at their last element and step backwards.
at::Tensor flip(const at::Tensor& self, at::IntArrayRef dims) {
  auto flipped = at::dim_list_to_bitset(dims, self.dim());
  at::Tensor out = at::empty_like(self, at::MemoryFormat::Preserve);
  if (self.numel() == 0) {
    return out;
  }
  tpu_tensor src = core_view(self), dst = core_view(out);
  const int64_t elsize = static_cast<int64_t>(self.element_size());
  for (int64_t d = 0; d < self.dim(); d++) {
    if (flipped[d] && self.size(d) > 1) {
      src.offset += (self.size(d) - 1) * self.stride(d) * elsize;
      src.strides[d] = -self.stride(d);
    }
  }
  launch(self.device().index(), make_call(TPU_OP_COPY, {src}, {dst}));
  return out;
}

// PyTorch's roll (TensorTransformations.cpp): along one dimension, the two pieces concatenated
// in swapped order; several dimensions one after the other; no dimension: the flattened tensor.
at::Tensor roll_tpu(const at::Tensor& self, at::IntArrayRef shifts, at::IntArrayRef dims) {
  TORCH_CHECK(!shifts.empty(), "`shifts` required");
  if (dims.empty() && shifts.size() == 1) {
    at::Tensor flat = self.contiguous().view(self.numel());
    return roll_tpu(flat, shifts, at::IntArrayRef{0}).view(self.sizes());
  }
  TORCH_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ",
              shifts.size(), ", dims:", dims.size());
  if (dims.size() > 1) {
    return at::roll(roll_tpu(self, shifts.slice(0, 1), dims.slice(0, 1)), shifts.slice(1),
                    dims.slice(1));
  }
  if (self.numel() == 0) {
    return self.clone(at::MemoryFormat::Preserve);
  }
  int64_t dim = dims[0], size = self.size(dim);
  int64_t start = (size - shifts[0]) % size;
  if (start < 0) {
    start += size;
  }
  return at::cat({self.narrow(dim, start, size - start), self.narrow(dim, 0, start)}, dim);
}

at::Tensor narrow_copy(const at::Tensor& self, int64_t dim, int64_t start, int64_t length) {
  return self.narrow(dim, start, length).clone(at::MemoryFormat::Contiguous);
}

// ---- tril, triu ----------------------------------------------------------------------------

void run_trilu(const at::Tensor& self, int64_t diagonal, bool upper, const at::Tensor& out) {
  if (out.numel() == 0) {
    return;
  }
  check_same_device(upper ? "triu" : "tril", out.device(), {&self});
  if (!out.is_same(self)) {
    at::assert_no_overlap(out, self);
  }
  OpCall call = make_call(TPU_OP_TRILU, {core_view(self)}, {core_view(out)});
  call->scalars[0].i = diagonal;
  call->scalars[1].i = upper ? 1 : 0;
  launch(out.device().index(), std::move(call));
}

template <typename Meta, bool Upper>
struct Trilu {
  static at::Tensor functional(const at::Tensor& self, int64_t diagonal) {
    Functional<Meta> op;
    op.meta(self, diagonal);
    run_trilu(self, diagonal, Upper, op.outputs_[0]);
    return std::move(op.outputs_[0]);
  }
  static at::Tensor& inplace(at::Tensor& self, int64_t diagonal) {
    Inplace<Meta> op(self);
    op.meta(self, diagonal);
    run_trilu(self, diagonal, Upper, self);
    return self;
  }
  static at::Tensor& out(const at::Tensor& self, int64_t diagonal, at::Tensor& out) {
    Out<Meta> op(out);
    op.meta(self, diagonal);
    run_trilu(self, diagonal, Upper, out);
    return out;
  }
};

using Tril = Trilu<at::meta::structured_tril, false>;
using Triu = Trilu<at::meta::structured_triu, true>;

// ---- arange --------------------------------------------------------------------------------

// PyTorch's arange_out: the size from ATen's own rule, a warning when out= has another size, and
// values start + i * step computed as CPU's kernel does (index_shape.c).
at::Tensor& arange_out(const at::Scalar& start, const at::Scalar& end, const at::Scalar& step,
                       at::Tensor& out) {
  int64_t size = 0;
  AT_DISPATCH_V2(out.scalar_type(), "arange_cpu", AT_WRAP([&] {
    size = at::native::compute_arange_size<scalar_t>(start, end, step);
  }), AT_EXPAND(AT_ALL_TYPES), at::kBFloat16, at::kHalf);
  if (out.numel() != size) {
    if (out.numel() > 0) {
      TORCH_WARN("The number of elements in the out tensor of shape ", out.sizes(), " is ",
                 out.numel(), " which does not match the computed number of elements ", size,
                 ". Note that this may occur as a result of rounding error. The out tensor will "
                 "be resized to a tensor of shape (", size, ",).");
    }
    out.resize_({size});
  }
  if (size == 0) {
    return out;
  }
  at::Tensor flat = out.dim() == 1 ? out : at::empty({size}, out.options());
  OpCall call = make_call(TPU_OP_ARANGE, {}, {core_view(flat)});
  if (at::isIntegralType(out.scalar_type(), /*includeBool=*/false)) {
    call->scalars[2].i = start.to<int64_t>();
    call->scalars[3].i = step.to<int64_t>();
  } else {
    call->scalars[0].f = start.to<double>();
    call->scalars[1].f = step.to<double>();
  }
  launch(out.device().index(), std::move(call));
  if (!flat.is_same(out)) {
    copy_into(flat.view(out.sizes()), out, false);
  }
  return out;
}

// ---- eye ---------------------------------------------------------------------------------

// PyTorch CPU's eye_out: resized to [n, m], zeroed, ones on the diagonal (fills of views).
at::Tensor& eye_m_out(int64_t n, int64_t m, at::Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  TORCH_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  out.resize_({n, m});
  out.zero_();
  out.diagonal().fill_(1);
  return out;
}

at::Tensor& eye_out(int64_t n, at::Tensor& out) {
  return eye_m_out(n, n, out);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("cat", TORCH_FN(cat));
  m.impl("cat.out", TORCH_FN(cat_out));
  m.impl("flip", TORCH_FN(flip));
  m.impl("roll", TORCH_FN(roll_tpu));
  m.impl("narrow_copy", TORCH_FN(narrow_copy));
  m.impl("tril", TORCH_FN(Tril::functional));
  m.impl("tril_", TORCH_FN(Tril::inplace));
  m.impl("tril.out", TORCH_FN(Tril::out));
  m.impl("triu", TORCH_FN(Triu::functional));
  m.impl("triu_", TORCH_FN(Triu::inplace));
  m.impl("triu.out", TORCH_FN(Triu::out));
  m.impl("arange.start_out", TORCH_FN(arange_out));
  m.impl("eye.out", TORCH_FN(eye_out));
  m.impl("eye.m_out", TORCH_FN(eye_m_out));
}

} // namespace torch_tpu
