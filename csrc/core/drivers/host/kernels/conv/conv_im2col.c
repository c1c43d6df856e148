/* Moving data between the strided tensors of a convolution and the dense, accumulation-type
 * matrices its GEMMs run on: im2col / col2im for the x side, tiles for the y side (layouts in
 * conv.h). Channel-major layouts copy runs along the output width; channel-minor ones
 * copy runs along the channels. */
#include <string.h>

#include "drivers/host/kernels/conv/conv.h"

/* The output widths [lo, hi) within [ow0, ow1) whose input column ow * stride - pad + kw * dil
 * lies in [0, in). */
static void valid_cols(const conv_geom *q, int64_t kw, int64_t ow0, int64_t ow1, int64_t *lo,
                       int64_t *hi) {
  int64_t s = q->stride[2], off = kw * q->dil[2] - q->pad[2];
  int64_t first = -tpu_conv_floor_div(off, s); /* ceil(-off / s) */
  int64_t last = tpu_conv_floor_div(q->in[2] - 1 - off, s) + 1;
  *lo = first > ow0 ? first : ow0;
  *hi = last < ow1 ? last : ow1;
  if (*hi < *lo)
    *hi = *lo;
}

/* Kernel position kpos as (kd, kh, kw). */
static void kernel_pos(const conv_geom *q, int64_t kpos, int64_t k[3]) {
  k[0] = kpos / (q->ker[1] * q->ker[2]);
  k[1] = kpos / q->ker[2] % q->ker[1];
  k[2] = kpos % q->ker[2];
}

/* Output pixel p as (od, oh, ow). */
static void out_pos(const conv_geom *q, int64_t p, int64_t o[3]) {
  o[2] = p % q->out[2];
  o[1] = p / q->out[2] % q->out[1];
  o[0] = p / (q->out[1] * q->out[2]);
}

/* Input coordinate along spatial dim d of output coordinate o at kernel offset k. */
static int64_t in_coord(const conv_geom *q, int d, int64_t o, int64_t k) {
  return o * q->stride[d] - q->pad[d] + k * q->dil[d];
}

static bool inside(const conv_geom *q, int d, int64_t i) { return i >= 0 && i < q->in[d]; }

void tpu_conv_im2col(const conv_geom *q, const conv_view *x, int64_t n, int64_t g, int64_t p0,
                     int64_t pt, void *col) {
  int64_t es = q->es, xes = (int64_t)tpu_dtype_size(x->dtype);
  const char *img = x->data + (n * x->stride[0] + g * q->cg * x->stride[1]) * xes;
  if (q->cl) {
    for (int64_t p = p0; p < p0 + pt; p++) {
      int64_t o[3], k[3];
      out_pos(q, p, o);
      char *dst = (char *)col + (p - p0) * q->r * es;
      for (int64_t kpos = 0; kpos < q->kk; kpos++, dst += q->cg * es) {
        kernel_pos(q, kpos, k);
        int64_t i0 = in_coord(q, 0, o[0], k[0]), i1 = in_coord(q, 1, o[1], k[1]),
                i2 = in_coord(q, 2, o[2], k[2]);
        if (!inside(q, 0, i0) || !inside(q, 1, i1) || !inside(q, 2, i2)) {
          tpu_conv_zero_run(dst, q->cg, q->acc);
          continue;
        }
        const char *src = img + (i0 * x->stride[2] + i1 * x->stride[3] + i2 * x->stride[4]) * xes;
        tpu_conv_load_run(dst, src, x->stride[1], q->cg, x->dtype);
      }
    }
    return;
  }
  for (int64_t c = 0; c < q->cg; c++)
    for (int64_t kpos = 0; kpos < q->kk; kpos++) {
      int64_t k[3];
      kernel_pos(q, kpos, k);
      char *row = (char *)col + (c * q->kk + kpos) * pt * es;
      const char *plane = img + c * x->stride[1] * xes;
      /* One run per output row within the tile. */
      for (int64_t p = p0; p < p0 + pt;) {
        int64_t o[3];
        out_pos(q, p, o);
        int64_t ow1 = q->out[2] - o[2] < p0 + pt - p ? q->out[2] : o[2] + p0 + pt - p;
        char *dst = row + (p - p0) * es;
        int64_t i0 = in_coord(q, 0, o[0], k[0]), i1 = in_coord(q, 1, o[1], k[1]), lo, hi;
        if (!inside(q, 0, i0) || !inside(q, 1, i1)) {
          lo = hi = ow1;
        } else {
          valid_cols(q, k[2], o[2], ow1, &lo, &hi);
        }
        tpu_conv_zero_run(dst, lo - o[2], q->acc);
        if (hi > lo) {
          const char *src = plane + (i0 * x->stride[2] + i1 * x->stride[3] +
                                     in_coord(q, 2, lo, k[2]) * x->stride[4]) * xes;
          tpu_conv_load_run(dst + (lo - o[2]) * es, src, q->stride[2] * x->stride[4], hi - lo,
                            x->dtype);
        }
        tpu_conv_zero_run(dst + (hi - o[2]) * es, ow1 - hi, q->acc);
        p += ow1 - o[2];
      }
    }
}

