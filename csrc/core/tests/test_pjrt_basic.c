/* The PJRT driver's first pieces against a real plugin (TORCH_TPU_PJRT_PLUGIN, e.g. XLA's CPU
 * plugin): load, client, host-to-device copies, a StableHLO module compiled and run, the result
 * read back, and the plugin's errors turned into statuses. Without a plugin it exits 77, which
 * CMake reports as skipped. */
#include <string.h>
#include <unistd.h>

#include "base/tpu_env.h"
#include "drivers/pjrt/tpu_pjrt_buffer.h"
#include "drivers/pjrt/tpu_pjrt_error.h"
#include "drivers/pjrt/tpu_pjrt_executable.h"
#include "drivers/pjrt/tpu_pjrt_plugin.h"
#include "tpu_test.h"

#define SKIP 77

/* ThreadSanitizer sees only instrumented code: a plugin built without it synchronizes its threads
 * where TSan cannot see (its own atomics), so TSan reports races inside the plugin (XLA's CPU
 * plugin: between its compile thread and the caller, at the first compile). */
#if defined(__SANITIZE_THREAD__)
#define TSAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TSAN_BUILD 1
#endif
#endif

/* The generic form of StableHLO ops, which every plugin's parser accepts. */
static const char add_module[] =
    "module @add {\n"
    "  func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %0 = \"stablehlo.add\"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
    "    \"func.return\"(%0) : (tensor<4xf32>) -> ()\n"
    "  }\n"
    "}\n";

static const char *plugin_path;
static const PJRT_Api *api;
static tpu_pjrt_client *client;

static void test_load(void) {
  CHECK_OK(tpu_pjrt_plugin_load(plugin_path, &api));
  printf("  plugin: PJRT C API %d.%d\n", api->pjrt_api_version.major_version,
         api->pjrt_api_version.minor_version);
  const PJRT_Api *again = NULL;
  CHECK_OK(tpu_pjrt_plugin_load(plugin_path, &again));
  CHECK(again == api);
  const PJRT_Api *other = NULL;
  CHECK(tpu_pjrt_plugin_load("/nonexistent/other_plugin.so", &other) == TPU_ERR_VALUE);
  CHECK(other == NULL && strstr(tpu_last_error(), "one plugin"));
  CHECK(tpu_pjrt_plugin_load("", &other) == TPU_ERR_VALUE);
}

static void test_client(void) {
  CHECK_OK(tpu_pjrt_client_create(api, &client));
  CHECK(client->device_count >= 1);
  printf("  client: %zu addressable devices\n", client->device_count);
}

/* The device of a buffer, as an index into client->devices (-1: none of them). */
static int device_of(PJRT_Buffer *buffer) {
  PJRT_Buffer_Device_Args args = {.struct_size = PJRT_Buffer_Device_Args_STRUCT_SIZE,
                                  .buffer = buffer};
  if (tpu_pjrt_status(client->api, client->api->PJRT_Buffer_Device(&args),
                      "PJRT_Buffer_Device") != TPU_OK)
    return -1;
  for (size_t d = 0; d < client->device_count; d++)
    if (client->devices[d] == args.device)
      return (int)d;
  return -1;
}

/* One executable runs on the device a run names, its result left there: the first and the last. */
static void test_add(void) {
  const float a[4] = {1.5f, -2.0f, 3.25f, 1e30f}, b[4] = {0.25f, 2.0f, -0.125f, 1e30f};
  const int64_t dims[1] = {4};
  PJRT_Buffer *in[2] = {NULL, NULL}, *out = NULL;
  tpu_pjrt_executable *exe = NULL;
  CHECK_OK(tpu_pjrt_executable_compile(client, add_module, strlen(add_module), &exe));
  CHECK(exe->output_count == 1);
  size_t last = client->device_count - 1;
  if (tpu_pjrt_buffer_from_host(client, last, TPU_FLOAT32, dims, 1, a, &in[0]) == TPU_OK &&
      tpu_pjrt_buffer_from_host(client, last, TPU_FLOAT32, dims, 1, b, &in[1]) == TPU_OK &&
      tpu_pjrt_executable_run(exe, last, in, 2, &out, 1, NULL) == TPU_OK) {
    CHECK(device_of(out) == (int)last);
    float result[4] = {0};
    CHECK(tpu_pjrt_buffer_to_host(client, out, result, sizeof result) == TPU_OK);
    for (int i = 0; i < 4; i++)
      CHECK(result[i] == a[i] + b[i]);
  } else {
    CHECK(!"copies and run on the last device");
    fprintf(stderr, "  %s\n", tpu_last_error());
  }
  CHECK(tpu_pjrt_buffer_destroy(client, out) == TPU_OK);
  CHECK(tpu_pjrt_buffer_destroy(client, in[0]) == TPU_OK);
  CHECK(tpu_pjrt_buffer_destroy(client, in[1]) == TPU_OK);
  out = in[0] = in[1] = NULL;
  CHECK(tpu_pjrt_executable_run(exe, client->device_count, in, 2, &out, 1, NULL) ==
        TPU_ERR_VALUE);
  if (tpu_pjrt_buffer_from_host(client, 0, TPU_FLOAT32, dims, 1, a, &in[0]) == TPU_OK &&
      tpu_pjrt_buffer_from_host(client, 0, TPU_FLOAT32, dims, 1, b, &in[1]) == TPU_OK &&
      tpu_pjrt_executable_run(exe, 0, in, 2, &out, 1, NULL) == TPU_OK) {
    CHECK(device_of(out) == 0);
    float result[4] = {0};
    CHECK(tpu_pjrt_buffer_to_host(client, out, result, sizeof result) == TPU_OK);
    for (int i = 0; i < 4; i++)
      CHECK(result[i] == a[i] + b[i]); /* each sum is exact in float32, 2e30 included */
    CHECK(tpu_pjrt_buffer_to_host(client, out, result, 8) == TPU_ERR_VALUE); /* short dst */
  } else {
    CHECK(!"copies and run");
    fprintf(stderr, "  %s\n", tpu_last_error());
  }
  CHECK(tpu_pjrt_buffer_destroy(client, out) == TPU_OK);
  out = NULL;
  /* One input too few: the plugin's error, and no output left behind. */
  CHECK(tpu_pjrt_executable_run(exe, 0, in, 1, &out, 1, NULL) != TPU_OK);
  CHECK(out == NULL);
  printf("  one input too few: %.160s\n", tpu_last_error());
  CHECK(tpu_pjrt_buffer_destroy(client, in[0]) == TPU_OK);
  CHECK(tpu_pjrt_buffer_destroy(client, in[1]) == TPU_OK);
  CHECK(tpu_pjrt_executable_destroy(exe) == TPU_OK);
}

