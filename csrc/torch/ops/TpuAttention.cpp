// scaled_dot_product_attention through PyTorch's overrideable SDPA hooks. The composite
// scaled_dot_product_attention asks _fused_sdp_choice_stub which backend to run; for tpu it
// answers "overrideable" for what the fused kernel covers (core/ops/tpu_ops_attention.h) and
// "math" for the rest (dropout, float64, other ranks, empty sizes, key/value batch or head
// broadcasting), whose composite then runs on tpu's native ops. The overrideable forward and
// backward below launch the core's SDPA kernels; autograd is PyTorch's own (derivatives.yaml
// pairs them).
#include <ATen/Context.h>
#include <ATen/ExpandUtils.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/native/transformers/sdp_utils_cpp.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <algorithm>
#include <numeric>

#include "runtime/TpuCore.h"

#include "core/include/tpu.h"

namespace torch_tpu {
namespace {

bool fused_dtype(c10::ScalarType t) {
  return t == at::kFloat || t == at::kBFloat16 || t == at::kHalf;
}

// True when the fused kernel computes this call exactly as the math path would.
bool kernel_covers(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                   const std::optional<at::Tensor>& mask, double dropout_p, bool enable_gqa) {
  if (q.is_nested() || k.is_nested() || v.is_nested() || q.dim() != 4 || k.dim() != 4 ||
      v.dim() != 4 || dropout_p > 0.0) {
    return false;
  }
  if (!fused_dtype(q.scalar_type()) || k.scalar_type() != q.scalar_type() ||
      v.scalar_type() != q.scalar_type()) {
    return false;
  }
  // Symbolic sizes: torch.compile asks with dynamic shapes too (each comparison is a guard).
  const c10::SymInt B = q.sym_size(0), Hq = q.sym_size(1), Hk = k.sym_size(1);
  if (k.sym_size(0) != B || v.sym_size(0) != B || v.sym_size(1) != Hk ||
      k.sym_size(2) != v.sym_size(2) || k.sym_size(3) != q.sym_size(3) || Hk == 0 ||
      (Hq != Hk && !(enable_gqa && Hq % Hk == 0))) {
    return false;
  }
  if (q.sym_numel() == 0 || k.sym_numel() == 0 || v.sym_numel() == 0) {
    return false;
  }
  if (mask.has_value() && mask->defined()) {
    const at::Tensor& m = *mask;
    if (m.is_nested() || m.dim() > 4 || m.device() != q.device()) {
      return false;
    }
    const c10::SymInt full[4] = {B, Hq, q.sym_size(2), k.sym_size(2)};
    for (int64_t d = 0; d < m.dim(); d++) {
      const c10::SymInt& size = m.sym_size(m.dim() - 1 - d);
      if (size != full[3 - d] && size != 1) {
        return false;
      }
    }
  }
  return true;
}

// The backend for `scaled_dot_product_attention` on tpu: the fused kernel, then math, each when
// the user left it enabled (torch.nn.attention.sdpa_kernel). A fixed order, as CPU's choice has
// (flash, then math): the context's priority list puts math before overrideable.
int64_t sdp_choice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                   const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                   std::optional<double> scale, bool enable_gqa) {
  (void)is_causal;
  (void)scale;
  const auto& ctx = at::globalContext();
  if (ctx.userEnabledOverrideableSDP() &&
      kernel_covers(query, key, value, attn_mask, dropout_p, enable_gqa)) {
    return static_cast<int64_t>(at::SDPBackend::overrideable);
  }
  TORCH_CHECK(ctx.userEnabledMathSDP(), "No available kernel. Aborting execution.");
  return static_cast<int64_t>(at::SDPBackend::math);
}

// The output's layout from PyTorch's meta: query's own when the shapes agree, else query's
// dimension order.
at::Tensor alloc_like_query(const at::Tensor& query, at::IntArrayRef shape) {
  if (query.sizes() == shape) {
    return at::empty_like(query);
  }
  std::vector<int64_t> order(query.dim()), strides(query.dim());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return query.stride(a) > query.stride(b); });
  int64_t stride = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    strides[*it] = stride;
    stride *= shape[*it];
  }
  return at::empty_strided(shape, strides, query.options());
}

