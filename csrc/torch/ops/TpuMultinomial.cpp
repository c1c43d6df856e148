// multinomial and multinomial.out: PyTorch CPU's argument checks, then the core's MULTINOMIAL
// drawing from the tpu generator's Philox (seed, offset), taken as uniform_ and bernoulli_ take
// them, so the categories drawn are a function of the seed, the offset and the weights: the same
// in every eager mode and on every driver (csrc/core/ops/tpu_ops_random.h). The weights' own
// errors (NaN, infinite or negative values, rows of zeros) are found on the device without a host
// read, with CPU's messages: a RuntimeError at the op in debug mode, else at the next
// synchronization.
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "ops/TpuIndexCommon.h"
#include "runtime/TpuGenerator.h"

namespace torch_tpu {
namespace {

// The most categories CPU and CUDA accept (their index arithmetic is float's).
constexpr int64_t kMaxCategories = int64_t{1} << 24;

at::Tensor& multinomial_out(const at::Tensor& self, int64_t n_sample, bool with_replacement,
                            std::optional<at::Generator> gen, at::Tensor& result) {
  TORCH_CHECK(result.device() == self.device(), "multinomial arguments must have the same device");
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "prob_dist must be 1 or 2 dim");
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "multinomial only supports floating-point dtypes for input, got: ",
              self.scalar_type());
  TORCH_CHECK(result.scalar_type() == at::kLong, "multinomial expects Long tensor out, got: ",
              result.scalar_type());
  TORCH_CHECK(n_sample > 0, "cannot sample n_sample <= 0 samples");
  int64_t n_categories = self.size(-1);
  TORCH_CHECK(with_replacement || n_sample <= n_categories,
              "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  TORCH_CHECK(n_categories <= kMaxCategories, "number of categories cannot exceed 2^24");
  if (self.dim() == 1) {
    result.resize_({n_sample});
  } else {
    result.resize_({self.size(0), n_sample});
  }
  if (result.numel() == 0) {
    return result;
  }
  // No category to draw from: CPU's fast path fails in its range check, its row kernel on the sum.
  TORCH_CHECK(n_categories > 0, n_sample == 1
                                    ? "aminmax(): cannot compute aminmax over an empty dimension "
                                      "as the operation has no identity."
                                    : TPU_MULTINOMIAL_ZERO_SUM);
  at::Tensor weights = self.dim() == 1 ? self.unsqueeze(0) : self;
  at::Tensor draws = self.dim() == 1 ? result.unsqueeze(0) : result;
  OpCall call = make_call(TPU_OP_MULTINOMIAL, {core_view(weights)}, {core_view(draws)});
  call->scalars[0].i = with_replacement ? 1 : 0;
  PhiloxArgs args = philox_args(std::move(gen), self.device().index());
  call->scalars[2].u = args.seed;
  call->scalars[3].u = args.offset;
  launch(self.device().index(), std::move(call));
  return result;
}

at::Tensor multinomial(const at::Tensor& self, int64_t n_sample, bool with_replacement,
                       std::optional<at::Generator> gen) {
  at::Tensor result = at::empty({0}, self.options().dtype(at::kLong));
  multinomial_out(self, n_sample, with_replacement, std::move(gen), result);
  return result;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("multinomial", TORCH_FN(multinomial));
  m.impl("multinomial.out", TORCH_FN(multinomial_out));
}

} // namespace torch_tpu
