/* The fused RNN cells: forward against direct formulas, and every backward against central finite
 * differences of the forward kernel (float64), which checks the gradient formulas independently. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tpu_test.h"
#include "tpu_test_call.h"

static double value(int i, int seed) { return sin(0.7 * i + 1.3 * seed) * 2.0; }

enum { B = 2, H = 3 };

static double sig(double v) { return 1 / (1 + exp(-v)); }

/* LSTM forward; returns sum(a * hy) + sum(c * cy). */
static double lstm(double *ig, double *hg, double *cx, double *ib, double *hb, double *hy,
                   double *cy, double *ws) {
  tpu_tensor t[8] = {mat(ig, TPU_FLOAT64, B, 4 * H), mat(hg, TPU_FLOAT64, B, 4 * H),
                     mat(cx, TPU_FLOAT64, B, H),     vec(ib, TPU_FLOAT64, 4 * H),
                     vec(hb, TPU_FLOAT64, 4 * H),    mat(hy, TPU_FLOAT64, B, H),
                     mat(cy, TPU_FLOAT64, B, H),     mat(ws, TPU_FLOAT64, B, 4 * H)};
  CHECK_OK_OR(run_call(TPU_OP_LSTM_CELL, t, 5, 3, NULL, 0), NAN);
  double loss = 0;
  for (int i = 0; i < B * H; i++)
    loss += value(i, 5) * hy[i] + value(i, 6) * cy[i];
  return loss;
}

static void test_lstm(void) {
  double ig[B * 4 * H], hg[B * 4 * H], cx[B * H], ib[4 * H], hb[4 * H];
  double hy[B * H], cy[B * H], ws[B * 4 * H];
  for (int i = 0; i < B * 4 * H; i++) {
    ig[i] = value(i, 1);
    hg[i] = value(i, 2);
  }
  for (int i = 0; i < 4 * H; i++) {
    ib[i] = 0.1 * value(i, 3);
    hb[i] = 0.1 * value(i, 4);
  }
  for (int i = 0; i < B * H; i++)
    cx[i] = value(i, 7);
  lstm(ig, hg, cx, ib, hb, hy, cy, ws);
  /* element (1, 2) by hand */
  double g[4];
  for (int q = 0; q < 4; q++) {
    int k = 4 * H + q * H + 2;
    g[q] = ig[k] + hg[k] + ib[q * H + 2] + hb[q * H + 2];
  }
  double c_new = sig(g[1]) * cx[H + 2] + sig(g[0]) * tanh(g[2]);
  CHECK(fabs(cy[H + 2] - c_new) < 1e-12 && fabs(hy[H + 2] - sig(g[3]) * tanh(c_new)) < 1e-12);
  CHECK(fabs(ws[4 * H + 2 * H + 2] - tanh(g[2])) < 1e-12);

  double ghy[B * H], gcy[B * H], gg[B * 4 * H], gcx[B * H], gb[4 * H];
  for (int i = 0; i < B * H; i++) {
    ghy[i] = value(i, 5);
    gcy[i] = value(i, 6);
  }
  tpu_tensor t[8] = {mat(ghy, TPU_FLOAT64, B, H), mat(gcy, TPU_FLOAT64, B, H),
                     mat(cx, TPU_FLOAT64, B, H),  mat(cy, TPU_FLOAT64, B, H),
                     mat(ws, TPU_FLOAT64, B, 4 * H), mat(gg, TPU_FLOAT64, B, 4 * H),
                     mat(gcx, TPU_FLOAT64, B, H), vec(gb, TPU_FLOAT64, 4 * H)};
  tpu_scalar s = SCALAR_U(TPU_RNN_GRAD_HY | TPU_RNN_GRAD_CY);
  CHECK_OK(run_call(TPU_OP_LSTM_CELL_BACKWARD, t, 5, 3, &s, 1));
  double h = 1e-6, y1[B * H], y2[B * H], w3[B * 4 * H];
  for (int i = 0; i < B * 4 * H; i++) {
    double keep = ig[i];
    ig[i] = keep + h;
    double up = lstm(ig, hg, cx, ib, hb, y1, y2, w3);
    ig[i] = keep - h;
    double down = lstm(ig, hg, cx, ib, hb, y1, y2, w3);
    ig[i] = keep;
    CHECK(fabs((up - down) / (2 * h) - gg[i]) < 1e-6);
  }
  for (int i = 0; i < B * H; i++) {
    double keep = cx[i];
    cx[i] = keep + h;
    double up = lstm(ig, hg, cx, ib, hb, y1, y2, w3);
    cx[i] = keep - h;
    double down = lstm(ig, hg, cx, ib, hb, y1, y2, w3);
    cx[i] = keep;
    CHECK(fabs((up - down) / (2 * h) - gcx[i]) < 1e-6);
  }
  CHECK(fabs(gb[5] - (gg[5] + gg[4 * H + 5])) < 1e-12);
  /* without grad_cy: the cy term drops out */
  tpu_tensor t2[6] = {mat(ghy, TPU_FLOAT64, B, H), mat(cx, TPU_FLOAT64, B, H),
                      mat(cy, TPU_FLOAT64, B, H),  mat(ws, TPU_FLOAT64, B, 4 * H),
                      mat(gg, TPU_FLOAT64, B, 4 * H), mat(gcx, TPU_FLOAT64, B, H)};
  s = SCALAR_U(TPU_RNN_GRAD_HY);
  CHECK_OK(run_call(TPU_OP_LSTM_CELL_BACKWARD, t2, 4, 2, &s, 1));
  double tc = tanh(cy[0]), o = ws[3 * H];
  CHECK(fabs(gcx[0] - ghy[0] * o * (1 - tc * tc) * ws[H]) < 1e-12);
}

