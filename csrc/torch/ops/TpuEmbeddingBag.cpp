// embedding_bag: the forward (_embedding_bag, _embedding_bag_forward_only) is the EMBEDDING_BAG
// core op (contract in core/ops/tpu_ops_nn.h); the backward ops are native tpu ops in PyTorch
// CPU's formulas: rows of the gradient gathered by bag into embedding_dense_backward (sum and
// mean), an index_add at the maximal rows (max), and per-sample weights' dot products. The
// auxiliary outputs (offset2bag, bag_size, max_indices) are PyTorch CPU's.
#include <ATen/TensorOperators.h>
#include <ATen/TensorUtils.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/embedding_dense_backward.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include "ops/TpuIndexCommon.h"

namespace torch_tpu {
namespace {

using at::Tensor;

enum { kSum = 0, kMean = 1, kMax = 2 };

void check_forward(const Tensor& weight, const Tensor& indices, const Tensor& offsets,
                   int64_t mode, const Tensor* psw, bool include_last_offset) {
  at::checkScalarTypes("embedding_bag", {indices, "indices", 1}, {at::kLong, at::kInt});
  at::checkScalarTypes("embedding_bag", {offsets, "offsets", 1}, {at::kLong, at::kInt});
  at::checkScalarTypes("embedding_bag", {weight, "weight", 1},
                       {at::kHalf, at::kBFloat16, at::kFloat, at::kDouble});
  TORCH_CHECK(indices.dim() == 1, "input has to be a 1D Tensor, but got Tensor of dimension ",
              indices.dim());
  TORCH_CHECK(offsets.dim() == 1, "offsets has to be a 1D Tensor, but got Tensor of dimension ",
              offsets.dim());
  TORCH_CHECK(weight.dim() == 2, "weight has to be a 2D Tensor, but got Tensor of dimension ",
              weight.dim());
  TORCH_CHECK(mode >= kSum && mode <= kMax, "embedding_bag: unknown mode ", mode);
  if (include_last_offset) {
    TORCH_CHECK(offsets.size(0) >= 1, "include_last_offset: number of offset should be at least 1");
  }
  if (psw) {
    TORCH_CHECK(mode == kSum, "embedding_bag: per_sample_weights only supported with mode='sum'");
    TORCH_CHECK(psw->scalar_type() == weight.scalar_type(), "embedding_bag: per_sample_weights (",
                psw->scalar_type(), ") must have same dtype as weight (", weight.scalar_type(),
                ")");
    TORCH_CHECK(psw->dim() == 1 && psw->numel() == indices.numel(),
                "embedding_bag: per_sample_weights must be 1D with as many elements as input");
  }
  check_same_device("embedding_bag", weight.device(), {&indices, &offsets, psw ? psw : &indices});
}

std::tuple<Tensor, Tensor, Tensor, Tensor> embedding_bag(
    const Tensor& weight_, const Tensor& indices_, const Tensor& offsets_, bool,
    int64_t mode, bool, const std::optional<Tensor>& per_sample_weights, bool include_last_offset,
    int64_t padding_idx) {
  const Tensor* psw =
      per_sample_weights.has_value() && per_sample_weights->defined() ? &*per_sample_weights
                                                                        : nullptr;
  check_forward(weight_, indices_, offsets_, mode, psw, include_last_offset);
  // As PyTorch CPU, indices and offsets of different dtypes both become int64.
  Tensor indices = indices_, offsets = offsets_;
  if (indices.scalar_type() != offsets.scalar_type()) {
    indices = indices.to(at::kLong);
    offsets = offsets.to(at::kLong);
  }
  Tensor weight = weight_.size(1) > 1 && weight_.stride(1) != 1 ? weight_.contiguous() : weight_;
  const int64_t B = offsets.size(0) - (include_last_offset ? 1 : 0);
  const int64_t N = indices.size(0), D = weight.size(1);
  auto i64 = offsets.options().dtype(at::kLong);
  const bool o2b = mode != kSum || padding_idx >= 0;
  Tensor out = at::empty({B, D}, weight.options());
  Tensor offset2bag = at::empty({o2b ? N : 0}, i64);
  Tensor bag_size = at::empty({B}, i64);
  Tensor max_indices = mode == kMax ? at::empty({B, D}, i64) : at::empty({B}, i64);
  if (B > 0 && N == 0) { // every bag empty, nothing to check
    out.zero_();
    bag_size.zero_();
    max_indices.zero_();
  } else if (B > 0) {
    std::vector<tpu_tensor> inputs{core_view(weight), core_view(indices),
                                   core_view(offsets.narrow(0, 0, B))};
    if (psw) {
      inputs.push_back(core_view(*psw));
    }
    OpCall call = make_call(TPU_OP_EMBEDDING_BAG, inputs,
                            {core_view(out), core_view(offset2bag), core_view(bag_size),
                             core_view(max_indices)});
    call->scalars[0].i = mode;
    call->scalars[1].i = padding_idx;
    launch(weight.device().index(), std::move(call));
  }
  if (offsets.scalar_type() != at::kLong) { // PyTorch CPU's outputs take the offsets' dtype
    return {out, offset2bag.to(offsets.scalar_type()), bag_size.to(offsets.scalar_type()),
            max_indices.to(offsets.scalar_type())};
  }
  return {out, offset2bag, bag_size, max_indices};
}

// The forward without autograd: in sum mode PyTorch CPU's bag_size and max_indices are zeros as
// long as the offsets (one more with include_last_offset) rather than one per bag.
std::tuple<Tensor, Tensor, Tensor, Tensor> embedding_bag_forward_only(
    const Tensor& weight, const Tensor& indices, const Tensor& offsets, bool scale_grad_by_freq,
    int64_t mode, bool sparse, const std::optional<Tensor>& per_sample_weights,
    bool include_last_offset, int64_t padding_idx) {
  auto [out, offset2bag, bag_size, max_indices] =
      embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                    per_sample_weights, include_last_offset, padding_idx);
  if (mode == kSum && include_last_offset) {
    bag_size = at::zeros(offsets.sizes(), bag_size.options());
    max_indices = at::zeros(offsets.sizes(), max_indices.options());
  }
  return {out, offset2bag, bag_size, max_indices};
}

// offset2bag as PyTorch CPU makes it when the forward left it empty: position p belongs to the
// last of the grad's bags starting at or before it.
Tensor bags_of(const Tensor& indices, const Tensor& offsets, const Tensor& offset2bag,
               int64_t bags) {
  if (offset2bag.numel() == indices.numel() && indices.numel() > 0) {
    return offset2bag.to(at::kLong);
  }
  auto i64 = indices.options().dtype(at::kLong);
  Tensor starts = offsets.narrow(0, 0, bags).to(at::kLong);
  Tensor counts = at::zeros({indices.numel() + 1}, i64)
                      .index_add(0, starts, at::ones({bags}, i64));
  return (counts.cumsum(0) - 1).narrow(0, 0, indices.numel());
}

Tensor embedding_bag_dense_backward(const Tensor& grad, const Tensor& indices,
                                    const Tensor& offset2bag, const Tensor& bag_size,
                                    const Tensor& maximum_indices, c10::SymInt num_weights_,
                                    bool scale_grad_by_freq, int64_t mode,
                                    const std::optional<Tensor>& per_sample_weights,
                                    int64_t padding_idx) {
  const int64_t num_weights = num_weights_.expect_int();
  const int64_t D = grad.size(1);
  if (mode == kMax) {
    Tensor nonempty = (bag_size > 0).unsqueeze(1);
    Tensor g = at::where(nonempty, grad, at::zeros_like(grad)).reshape({-1});
    Tensor at_col = maximum_indices.to(at::kLong) * D +
                    at::arange(D, grad.options().dtype(at::kLong)).unsqueeze(0);
    Tensor flat = at::where(nonempty, at_col, at::zeros_like(at_col)).reshape({-1});
    return at::zeros({num_weights * D}, grad.options()).index_add(0, flat, g)
        .view({num_weights, D});
  }
  Tensor bags = offset2bag.to(at::kLong);
  Tensor rows = grad.index_select(0, bags);
  if (per_sample_weights.has_value() && per_sample_weights->defined()) {
    rows = rows * per_sample_weights->unsqueeze(1);
  }
  if (mode == kMean) {
    Tensor sizes = bag_size.index_select(0, bags).unsqueeze(1);
    rows = rows / at::where(sizes > 0, sizes, at::ones_like(sizes)).to(rows.scalar_type());
  }
  return at::embedding_dense_backward(rows, indices, num_weights, padding_idx,
                                      scale_grad_by_freq);
}

Tensor embedding_bag_backward(const Tensor& grad, const Tensor& indices, const Tensor& offsets,
                              const Tensor& offset2bag, const Tensor& bag_size,
                              const Tensor& maximum_indices, c10::SymInt num_weights,
                              bool scale_grad_by_freq, int64_t mode, bool sparse,
                              const std::optional<Tensor>& per_sample_weights,
                              int64_t padding_idx) {
  TORCH_CHECK_NOT_IMPLEMENTED(!sparse, "embedding_bag: sparse gradients are not supported on "
                              "tpu");
  if (indices.numel() == 0) {
    return at::zeros({num_weights.expect_int(), grad.size(1)}, grad.options());
  }
  Tensor bags = bags_of(indices, offsets, offset2bag, grad.size(0));
  return embedding_bag_dense_backward(grad, indices, bags, bag_size, maximum_indices,
                                      std::move(num_weights), scale_grad_by_freq, mode,
                                      per_sample_weights, padding_idx);
}

// d(out[bag])/d(per_sample_weights[p]) = the dot product of grad[bag] and weight[indices[p]].
Tensor per_sample_weights_backward(const Tensor& grad, const Tensor& weight,
                                   const Tensor& indices, const Tensor& offsets,
                                   const Tensor& offset2bag, int64_t mode, int64_t padding_idx) {
  TORCH_CHECK(mode == kSum,
              "embedding_bag_backward: per_sample_weights only supported for mode='sum'");
  if (indices.numel() == 0) {
    return at::empty({0}, grad.options());
  }
  Tensor bags = bags_of(indices, offsets, offset2bag, grad.size(0));
  Tensor dots = (grad.index_select(0, bags) * weight.index_select(0, indices)).sum(1);
  return at::where(indices == padding_idx, at::zeros_like(dots), dots);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_embedding_bag", TORCH_FN(embedding_bag));
  m.impl("_embedding_bag_forward_only", TORCH_FN(embedding_bag_forward_only));
  m.impl("_embedding_bag_backward", TORCH_FN(embedding_bag_backward));
  m.impl("_embedding_bag_dense_backward", TORCH_FN(embedding_bag_dense_backward));
  m.impl("_embedding_bag_per_sample_weights_backward", TORCH_FN(per_sample_weights_backward));
}

} // namespace torch_tpu
