/* The fused LSTM and GRU cells, forward and backward (contract in ops/tpu_ops_rnn.h). Calls whose
 * operands are all float32 with dense rows run the float rows of rnn_cells_f32.c; in the others
 * each element computes in double and rounds once into its output. A bias gradient is summed in
 * double per column in row order. */
#include <math.h>

#include "drivers/host/kernels/index/index_util.h"
#include "drivers/host/kernels/kernels.h"
#include "drivers/host/engine/engine_pool.h"
#include "drivers/host/kernels/rnn/rnn.h"

/* Rows per pool chunk: at least this many elements each (float32 rows: this many gate columns). */
#define RNN_GRAIN 4096
#define RNN_F32_GRAIN 65536

static rnn_mat mat_of(const tpu_tensor *t) {
  rnn_mat m = {NULL, TPU_FLOAT32, 0, 0, 0};
  if (!t)
    return m;
  m.data = tpu_tensor_data(t);
  m.dtype = t->dtype;
  m.es = (int64_t)tpu_dtype_size(t->dtype);
  m.rs = t->ndim == 2 ? t->strides[0] : 0;
  m.cs = t->strides[t->ndim - 1];
  return m;
}

static double get(const rnn_mat *m, int64_t r, int64_t c) {
  return tpu_real_load(m->data + (r * m->rs + c * m->cs) * m->es, m->dtype);
}

static void put(const rnn_mat *m, int64_t r, int64_t c, double v) {
  tpu_real_store(m->data + (r * m->rs + c * m->cs) * m->es, m->dtype, v);
}

/* Optional tensors read as 0. */
static double get_or0(const rnn_mat *m, int64_t r, int64_t c) {
  return m->data ? get(m, r, c) : 0.0;
}

static double sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }

static bool same_shape(const tpu_tensor *t, int64_t rows, int64_t cols, tpu_dtype d) {
  return t->ndim == 2 && t->sizes[0] == rows && t->sizes[1] == cols && t->dtype == d;
}

static bool is_bias(const tpu_tensor *t, int64_t cols, tpu_dtype d) {
  return t->ndim == 1 && t->sizes[0] == cols && t->dtype == d;
}

/* Column sums of src (rows x cols) into the 1-d dst, one column per unit. */
typedef struct colsum_job {
  rnn_mat src, dst;
  int64_t rows;
} colsum_job;

static void colsum_range(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  const colsum_job *j = ctx;
  for (int64_t c = begin; c < end; c++) {
    double s = 0;
    for (int64_t r = 0; r < j->rows; r++)
      s += get(&j->src, r, c);
    put(&j->dst, 0, c, s);
  }
}

static void column_sums(const rnn_cell_job *cells, const rnn_mat *src, const rnn_mat *dst,
                        int64_t rows, int64_t cols) {
  if (cells->f32 && tpu_rnn_column_sums_f32(src, dst, rows, cols))
    return;
  colsum_job j = {*src, *dst, rows};
  tpu_parallel_for(cols, 64, colsum_range, &j);
}

/* Rows per chunk for `elements` elements per chunk of rows `cols` wide. */
static int64_t row_grain(int64_t elements, int64_t cols) {
  return cols > 0 ? elements / cols + 1 : 1;
}

/* Unit column stride and no negative stride: a float32 row is a dense array. */
static bool dense_rows_f32(const tpu_tensor *t) {
  if (t->dtype != TPU_FLOAT32 || t->ndim < 1 || t->ndim > 2)
    return false;
  int64_t last = t->ndim - 1;
  return (t->strides[last] == 1 || t->sizes[last] <= 1) && (t->ndim == 1 || t->strides[0] >= 0);
}

/* The bytes [*lo, *hi) a dense-rows view spans. */
static void span(const tpu_tensor *t, char **lo, char **hi) {
  int64_t last = 0;
  for (int d = 0; d < t->ndim; d++) {
    if (t->sizes[d] == 0) {
      *lo = *hi = tpu_tensor_data(t);
      return;
    }
    last += (t->sizes[d] - 1) * t->strides[d];
  }
  *lo = tpu_tensor_data(t);
  *hi = *lo + (last + 1) * (int64_t)tpu_dtype_size(t->dtype);
}

/* Whether the float32 rows (rnn.h) may run the call: every operand float32 with dense rows, and
 * no output overlapping another operand. */
