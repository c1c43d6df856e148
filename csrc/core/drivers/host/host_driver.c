#include "drivers/host/host_driver.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/tpu_env.h"
#include "drivers/host/engine/engine_elementwise.h"
#include "drivers/host/engine/engine_nonfinite.h"
#include "drivers/host/engine/engine_pool.h"
#include "drivers/host/fuse/fuse.h"
#include "drivers/host/kernels/matmul/matmul.h"

/* The op -> kernel table. Every op has exactly one entry: the count matches the op table, and a
 * second entry for an op would be an initializer override, an error under -Wextra -Werror. */
static const tpu_kernel_fn kernels[TPU_OP_COUNT] = {
#define HOST_KERNEL_ENTRY(id, kernel) [TPU_OP_##id] = kernel,
    TPU_HOST_KERNELS(HOST_KERNEL_ENTRY)
#undef HOST_KERNEL_ENTRY
};

#define HOST_KERNEL_ONE(id, kernel) +1
_Static_assert(0 TPU_HOST_KERNELS(HOST_KERNEL_ONE) == TPU_OP_COUNT,
               "the host driver's kernel table must name one kernel for every op");
#undef HOST_KERNEL_ONE

tpu_kernel_fn tpu_host_kernel(tpu_op_id op) {
  return (unsigned)op < TPU_OP_COUNT ? kernels[op] : NULL;
}

/* A TPU v5e chip has 16 GiB of HBM; the simulated chip has as much when the host can afford it. */
#define HOST_DEFAULT_CAPACITY (16ull << 30)

static pthread_once_t chips_once = PTHREAD_ONCE_INIT;
static int chip_count;
static uint64_t chip_capacity;

/* Half the machine's RAM shared among the chips, so the host keeps room for itself. */
static uint64_t default_capacity(int count) {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0)
    return HOST_DEFAULT_CAPACITY;
  uint64_t share = (uint64_t)pages * (uint64_t)page_size / 2 / (uint64_t)count;
  return share < HOST_DEFAULT_CAPACITY ? share : HOST_DEFAULT_CAPACITY;
}

static void chips_init(void) {
  int64_t count = tpu_env_int("TORCH_TPU_NUM_DEVICES", 1);
  chip_count = count < 1 ? 1 : count > TPU_MAX_DEVICES ? TPU_MAX_DEVICES : (int)count;
  chip_capacity = default_capacity(chip_count);
  const char *text = tpu_env_get("TORCH_TPU_DEVICE_MEMORY");
  uint64_t parsed;
  if (text && tpu_parse_bytes(text, &parsed))
    chip_capacity = parsed;
  else if (text)
    fprintf(stderr, "torch_tpu: ignoring malformed TORCH_TPU_DEVICE_MEMORY=%s\n", text);
}

static int host_device_count(void) {
  pthread_once(&chips_once, chips_init);
  return chip_count;
}

static void host_device_props(int device, tpu_device_props *props) {
  (void)device; /* every simulated chip is the same part */
  pthread_once(&chips_once, chips_init);
  memset(props, 0, sizeof *props);
  snprintf(props->name, sizeof props->name, "TPU v5e (simulated)");
  props->memory_bytes = (size_t)chip_capacity;
  props->kind = TPU_DEVICE_SIMULATED;
}

/* The arena is host memory the kernels read and write directly. */
static tpu_status host_arena_create(int device, size_t bytes, tpu_heap **arena) {
  (void)device;
  return tpu_heap_create(bytes, true, arena);
}

static void host_arena_discard(int device, tpu_heap *arena, void *ptr, size_t bytes) {
  (void)device;
  tpu_heap_discard(arena, ptr, bytes);
}

/* Elementwise ops run when the engine has a loop for the compute dtype; the other kernels check
 * their operands as they run. */
static bool host_supports_op(const tpu_op_call *call) {
  return !tpu_ew_op_of(call->op) || tpu_ew_supports(call->op, call->compute);
}

