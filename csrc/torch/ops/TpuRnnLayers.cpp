// nn.LSTM and nn.GRU on tpu: aten::lstm.input and aten::gru.input (CompositeImplicitAutograd,
// whose generic path projects each timestep's input with its own small GEMM and records several
// autograd nodes per step) get kernels here that run each layer and direction as one autograd
// node. Its forward projects every timestep's input with one GEMM and runs one GEMM and one fused
// cell (TpuRnnCells.cpp) per step; its backward runs one fused cell backward and one GEMM per step
// (the GRU one more add where the output has a gradient), then the input and weight gradients as
// whole-sequence GEMMs. Calls they do not cover (projections, empty sizes, mixed devices or dtypes,
// malformed arguments, torch.compile's tracing) take ATen's generic path, which also raises its
// errors.
#include <ATen/ops/addmm.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/dropout.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/gru_native.h>
#include <ATen/ops/lstm_native.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/zeros_like.h>
#include <ATen/TensorOperators.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <algorithm>

#include "ops/TpuConvCommon.h"
#include "ops/TpuRnn.h"

namespace torch_tpu {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The previous step's state for every timestep, in processing order: [T, B, H] from the initial
// state and the per-step states `states` (processing runs t = 0..T-1, or T-1..0 when reversed).
at::Tensor previous_states(const at::Tensor& initial, const at::Tensor& states, bool reverse) {
  int64_t t = states.size(0);
  at::Tensor first = initial.unsqueeze(0);
  return reverse ? at::cat({states.narrow(0, 1, t - 1), first}, 0)
                 : at::cat({first, states.narrow(0, 0, t - 1)}, 0);
}

// w [G, H] (a recurrent weight) as a contiguous [H, G]: the backward's per-step product
// dgates @ w then reads rows of its transpose, the layout the host's few-row GEMM kernel takes
// (csrc/core/drivers/host/kernels/matmul/matmul_small_f32.c), for the price of one copy per layer.
at::Tensor transposed_once(const at::Tensor& w) { return w.t().contiguous(); }

// One direction of one LSTM layer: x [T, B, I], h0 and c0 [B, H], w_ih [4H, I], w_hh [4H, H],
// biases [4H] or none. Returns (output [T, B, H], h_T, c_T). Each step's cell writes into views of
// the whole sequence's outputs, states and (when a backward will run) activated gates.
struct LstmLayerFunction : public torch::autograd::Function<LstmLayerFunction> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& h0,
                               const at::Tensor& c0, const at::Tensor& w_ih,
                               const at::Tensor& w_hh, const std::optional<at::Tensor>& b_ih,
                               const std::optional<at::Tensor>& b_hh, bool reverse,
                               bool keep_gates) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    int64_t steps = x.size(0), batch = x.size(1), hidden = h0.size(1);
    at::Tensor x2 = x.reshape({steps * batch, x.size(2)});
    at::Tensor gates_x = b_ih ? at::addmm(*b_ih + *b_hh, x2, w_ih.t()) : at::mm(x2, w_ih.t());
    gates_x = gates_x.view({steps, batch, 4 * hidden});
    at::Tensor out = at::empty({steps, batch, hidden}, h0.options());
    at::Tensor cs = at::empty({steps, batch, hidden}, h0.options());
    // Without a backward, one workspace serves every step: nothing reads it.
    at::Tensor ws = at::empty({keep_gates ? steps : 1, batch, 4 * hidden}, h0.options());
    at::Tensor h = h0, c = c0;
    for (int64_t s = 0; s < steps; s++) {
      int64_t t = reverse ? steps - 1 - s : s;
      at::Tensor hy = out.select(0, t), cy = cs.select(0, t);
      launch_lstm_cell(gates_x.select(0, t), at::mm(h, w_hh.t()), c, nullptr, nullptr, hy, cy,
                       ws.select(0, keep_gates ? t : 0));
      h = hy;
      c = cy;
    }
    ctx->saved_data["reverse"] = reverse;
    ctx->saved_data["bias"] = b_ih.has_value();
    if (keep_gates)
      ctx->save_for_backward({x, h0, c0, w_ih, w_hh, out, cs, ws});
    return {out, h, c};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &h0 = saved[1], &c0 = saved[2], &w_ih = saved[3];
    const at::Tensor &w_hh = saved[4], &out = saved[5], &cs = saved[6], &ws = saved[7];
    bool reverse = ctx->saved_data["reverse"].toBool(), bias = ctx->saved_data["bias"].toBool();
    const at::Tensor &g_out = grads[0], &g_h = grads[1], &g_c = grads[2];
    int64_t steps = x.size(0), batch = x.size(1), hidden = h0.size(1);
    // The gradient reaching each step's hidden output: the output's own (folded into the GEMM
    // that carries the next step's gradient back) plus what flows back from later steps.
    at::Tensor dh = g_h, dc = g_c;
    if (g_out.defined()) {
      at::Tensor last = g_out.select(0, reverse ? 0 : steps - 1);
      dh = dh.defined() ? dh + last : last;
    }
    at::Tensor dg = at::empty({steps, batch, 4 * hidden}, h0.options());
    at::Tensor w_hh_t = transposed_once(w_hh);
    for (int64_t s = steps - 1; s >= 0; s--) {
      int64_t t = reverse ? steps - 1 - s : s, prev = reverse ? t + 1 : t - 1;
      at::Tensor c_prev = s == 0 ? c0 : cs.select(0, prev), gates = dg.select(0, t);
      at::Tensor dc_prev = at::empty({batch, hidden}, h0.options());
      launch_lstm_cell_backward(dh.defined() ? &dh : nullptr, dc.defined() ? &dc : nullptr, c_prev,
                                cs.select(0, t), ws.select(0, t), gates, dc_prev, nullptr);
      dc = dc_prev;
      dh = s > 0 && g_out.defined() ? at::addmm(g_out.select(0, prev), gates, w_hh_t.t())
                                    : at::mm(gates, w_hh_t.t());
    }
    at::Tensor dg2 = dg.view({steps * batch, 4 * hidden});
    at::Tensor dx, dw_ih, dw_hh, db;
    if (ctx->needs_input_grad(0))
      dx = at::mm(dg2, w_ih).view(x.sizes());
    if (ctx->needs_input_grad(3))
      dw_ih = at::mm(dg2.t(), x.reshape({steps * batch, x.size(2)}));
    if (ctx->needs_input_grad(4))
      dw_hh = at::mm(dg2.t(), previous_states(h0, out, reverse).view({steps * batch, hidden}));
    if (bias && (ctx->needs_input_grad(5) || ctx->needs_input_grad(6)))
      db = dg2.sum(0);
    return {dx, dh, dc, dw_ih, dw_hh, db, db, at::Tensor(), at::Tensor()};
  }
};