static bool use_f32_rows(const tpu_op_call *call) {
  int n = call->n_inputs + call->n_outputs;
  for (int i = 0; i < n; i++)
    if (!dense_rows_f32(&call->tensors[i]))
      return false;
  for (int o = call->n_inputs; o < n; o++) {
    char *olo, *ohi;
    span(&call->tensors[o], &olo, &ohi);
    for (int i = 0; i < n; i++) {
      char *lo, *hi;
      span(&call->tensors[i], &lo, &hi);
      if (i != o && lo < ohi && olo < hi)
        return false;
    }
  }
  return true;
}

/* Fills j->in[first...] with the n_in tensors `in` and j->out with the n_out tensors `out`, then
 * runs `rows` over the pool for j->rows rows of `cols` gate columns: in float32 rows when the call
 * allows, whose work per element is small enough that a pool would cost more than it saves on
 * all but large calls. */
static void run_cells(rnn_cell_job *j, const tpu_op_call *call, const tpu_tensor *in, int first,
                      int n_in, const tpu_tensor *out, int n_out, int64_t cols, tpu_chunk_fn rows) {
  for (int i = 0; i < n_in; i++)
    j->in[first + i] = mat_of(&in[i]);
  for (int i = 0; i < n_out; i++)
    j->out[i] = mat_of(&out[i]);
  j->f32 = use_f32_rows(call);
  tpu_parallel_for(j->rows, row_grain(j->f32 ? RNN_F32_GRAIN : RNN_GRAIN, cols), rows, j);
}

/* ---- LSTM ---- */

static void lstm_rows(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  const rnn_cell_job *j = ctx;
  if (j->f32) {
    tpu_rnn_lstm_rows_f32(j, begin, end);
    return;
  }
  const rnn_mat *ig = &j->in[0], *hg = &j->in[1], *cx = &j->in[2], *ib = &j->in[3], *hb = &j->in[4];
  const rnn_mat *hy = &j->out[0], *cy = &j->out[1], *ws = &j->out[2];
  int64_t h = j->hidden;
  for (int64_t r = begin; r < end; r++)
    for (int64_t k = 0; k < h; k++) {
      double g[4];
      for (int q = 0; q < 4; q++)
        g[q] = get(ig, r, q * h + k) + get(hg, r, q * h + k) + get_or0(ib, 0, q * h + k) +
               get_or0(hb, 0, q * h + k);
      double i = sigmoid(g[0]), f = sigmoid(g[1]), c = tanh(g[2]), o = sigmoid(g[3]);
      double cn = f * get(cx, r, k) + i * c;
      put(cy, r, k, cn);
      put(hy, r, k, o * tanh(cn));
      put(ws, r, k, i);
      put(ws, r, h + k, f);
      put(ws, r, 2 * h + k, c);
      put(ws, r, 3 * h + k, o);
    }
}

tpu_status tpu_kernel_lstm_cell(const tpu_op_call *call) {
  const tpu_tensor *t = call->tensors;
  bool bias = call->n_inputs == 5;
  if ((call->n_inputs != 3 && !bias) || call->n_outputs != 3 || t[2].ndim != 2 ||
      !tpu_dtype_is_floating(t[2].dtype))
    return tpu_error(TPU_ERR_VALUE, "lstm_cell: malformed call");
  int64_t b = t[2].sizes[0], h = t[2].sizes[1];
  tpu_dtype d = t[2].dtype;
  const tpu_tensor *o = t + call->n_inputs;
  if (!same_shape(&t[0], b, 4 * h, d) || !same_shape(&t[1], b, 4 * h, d) ||
      (bias && (!is_bias(&t[3], 4 * h, d) || !is_bias(&t[4], 4 * h, d))) ||
      !same_shape(&o[0], b, h, d) || !same_shape(&o[1], b, h, d) ||
      !same_shape(&o[2], b, 4 * h, d))
    return tpu_error(TPU_ERR_VALUE, "lstm_cell: gates must be [B, 4H], states [B, H]");
  rnn_cell_job j = {.rows = b, .hidden = h};
  run_cells(&j, call, t, 0, call->n_inputs, o, 3, 4 * h, lstm_rows);
  return TPU_OK;
}