void check_inputs(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                  const at::Tensor& mask, double dropout_p, const char* op) {
  TORCH_CHECK_NOT_IMPLEMENTED(dropout_p == 0.0, op, ": dropout_p > 0 is not supported on tpu "
                              "(scaled_dot_product_attention takes the math path for it)");
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, op,
              ": query, key and value must be 4-d, got ", q.dim(), ", ", k.dim(), ", ", v.dim());
  TORCH_CHECK_NOT_IMPLEMENTED(fused_dtype(q.scalar_type()), op, ": not implemented for ",
                              q.scalar_type());
  TORCH_CHECK(k.scalar_type() == q.scalar_type() && v.scalar_type() == q.scalar_type(), op,
              ": query, key and value must have the same dtype");
  TORCH_CHECK(k.size(0) == q.size(0) && v.size(0) == q.size(0) && v.size(1) == k.size(1) &&
                  k.size(2) == v.size(2) && k.size(3) == q.size(3) && k.size(1) > 0 &&
                  q.size(1) % k.size(1) == 0,
              op, ": incompatible shapes query ", q.sizes(), ", key ", k.sizes(), ", value ",
              v.sizes());
  if (mask.defined()) {
    TORCH_CHECK(mask.device() == q.device(), op, ": attn_bias must be on ", q.device(),
                ", got ", mask.device());
    TORCH_CHECK(mask.scalar_type() == at::kBool || mask.scalar_type() == at::kFloat ||
                    mask.scalar_type() == q.scalar_type(),
                op, ": attn_bias must be bool, float or the query's dtype, got ",
                mask.scalar_type());
  }
}

int64_t flags(bool is_causal) {
  return is_causal ? TPU_SDPA_CAUSAL : 0;
}

// The mask as the kernel reads it: broadcast to [B, Hq, L, S].
at::Tensor full_mask(const at::Tensor& mask, const at::Tensor& q, const at::Tensor& k) {
  return mask.expand({q.size(0), q.size(1), q.size(2), k.size(2)});
}

using ForwardResult = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt,
                                 c10::SymInt, at::Tensor, at::Tensor, at::Tensor>;

ForwardResult sdpa_forward_4d(const at::Tensor& query, const at::Tensor& key,
                              const at::Tensor& value, const at::Tensor& mask, double dropout_p,
                              bool is_causal, std::optional<double> scale) {
  const char* op = "_scaled_dot_product_fused_attention_overrideable";
  check_inputs(query, key, value, mask, dropout_p, op);
  const int64_t B = query.size(0), H = query.size(1), L = query.size(2), S = key.size(2);
  at::Tensor out = alloc_like_query(query, {B, H, L, value.size(3)});
  at::Tensor lse = at::empty({B, H, L}, query.options().dtype(at::kFloat));
  if (lse.numel() > 0) {
    OpCall call = new_call(TPU_OP_SDPA, mask.defined() ? 4 : 3, 2);
    int n = 0;
    for (const at::Tensor& t : {query, key, value}) {
      call->tensors[n++] = core_view(t);
    }
    if (mask.defined()) {
      call->tensors[n++] = core_view(full_mask(mask, query, key));
    }
    call->tensors[n++] = core_view(out);
    call->tensors[n] = core_view(lse);
    call->scalars[0].f = sdp::calculate_scale(query, scale).as_float_unchecked();
    call->scalars[1].i = flags(is_causal);
    launch(query.device().index(), std::move(call));
  }
  // PyTorch's meta: no cumulative lengths or debug mask; 0-d int64 Philox seed and offset (0:
  // there is no dropout), on the chip, so that a compiled graph saving them for backward has no
  // host tensor among its outputs (which a replay could not repeat, compile/TpuReplay.h).
  at::Tensor seed = at::zeros({}, query.options().dtype(at::kLong));
  return {out, lse, at::Tensor(), at::Tensor(), L, S, seed, seed.clone(), at::Tensor()};
}