// One direction of one GRU layer: x [T, B, I], h0 [B, H], w_ih [3H, I], w_hh [3H, H], biases
// [3H] or none; each bias is folded into its GEMM, so the cells take none. Returns (output
// [T, B, H], h_T).
struct GruLayerFunction : public torch::autograd::Function<GruLayerFunction> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& h0,
                               const at::Tensor& w_ih, const at::Tensor& w_hh,
                               const std::optional<at::Tensor>& b_ih,
                               const std::optional<at::Tensor>& b_hh, bool reverse,
                               bool keep_gates) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    int64_t steps = x.size(0), batch = x.size(1), hidden = h0.size(1);
    at::Tensor x2 = x.reshape({steps * batch, x.size(2)});
    at::Tensor gates_x = b_ih ? at::addmm(*b_ih, x2, w_ih.t()) : at::mm(x2, w_ih.t());
    gates_x = gates_x.view({steps, batch, 3 * hidden});
    at::Tensor out = at::empty({steps, batch, hidden}, h0.options());
    at::Tensor ws = at::empty({keep_gates ? steps : 1, batch, 5 * hidden}, h0.options());
    at::Tensor h = h0;
    for (int64_t s = 0; s < steps; s++) {
      int64_t t = reverse ? steps - 1 - s : s;
      at::Tensor hy = out.select(0, t);
      at::Tensor gates_h = b_hh ? at::addmm(*b_hh, h, w_hh.t()) : at::mm(h, w_hh.t());
      launch_gru_cell(gates_x.select(0, t), gates_h, h, nullptr, nullptr, hy,
                      ws.select(0, keep_gates ? t : 0));
      h = hy;
    }
    ctx->saved_data["reverse"] = reverse;
    ctx->saved_data["bias"] = b_ih.has_value();
    if (keep_gates)
      ctx->save_for_backward({x, h0, w_ih, w_hh, out, ws});
    return {out, h};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &h0 = saved[1], &w_ih = saved[2], &w_hh = saved[3];
    const at::Tensor &out = saved[4], &ws = saved[5];
    bool reverse = ctx->saved_data["reverse"].toBool(), bias = ctx->saved_data["bias"].toBool();
    const at::Tensor &g_out = grads[0], &g_h = grads[1];
    int64_t steps = x.size(0), batch = x.size(1), hidden = h0.size(1);
    at::Tensor dh = g_h.defined() ? g_h : at::zeros_like(h0);
    if (g_out.defined())
      dh = dh + g_out.select(0, reverse ? 0 : steps - 1);
    at::Tensor dgi = at::empty({steps, batch, 3 * hidden}, h0.options());
    at::Tensor dgh = at::empty({steps, batch, 3 * hidden}, h0.options());
    at::Tensor w_hh_t = transposed_once(w_hh);
    for (int64_t s = steps - 1; s >= 0; s--) {
      int64_t t = reverse ? steps - 1 - s : s, prev = reverse ? t + 1 : t - 1;
      at::Tensor dh_direct = at::empty({batch, hidden}, h0.options());
      launch_gru_cell_backward(dh, ws.select(0, t), dgi.select(0, t), dgh.select(0, t), dh_direct,
                               nullptr, nullptr);
      // The previous state's gradient: through the cell directly, through the hidden gates'
      // GEMM, and the output's own.
      dh = at::addmm(dh_direct, dgh.select(0, t), w_hh_t.t());
      if (s > 0 && g_out.defined())
        dh = dh + g_out.select(0, prev);
    }
    at::Tensor dgi2 = dgi.view({steps * batch, 3 * hidden});
    at::Tensor dgh2 = dgh.view({steps * batch, 3 * hidden});
    at::Tensor dx, dw_ih, dw_hh, db_ih, db_hh;
    if (ctx->needs_input_grad(0))
      dx = at::mm(dgi2, w_ih).view(x.sizes());
    if (ctx->needs_input_grad(2))
      dw_ih = at::mm(dgi2.t(), x.reshape({steps * batch, x.size(2)}));
    if (ctx->needs_input_grad(3))
      dw_hh = at::mm(dgh2.t(), previous_states(h0, out, reverse).view({steps * batch, hidden}));
    if (bias) {
      db_ih = dgi2.sum(0);
      db_hh = dgh2.sum(0);
    }
    return {dx, dh, dw_ih, dw_hh, db_ih, db_hh, at::Tensor(), at::Tensor()};
  }
};

