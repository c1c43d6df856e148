/* The vision family's ops: X(ID, "name", attribute scalars) per op; see ops/tpu_op.h. Resampling
 * of the last S (1 to 3) "spatial" dimensions, each output position a weighted sum of a few
 * input positions ("taps") per dimension: PyTorch's interpolate (nearest, nearest-exact, linear,
 * bilinear, trilinear, bicubic, antialiased bilinear and bicubic) and the reflection and
 * replication pads. The taps of each output
 * position come from ops/tpu_resample.h, which every driver shares.
 *
 * RESAMPLE: tensors[0] = x, tensors[1] = y, of equal rank R >= S and equal sizes in the leading
 *   R - S dimensions (any strides; y does not overlap x). scalars[0].i = the mode (TPU_RESAMPLE_*)
 *   | TPU_RESAMPLE_ALIGN_CORNERS, scalars[1].i = S, scalars[2 + s].f (s < S) the scale factor
 *   PyTorch was given for spatial dimension s (0: none, the size ratio is used), scalars[5 + s].i
 *   the pad modes' padding before spatial dimension s (negative crops; the padding after follows
 *   from the sizes). The gather modes (nearest, nearest-exact, reflect, replicate) copy elements
 *   bit for bit and take every dtype; the others (linear, cubic, their antialiased forms, whose
 *   taps grow with the downscaling factor) take the floating dtypes and
 *   compute in float (double for float64) as PyTorch CPU does: separably, the last dimension
 *   first, each sum of a position's taps in tap order, rounded once to y's dtype.
 * RESAMPLE_BACKWARD: tensors[0] = dy (y's geometry), tensors[1] = dx (x's geometry), the same
 *   scalars and the floating dtypes: dx = the sum over y's positions of each tap's weight times
 *   dy, accumulated in float (double for float64) and rounded once. */
#ifndef TPU_OPS_VISION_H
#define TPU_OPS_VISION_H

#define TPU_OPS_VISION(X)                                                                          \
  X(RESAMPLE, "resample", TPU_ATTRS_BELOW(8))                                                      \
  X(RESAMPLE_BACKWARD, "resample_backward", TPU_ATTRS_BELOW(8))

/* RESAMPLE's modes (the low byte of scalars[0].i) and its flag. */
enum {
  TPU_RESAMPLE_NEAREST = 0,       /* PyTorch's "nearest" (floor of the scaled index) */
  TPU_RESAMPLE_NEAREST_EXACT = 1, /* "nearest-exact" (the scaled pixel centre) */
  TPU_RESAMPLE_LINEAR = 2,        /* linear, bilinear, trilinear: 2 taps per dimension */
  TPU_RESAMPLE_CUBIC = 3,         /* bicubic (A = -0.75): 4 clamped taps per dimension */
  TPU_RESAMPLE_REFLECT = 4,       /* reflection padding */
  TPU_RESAMPLE_REPLICATE = 5,     /* replication padding */
  TPU_RESAMPLE_LINEAR_AA = 6,     /* antialiased bilinear: a triangle filter widened by the scale */
  TPU_RESAMPLE_CUBIC_AA = 7,      /* antialiased bicubic (A = -0.5), widened likewise */
  TPU_RESAMPLE_MODE_MASK = 0xff,
  TPU_RESAMPLE_ALIGN_CORNERS = 0x100, /* linear and cubic: corner pixels' centres align */
};

#endif