/* GRU forward; returns sum(a * hy). */
static double gru(double *ig, double *hg, double *hx, double *ib, double *hb, double *hy,
                  double *ws) {
  tpu_tensor t[7] = {mat(ig, TPU_FLOAT64, B, 3 * H), mat(hg, TPU_FLOAT64, B, 3 * H),
                     mat(hx, TPU_FLOAT64, B, H),     vec(ib, TPU_FLOAT64, 3 * H),
                     vec(hb, TPU_FLOAT64, 3 * H),    mat(hy, TPU_FLOAT64, B, H),
                     mat(ws, TPU_FLOAT64, B, 5 * H)};
  CHECK_OK_OR(run_call(TPU_OP_GRU_CELL, t, 5, 2, NULL, 0), NAN);
  double loss = 0;
  for (int i = 0; i < B * H; i++)
    loss += value(i, 5) * hy[i];
  return loss;
}

static void test_gru(void) {
  double ig[B * 3 * H], hg[B * 3 * H], hx[B * H], ib[3 * H], hb[3 * H], hy[B * H], ws[B * 5 * H];
  for (int i = 0; i < B * 3 * H; i++) {
    ig[i] = value(i, 1);
    hg[i] = value(i, 2);
  }
  for (int i = 0; i < 3 * H; i++) {
    ib[i] = 0.1 * value(i, 3);
    hb[i] = 0.1 * value(i, 4);
  }
  for (int i = 0; i < B * H; i++)
    hx[i] = value(i, 7);
  gru(ig, hg, hx, ib, hb, hy, ws);
  double r = sig(ig[0] + ib[0] + hg[0] + hb[0]), z = sig(ig[H] + ib[H] + hg[H] + hb[H]);
  double hn = hg[2 * H] + hb[2 * H], n = tanh(ig[2 * H] + ib[2 * H] + r * hn);
  CHECK(fabs(hy[0] - ((1 - z) * n + z * hx[0])) < 1e-12 && ws[4 * H] == hn && ws[3 * H] == hx[0]);

  double ghy[B * H], gig[B * 3 * H], ghg[B * 3 * H], ghx[B * H], gib[3 * H], ghb[3 * H];
  for (int i = 0; i < B * H; i++)
    ghy[i] = value(i, 5);
  tpu_tensor t[7] = {mat(ghy, TPU_FLOAT64, B, H),     mat(ws, TPU_FLOAT64, B, 5 * H),
                     mat(gig, TPU_FLOAT64, B, 3 * H), mat(ghg, TPU_FLOAT64, B, 3 * H),
                     mat(ghx, TPU_FLOAT64, B, H),     vec(gib, TPU_FLOAT64, 3 * H),
                     vec(ghb, TPU_FLOAT64, 3 * H)};
  CHECK_OK(run_call(TPU_OP_GRU_CELL_BACKWARD, t, 2, 5, NULL, 0));
  double h = 1e-6, y1[B * H], w1[B * 5 * H];
  double *params[3] = {ig, hg, hx}, *grads[3] = {gig, ghg, ghx};
  int counts[3] = {B * 3 * H, B * 3 * H, B * H};
  for (int p = 0; p < 3; p++)
    for (int i = 0; i < counts[p]; i++) {
      double keep = params[p][i];
      params[p][i] = keep + h;
      double up = gru(ig, hg, hx, ib, hb, y1, w1);
      params[p][i] = keep - h;
      double down = gru(ig, hg, hx, ib, hb, y1, w1);
      params[p][i] = keep;
      CHECK(fabs((up - down) / (2 * h) - grads[p][i]) < 1e-6);
    }
  CHECK(fabs(ghb[7] - (ghg[7] + ghg[3 * H + 7])) < 1e-12);
  CHECK(fabs(gib[1] - (gig[1] + gig[3 * H + 1])) < 1e-12);
}

int main(void) {
  TEST_MAIN_BEGIN();
  RUN_TEST(test_lstm);
  RUN_TEST(test_gru);
  TEST_MAIN_END();
}
