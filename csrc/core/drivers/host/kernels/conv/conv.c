/* The convolution ops (ops/tpu_ops_conv.h). Where tpu_conv_direct_fits says so (float32 and
 * 16-bit floats with pixel-dense x and wide enough rows, on CPUs with AVX2), the direct kernels
 * of conv_direct.h run them. Otherwise each is a loop of im2col / GEMM / col2im over work units
 * split across the pool (conv.h has the layouts):
 *   CONV: a unit is one tile of output pixels of one image and group: y = W @ col.
 *   CONV_BACKWARD_INPUT: a unit is one image and group, whose tiles add W^T @ dy into an
 *     accumulation-type image (tiles of one image overlap in it, so they stay on one thread).
 *   CONV_BACKWARD_WEIGHT: a unit is a tile as in CONV; each chunk of units sums dy @ col^T into
 *     its own partial weight gradient, and the partials are added in chunk order (the chunks
 *     depend only on the sizes and the thread count, so the result is deterministic).
 *   CONV_BACKWARD_BIAS: sums over all but the channel dim, in double, per channel block. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/kernels/conv/conv.h"
#include "drivers/host/kernels/conv/conv_direct.h"
#include "drivers/host/kernels/index/index_util.h"
#include "drivers/host/kernels/kernels.h"
#include "drivers/host/engine/engine_pool.h"

typedef struct conv_job {
  conv_geom q;
  conv_view x, y, w;
  void *wp;   /* packed weight (CONV, CONV_BACKWARD_INPUT) */
  void *bias; /* accumulation-type bias, or NULL */
  void *partials; /* CONV_BACKWARD_WEIGHT: one packed weight gradient per chunk */
  int64_t tiles;  /* per image and group */
  _Atomic tpu_status status;
} conv_job;

static void fail(conv_job *j, tpu_status st) {
  tpu_status ok = TPU_OK;
  if (st != TPU_OK)
    atomic_compare_exchange_strong(&j->status, &ok, st);
}

static tpu_status finish(conv_job *j, const char *op) {
  free(j->wp);
  free(j->bias);
  free(j->partials);
  tpu_status st = atomic_load(&j->status);
  return st == TPU_OK ? TPU_OK : tpu_error(st, "%s: cannot allocate host scratch memory", op);
}

/* The unit's image, group and first pixel; returns the tile's width. */
static int64_t unit_tile(const conv_job *j, int64_t unit, int64_t *n, int64_t *g, int64_t *p0) {
  const conv_geom *q = &j->q;
  int64_t t = unit % j->tiles, ng = unit / j->tiles;
  *n = ng / q->g;
  *g = ng % q->g;
  *p0 = t * q->pt;
  return q->p - *p0 < q->pt ? q->p - *p0 : q->pt;
}

static conv_mat weight_mat(const conv_job *j, int64_t g) {
  const conv_geom *q = &j->q;
  conv_mat m = {(char *)j->wp + g * q->kg * q->r * q->es, q->r, 1};
  return m;
}

/* The forward or (`input`) the input gradient through conv_direct.h. */
static tpu_status run_direct(conv_job *j, const tpu_tensor *bias, bool input, const char *op) {
  if (!tpu_conv_load_vector(&j->q, bias, &j->bias)) {
    fail(j, TPU_ERR_OUT_OF_MEMORY);
    return finish(j, op);
  }
  tpu_status st = input ? tpu_conv_direct_input(&j->q, &j->y, &j->w, j->bias, &j->x)
                        : tpu_conv_direct_forward(&j->q, &j->x, &j->w, j->bias, &j->y);
  free(j->bias);
  return st;
}

/* ---- CONV ---- */