/* A buffer copied to another device lands there with the same contents; its own device is no
 * destination. */
static void test_copy_between_devices(void) {
  const int32_t a[3] = {7, -1, 1 << 30};
  const int64_t dims[1] = {3};
  size_t last = client->device_count - 1;
  PJRT_Buffer *src = NULL, *dst = NULL;
  CHECK_OK(tpu_pjrt_buffer_from_host(client, 0, TPU_INT32, dims, 1, a, &src));
  if (last > 0 && tpu_pjrt_buffer_to_device(client, src, last, &dst) == TPU_OK) {
    CHECK(device_of(dst) == (int)last);
    int32_t back[3] = {0};
    CHECK(tpu_pjrt_buffer_to_host(client, dst, back, sizeof back) == TPU_OK);
    CHECK(memcmp(back, a, sizeof a) == 0);
  } else {
    CHECK(last == 0 || !"copy to the last device");
  }
  CHECK(tpu_pjrt_buffer_destroy(client, dst) == TPU_OK);
  CHECK(tpu_pjrt_buffer_to_device(client, src, client->device_count, &dst) == TPU_ERR_VALUE);
  CHECK(dst == NULL);
  CHECK(tpu_pjrt_buffer_destroy(client, src) == TPU_OK);
}

/* Errors come back as statuses with the plugin's message; the requests plugins would abort on are
 * refused before they get there. */
static void test_errors(void) {
  static const char broken[] = "module { func.func @main( -> }";
  tpu_pjrt_executable *exe = NULL;
  tpu_status status = tpu_pjrt_executable_compile(client, broken, strlen(broken), &exe);
  CHECK(status != TPU_OK && exe == NULL);
  CHECK(strstr(tpu_last_error(), "PJRT_Client_Compile") && strlen(tpu_last_error()) > 40);
  printf("  malformed module: %.160s\n", tpu_last_error());
  CHECK(tpu_pjrt_executable_compile(client, "", 0, &exe) == TPU_ERR_VALUE);

  const float x[2] = {1, 2};
  const int64_t dims[1] = {2}, negative[1] = {-1};
  PJRT_Buffer *buf = NULL;
  CHECK(tpu_pjrt_buffer_from_host(client, client->device_count, TPU_FLOAT32, dims, 1, x, &buf) ==
        TPU_ERR_INDEX);
  CHECK(tpu_pjrt_buffer_from_host(client, 0, TPU_FLOAT32, negative, 1, x, &buf) == TPU_ERR_VALUE);
  CHECK(tpu_pjrt_buffer_from_host(client, 0, TPU_FLOAT32, dims, 1, NULL, &buf) == TPU_ERR_VALUE);
  CHECK(tpu_pjrt_buffer_from_host(client, 0, TPU_DTYPE_COUNT, dims, 1, x, &buf) == TPU_ERR_TYPE);
  CHECK(buf == NULL);
}

static void test_teardown(void) {
  CHECK(tpu_pjrt_client_destroy(client) == TPU_OK);
  client = NULL;
}

int main(void) {
  TEST_MAIN_BEGIN();
  plugin_path = tpu_env_get("TORCH_TPU_PJRT_PLUGIN");
  if (!plugin_path) {
    printf("skipped: TORCH_TPU_PJRT_PLUGIN is not set (the path of a PJRT plugin .so)\n");
    return SKIP;
  }
  if (access(plugin_path, R_OK) != 0) {
    printf("skipped: TORCH_TPU_PJRT_PLUGIN=%s is not a readable file\n", plugin_path);
    return SKIP;
  }
#ifdef TSAN_BUILD
  printf("skipped: a ThreadSanitizer build, and the PJRT plugin is not built with it\n");
  return SKIP;
#endif
  RUN_TEST(test_load);
  if (!api)
    TEST_MAIN_END();
  RUN_TEST(test_client);
  if (client) {
    RUN_TEST(test_add);
    RUN_TEST(test_copy_between_devices);
    RUN_TEST(test_errors);
    RUN_TEST(test_teardown);
  }
  TEST_MAIN_END();
}
