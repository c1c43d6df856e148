#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device/tpu_device.h"
#include "tpu_test.h"

#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)

typedef struct registry_view {
  int count;
  uint64_t capacity;
} registry_view;

/* The registry is read once per process, so each environment is tried in a fresh child. */
static registry_view view_with(const char *num_devices, const char *memory) {
  int fds[2];
  registry_view view = {-1, 0};
  if (pipe(fds) != 0)
    return view;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (num_devices)
      setenv("TORCH_TPU_NUM_DEVICES", num_devices, 1);
    else
      unsetenv("TORCH_TPU_NUM_DEVICES");
    if (memory)
      setenv("TORCH_TPU_DEVICE_MEMORY", memory, 1);
    else
      unsetenv("TORCH_TPU_DEVICE_MEMORY");
    registry_view v = {tpu_device_count(), tpu_device_capacity(0)};
    _exit(write(fds[1], &v, sizeof v) == sizeof v ? 0 : 1);
  }
  close(fds[1]);
  if (read(fds[0], &view, sizeof view) != sizeof view)
    view.count = -1;
  close(fds[0]);
  waitpid(pid, NULL, 0);
  return view;
}

static void test_env_parsing(void) {
  uint64_t ram = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
  uint64_t half = ram / 2 < 16 * GiB ? ram / 2 : 16 * GiB;
  registry_view v = view_with(NULL, NULL);
  CHECK(v.count == 1 && v.capacity == half);
  v = view_with("4", NULL);
  uint64_t quarter = ram / 2 / 4 < 16 * GiB ? ram / 2 / 4 : 16 * GiB;
  CHECK(v.count == 4 && v.capacity == quarter);
  CHECK(view_with("1000", "1GiB").count == TPU_MAX_DEVICES);
  CHECK(view_with("0", NULL).count == 1);
  CHECK(view_with("-3", NULL).count == 1);
  CHECK(view_with("two", NULL).count == 1);
  CHECK(view_with(NULL, "1GiB").capacity == GiB);
  CHECK(view_with(NULL, "512MB").capacity == 512 * MiB);
  CHECK(view_with(NULL, "64M").capacity == 64 * MiB);
  CHECK(view_with(NULL, "3145728").capacity == 3 * MiB);
  CHECK(view_with(NULL, "1KiB").capacity == 2 * MiB); /* clamped to one segment */
  CHECK(view_with(NULL, "lots").capacity == half);    /* malformed: the default, with a warning */
}

static void test_registry(void) {
  CHECK(tpu_device_count() == 2);
  CHECK(tpu_device_capacity(0) == 64 * MiB && tpu_device_capacity(1) == 64 * MiB);
  CHECK(tpu_device_capacity(2) == 0 && tpu_device_capacity(-1) == 0);
  CHECK(strcmp(tpu_device_props_of(0)->name, "TPU v5e (simulated)") == 0);
}

static void test_bad_index(void) {
  CHECK_OK(tpu_device_check(0));
  CHECK_OK(tpu_device_check(1));
  CHECK(tpu_device_check(2) == TPU_ERR_RUNTIME);
  CHECK(strcmp(tpu_last_error(), "invalid device ordinal: tpu:2 (there are 2 devices)") == 0);
  CHECK(tpu_device_check(-1) == TPU_ERR_RUNTIME);
  CHECK(strstr(tpu_last_error(), "tpu:-1") != NULL);
}

/* Runs `tpu_device_check(0)` in a child and returns its status (or -1). */
static int check_in_child(void) {
  pid_t pid = fork();
  if (pid == 0) {
    tpu_status st = tpu_device_check(0);
    bool message_ok = st != TPU_ERR_BAD_FORK ||
                      strncmp(tpu_last_error(), "Cannot re-initialize TPU in forked subprocess.",
                              46) == 0;
    _exit(message_ok && tpu_runtime_in_bad_fork() == (st == TPU_ERR_BAD_FORK) ? (int)st : 100);
  }
  int status;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
    return -1;
  return WEXITSTATUS(status);
}

static void test_fork(void) {
  CHECK(check_in_child() == TPU_OK); /* forked before initialization: usable */
  tpu_runtime_mark_initialized();
  CHECK(check_in_child() == TPU_ERR_BAD_FORK);
  CHECK(!tpu_runtime_in_bad_fork()); /* the parent stays usable */
  CHECK_OK(tpu_device_check(0));
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_env_parsing); /* first: its children must fork before the parent reads the env */
  setenv("TORCH_TPU_NUM_DEVICES", "2", 1);
  setenv("TORCH_TPU_DEVICE_MEMORY", "64MiB", 1);
  RUN_TEST(test_registry);
  RUN_TEST(test_bad_index);
  RUN_TEST(test_fork);
  TEST_MAIN_END();
}
