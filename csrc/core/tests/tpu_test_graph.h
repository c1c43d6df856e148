/* Helpers for graph tests: op calls on host views, and graphs described once by a function that
 * emits calls, so the same description can run node by node (the reference) or as a graph. */
#ifndef TPU_TEST_GRAPH_H
#define TPU_TEST_GRAPH_H

#include <stdlib.h>

#include "drivers/host/engine/engine_elementwise.h"
#include "graph/tpu_graph.h"
#include "tpu_test.h"
#include "tpu_test_host.h"

/* A call of `op` computing in `compute` on n_in inputs then one output, scalar s0. */
static inline tpu_op_call *mk_call(tpu_op_id op, tpu_dtype compute, const tpu_tensor *t, int n_in,
                                   double s0) {
  tpu_op_call *call = tpu_op_call_new(op, n_in, 1);
  for (int i = 0; i <= n_in; i++)
    call->tensors[i] = t[i];
  call->compute = compute;
  if (tpu_dtype_is_floating(compute))
    call->scalars[0].f = s0;
  else
    call->scalars[0].i = (int64_t)s0;
  return call;
}

/* Where emitted calls go: run now through the host kernel (graph NULL) or appended to a graph. */
typedef struct emitter {
  tpu_graph *graph;
} emitter;

static inline void emit(emitter *e, tpu_op_call *call) {
  if (e->graph) {
    CHECK_OK(tpu_graph_add(e->graph, call, 0));
  } else {
    CHECK_OK(tpu_host_kernel(call->op)(call));
    tpu_op_call_free(call);
  }
}

/* Deterministic pseudo-random contents for n elements of `dtype`: floats in [-3, 3), integers in
 * [-50, 50), bools 0/1. */
static inline void fill_random(void *mem, tpu_dtype dtype, int64_t n, uint64_t seed) {
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (int64_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(s >> 11) * 0x1p-53; /* [0, 1) */
    float f = (float)(u * 6 - 3);
    switch (dtype) {
    case TPU_FLOAT32: ((float *)mem)[i] = f; break;
    case TPU_FLOAT64: ((double *)mem)[i] = u * 6 - 3; break;
    case TPU_BFLOAT16: ((uint16_t *)mem)[i] = tpu_f32_to_bf16(f); break;
    case TPU_FLOAT16: ((uint16_t *)mem)[i] = tpu_f32_to_f16(f); break;
    case TPU_INT32: ((int32_t *)mem)[i] = (int32_t)(u * 100) - 50; break;
    case TPU_BOOL: ((uint8_t *)mem)[i] = u < 0.5; break;
    default: memset((char *)mem + i * (int64_t)tpu_dtype_size(dtype), 0, tpu_dtype_size(dtype));
    }
  }
}

/* A 1-d host view of n elements. */
static inline tpu_tensor vec1(void *mem, tpu_dtype dtype, int64_t n) {
  return host_view(mem, dtype, 1, &n, NULL);
}

#endif
