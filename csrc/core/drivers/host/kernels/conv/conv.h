/* Private to the conv family's kernels (kernels/conv/): the geometry of one convolution, the
 * pieces its three GEMM-based ops share, and the strided conversion runs every kernel of the
 * family uses. A convolution x [N, G * Cg, in...] -> y [N, G * Kg, out...] with
 * w [G * Kg, Cg, ker...] is, per image n and group g, the GEMM
 *   y[n, g] (Kg x P) = W[g] (Kg x R) @ col (R x P),
 * where P is the number of output pixels, R = Cg * kernel volume, and col (im2col) holds, for
 * every output pixel, the input values its window covers (0 in the padding). The kernels cut P
 * into tiles so that one tile's columns stay in the L2 cache, and convert everything to the
 * accumulation type (float, or double for float64) on the way in, so the GEMM is always an
 * sgemm or dgemm of the matmul family, and every output is rounded once on the way out.
 *
 * Two column layouts: channel-major (col[r][p], r = c * kk + kpos, for inputs whose pixels are
 * dense: NCHW) and channel-minor (col[p][r], r = kpos * Cg + c, for channels-last inputs). The
 * GEMMs take either through their operands' strides. */
#ifndef TPU_HOST_KERNELS_CONV_H
#define TPU_HOST_KERNELS_CONV_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/tpu_op.h"

/* A tensor as [N, C, D, H, W]: element strides; missing leading spatial dims have size 1. */
typedef struct conv_view {
  char *data;
  tpu_dtype dtype;
  int64_t size[5], stride[5];
} conv_view;

typedef struct conv_geom {
  tpu_dtype dtype; /* of every tensor */
  tpu_dtype acc;   /* float32, or float64 for float64 */
  int64_t es;      /* bytes per accumulation element */
  int64_t n, g, cg, kg;
  int64_t in[3], out[3], ker[3], stride[3], pad[3], dil[3];
  int64_t kk;      /* kernel volume */
  int64_t r;       /* Cg * kk: a column's length */
  int64_t p, ip;   /* output and input pixels per image */
  bool cl;         /* channel-minor columns */
  int64_t pt;      /* output pixels per tile */
} conv_geom;

/* A dense matrix of the accumulation type: element (i, j) at data + (i * rs + j * cs) * es. */
typedef struct conv_mat {
  void *data;
  int64_t rs, cs;
} conv_mat;

/* Validates a convolution call's x-like, y-like and weight tensors and fills the geometry and
 * the 5-d views; `bias` (may be NULL) must have `bias_channels` elements. `cl_from` picks the
 * column layout. Errors name `op`. */
tpu_status tpu_conv_setup(conv_geom *q, const tpu_op_call *call, const tpu_tensor *x,
                          const tpu_tensor *y, const tpu_tensor *w, const tpu_tensor *bias,
                          int64_t bias_channels, const tpu_tensor *cl_from, const char *op,
                          conv_view *xv, conv_view *yv, conv_view *wv);

/* A 5-d view of a 3- to 5-d tensor. */
conv_view tpu_conv_view(const tpu_tensor *t);

/* malloc of at least one byte, so that empty sizes are not mistaken for failures. */
void *tpu_conv_alloc(int64_t bytes);

/* A 1-d tensor (NULL: none) as an accumulation-type array, *out (NULL when t is); false when out
 * of memory. */
bool tpu_conv_load_vector(const conv_geom *q, const tpu_tensor *t, void **out);

/* w (any strides) into wp [G][Kg][R], columns ordered as the geometry's layout. */
void tpu_conv_pack_weight(const conv_geom *q, const conv_view *w, void *wp);

/* The inverse of tpu_conv_pack_weight, rounding into dw. */
void tpu_conv_unpack_weight(const conv_geom *q, const void *wp, const conv_view *dw);

/* The columns of output pixels [p0, p0 + pt) of image n, group g: element (r, p - p0) at
 * (cl ? (p - p0) * R + r : r * pt + p - p0). */
