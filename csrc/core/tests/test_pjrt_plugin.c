/* Loading a PJRT plugin the driver cannot use (fake_pjrt_plugin.c): a plugin of another major
 * version, and one whose table lacks functions the driver calls, are refused with an error naming
 * the plugin, a missing function where one is, and both API versions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/pjrt/tpu_pjrt_plugin.h"
#include "tpu_test.h"

static void expect_refusal(const char *variant, const char *plugin_version, const char *missing) {
  setenv("FAKE_PJRT_VARIANT", variant, 1);
  const PJRT_Api *api = NULL;
  CHECK(tpu_pjrt_plugin_load(FAKE_PJRT_PLUGIN, &api) == TPU_ERR_RUNTIME);
  const char *why = tpu_last_error();
  char driver_version[32];
  snprintf(driver_version, sizeof driver_version, "C API %d.%d", PJRT_API_MAJOR, PJRT_API_MINOR);
  CHECK(api == NULL);
  CHECK(strstr(why, FAKE_PJRT_PLUGIN) != NULL);
  CHECK(strstr(why, plugin_version) != NULL);
  CHECK(strstr(why, driver_version) != NULL || strstr(why, driver_version + 6) != NULL);
  CHECK(!missing || strstr(why, missing) != NULL);
  if (tpu_test_failures)
    fprintf(stderr, "message: %s\n", why);
}

static void test_another_major_version_is_refused(void) {
  char version[32];
  snprintf(version, sizeof version, "%d.%d", PJRT_API_MAJOR + 1, PJRT_API_MINOR - 1);
  expect_refusal("major", version, NULL);
}

static void test_a_table_too_short_is_refused(void) {
  char version[32];
  snprintf(version, sizeof version, "%d.%d", PJRT_API_MAJOR, PJRT_API_MINOR - 1);
  expect_refusal("short", version, "lacks PJRT_");
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_another_major_version_is_refused);
  RUN_TEST(test_a_table_too_short_is_refused);
  TEST_MAIN_END();
}
