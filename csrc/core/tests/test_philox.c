/* Philox4x32-10 against Random123's known-answer vectors (kat_vectors), and the uniform helpers. */
#include "drivers/host/engine/engine_philox.h"
#include "tpu_test.h"

static void check_kat(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1,
                      uint32_t e0, uint32_t e1, uint32_t e2, uint32_t e3) {
  const uint32_t ctr[4] = {c0, c1, c2, c3}, key[2] = {k0, k1};
  uint32_t out[4];
  tpu_philox4x32_10(ctr, key, out);
  CHECK(out[0] == e0 && out[1] == e1 && out[2] == e2 && out[3] == e3);
}

static void test_known_answers(void) {
  check_kat(0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8);
  check_kat(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
            0x41c83b0e, 0xa20bc7c6, 0x6d5451fd);
  check_kat(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
            0x94fdcceb, 0x5001e420, 0x24126ea1);
}

static void test_uniform_helpers(void) {
  CHECK(tpu_philox_uniform_f32(0) == 0.0f);
  CHECK(tpu_philox_uniform_f32(0xffffffffu) == 1.0f - 0x1p-24f);
  CHECK(tpu_philox_uniform_f32(0xff800000u) == 0.5f); /* only the low 24 bits count */
  CHECK(tpu_philox_uniform_f64(0, 0) == 0.0);
  CHECK(tpu_philox_uniform_f64(0xffffffffu, 0xffffffffu) == 1.0 - 0x1p-53);
  CHECK(tpu_philox_uniform_f64(0, 0x00100000u) == 0.5);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_known_answers);
  RUN_TEST(test_uniform_helpers);
  TEST_MAIN_END();
}