static void forward_chunk(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  conv_job *j = ctx;
  const conv_geom *q = &j->q;
  void *col = tpu_conv_alloc(q->r * q->pt * q->es), *tile = tpu_conv_alloc(q->kg * q->pt * q->es);
  if (!col || !tile) {
    fail(j, TPU_ERR_OUT_OF_MEMORY);
    goto done;
  }
  for (int64_t u = begin; u < end; u++) {
    int64_t n, g, p0, pt = unit_tile(j, u, &n, &g, &p0);
    tpu_conv_im2col(q, &j->x, n, g, p0, pt, col);
    tpu_status st = tpu_conv_gemm(q, q->kg, pt, q->r, weight_mat(j, g), tpu_conv_col_mat(q, col, pt),
                                  tpu_conv_tile_mat(q, tile, pt), false);
    if (st != TPU_OK) {
      fail(j, st);
      break;
    }
    tpu_conv_store_tile(q, tile, &j->y, j->bias, n, g, p0, pt);
  }
done:
  free(col);
  free(tile);
}

/* Packs the weight and loads the bias; false when out of memory. */
static bool prepare(conv_job *j, const tpu_tensor *bias) {
  const conv_geom *q = &j->q;
  j->wp = tpu_conv_alloc(q->g * q->kg * q->r * q->es);
  if (!j->wp || !tpu_conv_load_vector(q, bias, &j->bias))
    return false;
  tpu_conv_pack_weight(q, &j->w, j->wp);
  return true;
}

tpu_status tpu_kernel_conv(const tpu_op_call *call) {
  if (call->n_inputs < 2 || call->n_inputs > 3 || call->n_outputs != 1)
    return tpu_error(TPU_ERR_VALUE, "conv: expected x, w[, bias] and one output");
  const tpu_tensor *x = &call->tensors[0], *w = &call->tensors[1], *y = &call->tensors[call->n_inputs];
  const tpu_tensor *bias = call->n_inputs == 3 ? &call->tensors[2] : NULL;
  conv_job j = {0};
  atomic_init(&j.status, TPU_OK);
  tpu_status st = tpu_conv_setup(&j.q, call, x, y, w, bias, y->ndim > 1 ? y->sizes[1] : 0, x,
                                 "conv", &j.x, &j.y, &j.w);
  if (st != TPU_OK)
    return st;
  if (tpu_tensor_numel(y) == 0)
    return TPU_OK;
  if (tpu_conv_direct_fits(&j.q, TPU_CONV_DIRECT_FORWARD))
    return run_direct(&j, bias, false, "conv");
  if (!prepare(&j, bias)) {
    fail(&j, TPU_ERR_OUT_OF_MEMORY);
    return finish(&j, "conv");
  }
  j.tiles = (j.q.p + j.q.pt - 1) / j.q.pt;
  tpu_parallel_for(j.q.n * j.q.g * j.tiles, 1, forward_chunk, &j);
  return finish(&j, "conv");
}

/* ---- CONV_BACKWARD_INPUT ---- */

static void input_chunk(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  conv_job *j = ctx;
  const conv_geom *q = &j->q;
  void *col = tpu_conv_alloc(q->r * q->pt * q->es), *tile = tpu_conv_alloc(q->kg * q->pt * q->es);
  void *img = tpu_conv_alloc(q->cg * q->ip * q->es);
  if (!col || !tile || !img) {
    fail(j, TPU_ERR_OUT_OF_MEMORY);
    goto done;
  }
  for (int64_t u = begin; u < end; u++) {
    int64_t n = u / q->g, g = u % q->g;
    tpu_conv_zero_run(img, q->cg * q->ip, q->acc);
    for (int64_t p0 = 0; p0 < q->p; p0 += q->pt) {
      int64_t pt = q->p - p0 < q->pt ? q->p - p0 : q->pt;
      tpu_conv_load_tile(q, &j->y, n, g, p0, pt, tile);
      tpu_status st = tpu_conv_gemm(q, q->r, pt, q->kg, tpu_conv_t(weight_mat(j, g)),
                                    tpu_conv_tile_mat(q, tile, pt), tpu_conv_col_mat(q, col, pt),
                                    false);
      if (st != TPU_OK) {
        fail(j, st);
        goto done;
      }
      tpu_conv_col2im(q, col, p0, pt, img);
    }
    tpu_conv_store_image(q, img, &j->x, j->bias, n, g);
  }
done:
  free(col);
  free(tile);
  free(img);
}

