// sort (stable or not, either direction, any dim) and topk on the core's SORT op
// (csrc/core/ops/tpu_ops_sort.h); argsort and msort are ATen composites of sort, and the
// backward of both is a scatter of the indices. Output metadata comes from ATen's structured
// metas (TpuStructured.h), so sizes, strides and argument errors (k out of range, a bad dim,
// complex inputs, a bool topk) are CUDA's. The core sorts stably in both directions, so ties
// come out in input order even where PyTorch leaves their order unspecified (an unstable sort,
// topk) and every driver agrees.
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/sort_meta.h>
#include <ATen/ops/topk.h>
#include <ATen/ops/topk_meta.h>
#include <torch/library.h>

#include "ops/TpuOps.h"
#include "ops/TpuStructured.h"
#include "runtime/TpuCore.h"

namespace torch_tpu {
namespace {

// The dtypes the core's SORT orders: bool, the integers through int64 and the floating dtypes.
bool core_sorts(at::ScalarType type) {
  return is_storable(type) && tpu_dtype_is_computable(to_core_dtype(type)) &&
         !at::isComplexType(type);
}

// Whether an output may share memory with the input: it views the input's storage at all
// (ATen's overlap test gives up on non-dense views). Fresh outputs never do.
bool shares_storage(const at::Tensor& out, const at::Tensor& self) {
  return out.storage().is_alias_of(self.storage());
}

// Launches SORT of `self` along `dim` into values and indices (k elements along dim). A 0-d
// input is a row of one element. SORT's outputs may not overlap its input, so outputs that may
// (out= into the input) are computed into fresh tensors and copied in.
void launch_sort(const at::Tensor& self, int64_t dim, bool descending, const at::Tensor& values,
                 const at::Tensor& indices) {
  if (values.numel() == 0) {
    return;
  }
  if (shares_storage(values, self) || shares_storage(indices, self)) {
    at::Tensor v = at::empty_like(values), i = at::empty_like(indices);
    launch_sort(self, dim, descending, v, i);
    copy_into(v, values, false);
    copy_into(i, indices, false);
    return;
  }
  tpu_tensor views[3] = {core_view(self), core_view(values), core_view(indices)};
  if (self.dim() == 0) {
    for (tpu_tensor& view : views) {
      view.ndim = 1;
      view.sizes[0] = 1;
      view.strides[0] = 1;
    }
  }
  OpCall call = new_call(TPU_OP_SORT, 1, 2);
  for (int i = 0; i < 3; i++) {
    call->tensors[i] = views[i];
  }
  call->scalars[0].i = self.dim() == 0 ? 0 : dim;
  call->scalars[1].i = descending ? 1 : 0;
  launch(self.device().index(), std::move(call));
}

// ---- sort ----

void run_sort(const at::Tensor& self, std::optional<bool> stable, int64_t dim, bool descending,
              const at::Tensor& values, const at::Tensor& indices) {
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  // The meta refuses complex inputs; the unsigned and float8 dtypes the core only stores sort on
  // the host.
  if (!core_sorts(self.scalar_type())) {
    begin_host_fallback("aten::sort.stable");
    auto host = at::sort(self.cpu(), stable, wrapped, descending);
    copy_into(std::get<0>(host), values, false);
    copy_into(std::get<1>(host), indices, false);
    return;
  }
  launch_sort(self, wrapped, descending, values, indices);
}

std::tuple<at::Tensor, at::Tensor> sort_stable(const at::Tensor& self, std::optional<bool> stable,
                                               int64_t dim, bool descending) {
  Functional<at::meta::structured_sort_stable, 2> op;
  op.meta(self, stable, dim, descending);
  run_sort(self, stable, dim, descending, op.outputs_[0], op.outputs_[1]);
  return {op.outputs_[0], op.outputs_[1]};
}

std::tuple<at::Tensor&, at::Tensor&> sort_stable_out(const at::Tensor& self,
                                                     std::optional<bool> stable, int64_t dim,
                                                     bool descending, at::Tensor& values,
                                                     at::Tensor& indices) {
  Out<at::meta::structured_sort_stable, 2> op(values, indices);
  op.meta(self, stable, dim, descending);
  run_sort(self, stable, dim, descending, values, indices);
  return {values, indices};
}

// ---- topk ----

// The first k of the order (largest first, or smallest first). Sorted or not, the core returns
// them in order, which sorted=False allows.
void run_topk(const at::Tensor& self, int64_t k, int64_t dim, bool largest,
              const at::Tensor& values, const at::Tensor& indices) {
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim(), /*wrap_scalar=*/true);
  // The meta refuses bool and complex inputs; CUDA's kernels also lack the unsigned dtypes the
  // core only stores, and return before looking at the dtype when there is nothing to select.
  const at::ScalarType type = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(k == 0 || self.numel() == 0 || core_sorts(type),
                              "\"topk_tpu\" not implemented for '", toString(type), "'");
  launch_sort(self, wrapped, largest, values, indices);
}

std::tuple<at::Tensor, at::Tensor> topk(const at::Tensor& self, int64_t k, int64_t dim,
                                        bool largest, bool sorted) {
  Functional<at::meta::structured_topk, 2> op;
  op.meta(self, k, dim, largest, sorted);
  run_topk(self, k, dim, largest, op.outputs_[0], op.outputs_[1]);
  return {op.outputs_[0], op.outputs_[1]};
}

std::tuple<at::Tensor&, at::Tensor&> topk_out(const at::Tensor& self, int64_t k, int64_t dim,
                                              bool largest, bool sorted, at::Tensor& values,
                                              at::Tensor& indices) {
  Out<at::meta::structured_topk, 2> op(values, indices);
  op.meta(self, k, dim, largest, sorted);
  run_topk(self, k, dim, largest, values, indices);
  return {values, indices};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("sort.stable", TORCH_FN(sort_stable));
  m.impl("sort.values_stable", TORCH_FN(sort_stable_out));
  m.impl("topk", TORCH_FN(topk));
  m.impl("topk.values", TORCH_FN(topk_out));
}

} // namespace torch_tpu
