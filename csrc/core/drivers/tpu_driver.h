/* The driver interface: the one boundary between the device-independent core and a kind of chip.
 * A driver is a table of functions (tpu_driver_i), one line per entry; entries marked optional may
 * be NULL and then have the documented default. The process runs one driver, chosen by
 * TORCH_TPU_DRIVER among the registered ones (drivers/tpu_drivers.h lists the built-in ones);
 * docs/ARCHITECTURE.md shows how to add one.
 *
 * The core's streams (device/tpu_stream.h) order the work and call op_run and graph_run on their
 * worker threads, which return once the outputs are written, or, for a driver with device_wait,
 * once the work is enqueued on the chip in an order that keeps its reads and writes. Copies between
 * the host and a chip, or within a chip, are the COPY op: its host operand is a tensor whose buf is
 * NULL (tensor/tpu_tensor.h). A copy between chips is a COPY run on the destination's chip whose
 * source lives on another (tpu_buffer_device); nothing writes that source while it runs. A
 * driver reads its operands' memory with tpu_buffer_memory() (tensor/tpu_buffer.h). */
#ifndef TPU_DRIVER_H
#define TPU_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/tpu_status.h"

/* The core's types a driver handles, by pointer only: the interface sits below the layers that
 * define them (docs/ARCHITECTURE.md, "Layers"). */
typedef struct tpu_heap tpu_heap;       /* mem/tpu_heap.h */
typedef struct tpu_buffer tpu_buffer;   /* tensor/tpu_buffer.h */
typedef struct tpu_tensor tpu_tensor;   /* tensor/tpu_tensor.h */
typedef struct tpu_op_call tpu_op_call; /* ops/tpu_op.h */
typedef struct tpu_graph tpu_graph;     /* graph/tpu_graph.h */

#define TPU_MAX_DEVICES 64

/* What a chip is. */
typedef enum tpu_device_kind {
  TPU_DEVICE_SIMULATED, /* a chip simulated in host memory */
  TPU_DEVICE_TPU,
  TPU_DEVICE_GPU,
  TPU_DEVICE_CPU,
} tpu_device_kind;

typedef struct tpu_device_props {
  char name[64];       /* e.g. "TPU v5e (simulated)" */
  size_t memory_bytes; /* capacity: at least one 2 MiB allocator segment */
  tpu_device_kind kind;
} tpu_device_props;

/* An extra's function, cast to its TPU_PROC_* type before the call. */
typedef void (*tpu_proc)(void);

