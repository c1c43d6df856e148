/* The fused cells' rows in float32 (rnn.h): the formulas of rnn_cells.c in float, as PyTorch's
 * CUDA kernels compute float cells, with the vectorizable exp and tanh of engine_simd.h. Each row
 * is one loop over the hidden units, built per ISA and picked at load time; operands never
 * overlap (rnn_cells.c checks), so the pointers are restrict and the loops vectorize without
 * alias tests. */
#include <stdlib.h>

#include "drivers/host/engine/engine_simd.h"
#include "drivers/host/kernels/rnn/rnn.h"

/* The loop bodies are shared by several ISA clones: each must be inlined into every clone to be
 * built for its ISA (an outlined copy would be baseline x86-64, with fmaf a libm call). */
#define RNN_INLINE static inline __attribute__((always_inline))

static inline float sigmoidf_simd(float x) { return 1.0f / (1.0f + tpu_expf_simd(-x)); }

/* Row r of m as floats; NULL for an absent operand. */
static inline float *row(const rnn_mat *m, int64_t r) {
  return m->data ? (float *)(m->data + r * m->rs * (int64_t)sizeof(float)) : NULL;
}

/* ---- LSTM ---- */

/* Gate sums in CUDA's order: input gates + hidden gates + input bias + hidden bias. */
RNN_INLINE void lstm_row(const float *restrict ig, const float *restrict hg,
                            const float *restrict ib, const float *restrict hb,
                            const float *restrict cx, float *restrict hy, float *restrict cy,
                            float *restrict ws, int64_t h, bool bias) {
  for (int64_t k = 0; k < h; k++) {
    float g[4];
    for (int q = 0; q < 4; q++) {
      g[q] = ig[q * h + k] + hg[q * h + k];
      if (bias)
        g[q] = g[q] + ib[q * h + k] + hb[q * h + k];
    }
    float i = sigmoidf_simd(g[0]), f = sigmoidf_simd(g[1]), c = tpu_tanhf_simd(g[2]),
          o = sigmoidf_simd(g[3]);
    float cn = f * cx[k] + i * c;
    cy[k] = cn;
    hy[k] = o * tpu_tanhf_simd(cn);
    ws[k] = i;
    ws[h + k] = f;
    ws[2 * h + k] = c;
    ws[3 * h + k] = o;
  }
}

TPU_SIMD static void lstm_row_bias(const float *ig, const float *hg, const float *ib,
                                   const float *hb, const float *cx, float *hy, float *cy,
                                   float *ws, int64_t h) {
  lstm_row(ig, hg, ib, hb, cx, hy, cy, ws, h, true);
}

TPU_SIMD static void lstm_row_plain(const float *ig, const float *hg, const float *cx, float *hy,
                                    float *cy, float *ws, int64_t h) {
  lstm_row(ig, hg, NULL, NULL, cx, hy, cy, ws, h, false);
}

void tpu_rnn_lstm_rows_f32(const rnn_cell_job *j, int64_t begin, int64_t end) {
  const rnn_mat *in = j->in, *out = j->out;
  for (int64_t r = begin; r < end; r++) {
    if (in[3].data)
      lstm_row_bias(row(&in[0], r), row(&in[1], r), row(&in[3], 0), row(&in[4], 0),
                    row(&in[2], r), row(&out[0], r), row(&out[1], r), row(&out[2], r),
                    j->hidden);
    else
      lstm_row_plain(row(&in[0], r), row(&in[1], r), row(&in[2], r), row(&out[0], r),
                     row(&out[1], r), row(&out[2], r), j->hidden);
  }
}

/* An absent output gradient reads as 0: the loop is built for each case. */
RNN_INLINE void lstm_backward_row(const float *restrict ghy, const float *restrict gcy,
                                     const float *restrict cx, const float *restrict cy,
                                     const float *restrict ws, float *restrict gg,
                                     float *restrict gcx, int64_t h, bool has_ghy, bool has_gcy) {
  for (int64_t k = 0; k < h; k++) {
    float i = ws[k], f = ws[h + k], c = ws[2 * h + k], o = ws[3 * h + k];
    float gh = has_ghy ? ghy[k] : 0.0f, tc = tpu_tanhf_simd(cy[k]);
    float gc = (has_gcy ? gcy[k] : 0.0f) + gh * o * (1 - tc * tc);
    gg[k] = gc * c * i * (1 - i);
    gg[h + k] = gc * cx[k] * f * (1 - f);
    gg[2 * h + k] = gc * i * (1 - c * c);
    gg[3 * h + k] = gh * tc * o * (1 - o);
    gcx[k] = gc * f;
  }
}

TPU_SIMD static void lstm_backward_row_any(const float *ghy, const float *gcy, const float *cx,
                                           const float *cy, const float *ws, float *gg,
                                           float *gcx, int64_t h) {
  if (ghy && gcy)
    lstm_backward_row(ghy, gcy, cx, cy, ws, gg, gcx, h, true, true);
  else if (ghy)
    lstm_backward_row(ghy, NULL, cx, cy, ws, gg, gcx, h, true, false);
  else if (gcy)
    lstm_backward_row(NULL, gcy, cx, cy, ws, gg, gcx, h, false, true);
  else
    lstm_backward_row(NULL, NULL, cx, cy, ws, gg, gcx, h, false, false);
}