ForwardResult sdpa_forward(const at::Tensor& query, const at::Tensor& key,
                           const at::Tensor& value, const std::optional<at::Tensor>& attn_bias,
                           double dropout_p, bool is_causal, bool return_debug_mask,
                           std::optional<double> scale) {
  (void)return_debug_mask;
  at::Tensor mask = attn_bias.has_value() ? *attn_bias : at::Tensor();
  if (query.dim() != 3) {
    return sdpa_forward_4d(query, key, value, mask, dropout_p, is_causal, scale);
  }
  // [H, L, D] inputs, as PyTorch's meta allows: one batch.
  auto r = sdpa_forward_4d(query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0), mask,
                           dropout_p, is_causal, scale);
  std::get<0>(r) = std::get<0>(r).squeeze(0);
  return r;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> sdpa_backward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key,
    const at::Tensor& value, const at::Tensor& attn_bias, std::array<bool, 4> grad_input_mask,
    const at::Tensor& out, const at::Tensor& logsumexp, const at::Tensor& cum_seq_q,
    const at::Tensor& cum_seq_k, int64_t max_q, int64_t max_k, double dropout_p, bool is_causal,
    const at::Tensor& philox_seed, const at::Tensor& philox_offset,
    std::optional<double> scale) {
  (void)cum_seq_q, (void)cum_seq_k, (void)max_q, (void)max_k, (void)philox_seed,
      (void)philox_offset;
  const char* op = "_scaled_dot_product_fused_attention_overrideable_backward";
  if (!grad_out.defined()) {
    return {};
  }
  const bool batched = query.dim() == 4;
  auto b4 = [&](const at::Tensor& t) { return batched ? t : t.unsqueeze(0); };
  at::Tensor q = b4(query), k = b4(key), v = b4(value), go = b4(grad_out), o = b4(out);
  at::Tensor lse = batched ? logsumexp : logsumexp.view({1, q.size(1), q.size(2)});
  check_inputs(q, k, v, attn_bias, dropout_p, op);
  at::Tensor grad_q = at::empty_like(query), grad_k = at::empty_like(key),
             grad_v = at::empty_like(value), grad_bias, grad_full;
  const bool bias_grad = attn_bias.defined() && grad_input_mask[3];
  if (bias_grad) {
    TORCH_CHECK(attn_bias.scalar_type() != at::kBool, op, ": a boolean mask has no gradient");
    grad_full = at::empty({q.size(0), q.size(1), q.size(2), k.size(2)}, attn_bias.options());
  }
  if (q.numel() + k.numel() + v.numel() > 0) {
    const int n_in = attn_bias.defined() ? 7 : 6, n_out = bias_grad ? 4 : 3;
    OpCall call = new_call(TPU_OP_SDPA_BACKWARD, n_in, n_out);
    int n = 0;
    for (const at::Tensor& t : {go, q, k, v, o, lse}) {
      call->tensors[n++] = core_view(t);
    }
    if (attn_bias.defined()) {
      call->tensors[n++] = core_view(full_mask(attn_bias, q, k));
    }
    for (const at::Tensor& t : {b4(grad_q), b4(grad_k), b4(grad_v)}) {
      call->tensors[n++] = core_view(t);
    }
    if (bias_grad) {
      call->tensors[n] = core_view(grad_full);
    }
    call->scalars[0].f = sdp::calculate_scale(q, scale).as_float_unchecked();
    call->scalars[1].i = flags(is_causal);
    launch(query.device().index(), std::move(call));
  }
  if (bias_grad) {
    // The mask's own shape (PyTorch's meta: empty_like(attn_bias)), summed over what it
    // broadcast along.
    grad_bias = at::empty_like(attn_bias);
    grad_bias.copy_(grad_full.sum_to_size(attn_bias.sizes()));
  }
  return {grad_q, grad_k, grad_v, grad_bias};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fused_sdp_choice", TORCH_FN(sdp_choice));
  m.impl("_scaled_dot_product_fused_attention_overrideable", TORCH_FN(sdpa_forward));
  m.impl("_scaled_dot_product_fused_attention_overrideable_backward", TORCH_FN(sdpa_backward));
}

} // namespace torch_tpu

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &torch_tpu::sdp_choice);
} // namespace at::native
