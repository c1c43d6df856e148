// index_select: gathers along one dimension; an index out of range is found by the kernel, so it
// raises at the op under launch blocking and at the next synchronization otherwise.
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "runtime/TpuCore.h"

namespace torch_tpu {
namespace {

std::vector<int64_t> result_shape(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  std::vector<int64_t> shape = self.sizes().vec();
  if (self.dim() > 0) {
    shape[dim] = index.numel();
  }
  return shape;
}

void check_args(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  TORCH_CHECK_INDEX(
      index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK_TYPE(
      index.scalar_type() == at::kLong || index.scalar_type() == at::kInt,
      "index_select(): Expected dtype int32 or int64 for index");
  TORCH_CHECK(
      index.device() == self.device(),
      "Expected all tensors to be on the same device, but found at least two devices, ",
      self.device(), " and ", index.device(), "!");
  TORCH_CHECK_INDEX(
      self.dim() > 0 || index.numel() <= 1,
      "index_select(): Index to scalar can have only 1 value, got ", index.numel(), " value(s)");
  (void)dim;
}

at::Tensor& index_select_out(
    const at::Tensor& self, int64_t dim, const at::Tensor& index, at::Tensor& out) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  check_args(self, dim, index);
  TORCH_CHECK(
      out.device() == self.device() && out.scalar_type() == self.scalar_type(),
      "index_select(): out must be a ", self.scalar_type(), " tensor on ", self.device());
  // index_select_out_cpu_'s checks: out may not overlap itself or the inputs.
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  at::assert_no_overlap(out, index);
  out.resize_(result_shape(self, dim, index));
  if (out.numel() == 0 && index.numel() == 0) {
    return out;
  }
  OpCall call = new_call(TPU_OP_INDEX_SELECT, 2, 1);
  call->tensors[0] = core_view(self);
  call->tensors[1] = core_view(index);
  call->tensors[2] = core_view(out);
  call->scalars[0].i = dim;
  launch(self.device().index(), std::move(call));
  return out;
}

at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  at::Tensor out = at::empty({0}, self.options());
  return index_select_out(self, dim, index, out);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("index_select", TORCH_FN(index_select));
  m.impl("index_select.out", TORCH_FN(index_select_out));
}

} // namespace torch_tpu