typedef struct tpu_driver_i {
  const char *name; /* what TORCH_TPU_DRIVER names, e.g. "host" */

  /* Startup (optional; NULL: nothing to start): called once when the driver is selected, before
   * any other entry; an error fails the selection with its message (a plugin that is missing). */
  tpu_status (*init)(void);

  /* Chips: their number (1 to TPU_MAX_DEVICES, read once) and each one's properties. */
  int (*device_count)(void);
  void (*device_props)(int device, tpu_device_props *props);

  /* Memory. The core's caching allocator (mem/tpu_allocator.h) carves each chip's blocks out of
   * one arena of addresses (mem/tpu_heap.h), which are also the data pointers PyTorch sees.
   * arena_create makes it: readable memory for a driver whose kernels read it directly, else a
   * range whose addresses only name the driver's memory. arena_discard (optional; NULL: nothing
   * to give back) is told when a range of it holds nothing any more, so its memory can go back. */
  tpu_status (*arena_create)(int device, size_t bytes, tpu_heap **arena);
  void (*arena_discard)(int device, tpu_heap *arena, void *ptr, size_t bytes);

  /* One op call (ops/tpu_op.h): supports_op (optional; NULL: every call) answers before launch
   * whether op_run can run it; op_run runs it and returns an error status with tpu_error's message
   * for input it rejects while running (an index out of range). */
  bool (*supports_op)(const tpu_op_call *call);
  tpu_status (*op_run)(const tpu_op_call *call);

  /* Graphs (fused mode, graph/tpu_graph.h). graph_optimize (optional; NULL: keep the order)
   * reorders a cut graph, replacing *graph, keeping every read/write hazard in order.
   * graph_compile makes a plan that depends on the graph's structure alone (the compile cache
   * shares it among equal graphs); graph_free frees it. graph_run runs a graph with a plan made
   * from an equal one: a node with a poisoned input poisons its outputs and the run goes on; a
   * failing node poisons the outputs of every node from it on and its error is returned. */
  tpu_status (*graph_optimize)(tpu_graph **graph);
  tpu_status (*graph_compile)(const tpu_graph *graph, void **plan);
  void (*graph_free)(void *plan);
  tpu_status (*graph_run)(const void *plan, const tpu_graph *graph);

  /* The memory plan of a graph, all optional. The core gives the outputs of each step of a plan
   * memory just before the step and takes back what the step read for the last time.
   * graph_step: step i as nodes [*first, *first + *count), false past the last (NULL: one node a
   * step). graph_stores: whether the plan writes output `out` of `node` to memory (NULL: every
   * output). graph_can_alias: whether that output may take the memory of `donor`, a buffer step
   * `step` reads and nothing reads after it (NULL: never). graph_recomputable: whether node n's
   * result is cheap enough to compute again in backward rather than keep (exec/tpu_remat.h; NULL:
   * none is). */
  bool (*graph_step)(const void *plan, int i, int *first, int *count);
  bool (*graph_stores)(const void *plan, int node, int out);
  bool (*graph_can_alias)(const void *plan, const tpu_graph *graph, int step, int node, int out,
                          const tpu_buffer *donor);
  bool (*graph_recomputable)(const tpu_graph *graph, int node);

  /* Asynchronous execution (optional, both or neither; NULL: op_run and graph_run return once
   * their work completed). device_wait waits until the work the driver still runs on a chip has
   * completed and returns the first error of it (once); device_idle says whether none runs. */
  tpu_status (*device_wait)(int device);
  bool (*device_idle)(int device);

  /* Extras (optional; NULL: none): the function named `name`, or NULL. The core's are the
   * TPU_PROC_* names below; a driver's own are in its public header, drivers/<name>/<name>.h. */
  tpu_proc (*get_proc_address)(const char *name);
} tpu_driver_i;

/* Extras by name and type that any driver may have and the core uses: debug mode's scan for NaN
 * and infinity (ops/tpu_op_debug.h). A driver's own extras are named in its public header
 * (drivers/<name>/<name>.h). */
#define TPU_PROC_HAS_NONFINITE "has_nonfinite"   /* bool (const tpu_tensor *): a NaN or inf? */
#define TPU_PROC_FIRST_NONFINITE "first_nonfinite" /* bool (const tpu_tensor *, int64_t *index,
                                                      double *value): the first, row-major */

typedef bool (*tpu_proc_has_nonfinite)(const tpu_tensor *t);
typedef bool (*tpu_proc_first_nonfinite)(const tpu_tensor *t, int64_t *index, double *value);

/* Most drivers one process registers. */
#define TPU_MAX_DRIVERS 8

/* Makes `driver` selectable by its name (another one of that name replaces it unless it is in use;
 * registering the same table again does nothing). TPU_ERR_VALUE when a required entry is missing,
 * only one of device_wait and device_idle is given, or the table is full. */
tpu_status tpu_driver_register(const tpu_driver_i *driver);

/* Selects the registered driver `name` for the process (NULL: TORCH_TPU_DRIVER, else the first
 * registered);
 * fails when none has that name, or once another one is in use. Selection happens on first use
 * otherwise. */
tpu_status tpu_driver_select(const char *name);

/* The process's driver, selected on first call; NULL when selection failed (the reason is
 * tpu_driver_error()). */
const tpu_driver_i *tpu_driver(void);

/* TPU_OK when a driver is in use, else the error that selection met (a RuntimeError-kind status
 * naming the unknown driver and the registered ones). */
tpu_status tpu_driver_error(void);

/* The registered driver `name`, selected or not, or NULL. */
const tpu_driver_i *tpu_driver_find(const char *name);

/* The driver's extra `name` (TPU_PROC_*), or NULL when it has none. */
tpu_proc tpu_driver_proc(const char *name);

#endif