static void lstm_backward_rows(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  const rnn_cell_job *j = ctx;
  if (j->f32) {
    tpu_rnn_lstm_backward_rows_f32(j, begin, end);
    return;
  }
  const rnn_mat *ghy = &j->in[0], *gcy = &j->in[1], *cx = &j->in[2], *cy = &j->in[3];
  const rnn_mat *ws = &j->in[4], *gg = &j->out[0], *gcx = &j->out[1];
  int64_t h = j->hidden;
  for (int64_t r = begin; r < end; r++)
    for (int64_t k = 0; k < h; k++) {
      double i = get(ws, r, k), f = get(ws, r, h + k), c = get(ws, r, 2 * h + k),
             o = get(ws, r, 3 * h + k);
      double gh = get_or0(ghy, r, k), tc = tanh(get(cy, r, k));
      double gc = get_or0(gcy, r, k) + gh * o * (1 - tc * tc);
      put(gg, r, k, gc * c * i * (1 - i));
      put(gg, r, h + k, gc * get(cx, r, k) * f * (1 - f));
      put(gg, r, 2 * h + k, gc * i * (1 - c * c));
      put(gg, r, 3 * h + k, gh * tc * o * (1 - o));
      put(gcx, r, k, gc * f);
    }
}

tpu_status tpu_kernel_lstm_cell_backward(const tpu_op_call *call) {
  uint64_t flags = call->scalars[0].u;
  bool has_ghy = flags & TPU_RNN_GRAD_HY, has_gcy = flags & TPU_RNN_GRAD_CY;
  int n_in = 3 + has_ghy + has_gcy;
  bool bias = call->n_outputs == 3;
  if (call->n_inputs != n_in || (call->n_outputs != 2 && !bias))
    return tpu_error(TPU_ERR_VALUE, "lstm_cell_backward: malformed call");
  const tpu_tensor *t = call->tensors, *cx = &t[n_in - 3], *o = t + n_in;
  if (cx->ndim != 2 || !tpu_dtype_is_floating(cx->dtype))
    return tpu_error(TPU_ERR_VALUE, "lstm_cell_backward: malformed call");
  int64_t b = cx->sizes[0], h = cx->sizes[1];
  tpu_dtype d = cx->dtype;
  bool ok = same_shape(&t[n_in - 2], b, h, d) && same_shape(&t[n_in - 1], b, 4 * h, d) &&
            same_shape(&o[0], b, 4 * h, d) && same_shape(&o[1], b, h, d) &&
            (!bias || is_bias(&o[2], 4 * h, d));
  for (int i = 0; i < n_in - 3; i++)
    ok = ok && same_shape(&t[i], b, h, d);
  if (!ok)
    return tpu_error(TPU_ERR_VALUE, "lstm_cell_backward: gates must be [B, 4H], states [B, H]");
  rnn_cell_job j = {.rows = b, .hidden = h};
  int next = 0;
  if (has_ghy)
    j.in[0] = mat_of(&t[next++]);
  if (has_gcy)
    j.in[1] = mat_of(&t[next++]);
  run_cells(&j, call, &t[next], 2, 3, o, call->n_outputs, 4 * h, lstm_backward_rows);
  if (bias)
    column_sums(&j, &j.out[0], &j.out[2], b, 4 * h);
  return TPU_OK;
}

/* ---- GRU ---- */

static void gru_rows(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  const rnn_cell_job *j = ctx;
  if (j->f32) {
    tpu_rnn_gru_rows_f32(j, begin, end);
    return;
  }
  const rnn_mat *ig = &j->in[0], *hg = &j->in[1], *hx = &j->in[2], *ib = &j->in[3], *hb = &j->in[4];
  const rnn_mat *hy = &j->out[0], *ws = &j->out[1];
  int64_t h = j->hidden;
  for (int64_t r = begin; r < end; r++)
    for (int64_t k = 0; k < h; k++) {
      double in[3], hn[3];
      for (int q = 0; q < 3; q++) {
        in[q] = get(ig, r, q * h + k) + get_or0(ib, 0, q * h + k);
        hn[q] = get(hg, r, q * h + k) + get_or0(hb, 0, q * h + k);
      }
      double rg = sigmoid(in[0] + hn[0]), z = sigmoid(in[1] + hn[1]);
      double n = tanh(in[2] + rg * hn[2]), x = get(hx, r, k);
      put(hy, r, k, n + z * (x - n));
      put(ws, r, k, rg);
      put(ws, r, h + k, z);
      put(ws, r, 2 * h + k, n);
      put(ws, r, 3 * h + k, x);
      put(ws, r, 4 * h + k, hn[2]);
    }
}

