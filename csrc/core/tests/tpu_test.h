/* A minimal test harness for the core's C tests: CHECK records a failure and goes on; CHECK_OK
 * records a failed call and returns from the calling function, since what follows would run on
 * results the call never made; each test program returns non-zero when any check failed. */
#ifndef TPU_TEST_H
#define TPU_TEST_H

#include <stdatomic.h>
#include <stdio.h>

#include "drivers/tpu_drivers.h"
#include "exec/tpu_submit.h"

/* Submits `call` to `s` in `mode`, as if it were the stream's own mode for this call: how a test
 * chooses the mode it submits in (exec/tpu_submit.h). */
static inline tpu_status tpu_test_submit(tpu_stream *s, tpu_eager_mode mode, tpu_op_call *call) {
  tpu_eager_mode before = tpu_stream_eager_mode(s);
  tpu_stream_set_eager_mode(s, mode);
  tpu_status st = tpu_submit(s, call);
  tpu_stream_set_eager_mode(s, before);
  return st;
}

/* Atomic: checks also fail on worker and stress threads. */
static atomic_int tpu_test_failures;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                     \
      tpu_test_failures++;                                                                         \
    }                                                                                              \
  } while (0)

/* Records a call that did not return TPU_OK and returns `value` from the calling function. */
#define CHECK_OK_OR(expr, value)                                                                   \
  do {                                                                                             \
    tpu_status check_status_ = (expr);                                                             \
    if (check_status_ != TPU_OK) {                                                                 \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, tpu_last_error());      \
      tpu_test_failures++;                                                                         \
      return value;                                                                                \
    }                                                                                              \
  } while (0)

/* CHECK_OK_OR in a function that returns nothing. */
#define CHECK_OK(expr) CHECK_OK_OR(expr, )

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
