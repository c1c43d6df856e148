// unique (_unique2, _unique) and unique_consecutive over the flattened input, as composites of
// native ops: the values in order (the core's stable SORT for unique), a mask of the first
// element of each run of equal values, masked_select for the values (its count is read on the
// host, as nonzero's is, and as CUDA reads the number of unique values), a running sum of the
// mask for the inverse, and a scatter-add for the counts. NaN equals nothing, so each NaN is a
// value of its own, after the numbers, as on CPU. Outputs not asked for are empty int64 tensors,
// as CPU returns them.
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/masked_select.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/unique_consecutive.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include "ops/TpuOps.h"
#include "runtime/TpuCore.h"

namespace torch_tpu {
namespace {

using Triple = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

void check_uniquable(const at::Tensor& self, const char* name) {
  const at::ScalarType type = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(!at::isComplexType(type) && is_storable(type) &&
                                  tpu_dtype_is_computable(to_core_dtype(type)),
                              "\"", name, "\" not implemented for '", toString(type), "'");
}

// The runs of equal neighbours of the rank-1 `ordered`: their first elements' mask and, per
// element, its run's number.
std::pair<at::Tensor, at::Tensor> runs(const at::Tensor& ordered) {
  const int64_t n = ordered.numel();
  at::Tensor first = at::ones({n}, ordered.options().dtype(at::kBool));
  if (n > 1) {
    first.narrow(0, 1, n - 1).copy_(ordered.narrow(0, 1, n - 1).ne(ordered.narrow(0, 0, n - 1)));
  }
  at::Tensor number = at::cumsum(first, 0).sub_(1);
  return {first, number};
}

// The values, the inverse (sized like self, run numbers in the input's order through `order`,
// or the runs' order itself when undefined) and the counts of the runs of `ordered`.
Triple collect(const at::Tensor& self, const at::Tensor& ordered, const at::Tensor& order,
               bool return_inverse, bool return_counts) {
  const at::TensorOptions longs = self.options().dtype(at::kLong);
  auto [first, number] = runs(ordered);
  at::Tensor values = at::masked_select(ordered, first);
  at::Tensor inverse = at::empty({0}, longs), counts = at::empty({0}, longs);
  if (return_inverse) {
    inverse = order.defined() ? at::empty({ordered.numel()}, longs).scatter_(0, order, number)
                              : number;
    inverse = inverse.reshape(self.sizes());
  }
  if (return_counts) {
    counts = at::zeros({values.numel()}, longs)
                 .scatter_add_(0, number, at::ones({ordered.numel()}, longs));
  }
  return {values, inverse, counts};
}

Triple unique2(const at::Tensor& self, bool sorted, bool return_inverse, bool return_counts) {
  (void)sorted; // CPU sorts either way
  check_uniquable(self, "unique");
  const at::Tensor flat = self.reshape(-1);
  if (flat.numel() == 0) {
    const at::TensorOptions longs = self.options().dtype(at::kLong);
    return {at::empty({0}, self.options()),
            return_inverse ? at::empty(self.sizes(), longs) : at::empty({0}, longs),
            at::empty({0}, longs)};
  }
  auto [ordered, order] = at::sort(flat, /*stable=*/true, 0, /*descending=*/false);
  return collect(self, ordered, order, return_inverse, return_counts);
}

std::tuple<at::Tensor, at::Tensor> unique(const at::Tensor& self, bool sorted,
                                          bool return_inverse) {
  auto [values, inverse, counts] = unique2(self, sorted, return_inverse, false);
  return {values, inverse};
}

Triple unique_consecutive(const at::Tensor& self, bool return_inverse, bool return_counts,
                          std::optional<int64_t> dim) {
  if (dim.has_value() && self.dim() != 1) {
    begin_host_fallback("aten::unique_consecutive");
    auto host = at::unique_consecutive(self.cpu(), return_inverse, return_counts, dim);
    return {std::get<0>(host).to(self.device()), std::get<1>(host).to(self.device()),
            std::get<2>(host).to(self.device())};
  }
  check_uniquable(self, "unique_consecutive");
  const at::Tensor flat = self.reshape(-1);
  if (flat.numel() == 0) {
    const at::TensorOptions longs = self.options().dtype(at::kLong);
    return {at::empty({0}, self.options()), at::empty({0}, longs), at::empty({0}, longs)};
  }
  return collect(self, flat, at::Tensor(), return_inverse, return_counts);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_unique2", TORCH_FN(unique2));
  m.impl("_unique", TORCH_FN(unique));
  m.impl("unique_consecutive", TORCH_FN(unique_consecutive));
}

} // namespace torch_tpu