void tpu_rnn_lstm_backward_rows_f32(const rnn_cell_job *j, int64_t begin, int64_t end) {
  const rnn_mat *in = j->in, *out = j->out;
  for (int64_t r = begin; r < end; r++)
    lstm_backward_row_any(row(&in[0], r), row(&in[1], r), row(&in[2], r), row(&in[3], r),
                          row(&in[4], r), row(&out[0], r), row(&out[1], r), j->hidden);
}

/* ---- GRU ---- */

RNN_INLINE void gru_row(const float *restrict ig, const float *restrict hg,
                           const float *restrict ib, const float *restrict hb,
                           const float *restrict hx, float *restrict hy, float *restrict ws,
                           int64_t h, bool bias) {
  for (int64_t k = 0; k < h; k++) {
    float in[3], hn[3];
    for (int q = 0; q < 3; q++) {
      in[q] = ig[q * h + k];
      hn[q] = hg[q * h + k];
      if (bias) {
        in[q] = in[q] + ib[q * h + k];
        hn[q] = hn[q] + hb[q * h + k];
      }
    }
    float rg = sigmoidf_simd(in[0] + hn[0]), z = sigmoidf_simd(in[1] + hn[1]);
    float n = tpu_tanhf_simd(in[2] + rg * hn[2]), x = hx[k];
    hy[k] = n + z * (x - n);
    ws[k] = rg;
    ws[h + k] = z;
    ws[2 * h + k] = n;
    ws[3 * h + k] = x;
    ws[4 * h + k] = hn[2];
  }
}

TPU_SIMD static void gru_row_bias(const float *ig, const float *hg, const float *ib,
                                  const float *hb, const float *hx, float *hy, float *ws,
                                  int64_t h) {
  gru_row(ig, hg, ib, hb, hx, hy, ws, h, true);
}

TPU_SIMD static void gru_row_plain(const float *ig, const float *hg, const float *hx, float *hy,
                                   float *ws, int64_t h) {
  gru_row(ig, hg, NULL, NULL, hx, hy, ws, h, false);
}

void tpu_rnn_gru_rows_f32(const rnn_cell_job *j, int64_t begin, int64_t end) {
  const rnn_mat *in = j->in, *out = j->out;
  for (int64_t r = begin; r < end; r++) {
    if (in[3].data)
      gru_row_bias(row(&in[0], r), row(&in[1], r), row(&in[3], 0), row(&in[4], 0),
                   row(&in[2], r), row(&out[0], r), row(&out[1], r), j->hidden);
    else
      gru_row_plain(row(&in[0], r), row(&in[1], r), row(&in[2], r), row(&out[0], r),
                    row(&out[1], r), j->hidden);
  }
}

TPU_SIMD static void gru_backward_row(const float *restrict ghy, const float *restrict ws,
                                      float *restrict gig, float *restrict ghg,
                                      float *restrict ghx, int64_t h) {
  for (int64_t k = 0; k < h; k++) {
    float rg = ws[k], z = ws[h + k], n = ws[2 * h + k], x = ws[3 * h + k], hn = ws[4 * h + k];
    float g = ghy[k];
    float gn = g * (1 - z) * (1 - n * n);
    float gr = gn * hn * rg * (1 - rg), gz = g * (x - n) * z * (1 - z);
    gig[k] = gr;
    gig[h + k] = gz;
    gig[2 * h + k] = gn;
    ghg[k] = gr;
    ghg[h + k] = gz;
    ghg[2 * h + k] = gn * rg;
    ghx[k] = g * z;
  }
}

void tpu_rnn_gru_backward_rows_f32(const rnn_cell_job *j, int64_t begin, int64_t end) {
  const rnn_mat *in = j->in, *out = j->out;
  for (int64_t r = begin; r < end; r++)
    gru_backward_row(row(&in[0], r), row(&in[1], r), row(&out[0], r), row(&out[1], r),
                     row(&out[2], r), j->hidden);
}

/* ---- bias gradients ---- */

TPU_SIMD static void accumulate_row(double *restrict acc, const float *restrict src, int64_t n) {
  for (int64_t c = 0; c < n; c++)
    acc[c] += src[c];
}

bool tpu_rnn_column_sums_f32(const rnn_mat *src, const rnn_mat *dst, int64_t rows, int64_t cols) {
  double *acc = calloc(cols > 0 ? (size_t)cols : 1, sizeof *acc);
  if (!acc)
    return false;
  for (int64_t r = 0; r < rows; r++)
    accumulate_row(acc, row(src, r), cols);
  float *out = row(dst, 0);
  for (int64_t c = 0; c < cols; c++)
    out[c] = (float)acc[c];
  free(acc);
  return true;
}