tpu_status tpu_kernel_conv_backward_input(const tpu_op_call *call) {
  if (call->n_inputs < 2 || call->n_inputs > 3 || call->n_outputs != 1)
    return tpu_error(TPU_ERR_VALUE, "conv_backward_input: expected dy, w[, bias] and one output");
  const tpu_tensor *dy = &call->tensors[0], *w = &call->tensors[1];
  const tpu_tensor *dx = &call->tensors[call->n_inputs];
  const tpu_tensor *bias = call->n_inputs == 3 ? &call->tensors[2] : NULL;
  conv_job j = {0};
  atomic_init(&j.status, TPU_OK);
  tpu_status st = tpu_conv_setup(&j.q, call, dx, dy, w, bias, dx->ndim > 1 ? dx->sizes[1] : 0,
                                 dx, "conv_backward_input", &j.x, &j.y, &j.w);
  if (st != TPU_OK)
    return st;
  if (tpu_tensor_numel(dx) == 0)
    return TPU_OK;
  if (tpu_conv_direct_fits(&j.q, TPU_CONV_DIRECT_INPUT))
    return run_direct(&j, bias, true, "conv_backward_input");
  if (!prepare(&j, bias)) {
    fail(&j, TPU_ERR_OUT_OF_MEMORY);
    return finish(&j, "conv_backward_input");
  }
  tpu_parallel_for(j.q.n * j.q.g, 1, input_chunk, &j);
  return finish(&j, "conv_backward_input");
}

/* ---- CONV_BACKWARD_WEIGHT ---- */

static void weight_chunk(int64_t begin, int64_t end, int chunk, void *ctx) {
  conv_job *j = ctx;
  const conv_geom *q = &j->q;
  int64_t wsize = q->g * q->kg * q->r;
  char *acc = (char *)j->partials + chunk * wsize * q->es;
  void *col = tpu_conv_alloc(q->r * q->pt * q->es), *tile = tpu_conv_alloc(q->kg * q->pt * q->es);
  if (!col || !tile) {
    fail(j, TPU_ERR_OUT_OF_MEMORY);
    goto done;
  }
  for (int64_t u = begin; u < end; u++) {
    int64_t n, g, p0, pt = unit_tile(j, u, &n, &g, &p0);
    tpu_conv_im2col(q, &j->x, n, g, p0, pt, col);
    tpu_conv_load_tile(q, &j->y, n, g, p0, pt, tile);
    conv_mat dw = {acc + g * q->kg * q->r * q->es, q->r, 1};
    tpu_status st = tpu_conv_gemm(q, q->kg, q->r, pt, tpu_conv_tile_mat(q, tile, pt),
                                  tpu_conv_t(tpu_conv_col_mat(q, col, pt)), dw, true);
    if (st != TPU_OK) {
      fail(j, st);
      break;
    }
  }
done:
  free(col);
  free(tile);
}

