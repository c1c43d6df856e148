/* Convolution geometry: validating a call, 5-d views, weight packing, and the GEMM through the
 * matmul family's kernel. */
#include <stdlib.h>

#include "drivers/host/kernels/conv/conv.h"
#include "drivers/host/kernels/kernels.h"

/* Bytes of one tile's columns: a quarter of a Zen 4 core's L2, so the columns, the tile and the
 * BLAS's packed panels stay in it. */
#define CONV_TILE_BYTES (256 * 1024)

conv_view tpu_conv_view(const tpu_tensor *t) {
  conv_view v = {(char *)tpu_tensor_data(t), t->dtype, {1, 1, 1, 1, 1}, {0, 0, 0, 0, 0}};
  int spatial = t->ndim - 2;
  for (int d = 0; d < t->ndim; d++) {
    int to = d < 2 ? d : 5 - spatial + (d - 2);
    v.size[to] = t->sizes[d];
    v.stride[to] = t->strides[d];
  }
  return v;
}

void *tpu_conv_alloc(int64_t bytes) { return malloc((size_t)(bytes > 0 ? bytes : 1)); }

bool tpu_conv_load_vector(const conv_geom *q, const tpu_tensor *t, void **out) {
  *out = NULL;
  if (!t)
    return true;
  *out = tpu_conv_alloc(t->sizes[0] * q->es);
  if (!*out)
    return false;
  tpu_conv_load_run(*out, tpu_tensor_data(t), t->strides[0], t->sizes[0], t->dtype);
  return true;
}

static bool is_floating(const tpu_tensor *t) { return tpu_dtype_is_floating(t->dtype); }

tpu_status tpu_conv_setup(conv_geom *q, const tpu_op_call *call, const tpu_tensor *x,
                          const tpu_tensor *y, const tpu_tensor *w, const tpu_tensor *bias,
                          int64_t bias_channels, const tpu_tensor *cl_from, const char *op,
                          conv_view *xv, conv_view *yv, conv_view *wv) {
  int nd = x->ndim;
  if (nd < 3 || nd > 5 || y->ndim != nd || w->ndim != nd || !is_floating(x) ||
      y->dtype != x->dtype || w->dtype != x->dtype ||
      (bias && (bias->ndim != 1 || bias->dtype != x->dtype || bias->sizes[0] != bias_channels)))
    return tpu_error(TPU_ERR_VALUE, "%s: malformed call (ranks or dtypes)", op);
  *xv = tpu_conv_view(x);
  *yv = tpu_conv_view(y);
  *wv = tpu_conv_view(w);
  q->dtype = x->dtype;
  q->acc = tpu_conv_acc(x->dtype);
  q->es = (int64_t)tpu_dtype_size(q->acc);
  q->n = xv->size[0];
  q->cg = wv->size[1];
  if (q->cg < 1 || xv->size[1] % q->cg || yv->size[0] != q->n || yv->size[1] != wv->size[0])
    return tpu_error(TPU_ERR_VALUE, "%s: channel counts of input, weight and output disagree", op);
  q->g = xv->size[1] / q->cg;
  if (q->g < 1 || wv->size[0] % q->g)
    return tpu_error(TPU_ERR_VALUE, "%s: weight rows do not split into the groups", op);
  q->kg = wv->size[0] / q->g;
  q->kk = 1;
  q->p = q->ip = 1;
  for (int d = 0; d < 3; d++) {
    q->in[d] = xv->size[2 + d];
    q->out[d] = yv->size[2 + d];
    q->ker[d] = wv->size[2 + d];
    bool used = d >= 3 - (nd - 2);
    q->stride[d] = used ? tpu_conv_unpack(call->scalars[0].u, d) : 1;
    q->pad[d] = used ? tpu_conv_unpack(call->scalars[1].u, d) : 0;
    q->dil[d] = used ? tpu_conv_unpack(call->scalars[2].u, d) : 1;
    int64_t span = q->in[d] + 2 * q->pad[d] - q->dil[d] * (q->ker[d] - 1) - 1;
    if (q->stride[d] < 1 || q->dil[d] < 1 || q->ker[d] < 1 || span < 0 ||
        q->out[d] > span / q->stride[d] + 1)
      return tpu_error(TPU_ERR_VALUE, "%s: output size exceeds what the parameters give", op);
    q->kk *= q->ker[d];
    q->p *= q->out[d];
    q->ip *= q->in[d];
  }
  q->r = q->cg * q->kk;
  conv_view cv = tpu_conv_view(cl_from);
  q->cl = cv.size[1] > 1 && cv.stride[1] == 1;
  int64_t pt = CONV_TILE_BYTES / (q->r * q->es);
  pt = pt < 64 ? 64 : pt;
  q->pt = pt < q->p ? pt : q->p;
  if (q->pt < 1)
    q->pt = 1;
  return TPU_OK;
}

