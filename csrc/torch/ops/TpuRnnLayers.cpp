// nn.LSTM on tpu: aten::lstm.input (CompositeImplicitAutograd, whose generic path projects each
// timestep's input with its own small GEMM and records several autograd nodes per step) gets a
// kernel here that runs each layer and direction as one autograd node. Its forward projects every
// timestep's input with one GEMM and runs one GEMM and one fused cell (TpuRnnCells.cpp) per step;
// its backward runs one fused cell backward and one GEMM per step, then the input and weight
// gradients as whole-sequence GEMMs. Calls it does not cover (projections, empty sizes, mixed
// devices or dtypes, malformed arguments, torch.compile's tracing) take ATen's generic path, which
// also raises its errors.
#include <ATen/ops/addmm.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/dropout.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/lstm_native.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/stack.h>
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
    // The cell's gradient alternates between two buffers: a step reads one and writes the other.
    at::Tensor dcs[2] = {at::empty({batch, hidden}, h0.options()),
                         at::empty({batch, hidden}, h0.options())};
    for (int64_t s = steps - 1; s >= 0; s--) {
      int64_t t = reverse ? steps - 1 - s : s, prev = reverse ? t + 1 : t - 1;
      at::Tensor c_prev = s == 0 ? c0 : cs.select(0, prev), gates = dg.select(0, t);
      launch_lstm_cell_backward(dh.defined() ? &dh : nullptr, dc.defined() ? &dc : nullptr, c_prev,
                                cs.select(0, t), ws.select(0, t), gates, dcs[s % 2], nullptr);
      dc = dcs[s % 2];
      dh = s > 0 && g_out.defined() ? at::addmm(g_out.select(0, prev), gates, w_hh)
                                    : at::mm(gates, w_hh);
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

// Tensors with device memory of like's device and dtype: not the fake or functional tensors of
// torch.compile's tracing (the layers launch cells into views directly, below the dispatcher).
bool same_kind(const at::Tensor& t, const at::Tensor& like) {
  c10::DispatchKeySet traced({c10::DispatchKey::Python, c10::DispatchKey::Functionalize});
  return t.defined() && t.device() == like.device() && t.scalar_type() == like.scalar_type() &&
         !t.key_set().has_any(traced);
}

// Whether the layer function covers the call: no projections, no empty sizes, every tensor on
// the input's tpu device in its floating dtype, and the shapes nn.LSTM passes.
bool covered(const at::Tensor& input, at::TensorList hx, at::TensorList params, bool has_biases,
             int64_t layers, bool bidirectional, bool batch_first) {
  if (!input.is_privateuseone() || !same_kind(input, input) ||
      !is_conv_float(input.scalar_type()) || input.dim() != 3 ||
      input.numel() == 0 || hx.size() != 2 || layers < 1)
    return false;
  int64_t dirs = bidirectional ? 2 : 1, per = has_biases ? 4 : 2;
  if (static_cast<int64_t>(params.size()) != layers * dirs * per)
    return false;
  const at::Tensor &h = hx[0], &c = hx[1];
  if (!same_kind(h, input) || !same_kind(c, input) || h.dim() != 3 || h.sizes() != c.sizes() ||
      h.size(0) != layers * dirs || h.size(1) != input.size(batch_first ? 0 : 1) || h.size(2) == 0)
    return false;
  int64_t hidden = h.size(2);
  for (int64_t l = 0; l < layers; l++) {
    int64_t in = l == 0 ? input.size(2) : hidden * dirs;
    for (int64_t d = 0; d < dirs; d++) {
      const at::Tensor* p = &params[(l * dirs + d) * per];
      if (!same_kind(p[0], input) || !same_kind(p[1], input) ||
          p[0].sizes() != at::IntArrayRef({4 * hidden, in}) ||
          p[1].sizes() != at::IntArrayRef({4 * hidden, hidden}))
        return false;
      for (int64_t b = 2; b < per; b++)
        if (!same_kind(p[b], input) || p[b].sizes() != at::IntArrayRef({4 * hidden}))
          return false;
    }
  }
  return true;
}

std::optional<at::Tensor> bias(const at::Tensor* p, int i, bool has_biases) {
  return has_biases ? std::optional<at::Tensor>(p[i]) : std::nullopt;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm(const at::Tensor& input, at::TensorList hx,
                                                    at::TensorList params, bool has_biases,
                                                    int64_t num_layers, double dropout, bool train,
                                                    bool bidirectional, bool batch_first) {
  if (!covered(input, hx, params, has_biases, num_layers, bidirectional, batch_first))
    return at::native::lstm(input, hx, params, has_biases, num_layers, dropout, train,
                            bidirectional, batch_first);
  int64_t dirs = bidirectional ? 2 : 1, per = has_biases ? 4 : 2;
  // Whether autograd will record the layers, and so whether they keep what a backward reads.
  bool grad = at::GradMode::is_enabled() &&
              (input.requires_grad() || hx[0].requires_grad() || hx[1].requires_grad() ||
               std::any_of(params.begin(), params.end(),
                           [](const at::Tensor& p) { return p.requires_grad(); }));
  at::Tensor x = batch_first ? input.transpose(0, 1) : input;
  std::vector<at::Tensor> hn, cn;
  for (int64_t l = 0; l < num_layers; l++) {
    std::vector<at::Tensor> outs;
    for (int64_t d = 0; d < dirs; d++) {
      int64_t idx = l * dirs + d;
      const at::Tensor* p = &params[idx * per];
      variable_list r = LstmLayerFunction::apply(x, hx[0].select(0, idx), hx[1].select(0, idx),
                                                 p[0], p[1], bias(p, 2, has_biases),
                                                 bias(p, 3, has_biases), d == 1, grad);
      outs.push_back(r[0]);
      hn.push_back(r[1]);
      cn.push_back(r[2]);
    }
    x = dirs == 2 ? at::cat(outs, 2) : outs[0];
    if (dropout != 0 && train && l < num_layers - 1)
      x = at::dropout(x, dropout, train);
  }
  return {batch_first ? x.transpose(0, 1) : x, at::stack(hn), at::stack(cn)};
}

} // namespace

// Both keys: AutogradPrivateUse1 for the usual call, PrivateUse1 for calls below autograd
// (inference mode), where the generic path would otherwise run.
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) { m.impl("lstm.input", TORCH_FN(lstm)); }
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("lstm.input", TORCH_FN(lstm)); }

} // namespace torch_tpu