// Tensors with device memory of like's device and dtype: not the fake or functional tensors of
// torch.compile's tracing (the layers launch cells into views directly, below the dispatcher).
bool same_kind(const at::Tensor& t, const at::Tensor& like) {
  c10::DispatchKeySet traced({c10::DispatchKey::Python, c10::DispatchKey::Functionalize});
  return t.defined() && t.device() == like.device() && t.scalar_type() == like.scalar_type() &&
         !t.key_set().has_any(traced);
}

// Whether the layer functions cover the call: no projections, no empty sizes, every tensor on
// the input's tpu device in its floating dtype, and the shapes nn.LSTM and nn.GRU pass; `states`
// are h0 (and c0), `gates` 4 (LSTM) or 3 (GRU).
bool covered(const at::Tensor& input, at::TensorList states, at::TensorList params,
             bool has_biases, int64_t layers, bool bidirectional, bool batch_first,
             int64_t gates) {
  if (!input.is_privateuseone() || !same_kind(input, input) ||
      !is_conv_float(input.scalar_type()) || input.dim() != 3 || input.numel() == 0 ||
      layers < 1)
    return false;
  int64_t dirs = bidirectional ? 2 : 1, per = has_biases ? 4 : 2;
  if (static_cast<int64_t>(params.size()) != layers * dirs * per)
    return false;
  const at::Tensor& h = states[0];
  for (const at::Tensor& state : states)
    if (!same_kind(state, input) || state.sizes() != h.sizes())
      return false;
  if (h.dim() != 3 || h.size(0) != layers * dirs || h.size(1) != input.size(batch_first ? 0 : 1) ||
      h.size(2) == 0)
    return false;
  int64_t hidden = h.size(2);
  for (int64_t l = 0; l < layers; l++) {
    int64_t in = l == 0 ? input.size(2) : hidden * dirs;
    for (int64_t d = 0; d < dirs; d++) {
      const at::Tensor* p = &params[(l * dirs + d) * per];
      if (!same_kind(p[0], input) || !same_kind(p[1], input) ||
          p[0].sizes() != at::IntArrayRef({gates * hidden, in}) ||
          p[1].sizes() != at::IntArrayRef({gates * hidden, hidden}))
        return false;
      for (int64_t b = 2; b < per; b++)
        if (!same_kind(p[b], input) || p[b].sizes() != at::IntArrayRef({gates * hidden}))
          return false;
    }
  }
  return true;
}

