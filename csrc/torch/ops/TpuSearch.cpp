// searchsorted and bucketize on the core's SEARCH op, histc and bincount on its HISTC op
// (csrc/core/ops/tpu_ops_sort.h). Argument checks are PyTorch CPU's (searchsorted's from ATen's
// own BucketizationUtils.h). Where the answer needs values on the host, the host waits as CUDA
// does: histc's range when min == max, bincount's size from the input's largest element, and a
// sorter's range check.
#include <ATen/native/BucketizationUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/aminmax.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/gather.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <cmath>

#include "ops/TpuOps.h"
#include "runtime/TpuCore.h"

namespace torch_tpu {
namespace {

bool core_searches(at::ScalarType type) {
  return is_storable(type) && tpu_dtype_is_computable(to_core_dtype(type)) &&
         !at::isComplexType(type);
}

// ---- searchsorted, bucketize ----

// PyTorch CPU's searchsorted_out_cpu into `result` (int64, or int32 for out_int32).
void run_searchsorted(const at::Tensor& sorted_sequence, const at::Tensor& self, bool out_int32,
                      bool right, std::optional<std::string_view> side,
                      const std::optional<at::Tensor>& sorter_opt, at::Tensor& result) {
  const at::Tensor sorter = sorter_opt.has_value() ? *sorter_opt : at::Tensor();
  at::native::searchsorted_pre_check(sorted_sequence, self, result, out_int32, right, side,
                                     sorter);
  at::native::resize_output(result, self.sizes());
  const bool is_right = side ? *side == "right" : right;
  if (self.numel() == 0) {
    return;
  }
  at::Tensor values = self, boundaries = sorted_sequence;
  if (values.scalar_type() != boundaries.scalar_type()) {
    at::native::ResultTypeState state = {};
    state = at::native::update_result_type_state(boundaries, state);
    state = at::native::update_result_type_state(values, state);
    const at::ScalarType common = at::native::result_type(state);
    values = values.to(common);
    boundaries = boundaries.to(common);
  }
  TORCH_CHECK_NOT_IMPLEMENTED(core_searches(values.scalar_type()),
                              "\"searchsorted_out_cpu\" not implemented for '",
                              toString(values.scalar_type()), "'");
  if (sorter.defined()) {
    boundaries = boundaries.gather(-1, sorter);
  }
  if (values.device() != result.device() || boundaries.device() != result.device()) {
    values = values.to(result.device());
    boundaries = boundaries.to(result.device());
  }
  OpCall call = new_call(TPU_OP_SEARCH, 2, 1);
  call->tensors[0] = core_view(boundaries);
  call->tensors[1] = core_view(values);
  call->tensors[2] = core_view(result);
  call->scalars[0].i = is_right ? 1 : 0;
  launch(result.device().index(), std::move(call));
}

at::Tensor search_tensor(const at::Tensor& sorted_sequence, const at::Tensor& self,
                        bool out_int32, bool right, std::optional<std::string_view> side,
                        const std::optional<at::Tensor>& sorter) {
  at::Tensor result = at::empty({0}, self.options().dtype(out_int32 ? at::kInt : at::kLong));
  run_searchsorted(sorted_sequence, self, out_int32, right, side, sorter, result);
  return result;
}

at::Tensor& search_tensor_out(const at::Tensor& sorted_sequence, const at::Tensor& self,
                             bool out_int32, bool right, std::optional<std::string_view> side,
                             const std::optional<at::Tensor>& sorter, at::Tensor& result) {
  check_out_device(sorted_sequence, result);
  run_searchsorted(sorted_sequence, self, out_int32, right, side, sorter, result);
  return result;
}

at::Tensor search_scalar(const at::Tensor& sorted_sequence, const at::Scalar& self,
                               bool out_int32, bool right, std::optional<std::string_view> side,
                               const std::optional<at::Tensor>& sorter) {
  at::Tensor value = at::native::searchsorted_scalar_tensor(self, sorted_sequence.device());
  at::Tensor result =
      at::empty({0}, sorted_sequence.options().dtype(out_int32 ? at::kInt : at::kLong));
  run_searchsorted(sorted_sequence, value, out_int32, right, side, sorter, result);
  return result;
}

at::Tensor& search_scalar_out(const at::Tensor& sorted_sequence, const at::Scalar& self,
                                    bool out_int32, bool right,
                                    std::optional<std::string_view> side,
                                    const std::optional<at::Tensor>& sorter, at::Tensor& result) {
  check_out_device(sorted_sequence, result);
  at::Tensor value = at::native::searchsorted_scalar_tensor(self, sorted_sequence.device());
  run_searchsorted(sorted_sequence, value, out_int32, right, side, sorter, result);
  return result;
}

void check_bucketize(const at::Tensor& boundaries) {
  TORCH_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(",
              boundaries.dim(), ")");
}

at::Tensor bucketize(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32,
                     bool right) {
  check_bucketize(boundaries);
  return search_tensor(boundaries, self, out_int32, right, std::nullopt, std::nullopt);
}

at::Tensor& bucketize_out(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32,
                          bool right, at::Tensor& result) {
  check_bucketize(boundaries);
  return search_tensor_out(boundaries, self, out_int32, right, std::nullopt, std::nullopt, result);
}

at::Tensor bucketize_scalar(const at::Scalar& self, const at::Tensor& boundaries, bool out_int32,
                            bool right) {
  check_bucketize(boundaries);
  return search_scalar(boundaries, self, out_int32, right, std::nullopt, std::nullopt);
}

// ---- histc, bincount ----

// Counts `self` (weighted by `weights` when defined) into hist's bins over [lo, hi].
void launch_histc(const at::Tensor& self, const at::Tensor& weights, double lo, double hi,
                  const at::Tensor& hist) {
  const bool weighted = weights.defined();
  OpCall call = new_call(TPU_OP_HISTC, weighted ? 2 : 1, 1);
  call->tensors[0] = core_view(self);
  if (weighted) {
    call->tensors[1] = core_view(weights);
  }
  call->tensors[weighted ? 2 : 1] = core_view(hist);
  call->scalars[0].f = lo;
  call->scalars[1].f = hi;
  launch(self.device().index(), std::move(call));
}

// The range histc counts over: the data's extremes when min == max, widened when those agree.
std::pair<double, double> histc_range(const at::Tensor& self, const at::Scalar& min,
                                      const at::Scalar& max) {
  double lo = min.to<double>(), hi = max.to<double>();
  if (lo == hi && self.numel() > 0) {
    auto extremes = at::aminmax(self);
    at::Tensor both =
        at::stack({std::get<0>(extremes), std::get<1>(extremes)}).to(at::kDouble).cpu();
    lo = both[0].item<double>();
    hi = both[1].item<double>();
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  TORCH_CHECK(!(std::isinf(lo) || std::isinf(hi) || std::isnan(lo) || std::isnan(hi)),
              "torch.histc: range of [", lo, ", ", hi, "] is not finite");
  TORCH_CHECK(lo < hi, "torch.histc: max must be larger than min");
  return {lo, hi};
}

at::Tensor& histc_out(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                      const at::Scalar& max, at::Tensor& hist) {
  check_out_device(self, hist);
  TORCH_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins,
              " for dimension 0");
  const at::ScalarType type = self.scalar_type();
  // CPU counts only floating inputs; CUDA also the integers, as here.
  TORCH_CHECK_NOT_IMPLEMENTED(
      core_searches(type) && type != at::kBool,
      "\"histogram_tpu\" not implemented for '", toString(type), "'");
  TORCH_CHECK(hist.scalar_type() == type, "torch.histogram: input tensor and hist tensor should",
              " have the same dtype, but got input ", type, " and hist ",
              hist.scalar_type());
  at::native::resize_output(hist, {bins});
  auto [lo, hi] = histc_range(self, min, max);
  if (at::isFloatingType(type)) {
    launch_histc(self, at::Tensor(), lo, hi, hist);
  } else { // integer counts go through int64
    at::Tensor counts = at::empty({bins}, self.options().dtype(at::kLong));
    launch_histc(self, at::Tensor(), lo, hi, counts);
    copy_into(counts, hist, false);
  }
  return hist;
}

at::Tensor histc(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                 const at::Scalar& max) {
  at::Tensor hist = at::empty({0}, self.options());
  return histc_out(self, bins, min, max, hist);
}

at::Tensor bincount(const at::Tensor& self, const std::optional<at::Tensor>& weights_opt,
                    int64_t minlength) {
  const at::ScalarType type = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(at::isIntegralType(type, /*includeBool=*/false),
                              "\"bincount_cpu\" not implemented for '", toString(type), "'");
  at::Tensor weights = weights_opt.has_value() ? *weights_opt : at::Tensor();
  const bool weighted = weights.defined();
  // Float weights sum as float, any others as double.
  const at::ScalarType out_type =
      !weighted ? at::kLong
                : (weights.scalar_type() == at::kFloat ? at::kFloat : at::kDouble);
  TORCH_CHECK(minlength >= 0, "minlength should be >= 0");
  if (self.dim() == 1 && self.numel() == 0) {
    return at::zeros({minlength}, self.options().dtype(at::kLong));
  }
  TORCH_CHECK(self.dim() == 1, "bincount only supports 1-d non-negative integral inputs.");
  auto extremes = at::aminmax(self);
  at::Tensor both = at::stack({std::get<0>(extremes), std::get<1>(extremes)}).to(at::kLong).cpu();
  const int64_t smallest = both[0].item<int64_t>(), largest = both[1].item<int64_t>();
  TORCH_CHECK(smallest >= 0, "bincount only supports 1-d non-negative integral inputs.");
  if (weighted) {
    TORCH_CHECK(weights.dim() == 1 && weights.size(0) == self.size(0),
                "weights should be 1-d and have the same length as input");
    if (!at::isFloatingType(weights.scalar_type())) {
      weights = weights.to(at::kDouble);
    }
  }
  const int64_t bins = std::max(largest + 1, minlength);
  at::Tensor out = at::empty({bins}, self.options().dtype(out_type));
  launch_histc(self, weights, 0.0, static_cast<double>(bins), out);
  return out;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("searchsorted.Tensor", TORCH_FN(search_tensor));
  m.impl("searchsorted.Tensor_out", TORCH_FN(search_tensor_out));
  m.impl("searchsorted.Scalar", TORCH_FN(search_scalar));
  m.impl("searchsorted.Scalar_out", TORCH_FN(search_scalar_out));
  m.impl("bucketize.Tensor", TORCH_FN(bucketize));
  m.impl("bucketize.Tensor_out", TORCH_FN(bucketize_out));
  m.impl("bucketize.Scalar", TORCH_FN(bucketize_scalar));
  m.impl("histc", TORCH_FN(histc));
  m.impl("histc.out", TORCH_FN(histc_out));
  m.impl("bincount", TORCH_FN(bincount));
}

} // namespace torch_tpu
