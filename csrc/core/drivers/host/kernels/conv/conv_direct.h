/* Private to the conv family: direct convolutions (conv_direct.c), with no im2col. Each image's
 * source (x, or dy for the input gradient) is first copied, as float, into a zero-padded buffer
 * per channel whose rows are `span` long, the padded width. An output is then computed at every
 * flattened position q = (od * span[1] + oh) * span[2] + ow of that buffer, ow < span[2], so that
 * kernel position (kd, kh, kw) reads the source at q plus one fixed offset and a run of outputs
 * reads one contiguous run of the source. The columns ow >= out[2] are computed too and never
 * stored: their cost is the price of plain vector loads. A stride s splits the padded source into
 * s phase planes per dim (plane f holds the elements at s * i + f), and a kernel position reads
 * one phase plane at unit stride: strided convolutions become unit-stride ones. */
#ifndef TPU_HOST_KERNELS_CONV_DIRECT_H
#define TPU_HOST_KERNELS_CONV_DIRECT_H

#include <stdbool.h>
#include <stdint.h>

#include "drivers/host/kernels/conv/conv.h"

/* Output channels per tile: the weight layout's innermost block. */
#define TPU_CONV_DIRECT_OCB 4

/* One tile's operands. */
typedef struct tpu_conv_direct_tile {
  const float *src;    /* the image's padded source, channel 0 of the group */
  const int64_t *off;  /* per step (channel c, kernel position kp): c * plane + kp's offset */
  int64_t steps;       /* steps to sum over */
  const float *weight; /* the tile's channel block: [steps][TPU_CONV_DIRECT_OCB] */
  int64_t ldo;         /* floats between the tile's output channels in `out` */
} tpu_conv_direct_tile;

/* True when the CPU runs the micro-kernel (AVX2 and FMA). */
bool tpu_conv_direct_cpu_ok(void);

/* The most vectors of outputs a tile of ocb channels holds. */
int tpu_conv_direct_vectors(int ocb);

/* out[o * ldo + i] = (accumulate ? out[o * ldo + i] : 0) + the sum over steps s, in order, of
 * weight[s][o] * src[q0 + i + off[s]], for o < ocb (1..TPU_CONV_DIRECT_OCB) and i < 8 * nv (nv up
 * to tpu_conv_direct_vectors(ocb)). */
void tpu_conv_direct_run_tile(const tpu_conv_direct_tile *t, int64_t q0, float *out,
                              bool accumulate, int ocb, int nv);

/* Which of the three ops asks (the input gradient needs its source padding to be >= 0). */
typedef enum { TPU_CONV_DIRECT_FORWARD, TPU_CONV_DIRECT_INPUT, TPU_CONV_DIRECT_WEIGHT } tpu_conv_direct_op;

/* True when the direct path takes this geometry: pixel-dense (channel-major) layout, a dtype that
 * accumulates in float, a CPU that runs the micro-kernel, at most 64 phases, and rows wide enough
 * that the dropped columns are at most an eighth of them; for the input gradient, stride 1 and
 * padding within the kernel's reach. */
bool tpu_conv_direct_fits(const conv_geom *q, tpu_conv_direct_op op);

/* y = conv(x, w) + bias (bias: accumulation-type, all channels, or NULL). */
tpu_status tpu_conv_direct_forward(const conv_geom *q, const conv_view *x, const conv_view *w,
                                   const void *bias, const conv_view *y);

/* dx = the input gradient of dy through w, plus bias (as tpu_conv_store_image's). */
tpu_status tpu_conv_direct_input(const conv_geom *q, const conv_view *dy, const conv_view *w,
                                 const void *bias, const conv_view *dx);

/* dw = the weight gradient of dy and x. */
tpu_status tpu_conv_direct_weight(const conv_geom *q, const conv_view *x, const conv_view *dy,
                                  const conv_view *dw);

#endif