void tpu_conv_col2im(const conv_geom *q, const void *col, int64_t p0, int64_t pt, void *img) {
  int64_t es = q->es;
  if (q->cl) {
    for (int64_t p = p0; p < p0 + pt; p++) {
      int64_t o[3], k[3];
      out_pos(q, p, o);
      const char *src = (const char *)col + (p - p0) * q->r * es;
      for (int64_t kpos = 0; kpos < q->kk; kpos++, src += q->cg * es) {
        kernel_pos(q, kpos, k);
        int64_t i0 = in_coord(q, 0, o[0], k[0]), i1 = in_coord(q, 1, o[1], k[1]),
                i2 = in_coord(q, 2, o[2], k[2]);
        if (!inside(q, 0, i0) || !inside(q, 1, i1) || !inside(q, 2, i2))
          continue;
        int64_t pixel = (i0 * q->in[1] + i1) * q->in[2] + i2;
        tpu_conv_add_run((char *)img + pixel * q->cg * es, 1, src, q->cg, q->acc);
      }
    }
    return;
  }
  for (int64_t c = 0; c < q->cg; c++)
    for (int64_t kpos = 0; kpos < q->kk; kpos++) {
      int64_t k[3];
      kernel_pos(q, kpos, k);
      const char *row = (const char *)col + (c * q->kk + kpos) * pt * es;
      char *plane = (char *)img + c * q->ip * es;
      for (int64_t p = p0; p < p0 + pt;) {
        int64_t o[3];
        out_pos(q, p, o);
        int64_t ow1 = q->out[2] - o[2] < p0 + pt - p ? q->out[2] : o[2] + p0 + pt - p;
        int64_t i0 = in_coord(q, 0, o[0], k[0]), i1 = in_coord(q, 1, o[1], k[1]), lo, hi;
        if (inside(q, 0, i0) && inside(q, 1, i1)) {
          valid_cols(q, k[2], o[2], ow1, &lo, &hi);
          if (hi > lo) {
            int64_t pixel = (i0 * q->in[1] + i1) * q->in[2] + in_coord(q, 2, lo, k[2]);
            tpu_conv_add_run(plane + pixel * es, q->stride[2], row + (p - p0 + lo - o[2]) * es,
                             hi - lo, q->acc);
          }
        }
        p += ow1 - o[2];
      }
    }
}