/* Column index of channel c at kernel position kpos. */
static int64_t col_index(const conv_geom *q, int64_t c, int64_t kpos) {
  return q->cl ? kpos * q->cg + c : c * q->kk + kpos;
}

/* The element of w (or dw) at row k, channel c, kernel position kpos. */
static char *weight_at(const conv_geom *q, const conv_view *w, int64_t k, int64_t c,
                       int64_t kpos) {
  int64_t kd = kpos / (q->ker[1] * q->ker[2]), kh = kpos / q->ker[2] % q->ker[1],
          kw = kpos % q->ker[2];
  int64_t off = k * w->stride[0] + c * w->stride[1] + kd * w->stride[2] + kh * w->stride[3] +
                kw * w->stride[4];
  return w->data + off * (int64_t)tpu_dtype_size(w->dtype);
}

/* True when every row of w holds its R elements densely in the packed column order, so a row
 * converts as one run. */
static bool rows_dense(const conv_geom *q, const conv_view *w) {
  int64_t step = 1;
  if (q->cl) { /* (kpos, c): channels innermost */
    if (q->cg > 1 && w->stride[1] != 1)
      return false;
    step = q->cg;
  }
  for (int d = 4; d >= 2; d--) {
    if (w->size[d] > 1 && w->stride[d] != step)
      return false;
    step *= w->size[d];
  }
  return q->cl || q->cg == 1 || w->stride[1] == q->kk;
}

void tpu_conv_pack_weight(const conv_geom *q, const conv_view *w, void *wp) {
  int64_t rows = q->g * q->kg;
  if (rows_dense(q, w)) {
    for (int64_t k = 0; k < rows; k++)
      tpu_conv_load_run((char *)wp + k * q->r * q->es, weight_at(q, w, k, 0, 0), 1, q->r,
                        q->dtype);
    return;
  }
  for (int64_t k = 0; k < rows; k++)
    for (int64_t c = 0; c < q->cg; c++)
      for (int64_t kpos = 0; kpos < q->kk; kpos++)
        tpu_conv_load_run((char *)wp + (k * q->r + col_index(q, c, kpos)) * q->es,
                          weight_at(q, w, k, c, kpos), 1, 1, q->dtype);
}

void tpu_conv_unpack_weight(const conv_geom *q, const void *wp, const conv_view *dw) {
  int64_t rows = q->g * q->kg;
  if (rows_dense(q, dw)) {
    for (int64_t k = 0; k < rows; k++)
      tpu_conv_store_run(weight_at(q, dw, k, 0, 0), 1, (const char *)wp + k * q->r * q->es, 1,
                         q->r, q->dtype, NULL, 0);
    return;
  }
  for (int64_t k = 0; k < rows; k++)
    for (int64_t c = 0; c < q->cg; c++)
      for (int64_t kpos = 0; kpos < q->kk; kpos++)
        tpu_conv_store_run(weight_at(q, dw, k, c, kpos), 1,
                           (const char *)wp + (k * q->r + col_index(q, c, kpos)) * q->es, 1, 1,
                           q->dtype, NULL, 0);
}

conv_mat tpu_conv_tile_mat(const conv_geom *q, void *tile, int64_t pt) {
  conv_mat m = {tile, q->cl ? 1 : pt, q->cl ? q->kg : 1};
  return m;
}

conv_mat tpu_conv_col_mat(const conv_geom *q, void *col, int64_t pt) {
  conv_mat m = {col, q->cl ? 1 : pt, q->cl ? q->r : 1};
  return m;
}

/* A [1, rows, cols] host view of an accumulation-type matrix. */
static tpu_tensor mat_view(const conv_geom *q, conv_mat m, int64_t rows, int64_t cols) {
  tpu_tensor t = {.host = m.data, .dtype = q->acc, .ndim = 3};
  t.sizes[0] = 1;
  t.sizes[1] = rows;
  t.sizes[2] = cols;
  t.strides[0] = 0;
  t.strides[1] = m.rs;
  t.strides[2] = m.cs;
  return t;
}

tpu_status tpu_conv_gemm(const conv_geom *q, int64_t m, int64_t n, int64_t k, conv_mat a,
                         conv_mat b, conv_mat c, bool accumulate) {
  tpu_op_call *call = tpu_op_call_new(TPU_OP_MM, accumulate ? 3 : 2, 1);
  if (!call)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "conv: cannot allocate host memory");
  call->tensors[0] = mat_view(q, a, m, k);
  call->tensors[1] = mat_view(q, b, k, n);
  if (accumulate)
    call->tensors[2] = mat_view(q, c, m, n);
  call->tensors[call->n_inputs] = mat_view(q, c, m, n);
  call->scalars[0].f = 1.0;
  call->scalars[1].f = accumulate ? 1.0 : 0.0;
  tpu_status st = tpu_kernel_gemm(call);
  tpu_op_call_free(call);
  return st;
}
