#include "runtime/TpuGenerator.h"

#include <ATen/CPUFunctions.h>
#include <ATen/core/DistributionsHelper.h>
#include <ATen/ops/empty.h>

#include <cstring>
#include <deque>
#include <mutex>

#include "compile/TpuCapture.h"
#include "runtime/TpuStreams.h"

namespace torch_tpu {

namespace {
// A random op consumes one offset step: values come from Philox counters (element block, offset),
// so one step gives every element of any op fresh counters. Steps of 4 keep offsets aligned the
// way CUDA's are, for code that rounds them.
constexpr uint64_t kOffsetStep = 4;
constexpr size_t kStateBytes = sizeof(uint64_t) + sizeof(int64_t);
} // namespace

TpuGeneratorImpl::TpuGeneratorImpl(c10::DeviceIndex device)
    : c10::GeneratorImpl(
          c10::Device(c10::DeviceType::PrivateUse1, device),
          c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)) {}

void TpuGeneratorImpl::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}

void TpuGeneratorImpl::set_offset(uint64_t offset) {
  offset_ = offset;
}

uint64_t TpuGeneratorImpl::get_offset() const {
  return offset_;
}

uint64_t TpuGeneratorImpl::current_seed() const {
  return seed_;
}

uint64_t TpuGeneratorImpl::seed() {
  uint64_t random = c10::detail::getNonDeterministicRandom(true);
  set_current_seed(random);
  return random;
}

void TpuGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  TORCH_CHECK_TYPE(
      new_state.dtype() == caffe2::TypeMeta::Make<uint8_t>(),
      "expected a torch.ByteTensor, but got ", new_state.dtype());
  TORCH_CHECK(
      new_state.numel() == static_cast<int64_t>(kStateBytes),
      "RNG state is wrong size: expected ", kStateBytes, " bytes, got ", new_state.numel());
  TORCH_CHECK(new_state.device().is_cpu(), "RNG state must be a CPU tensor");
  const auto* bytes = static_cast<const uint8_t*>(new_state.data());
  uint64_t seed = 0;
  int64_t offset = 0;
  std::memcpy(&seed, bytes, sizeof seed);
  std::memcpy(&offset, bytes + sizeof seed, sizeof offset);
  TORCH_CHECK(offset >= 0, "RNG state offset must be non-negative, got ", offset);
  seed_ = seed;
  offset_ = static_cast<uint64_t>(offset);
}

c10::intrusive_ptr<c10::TensorImpl> TpuGeneratorImpl::get_state() const {
  auto state = at::empty({static_cast<int64_t>(kStateBytes)}, at::TensorOptions().dtype(at::kByte));
  auto* bytes = state.data_ptr<uint8_t>();
  int64_t offset = static_cast<int64_t>(offset_);
  std::memcpy(bytes, &seed_, sizeof seed_);
  std::memcpy(bytes + sizeof seed_, &offset, sizeof offset);
  return state.getIntrusivePtr();
}

PhiloxArgs TpuGeneratorImpl::next_philox_args() {
  PhiloxArgs args{seed_, offset_};
  offset_ += kOffsetStep;
  return args;
}

c10::DeviceType TpuGeneratorImpl::device_type() {
  return c10::DeviceType::PrivateUse1;
}

TpuGeneratorImpl* TpuGeneratorImpl::clone_impl() const {
  auto* copy = new TpuGeneratorImpl(device().index());
  copy->seed_ = seed_;
  copy->offset_ = offset_;
  return copy;
}

const at::Generator& default_generator(c10::DeviceIndex device) {
  // A deque keeps references stable; generators are created on first use, never at load time.
  static std::mutex mutex;
  static std::deque<at::Generator> generators;
  c10::DeviceIndex count = device_count();
  if (device < 0) {
    device = current_device();
  }
  TORCH_CHECK(device >= 0 && device < count, "invalid tpu device index ", device);
  std::lock_guard<std::mutex> lock(mutex);
  while (static_cast<c10::DeviceIndex>(generators.size()) < count) {
    generators.push_back(
        at::make_generator<TpuGeneratorImpl>(static_cast<c10::DeviceIndex>(generators.size())));
  }
  return generators[device];
}

at::Generator new_generator(c10::DeviceIndex device) {
  if (device < 0) {
    device = current_device();
  }
  TORCH_CHECK(device >= 0 && device < device_count(), "invalid tpu device index ", device);
  return at::make_generator<TpuGeneratorImpl>(device);
}

PhiloxArgs philox_args(std::optional<at::Generator> generator, c10::DeviceIndex device) {
  const at::Generator& fallback = default_generator(device);
  auto* impl = at::get_generator_or_default<TpuGeneratorImpl>(generator, fallback);
  PhiloxArgs args;
  {
    std::lock_guard<std::mutex> lock(impl->mutex_);
    args = impl->next_philox_args();
  }
  capture_random(args.seed, args.offset, impl == fallback.unsafeGetGeneratorImpl());
  return args;
}

} // namespace torch_tpu
