// uniform_, normal_ and random_: Philox values from the tpu generator's (seed, offset), each a
// function of the element's logical index, so results are reproducible from the seed.
#include <ATen/Dispatch_v2.h>
#include <ATen/native/DistributionTemplates.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cmath>
#include <limits>

#include "runtime/TpuCore.h"
#include "runtime/TpuGenerator.h"

namespace torch_tpu {
namespace {

void launch_random(
    at::Tensor& self,
    tpu_op_id op,
    tpu_scalar a,
    tpu_scalar b,
    std::optional<at::Generator> generator) {
  if (self.numel() == 0) {
    return;
  }
  TORCH_CHECK_TYPE(
      tpu_dtype_is_computable(to_core_dtype(self.scalar_type())) && !self.is_complex(),
      "random ops on tpu do not support dtype ", self.scalar_type());
  PhiloxArgs args = philox_args(generator, self.device().index());
  tpu_op_call* call = new_call(op, 0, 1);
  call->tensors[0] = core_view(self);
  call->scalars[0] = a;
  call->scalars[1] = b;
  call->scalars[2].u = args.seed;
  call->scalars[3].u = args.offset;
  launch(self.device().index(), call);
}

at::Tensor& uniform(at::Tensor& self, double from, double to, std::optional<at::Generator> gen) {
  TORCH_CHECK_TYPE(self.is_floating_point(), "uniform_ expects a floating point tensor, got ",
                   self.scalar_type());
  TORCH_CHECK(
      from <= to, "uniform_ expects to return a [from, to) range, but found from=", from,
      " > to=", to);
  TORCH_CHECK(
      to - from <= std::numeric_limits<double>::max(),
      "uniform_ expects to-from <= std::numeric_limits<double>::max(), but found to=", to,
      " and from=", from, " which result in to-from to exceed the limit");
  launch_random(self, TPU_OP_UNIFORM, {.f = from}, {.f = to}, std::move(gen));
  return self;
}

at::Tensor& normal(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  TORCH_CHECK_TYPE(self.is_floating_point(), "normal_ expects a floating point tensor, got ",
                   self.scalar_type());
  launch_random(self, TPU_OP_NORMAL, {.f = mean}, {.f = std}, std::move(gen));
  return self;
}

// Functors for ATen's random_ templates, which check the bounds and compute [from, from + range)
// exactly as CPU and CUDA do; the kernel draws from + bits % range (range 0: all 64 bits).
template <typename RNG>
struct RandomFromToKernel {
  void operator()(at::TensorIteratorBase& iter, uint64_t range, int64_t from,
                  std::optional<at::Generator> gen) {
    at::Tensor self = iter.tensor(0);
    launch_random(self, TPU_OP_RANDOM, {.i = from}, {.u = range}, std::move(gen));
  }
  void operator()(at::TensorIteratorBase& iter, std::optional<at::Generator> gen) {
    (*this)(iter, 0, std::numeric_limits<int64_t>::lowest(), std::move(gen));
  }
};

// random_() without bounds: [0, 2^digits] for floating types, [0, max] for integers.
template <typename RNG>
struct RandomKernel {
  void operator()(at::TensorIteratorBase& iter, std::optional<at::Generator> gen) {
    at::Tensor self = iter.tensor(0);
    int64_t upper = 0;
    AT_DISPATCH_V2(self.scalar_type(), "random_", AT_WRAP([&] {
      if constexpr (std::is_same_v<scalar_t, bool>) {
        upper = 1;
      } else if constexpr (std::is_integral_v<scalar_t>) {
        upper = static_cast<int64_t>(std::numeric_limits<scalar_t>::max());
      } else {
        upper = int64_t{1} << std::numeric_limits<scalar_t>::digits;
      }
    }), AT_EXPAND(AT_INTEGRAL_TYPES), AT_EXPAND(AT_FLOATING_TYPES), at::kBool, at::kHalf,
        at::kBFloat16);
    RandomFromToKernel<RNG>()(iter, static_cast<uint64_t>(upper) + 1, 0, std::move(gen));
  }
};

at::Tensor& random_full(at::Tensor& self, std::optional<at::Generator> gen) {
  return at::native::templates::random_impl<RandomKernel, TpuGeneratorImpl*>(self, std::move(gen));
}

at::Tensor& random_from(at::Tensor& self, int64_t from, std::optional<int64_t> to,
                        std::optional<at::Generator> gen) {
  return at::native::templates::random_from_to_impl<RandomFromToKernel, TpuGeneratorImpl*>(
      self, from, to, std::move(gen));
}

at::Tensor& random_to(at::Tensor& self, int64_t to, std::optional<at::Generator> gen) {
  return random_from(self, 0, to, std::move(gen));
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("uniform_", TORCH_FN(uniform));
  m.impl("normal_", TORCH_FN(normal));
  m.impl("random_", TORCH_FN(random_full));
  m.impl("random_.from", TORCH_FN(random_from));
  m.impl("random_.to", TORCH_FN(random_to));
}

} // namespace torch_tpu
