/* A minimal test harness for the core's C tests: CHECK records a failure and goes on; each test
 * program returns non-zero when any check failed. */
#ifndef TPU_TEST_H
#define TPU_TEST_H

#include <stdio.h>

#include "drivers/tpu_drivers.h"

static int tpu_test_failures;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                     \
      tpu_test_failures++;                                                                         \
    }                                                                                              \
  } while (0)

#define CHECK_OK(expr)                                                                             \
  do {                                                                                             \
    tpu_status check_status_ = (expr);                                                             \
    if (check_status_ != TPU_OK) {                                                                 \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, tpu_last_error());      \
      tpu_test_failures++;                                                                         \
    }                                                                                              \
  } while (0)

#define RUN_TEST(fn)                                                                               \
  do {                                                                                             \
    int before_ = tpu_test_failures;                                                               \
    fn();                                                                                          \
    printf("%s %s\n", tpu_test_failures == before_ ? "ok  " : "FAIL", #fn);                        \
  } while (0)

/* First in main: makes the built-in drivers selectable, as the binding does at import. */
#define TEST_MAIN_BEGIN()                                                                          \
  do {                                                                                             \
    if (tpu_drivers_register_builtin() != TPU_OK) {                                                \
      fprintf(stderr, "cannot register the drivers: %s\n", tpu_last_error());                      \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

#define TEST_MAIN_END() return tpu_test_failures ? 1 : 0

#endif