tpu_status tpu_kernel_conv_backward_weight(const tpu_op_call *call) {
  if (call->n_inputs != 2 || call->n_outputs != 1)
    return tpu_error(TPU_ERR_VALUE, "conv_backward_weight: expected dy, x and one output");
  const tpu_tensor *dy = &call->tensors[0], *x = &call->tensors[1], *dw = &call->tensors[2];
  conv_job j = {0};
  atomic_init(&j.status, TPU_OK);
  tpu_status st = tpu_conv_setup(&j.q, call, x, dy, dw, NULL, 0, x, "conv_backward_weight", &j.x,
                                 &j.y, &j.w);
  if (st != TPU_OK)
    return st;
  const conv_geom *q = &j.q;
  int64_t wsize = q->g * q->kg * q->r;
  if (wsize == 0)
    return TPU_OK;
  if (tpu_conv_direct_fits(q, TPU_CONV_DIRECT_WEIGHT))
    return tpu_conv_direct_weight(q, &j.x, &j.y, &j.w);
  j.tiles = (q->p + q->pt - 1) / q->pt;
  int64_t units = q->n * q->g * j.tiles;
  int chunks = units ? tpu_parallel_chunks(units, 1) : 1;
  j.partials = calloc((size_t)(chunks * wsize), (size_t)q->es);
  if (!j.partials) {
    fail(&j, TPU_ERR_OUT_OF_MEMORY);
    return finish(&j, "conv_backward_weight");
  }
  if (units)
    tpu_parallel_for(units, 1, weight_chunk, &j);
  for (int c = 1; c < chunks; c++)
    tpu_conv_add_run(j.partials, 1, (char *)j.partials + c * wsize * q->es, wsize, q->acc);
  tpu_conv_unpack_weight(q, j.partials, &j.w);
  return finish(&j, "conv_backward_weight");
}

/* ---- CONV_BACKWARD_BIAS ---- */

typedef struct bias_job {
  conv_view dy;
  void *db; /* tensor data */
  int64_t db_stride;
} bias_job;

/* Channels per unit of the bias gradient. */
#define BIAS_BLOCK 16

static void bias_chunk(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  const bias_job *b = ctx;
  const conv_view *v = &b->dy;
  int64_t es = (int64_t)tpu_dtype_size(v->dtype), channels = v->size[1];
  bool minor = v->stride[1] < v->stride[4] || v->size[4] == 1; /* channels innermost */
  for (int64_t blk = begin; blk < end; blk++) {
    int64_t c0 = blk * BIAS_BLOCK, c1 = c0 + BIAS_BLOCK < channels ? c0 + BIAS_BLOCK : channels;
    double sum[BIAS_BLOCK] = {0};
    for (int64_t n = 0; n < v->size[0]; n++)
      for (int64_t i0 = 0; i0 < v->size[2]; i0++)
        for (int64_t i1 = 0; i1 < v->size[3]; i1++) {
          const char *row = v->data + (n * v->stride[0] + c0 * v->stride[1] + i0 * v->stride[2] +
                                       i1 * v->stride[3]) * es;
          if (minor) {
            for (int64_t i2 = 0; i2 < v->size[4]; i2++)
              for (int64_t c = 0; c < c1 - c0; c++)
                sum[c] += tpu_real_load(row + (i2 * v->stride[4] + c * v->stride[1]) * es,
                                            v->dtype);
          } else {
            for (int64_t c = 0; c < c1 - c0; c++)
              sum[c] += tpu_conv_sum_run(row + c * v->stride[1] * es, v->stride[4], v->size[4],
                                         v->dtype);
          }
        }
    for (int64_t c = 0; c < c1 - c0; c++)
      tpu_real_store((char *)b->db + (c0 + c) * b->db_stride * es, v->dtype, sum[c]);
  }
}

tpu_status tpu_kernel_conv_backward_bias(const tpu_op_call *call) {
  const tpu_tensor *dy = &call->tensors[0], *db = &call->tensors[1];
  if (call->n_inputs != 1 || call->n_outputs != 1 || dy->ndim < 3 || dy->ndim > 5 ||
      db->ndim != 1 || db->sizes[0] != dy->sizes[1] || db->dtype != dy->dtype ||
      !tpu_dtype_is_floating(dy->dtype))
    return tpu_error(TPU_ERR_VALUE, "conv_backward_bias: malformed call");
  bias_job b = {tpu_conv_view(dy), tpu_tensor_data(db), db->strides[0]};
  int64_t blocks = (dy->sizes[1] + BIAS_BLOCK - 1) / BIAS_BLOCK;
  tpu_parallel_for(blocks, 1, bias_chunk, &b);
  return TPU_OK;
}
