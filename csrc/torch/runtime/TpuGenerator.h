// The per-device Philox generator. Its state is CUDA's: 16 bytes, the seed then the offset, so
// DTensor's RNG tracker and checkpoints read it unchanged. Each random op takes the current
// (seed, offset) and advances the offset; the core derives every value from them and the element's
// logical index.
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

namespace torch_tpu {

struct PhiloxArgs {
  uint64_t seed;
  uint64_t offset;
};

struct TpuGeneratorImpl : public c10::GeneratorImpl {
  explicit TpuGeneratorImpl(c10::DeviceIndex device);

  void set_current_seed(uint64_t seed) override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;

  // The arguments of one random op; advances the offset. Callers hold the generator's mutex_.
  PhiloxArgs next_philox_args();

  static c10::DeviceType device_type();

 private:
  TpuGeneratorImpl* clone_impl() const override;
  uint64_t seed_ = c10::default_rng_seed_val;
  uint64_t offset_ = 0;
};

// The default generator of `device` (-1: the current device).
const at::Generator& default_generator(c10::DeviceIndex device);

// A new generator for `device`.
at::Generator new_generator(c10::DeviceIndex device);

// Philox arguments from `generator`, or from the default generator of `device` when absent.
PhiloxArgs philox_args(std::optional<at::Generator> generator, c10::DeviceIndex device);

} // namespace torch_tpu