void tpu_conv_store_image(const conv_geom *q, const void *img, const conv_view *x,
                          const void *bias, int64_t n, int64_t g) {
  int64_t es = q->es, xes = (int64_t)tpu_dtype_size(x->dtype);
  const char *b = bias ? (const char *)bias + g * q->cg * es : NULL;
  char *base = x->data + (n * x->stride[0] + g * q->cg * x->stride[1]) * xes;
  for (int64_t i0 = 0; i0 < q->in[0]; i0++)
    for (int64_t i1 = 0; i1 < q->in[1]; i1++) {
      int64_t pixel = (i0 * q->in[1] + i1) * q->in[2];
      char *row = base + (i0 * x->stride[2] + i1 * x->stride[3]) * xes;
      if (q->cl) {
        for (int64_t i2 = 0; i2 < q->in[2]; i2++)
          tpu_conv_store_run(row + i2 * x->stride[4] * xes, x->stride[1],
                             (const char *)img + (pixel + i2) * q->cg * es, 1, q->cg, x->dtype,
                             b, 1);
        continue;
      }
      for (int64_t c = 0; c < q->cg; c++)
        tpu_conv_store_run(row + c * x->stride[1] * xes, x->stride[4],
                           (const char *)img + (c * q->ip + pixel) * es, 1, q->in[2], x->dtype,
                           b ? b + c * es : NULL, 0);
    }
}

void tpu_conv_load_tile(const conv_geom *q, const conv_view *y, int64_t n, int64_t g, int64_t p0,
                        int64_t pt, void *tile) {
  int64_t es = q->es, yes = (int64_t)tpu_dtype_size(y->dtype);
  const char *img = y->data + (n * y->stride[0] + g * q->kg * y->stride[1]) * yes;
  for (int64_t p = p0; p < p0 + pt;) {
    int64_t o[3];
    out_pos(q, p, o);
    int64_t run = q->out[2] - o[2] < p0 + pt - p ? q->out[2] - o[2] : p0 + pt - p;
    const char *src = img + (o[0] * y->stride[2] + o[1] * y->stride[3] + o[2] * y->stride[4]) * yes;
    if (q->cl) {
      for (int64_t j = 0; j < run; j++)
        tpu_conv_load_run((char *)tile + (p - p0 + j) * q->kg * es,
                          src + j * y->stride[4] * yes, y->stride[1], q->kg, y->dtype);
    } else {
      for (int64_t k = 0; k < q->kg; k++)
        tpu_conv_load_run((char *)tile + (k * pt + p - p0) * es, src + k * y->stride[1] * yes,
                          y->stride[4], run, y->dtype);
    }
    p += run;
  }
}

void tpu_conv_store_tile(const conv_geom *q, const void *tile, const conv_view *y,
                         const void *bias, int64_t n, int64_t g, int64_t p0, int64_t pt) {
  int64_t es = q->es, yes = (int64_t)tpu_dtype_size(y->dtype);
  const char *b = bias ? (const char *)bias + g * q->kg * es : NULL;
  char *img = y->data + (n * y->stride[0] + g * q->kg * y->stride[1]) * yes;
  for (int64_t p = p0; p < p0 + pt;) {
    int64_t o[3];
    out_pos(q, p, o);
    int64_t run = q->out[2] - o[2] < p0 + pt - p ? q->out[2] - o[2] : p0 + pt - p;
    char *dst = img + (o[0] * y->stride[2] + o[1] * y->stride[3] + o[2] * y->stride[4]) * yes;
    if (q->cl) {
      for (int64_t j = 0; j < run; j++)
        tpu_conv_store_run(dst + j * y->stride[4] * yes, y->stride[1],
                           (const char *)tile + (p - p0 + j) * q->kg * es, 1, q->kg, y->dtype, b,
                           1);
    } else {
      for (int64_t k = 0; k < q->kg; k++)
        tpu_conv_store_run(dst + k * y->stride[1] * yes, y->stride[4],
                           (const char *)tile + (k * pt + p - p0) * es, 1, run, y->dtype,
                           b ? b + k * es : NULL, 0);
    }
    p += run;
  }
}
