/* The random stream of ops/tpu_ops_random.h in StableHLO, for the lowerings of the random ops:
 * the module computes Philox4x32-10's words itself from the call's seed and offset (runtime
 * scalars [2] and [3], so a new offset never recompiles), with the counters of the host driver's
 * drivers/host/engine/engine_philox.h, so both drivers draw the same words bit for bit. */
#ifndef TPU_PJRT_PHILOX_H
#define TPU_PJRT_PHILOX_H

#include <stdint.h>

#include "drivers/pjrt/tpu_pjrt_hlo.h"
#include "drivers/pjrt/tpu_pjrt_lower_elementwise.h"

/* Words [0, n) of the stream: word w is output w % 4 of the block with counter (w / 4 low, high,
 * offset low, high) under key (seed low, high). A rank-1 uint32 value. */
tpu_hlo_value tpu_pjrt_philox_words(tpu_hlo *h, tpu_pjrt_scalar_fn scalar, void *ctx, int64_t n);

/* Words 2i and 2i + 1 of elements [0, n) as lo | hi << 32, a rank-1 uint64 value. */
tpu_hlo_value tpu_pjrt_philox_words64(tpu_hlo *h, tpu_pjrt_scalar_fn scalar, void *ctx,
                                      int64_t n);

/* Float uniforms in [0, 1) of elements [0, n): word i's low 24 bits * 2^-24, rank 1. */
tpu_hlo_value tpu_pjrt_philox_uniforms_f32(tpu_hlo *h, tpu_pjrt_scalar_fn scalar, void *ctx,
                                           int64_t n);

/* Double uniforms in [0, 1) of elements [0, n): the 64-bit value's low 53 bits * 2^-53, rank 1. */
tpu_hlo_value tpu_pjrt_philox_uniforms_f64(tpu_hlo *h, tpu_pjrt_scalar_fn scalar, void *ctx,
                                           int64_t n);

#endif