// Whether autograd will record the layers, and so whether they keep what a backward reads.
bool will_differentiate(const at::Tensor& input, at::TensorList states, at::TensorList params) {
  auto requires = [](const at::Tensor& t) { return t.requires_grad(); };
  return at::GradMode::is_enabled() &&
         (input.requires_grad() || std::any_of(states.begin(), states.end(), requires) ||
          std::any_of(params.begin(), params.end(), requires));
}

std::optional<at::Tensor> bias(const at::Tensor* p, int i, bool has_biases) {
  return has_biases ? std::optional<at::Tensor>(p[i]) : std::nullopt;
}

// Runs `layer(x, index, weights, reverse)` (a layer function's outputs: the sequence, then final
// states) for every layer and direction as ATen's generic path orders them, with dropout between
// layers. Returns the output sequence and, per state, the final states stacked over layers.
template <typename Layer>
std::pair<at::Tensor, std::vector<at::Tensor>> run_layers(
    const at::Tensor& input, at::TensorList params, bool has_biases, int64_t layers,
    double dropout, bool train, bool bidirectional, bool batch_first, size_t n_states,
    const Layer& layer) {
  int64_t dirs = bidirectional ? 2 : 1, per = has_biases ? 4 : 2;
  at::Tensor x = batch_first ? input.transpose(0, 1) : input;
  std::vector<std::vector<at::Tensor>> finals(n_states);
  for (int64_t l = 0; l < layers; l++) {
    std::vector<at::Tensor> outs;
    for (int64_t d = 0; d < dirs; d++) {
      int64_t idx = l * dirs + d;
      variable_list r = layer(x, idx, &params[idx * per], d == 1);
      outs.push_back(r[0]);
      for (size_t k = 0; k < n_states; k++)
        finals[k].push_back(r[1 + k]);
    }
    x = dirs == 2 ? at::cat(outs, 2) : outs[0];
    if (dropout != 0 && train && l < layers - 1)
      x = at::dropout(x, dropout, train);
  }
  std::vector<at::Tensor> stacked;
  for (const auto& f : finals)
    stacked.push_back(at::stack(f));
  return {batch_first ? x.transpose(0, 1) : x, stacked};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm(const at::Tensor& input, at::TensorList hx,
                                                    at::TensorList params, bool has_biases,
                                                    int64_t num_layers, double dropout, bool train,
                                                    bool bidirectional, bool batch_first) {
  if (hx.size() != 2 ||
      !covered(input, hx, params, has_biases, num_layers, bidirectional, batch_first, 4))
    return at::native::lstm(input, hx, params, has_biases, num_layers, dropout, train,
                            bidirectional, batch_first);
  bool grad = will_differentiate(input, hx, params);
  auto [out, finals] = run_layers(
      input, params, has_biases, num_layers, dropout, train, bidirectional, batch_first, 2,
      [&](const at::Tensor& x, int64_t idx, const at::Tensor* p, bool reverse) {
        return LstmLayerFunction::apply(x, hx[0].select(0, idx), hx[1].select(0, idx), p[0], p[1],
                                        bias(p, 2, has_biases), bias(p, 3, has_biases), reverse,
                                        grad);
      });
  return {out, finals[0], finals[1]};
}

std::tuple<at::Tensor, at::Tensor> gru(const at::Tensor& input, const at::Tensor& hx,
                                       at::TensorList params, bool has_biases, int64_t num_layers,
                                       double dropout, bool train, bool bidirectional,
                                       bool batch_first) {
  if (!covered(input, {hx}, params, has_biases, num_layers, bidirectional, batch_first, 3))
    return at::native::gru(input, hx, params, has_biases, num_layers, dropout, train,
                           bidirectional, batch_first);
  bool grad = will_differentiate(input, {hx}, params);
  auto [out, finals] = run_layers(
      input, params, has_biases, num_layers, dropout, train, bidirectional, batch_first, 1,
      [&](const at::Tensor& x, int64_t idx, const at::Tensor* p, bool reverse) {
        return GruLayerFunction::apply(x, hx.select(0, idx), p[0], p[1], bias(p, 2, has_biases),
                                       bias(p, 3, has_biases), reverse, grad);
      });
  return {out, finals[0]};
}

} // namespace

// Both keys: AutogradPrivateUse1 for the usual call, PrivateUse1 for calls below autograd
// (inference mode), where the generic path would otherwise run.
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("lstm.input", TORCH_FN(lstm));
  m.impl("gru.input", TORCH_FN(gru));
}
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("lstm.input", TORCH_FN(lstm));
  m.impl("gru.input", TORCH_FN(gru));
}

} // namespace torch_tpu
