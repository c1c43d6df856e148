// Order statistics and whole-tensor comparisons as composites of native ops: kthvalue, median,
// nanmedian and mode pick from the core's stable SORT (csrc/core/ops/tpu_ops_sort.h), aminmax
// is amin and amax, equal is eq and all. PyTorch CPU picks the median of a row with nth_element
// over (value, position), NaN last, so the element at the median's place in the stable order is
// CPU's element, index included; a row with NaN gives its first NaN (median) or the median of
// the rest (nanmedian). kthvalue's index among equal values is the stable order's (CPU's
// quickselect leaves it unspecified). The functional and autograd forms are ATen's over these
// out= kernels.
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/amin.h>
#include <ATen/ops/aminmax_meta.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/topk.h>
#include <ATen/ops/where.h>
#include <torch/library.h>

#include "ops/TpuOps.h"
#include "ops/TpuStructured.h"
#include "runtime/TpuCore.h"

namespace torch_tpu {
namespace {

// The sizes of a reduction of `self` over `dim`.
std::vector<int64_t> reduced_sizes(const at::Tensor& self, int64_t dim, bool keepdim) {
  std::vector<int64_t> sizes = self.sizes().vec();
  if (self.dim() > 0) {
    if (keepdim) {
      sizes[dim] = 1;
    } else {
      sizes.erase(sizes.begin() + dim);
    }
  }
  return sizes;
}

// Writes (keepdim-shaped) picks into values and indices, resized to the reduction's sizes.
void write_picks(const at::Tensor& self, int64_t dim, bool keepdim, const at::Tensor& v,
                 const at::Tensor& i, at::Tensor& values, at::Tensor& indices) {
  const std::vector<int64_t> sizes = reduced_sizes(self, dim, keepdim);
  at::native::resize_output(values, sizes);
  at::native::resize_output(indices, sizes);
  copy_into(v.reshape(sizes), values, false);
  copy_into(i.reshape(sizes), indices, false);
}

void check_pick_outputs(const char* name, const at::Tensor& self, const at::Tensor& values,
                        const at::Tensor& indices) {
  check_out_device(self, values);
  check_out_device(self, indices);
  TORCH_CHECK(values.scalar_type() == self.scalar_type(), name,
              "(): Expected out tensor to have dtype ", self.scalar_type(), ", but got ",
              values.scalar_type(), " instead");
  TORCH_CHECK(indices.scalar_type() == at::kLong, name,
              "(): Expected out tensor to have dtype Long, but got ", indices.scalar_type(),
              " instead");
}

void check_sortable(const char* name, const at::Tensor& self) {
  const at::ScalarType type = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(type != at::kBool && !at::isComplexType(type) &&
                                  is_storable(type) &&
                                  tpu_dtype_is_computable(to_core_dtype(type)),
                              "\"", name, "\" not implemented for '", toString(type), "'");
}

// ---- kthvalue ----

std::tuple<at::Tensor&, at::Tensor&> kthvalue_out(const at::Tensor& self, int64_t k, int64_t dim_,
                                                  bool keepdim, at::Tensor& values,
                                                  at::Tensor& indices) {
  const int64_t dim = at::maybe_wrap_dim(dim_, self.dim(), /*wrap_scalar=*/true);
  at::assert_no_overlap(values, self);  // before the outputs are resized, as on CPU
  at::assert_no_overlap(indices, self);
  TORCH_CHECK(self.numel() > 0, "cannot perform reduction function kthvalue",
              " on tensor with no elements because the operation does not have an identity");
  TORCH_CHECK(k > 0 && k <= (self.dim() > 0 ? self.size(dim) : 1),
              "selected index k out of range");
  check_sortable("kthvalue_cpu", self);
  check_pick_outputs("kthvalue", self, values, indices);
  const at::Tensor in = self.dim() > 0 ? self : self.unsqueeze(0);
  // The k smallest in order (stable), of which the last.
  auto [v, i] = at::topk(in, k, dim, /*largest=*/false, /*sorted=*/true);
  write_picks(self, dim, keepdim, v.narrow(dim, k - 1, 1), i.narrow(dim, k - 1, 1), values,
              indices);
  return {values, indices};
}

// ---- median, nanmedian ----

// The median's place in each row of the stable ascending order of `sorted` along dim: the first
// NaN when a row has one and NaN counts, else the lower middle of the (non-NaN) elements.
at::Tensor median_places(const at::Tensor& sorted, int64_t dim, bool ignore_nan) {
  const int64_t n = sorted.size(dim);
  std::vector<int64_t> sizes = sorted.sizes().vec();
  sizes[dim] = 1;
  const at::Tensor middle = at::full(sizes, (n - 1) / 2, sorted.options().dtype(at::kLong));
  if (!at::isFloatingType(sorted.scalar_type())) {
    return middle;
  }
  const at::Tensor numbers = sorted.isnan().logical_not().sum(dim, /*keepdim=*/true);
  if (ignore_nan) { // (numbers - 1) / 2, and 0 for rows of NaN only
    return numbers.sub(1).clamp_min(0).div(2, "floor");
  }
  return at::where(numbers.lt(n), numbers, middle);
}

void median_dim_impl(const char* name, const at::Tensor& self, int64_t dim_, bool keepdim,
                     bool ignore_nan, at::Tensor& values, at::Tensor& indices) {
  const int64_t dim = at::maybe_wrap_dim(dim_, self.dim());
  const int64_t size = self.dim() > 0 ? self.size(dim) : 1;
  TORCH_CHECK_INDEX(size > 0, "median() cannot compute median for a dimension of size 0 because ",
              "the operation does not have an identity");
  check_sortable(name, self);
  check_pick_outputs("median", self, values, indices);
  const at::Tensor in = self.dim() > 0 ? self : self.unsqueeze(0);
  if (in.numel() == 0) {
    write_picks(self, dim, keepdim, at::empty({0}, values.options()),
                at::empty({0}, indices.options()), values, indices);
    return;
  }
  auto [sorted, order] = at::sort(in, /*stable=*/true, dim, /*descending=*/false);
  const at::Tensor places = median_places(sorted, dim, ignore_nan);
  write_picks(self, dim, keepdim, sorted.gather(dim, places), order.gather(dim, places), values,
              indices);
}

std::tuple<at::Tensor&, at::Tensor&> median_dim_out(const at::Tensor& self, int64_t dim,
                                                    bool keepdim, at::Tensor& values,
                                                    at::Tensor& indices) {
  median_dim_impl("median_out", self, dim, keepdim, false, values, indices);
  return {values, indices};
}

std::tuple<at::Tensor&, at::Tensor&> nanmedian_dim_out(const at::Tensor& self, int64_t dim,
                                                       bool keepdim, at::Tensor& values,
                                                       at::Tensor& indices) {
  median_dim_impl("median_out", self, dim, keepdim, true, values, indices);
  return {values, indices};
}

at::Tensor median_all(const at::Tensor& self, bool ignore_nan) {
  TORCH_CHECK(self.numel() > 0,
              "median() operation does not have an identity for empty input tensor");
  check_sortable("median_cpu", self);
  at::Tensor values = at::empty({0}, self.options());
  at::Tensor indices = at::empty({0}, self.options().dtype(at::kLong));
  median_dim_impl("median_cpu", self.reshape(-1), 0, false, ignore_nan, values, indices);
  return values;
}

at::Tensor median(const at::Tensor& self) {
  return median_all(self, false);
}

at::Tensor nanmedian(const at::Tensor& self) {
  return median_all(self, true);
}

// ---- mode ----

// CPU's mode: the smallest of the most frequent values and its last position. In the stable
// ascending order each run of equal values ends at that value's last position; the running
// length of the runs first reaches its largest at the end of the first longest run.
std::tuple<at::Tensor&, at::Tensor&> mode_out(const at::Tensor& self, int64_t dim_, bool keepdim,
                                              at::Tensor& values, at::Tensor& indices) {
  const int64_t dim = at::maybe_wrap_dim(dim_, self.dim(), /*wrap_scalar=*/true);
  const at::Tensor in = self.dim() > 0 ? self : self.unsqueeze(0);
  const at::ScalarType type = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(!at::isComplexType(type) && is_storable(type) &&
                                  tpu_dtype_is_computable(to_core_dtype(type)),
                              "\"mode_cpu\" not implemented for '", toString(type), "'");
  check_pick_outputs("mode", self, values, indices);
  TORCH_CHECK(in.size(dim) > 0, "mode(): Expected reduction dim ", dim,
              " to have non-zero size.");
  if (in.numel() == 0) {
    write_picks(self, dim, keepdim, at::empty({0}, values.options()),
                at::empty({0}, indices.options()), values, indices);
    return {values, indices};
  }
  auto [sorted, order] = at::sort(in, /*stable=*/true, dim, /*descending=*/false);
  const int64_t n = sorted.size(dim);
  std::vector<int64_t> line(in.dim(), 1);
  line[dim] = n;
  const at::Tensor pos = at::arange(n, in.options().dtype(at::kLong)).view(line);
  at::Tensor first = at::ones(sorted.sizes(), in.options().dtype(at::kBool));
  if (n > 1) {
    first.narrow(dim, 1, n - 1)
        .copy_(sorted.narrow(dim, 1, n - 1).ne(sorted.narrow(dim, 0, n - 1)));
  }
  const at::Tensor start = std::get<0>(at::where(first, pos, 0).cummax(dim));
  const at::Tensor end = pos.sub(start).argmax(dim, /*keepdim=*/true);
  write_picks(self, dim, keepdim, sorted.gather(dim, end), order.gather(dim, end), values,
              indices);
  return {values, indices};
}

std::tuple<at::Tensor, at::Tensor> mode(const at::Tensor& self, int64_t dim, bool keepdim) {
  at::Tensor values = at::empty({0}, self.options());
  at::Tensor indices = at::empty({0}, self.options().dtype(at::kLong));
  mode_out(self, dim, keepdim, values, indices);
  return {values, indices};
}

// ---- aminmax ----

void run_aminmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
                 const at::Tensor& min, const at::Tensor& max) {
  at::Tensor lo = min, hi = max;
  if (dim.has_value()) {
    at::amin_out(lo, self, {*dim}, keepdim);
    at::amax_out(hi, self, {*dim}, keepdim);
  } else {
    at::amin_out(lo, self, {}, keepdim);
    at::amax_out(hi, self, {}, keepdim);
  }
}

std::tuple<at::Tensor, at::Tensor> aminmax(const at::Tensor& self, std::optional<int64_t> dim,
                                           bool keepdim) {
  Functional<at::meta::structured_aminmax, 2> op;
  op.meta(self, dim, keepdim);
  run_aminmax(self, dim, keepdim, op.outputs_[0], op.outputs_[1]);
  return {op.outputs_[0], op.outputs_[1]};
}

std::tuple<at::Tensor&, at::Tensor&> aminmax_out(const at::Tensor& self,
                                                 std::optional<int64_t> dim, bool keepdim,
                                                 at::Tensor& min, at::Tensor& max) {
  Out<at::meta::structured_aminmax, 2> op(min, max);
  op.meta(self, dim, keepdim);
  run_aminmax(self, dim, keepdim, min, max);
  return {min, max};
}

// ---- equal ----

// CUDA's equal: same sizes and every element equal after type promotion; the answer is read on
// the host.
bool equal(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.device() == other.device(), "Cannot compare two tensors on different devices. ",
              "Got: ", self.device(), " and ", other.device());
  if (!self.is_same_size(other)) {
    return false;
  }
  return self.eq(other).all().cpu().item<bool>();
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("kthvalue.values", TORCH_FN(kthvalue_out));
  m.impl("median", TORCH_FN(median));
  m.impl("median.dim_values", TORCH_FN(median_dim_out));
  m.impl("nanmedian", TORCH_FN(nanmedian));
  m.impl("nanmedian.dim_values", TORCH_FN(nanmedian_dim_out));
  m.impl("mode", TORCH_FN(mode));
  m.impl("mode.values", TORCH_FN(mode_out));
  m.impl("aminmax", TORCH_FN(aminmax));
  m.impl("aminmax.out", TORCH_FN(aminmax_out));
  m.impl("equal", TORCH_FN(equal));
}

} // namespace torch_tpu
