/* A minimal second driver for the C tests, and the example docs/ARCHITECTURE.md walks through: it
 * implements the driver interface (drivers/tpu_driver.h) by forwarding every entry to the host
 * driver, and counts the calls of each entry, so a test can see the core reach a chip only through
 * the interface. A real driver lives in its own folder under drivers/ and adds one line to
 * drivers/tpu_drivers.c; this one is registered by the tests that use it (tpu_driver_register). */
#ifndef TPU_TEST_COUNTING_DRIVER_H
#define TPU_TEST_COUNTING_DRIVER_H

#include <stdatomic.h>
#include <stdio.h>

#include "drivers/host/host_driver.h"
#include "drivers/tpu_driver.h"

/* Calls per entry since start. */
typedef struct counting_calls {
  atomic_long device_count, arena_create, arena_discard, supports_op, op_run, graph_optimize,
      graph_compile, graph_free, graph_run;
  atomic_long op_runs[TPU_OP_COUNT]; /* op_run calls by op */
} counting_calls;

static counting_calls counting;

static const tpu_driver_i *counted(atomic_long *calls) {
  atomic_fetch_add(calls, 1);
  return tpu_host_driver();
}

static int counting_device_count(void) { return counted(&counting.device_count)->device_count(); }

static void counting_device_props(int device, tpu_device_props *props) {
  tpu_device_props host;
  tpu_host_driver()->device_props(device, &host);
  *props = host;
  snprintf(props->name, sizeof props->name, "counting: %.50s", host.name);
}

static tpu_status counting_arena_create(int device, size_t bytes, tpu_heap **arena) {
  return counted(&counting.arena_create)->arena_create(device, bytes, arena);
}

static void counting_arena_discard(int device, tpu_heap *arena, void *ptr, size_t bytes) {
  counted(&counting.arena_discard)->arena_discard(device, arena, ptr, bytes);
}

static bool counting_supports_op(const tpu_op_call *call) {
  return counted(&counting.supports_op)->supports_op(call);
}

static tpu_status counting_op_run(const tpu_op_call *call) {
  atomic_fetch_add(&counting.op_runs[call->op], 1);
  return counted(&counting.op_run)->op_run(call);
}

static tpu_status counting_graph_optimize(tpu_graph **graph) {
  return counted(&counting.graph_optimize)->graph_optimize(graph);
}

static tpu_status counting_graph_compile(const tpu_graph *graph, void **plan) {
  return counted(&counting.graph_compile)->graph_compile(graph, plan);
}

static void counting_graph_free(void *plan) { counted(&counting.graph_free)->graph_free(plan); }

static tpu_status counting_graph_run(const void *plan, const tpu_graph *graph) {
  return counted(&counting.graph_run)->graph_run(plan, graph);
}

/* The memory plan and the extras are the host's own: a plan is the host planner's. Made once, on
 * the first call. */
static const tpu_driver_i *counting_driver(void) {
  static tpu_driver_i driver;
  if (driver.name)
    return &driver;
  driver = *tpu_host_driver();
  driver.name = "counting";
  driver.device_count = counting_device_count;
  driver.device_props = counting_device_props;
  driver.arena_create = counting_arena_create;
  driver.arena_discard = counting_arena_discard;
  driver.supports_op = counting_supports_op;
  driver.op_run = counting_op_run;
  driver.graph_optimize = counting_graph_optimize;
  driver.graph_compile = counting_graph_compile;
  driver.graph_free = counting_graph_free;
  driver.graph_run = counting_graph_run;
  return &driver;
}

#endif