tpu_status tpu_kernel_gru_cell(const tpu_op_call *call) {
  const tpu_tensor *t = call->tensors;
  bool bias = call->n_inputs == 5;
  if ((call->n_inputs != 3 && !bias) || call->n_outputs != 2 || t[2].ndim != 2 ||
      !tpu_dtype_is_floating(t[2].dtype))
    return tpu_error(TPU_ERR_VALUE, "gru_cell: malformed call");
  int64_t b = t[2].sizes[0], h = t[2].sizes[1];
  tpu_dtype d = t[2].dtype;
  const tpu_tensor *o = t + call->n_inputs;
  if (!same_shape(&t[0], b, 3 * h, d) || !same_shape(&t[1], b, 3 * h, d) ||
      (bias && (!is_bias(&t[3], 3 * h, d) || !is_bias(&t[4], 3 * h, d))) ||
      !same_shape(&o[0], b, h, d) || !same_shape(&o[1], b, 5 * h, d))
    return tpu_error(TPU_ERR_VALUE, "gru_cell: gates must be [B, 3H], states [B, H]");
  rnn_cell_job j = {.rows = b, .hidden = h};
  run_cells(&j, call, t, 0, call->n_inputs, o, 2, 3 * h, gru_rows);
  return TPU_OK;
}

static void gru_backward_rows(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  const rnn_cell_job *j = ctx;
  if (j->f32) {
    tpu_rnn_gru_backward_rows_f32(j, begin, end);
    return;
  }
  const rnn_mat *ghy = &j->in[0], *ws = &j->in[1];
  const rnn_mat *gig = &j->out[0], *ghg = &j->out[1], *ghx = &j->out[2];
  int64_t h = j->hidden;
  for (int64_t r = begin; r < end; r++)
    for (int64_t k = 0; k < h; k++) {
      double rg = get(ws, r, k), z = get(ws, r, h + k), n = get(ws, r, 2 * h + k),
             x = get(ws, r, 3 * h + k), hn = get(ws, r, 4 * h + k), g = get(ghy, r, k);
      double gn = g * (1 - z) * (1 - n * n);
      double gr = gn * hn * rg * (1 - rg), gz = g * (x - n) * z * (1 - z);
      put(gig, r, k, gr);
      put(gig, r, h + k, gz);
      put(gig, r, 2 * h + k, gn);
      put(ghg, r, k, gr);
      put(ghg, r, h + k, gz);
      put(ghg, r, 2 * h + k, gn * rg);
      put(ghx, r, k, g * z);
    }
}

tpu_status tpu_kernel_gru_cell_backward(const tpu_op_call *call) {
  const tpu_tensor *t = call->tensors, *o = t + 2;
  bool bias = call->n_outputs == 5;
  if (call->n_inputs != 2 || (call->n_outputs != 3 && !bias) || t[0].ndim != 2 ||
      !tpu_dtype_is_floating(t[0].dtype))
    return tpu_error(TPU_ERR_VALUE, "gru_cell_backward: malformed call");
  int64_t b = t[0].sizes[0], h = t[0].sizes[1];
  tpu_dtype d = t[0].dtype;
  if (!same_shape(&t[1], b, 5 * h, d) || !same_shape(&o[0], b, 3 * h, d) ||
      !same_shape(&o[1], b, 3 * h, d) || !same_shape(&o[2], b, h, d) ||
      (bias && (!is_bias(&o[3], 3 * h, d) || !is_bias(&o[4], 3 * h, d))))
    return tpu_error(TPU_ERR_VALUE, "gru_cell_backward: gates must be [B, 3H], states [B, H]");
  rnn_cell_job j = {.rows = b, .hidden = h};
  run_cells(&j, call, t, 0, 2, o, call->n_outputs, 3 * h, gru_backward_rows);
  if (bias) {
    column_sums(&j, &j.out[0], &j.out[3], b, 3 * h);
    column_sums(&j, &j.out[1], &j.out[4], b, 3 * h);
  }
  return TPU_OK;
}