void tpu_conv_im2col(const conv_geom *q, const conv_view *x, int64_t n, int64_t g, int64_t p0,
                     int64_t pt, void *col);

/* Adds columns laid out as tpu_conv_im2col's into img, one group's input image: element
 * (c, pixel) at (cl ? pixel * Cg + c : c * ip + pixel). */
void tpu_conv_col2im(const conv_geom *q, const void *col, int64_t p0, int64_t pt, void *img);

/* Rounds img (tpu_conv_col2im's layout) plus bias into x-like view x. Biases here are arrays of
 * the accumulation type over all of the tensor's channels, or NULL. */
void tpu_conv_store_image(const conv_geom *q, const void *img, const conv_view *x,
                          const void *bias, int64_t n, int64_t g);

/* y-like view y's channels of group g, pixels [p0, p0 + pt) of image n, into a tile: element
 * (k, p - p0) at (cl ? (p - p0) * Kg + k : k * pt + p - p0). */
void tpu_conv_load_tile(const conv_geom *q, const conv_view *y, int64_t n, int64_t g, int64_t p0,
                        int64_t pt, void *tile);

/* The inverse: rounds a tile plus bias (may be NULL) into y. */
void tpu_conv_store_tile(const conv_geom *q, const void *tile, const conv_view *y,
                         const void *bias, int64_t n, int64_t g, int64_t p0, int64_t pt);

/* The tile's (and its columns') matrices: tile (k, p) and columns (r, p) for a tile of pt. */
conv_mat tpu_conv_tile_mat(const conv_geom *q, void *tile, int64_t pt);
conv_mat tpu_conv_col_mat(const conv_geom *q, void *col, int64_t pt);

/* c (m x n) = a (m x k) @ b (k x n), plus c when accumulate, in the accumulation type, through
 * the matmul family's GEMM kernel (its BLAS when loaded; run serially inside a pool chunk). */
tpu_status tpu_conv_gemm(const conv_geom *q, int64_t m, int64_t n, int64_t k, conv_mat a,
                         conv_mat b, conv_mat c, bool accumulate);

/* The same matrix read transposed. */
static inline conv_mat tpu_conv_t(conv_mat m) {
  conv_mat t = {m.data, m.cs, m.rs};
  return t;
}

/* ---- Strided runs converted between a floating dtype (float16, bfloat16, float32, float64) and
 * its accumulation type (float, or double for float64), in conv_run.c. The dtype switch sits
 * outside each loop so the loops vectorize. ---- */

/* a / b rounded toward negative infinity, for b > 0. */
static inline int64_t tpu_conv_floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* The accumulation type of a floating dtype. */
static inline tpu_dtype tpu_conv_acc(tpu_dtype d) {
  return d == TPU_FLOAT64 ? TPU_FLOAT64 : TPU_FLOAT32;
}

/* dst[i] = src[i * stride] (stride in elements of d) for i < n; dst is of the accumulation type. */
void tpu_conv_load_run(void *dst, const char *src, int64_t stride, int64_t n, tpu_dtype d);

/* dst[i * dstride] = round(src[i * sstride] + bias[i * bstride]) for i < n; src and bias (NULL:
 * none) are of the accumulation type. */
void tpu_conv_store_run(char *dst, int64_t dstride, const void *src, int64_t sstride, int64_t n,
                        tpu_dtype d, const void *bias, int64_t bstride);

/* dst[i * dstride] += src[i] for i < n, both of the accumulation type `acc`. */
void tpu_conv_add_run(void *dst, int64_t dstride, const void *src, int64_t n, tpu_dtype acc);

/* dst[i * stride] = src[i] rounded to d (through float for the 16-bit types), for i < n. */
void tpu_conv_store_double_run(char *dst, int64_t stride, const double *src, int64_t n,
                               tpu_dtype d);

/* The sum of src[i * stride] for i < n, in double. */
double tpu_conv_sum_run(const char *src, int64_t stride, int64_t n, tpu_dtype d);

/* Zeroes n elements of the accumulation type `acc`. */
void tpu_conv_zero_run(void *dst, int64_t n, tpu_dtype acc);

#endif
