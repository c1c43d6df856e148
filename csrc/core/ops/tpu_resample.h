/* The taps of RESAMPLE and RESAMPLE_BACKWARD (ops/tpu_ops_vision.h): per spatial dimension and
 * output position, the input positions and weights PyTorch CPU's kernels use, computed in the
 * same float (double for float64) arithmetic. Every driver builds its kernel or program from
 * these tables, so all of them interpolate alike. */
#ifndef TPU_RESAMPLE_H
#define TPU_RESAMPLE_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/tpu_op.h"

/* The most taps one output position has: antialiasing's grow with the downscaling factor, and
 * a call that needs more is refused. */
#define TPU_RESAMPLE_AA_MAX_TAPS 257

/* One spatial dimension's taps: output position o reads input positions index[o * taps + t]
 * (0 <= t < taps, each in [0, in)) with weights weight[o * taps + t]. */
typedef struct tpu_resample_axis {
  int64_t in, out;
  int taps;
  int64_t *index;
  double *weight; /* values of the compute type (float, or double for float64) */
} tpu_resample_axis;

/* Checks a RESAMPLE or RESAMPLE_BACKWARD call against the contract; sets *spatial to S. */
tpu_status tpu_resample_check(const tpu_op_call *call, int *spatial);

/* Whether the call's mode copies one input element per output element (nearest, pads). */
bool tpu_resample_gathers(const tpu_op_call *call);

/* Fills `a` with the taps of spatial dimension s (0 <= s < S) of a checked call; on success the
 * caller frees it with tpu_resample_axis_free. */
tpu_status tpu_resample_axis_init(const tpu_op_call *call, int s, tpu_resample_axis *a);

/* Frees the tables of an axis tpu_resample_axis_init filled. */
void tpu_resample_axis_free(tpu_resample_axis *a);

#endif
