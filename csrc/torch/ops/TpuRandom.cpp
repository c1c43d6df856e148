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
    const at::Tensor& self,
    tpu_op_id op,
    tpu_scalar a,
    tpu_scalar b,
    std::optional<at::Generator> generator) {
  // A tpu generator dispatches here even for a tensor of another device.
  TORCH_CHECK(
      self.is_privateuseone(), "Expected a 'tpu' tensor for a tpu generator, but got ",
      self.device());
  if (self.numel() == 0) {
    return;
  }
  PhiloxArgs args = philox_args(generator, self.device().index());
  OpCall call = new_call(op, 0, 1);
  call->tensors[0] = core_view(self);
  call->scalars[0] = a;
  call->scalars[1] = b;
  call->scalars[2].u = args.seed;
  call->scalars[3].u = args.offset;
  launch(self.device().index(), std::move(call));
}

void check_floating(const at::Tensor& self, const char* name) {
  TORCH_CHECK_NOT_IMPLEMENTED(
      self.is_floating_point(), "\"", name, "\" not implemented for '",
      c10::toString(self.scalar_type()), "'");
}

// Functors for ATen's uniform_ and normal_ templates, which check bounds against the dtype and
// fill complex tensors through their real view, as CPU and CUDA do.
template <typename RNG>
struct UniformKernel {
  void operator()(at::TensorIteratorBase& iter, double from, double to,
                  std::optional<at::Generator> gen) {
    at::Tensor self = iter.tensor(0);
    check_floating(self, "uniform_kernel");
    launch_random(self, TPU_OP_UNIFORM, {.f = from}, {.f = to}, std::move(gen));
  }
};

template <typename RNG>
struct NormalKernel {
  void operator()(const at::TensorBase& self, double mean, double std,
                  std::optional<at::Generator> gen) {
    at::Tensor tensor(self);
    check_floating(tensor, "normal_kernel");
    launch_random(tensor, TPU_OP_NORMAL, {.f = mean}, {.f = std}, std::move(gen));
  }
};

at::Tensor& uniform(at::Tensor& self, double from, double to, std::optional<at::Generator> gen) {
  return at::native::templates::uniform_impl_<UniformKernel, TpuGeneratorImpl*>(
      self, from, to, std::move(gen));
}

at::Tensor& normal(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  return at::native::templates::normal_impl_<NormalKernel, TpuGeneratorImpl*>(
      self, mean, std, std::move(gen));
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

// random_() without bounds: [0, 2^digits] for floating types, [0, max] for integers (all 64 bits
// for uint64, passed as range 0).
template <typename RNG>
struct RandomKernel {
  void operator()(at::TensorIteratorBase& iter, std::optional<at::Generator> gen) {
    at::Tensor self = iter.tensor(0);
    uint64_t range = 0;
    AT_DISPATCH_V2(self.scalar_type(), "random_", AT_WRAP([&] {
      if constexpr (std::is_same_v<scalar_t, bool>) {
        range = 2;
      } else if constexpr (std::is_integral_v<scalar_t>) {
        range = static_cast<uint64_t>(std::numeric_limits<scalar_t>::max()) + 1;
      } else {
        range = (uint64_t{1} << std::numeric_limits<scalar_t>::digits) + 1;
      }
    }), AT_EXPAND(AT_INTEGRAL_TYPES), AT_EXPAND(AT_FLOATING_TYPES), at::kBool, at::kHalf,
        at::kBFloat16, at::kUInt32, at::kUInt64);  // uint16 is refused, as on CPU
    RandomFromToKernel<RNG>()(iter, range, 0, std::move(gen));
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