static tpu_status host_op_run(const tpu_op_call *call) {
  tpu_kernel_fn kernel = tpu_host_kernel(call->op);
  return kernel ? kernel(call) : tpu_error(TPU_ERR_VALUE, "invalid op id %d", (int)call->op);
}

static tpu_status host_graph_compile(const tpu_graph *graph, void **plan) {
  return tpu_fuse_plan_create(graph, (tpu_fuse_plan **)plan);
}

static tpu_status host_graph_run(const void *plan, const tpu_graph *graph) {
  return tpu_fuse_run(plan, graph);
}

static bool host_graph_step(const void *plan, int i, int *first, int *count) {
  if (i >= tpu_fuse_plan_steps(plan))
    return false;
  bool fused;
  tpu_fuse_plan_step(plan, i, first, count, &fused);
  return true;
}

static bool host_graph_stores(const void *plan, int node, int out) {
  return tpu_fuse_plan_stores(plan, node, out);
}

static bool host_graph_can_alias(const void *plan, const tpu_graph *graph, int step, int node,
                                 int out, const tpu_buffer *donor) {
  return tpu_fuse_plan_can_alias(plan, graph, step, node, out, donor);
}

/* What the planner fuses is cheap to compute again: an elementwise op over dense views. */
static bool host_graph_recomputable(const tpu_graph *graph, int node) {
  return tpu_fuse_eligible(graph, node);
}

static void host_blas_info(char *buf, size_t len) {
  const tpu_blas *blas = tpu_matmul_blas();
  snprintf(buf, len, "%s; fp32: %s%s; bf16: %s; int8: %s", blas ? blas->name : "built-in",
           tpu_matmul_has_f32_kernel() ? "avx512" : "blas",
           tpu_matmul_has_small_f32_kernel() ? ", avx2 for x @ W^T of <= 16 rows" : "",
           tpu_matmul_has_bf16_kernel() ? "avx512_bf16" : "fp32",
           tpu_matmul_has_int8_kernel() ? "avx512_vnni" : "portable");
}

static void host_use_f32_kernel(bool enabled) {
  tpu_matmul_disable_f32_kernel(!enabled);
  tpu_matmul_disable_small_f32_kernel(!enabled);
}

typedef struct host_proc {
  const char *name;
  tpu_proc fn;
} host_proc;

static tpu_proc host_get_proc_address(const char *name) {
  static const host_proc procs[] = {
      {TPU_HOST_SET_THREADS, (tpu_proc)tpu_pool_set_threads},
      {TPU_PROC_HAS_NONFINITE, (tpu_proc)tpu_has_nonfinite},
      {TPU_PROC_FIRST_NONFINITE, (tpu_proc)tpu_first_nonfinite},
      {TPU_HOST_GRAPH_STATS, (tpu_proc)tpu_fuse_get_stats},
      {TPU_HOST_RESET_GRAPH_STATS, (tpu_proc)tpu_fuse_reset_stats},
      {TPU_HOST_BLAS_INFO, (tpu_proc)host_blas_info},
      {TPU_HOST_SET_BLAS_PATH, (tpu_proc)tpu_matmul_set_blas_path},
      {TPU_HOST_USE_F32_KERNEL, (tpu_proc)host_use_f32_kernel},
  };
  for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++)
    if (strcmp(procs[i].name, name) == 0)
      return procs[i].fn;
  return NULL;
}

static const tpu_driver_i host_driver = {
    .name = "host",
    .device_count = host_device_count,
    .device_props = host_device_props,
    .arena_create = host_arena_create,
    .arena_discard = host_arena_discard,
    .supports_op = host_supports_op,
    .op_run = host_op_run,
    .graph_optimize = tpu_fuse_reorder,
    .graph_compile = host_graph_compile,
    .graph_free = tpu_fuse_plan_destroy,
    .graph_run = host_graph_run,
    .graph_step = host_graph_step,
    .graph_stores = host_graph_stores,
    .graph_can_alias = host_graph_can_alias,
    .graph_recomputable = host_graph_recomputable,
    .get_proc_address = host_get_proc_address,
};

const tpu_driver_i *tpu_host_driver(void) { return &host_driver; }
