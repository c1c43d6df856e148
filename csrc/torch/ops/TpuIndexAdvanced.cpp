// Advanced indexing (x[indices] and x[indices] = v, accumulate too), nonzero, masked_select and
// masked_scatter_. The layout is PyTorch's AdvancedIndex (TensorAdvancedIndexing.cpp): masks
// become int64 indices through nonzero, CPU indices move to the device as on CUDA, indices
// broadcast together, and non-adjacent indexed dimensions move to the front. Ops whose output
// size depends on values (nonzero, masked_select, boolean masks) count on the device and
// synchronize to read the count, as on CUDA.
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/IndexingUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TensorAdvancedIndexingUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/index_meta.h>
#include <torch/library.h>

#include <sstream>

#include "ops/TpuIndexCommon.h"
#include "ops/TpuStructured.h"

namespace torch_tpu {
namespace {

using IndexList = c10::List<std::optional<at::Tensor>>;

// Masks replaced by their nonzero coordinates, indices on self's device and int64.
IndexList expand_indices(const at::Tensor& self, const IndexList& indices) {
  TORCH_CHECK_INDEX(indices.size() <= static_cast<size_t>(self.dim()),
                    "too many indices for tensor of dimension ", self.dim(), " (got ",
                    indices.size(), ")");
  at::native::checkIndexTensorTypes(indices, /*allow_int=*/true);
  IndexList out;
  for (const at::Tensor& t : at::native::expandTensors(self, indices, /*ensure_same_device=*/true)) {
    if (!t.defined()) {
      out.push_back(std::nullopt);
    } else {
      out.push_back(t.scalar_type() == at::kInt ? t.to(at::kLong) : t);
    }
  }
  return out;
}

// The problem as the kernels see it (index_advanced.c).
struct Plan {
  at::Tensor self_t;                // self, indexed dimensions moved to the front if needed
  at::Tensor src;                   // self_t restrided to B + I + A, stride 0 across I
  std::vector<at::Tensor> indices;  // int64, broadcast to I
  std::vector<int64_t> dims;        // the indexed dimensions of self_t
  int64_t nb = 0;                   // dimensions before I
};

std::string shapes_of(const std::vector<at::Tensor>& tensors) {
  std::ostringstream os;
  const char* sep = "";
  for (const at::Tensor& t : tensors) {
    if (t.defined()) {
      os << sep << t.sizes();
      sep = ", ";
    }
  }
  return os.str();
}

Plan make_plan(const at::Tensor& self, const IndexList& expanded) {
  std::vector<at::Tensor> idx;
  for (size_t i = 0; i < expanded.size(); i++) {
    std::optional<at::Tensor> t = expanded[i];
    idx.push_back(t.has_value() ? *t : at::Tensor());
  }
  try {
    idx = at::expand_outplace(idx);
  } catch (std::exception&) {
    TORCH_CHECK_INDEX(false, "shape mismatch: indexing tensors could not be broadcast together "
                      "with shapes ", shapes_of(idx));
  }
  while (idx.size() < static_cast<size_t>(self.dim())) {
    idx.emplace_back();
  }
  Plan p;
  p.self_t = self;
  if (!at::native::hasContiguousSubspace(idx)) {
    std::tie(p.self_t, idx) = at::native::transposeToFront(self, idx);
  }
  at::IntArrayRef replacement;
  bool empty_dim = false;
  for (size_t d = 0; d < idx.size(); d++) {
    if (!idx[d].defined()) {
      p.nb += p.dims.empty() ? 1 : 0;
      continue;
    }
    p.dims.push_back(static_cast<int64_t>(d));
    p.indices.push_back(idx[d]);
    replacement = idx[d].sizes();
    empty_dim = empty_dim || p.self_t.size(static_cast<int64_t>(d)) == 0;
  }
  TORCH_CHECK_INDEX(
      !empty_dim || std::find(replacement.begin(), replacement.end(), 0) != replacement.end(),
      "index is out of bounds for dimension with size 0");
  std::vector<int64_t> shape = p.self_t.sizes().vec(), strides = p.self_t.strides().vec();
  auto first = p.nb, last = p.nb + static_cast<int64_t>(p.dims.size());
  shape.erase(shape.begin() + first, shape.begin() + last);
  strides.erase(strides.begin() + first, strides.begin() + last);
  shape.insert(shape.begin() + first, replacement.begin(), replacement.end());
  strides.insert(strides.begin() + first, replacement.size(), 0);
  p.src = p.self_t.as_strided(shape, strides, p.self_t.storage_offset());
  return p;
}

// Launches INDEX or INDEX_PUT: `first` is src (INDEX) or the broadcast values (INDEX_PUT),
// `big` the output (INDEX) or self restrided (INDEX_PUT).
void run_plan(tpu_op_id op, const Plan& p, const at::Tensor& first, const at::Tensor& big,
              tpu_scalar accumulate) {
  at::Tensor offsets = at::empty(p.indices[0].sizes(), big.options().dtype(at::kLong));
  std::vector<tpu_tensor> inputs{core_view(first)};
  for (const at::Tensor& index : p.indices) {
    inputs.push_back(core_view(index));
  }
  for (int64_t d : p.dims) {
    at::Tensor along = p.self_t.as_strided({p.self_t.size(d)}, {p.self_t.stride(d)},
                                           p.self_t.storage_offset());
    inputs.push_back(core_view(along));
  }
  OpCall call = make_call(op, inputs, {core_view(offsets), core_view(big)});
  call->scalars[0].i = p.nb;
  call->scalars[1] = accumulate;
  launch(big.device().index(), std::move(call));
}

at::Tensor& run_index(const at::Tensor& self, const IndexList& expanded, at::Tensor& out) {
  if (out.numel() > 0) {
    Plan p = make_plan(self, expanded);
    run_plan(TPU_OP_INDEX, p, p.src, out, tpu_scalar{.i = 0});
  }
  return out;
}

at::Tensor index(const at::Tensor& self, const IndexList& indices) {
  IndexList expanded = expand_indices(self, indices);
  Functional<at::meta::structured_index_Tensor> op;
  op.meta(self, at::IOptTensorListRef(expanded));
  return run_index(self, expanded, op.outputs_[0]);
}

at::Tensor& index_out(const at::Tensor& self, const IndexList& indices, at::Tensor& out) {
  IndexList expanded = expand_indices(self, indices);
  Out<at::meta::structured_index_Tensor> op(out);
  op.meta(self, at::IOptTensorListRef(expanded));
  return run_index(self, expanded, out);
}

// PyTorch's _index_put_impl_: the same checks, and a scalar put through a boolean mask becomes
// masked_fill_ without synchronizing, as on CPU and CUDA.
at::Tensor& index_put_impl(at::Tensor& self, const IndexList& indices, const at::Tensor& value,
                           bool accumulate, bool unsafe) {
  (void)unsafe;
  TORCH_CHECK_INDEX(indices.size() <= static_cast<size_t>(self.dim()),
                    "too many indices for tensor of dimension ", self.dim(), " (got ",
                    indices.size(), ")");
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
    TORCH_WARN(
        "Use of index_put_ on expanded tensors is deprecated. "
        "Please clone() the tensor before performing this operation. "
        "This also applies to advanced indexing e.g. tensor[indices] = tensor");
  }
  if (!accumulate) {
    auto [use_fill, mask] = at::native::canDispatchToMaskedFill(self, indices, value);
    if (use_fill) {
      return self.masked_fill_(mask, value.item());
    }
  }
  at::Tensor value_ = value;
  if (value.device() != self.device() && value.numel() == 1 && value.dim() == 0) {
    value_ = value.to(self.device());
  }
  at::assert_no_overlap(self, value);
  for (size_t i = 0; i < indices.size(); i++) {
    std::optional<at::Tensor> index = indices[i];
    if (index.has_value()) {
      at::assert_no_overlap(self, *index);
    }
  }
  IndexList expanded = expand_indices(self, indices);
  Plan p = make_plan(self, expanded);
  TORCH_CHECK(at::is_expandable_to(value_.sizes(), p.src.sizes()), "shape mismatch: value tensor "
              "of shape ", value_.sizes(), " cannot be broadcast to indexing result of shape ",
              p.src.sizes());
  TORCH_CHECK(value_.scalar_type() == p.src.scalar_type(), "Index put requires the source and "
              "destination dtypes match, got ", p.src.scalar_type(), " for the destination and ",
              value_.scalar_type(), " for the source.");
  check_same_device("index_put_", self.device(), {&value_});
  TORCH_CHECK_NOT_IMPLEMENTED(!accumulate || is_computable(self.scalar_type()),
                              "\"index_put\" with accumulate=True not implemented for '",
                              self.scalar_type(), "'");
  if (p.src.numel() > 0) {
    run_plan(TPU_OP_INDEX_PUT, p, value_.expand(p.src.sizes()), p.src,
             tpu_scalar{.i = accumulate ? 1 : 0});
  }
  return self;
}

// ---- nonzero, masked_select, masked_scatter_ ----------------------------------------------

// The number of nonzero elements of `t`: counted on the device, then read (synchronizes).
int64_t count_nonzero_sync(const at::Tensor& t) {
  if (t.numel() == 0) {
    return 0;
  }
  at::Tensor host = at::empty({}, t.options().dtype(at::kLong).device(at::kCPU));
  launch_sync(t.device().index(),
              make_call(TPU_OP_NONZERO_COUNT, {core_view(t)}, {core_view(host)}));
  return host.item<int64_t>();
}

at::Tensor& nonzero_out(const at::Tensor& self, at::Tensor& out) {
  TORCH_CHECK(out.scalar_type() == at::kLong, "nonzero: Expected out tensor to have scalar type "
              "Long but got scalar type", out.scalar_type());
  check_same_device("nonzero", self.device(), {&out});
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  TORCH_CHECK_NOT_IMPLEMENTED(is_computable(self.scalar_type()),
                              "\"nonzero_cpu\" not implemented for '", self.scalar_type(), "'");
  int64_t n = count_nonzero_sync(self), nd = self.dim();
  if (at::native::resize_output(out, {n, nd})) {
    out.as_strided_({n, nd}, {1, n});  // column-major, as PyTorch CPU
  }
  if (n > 0 && nd > 0) {
    launch(self.device().index(), make_call(TPU_OP_NONZERO, {core_view(self)}, {core_view(out)}));
  }
  return out;
}

at::Tensor nonzero(const at::Tensor& self) {
  at::Tensor out = at::empty({0}, self.options().dtype(at::kLong));
  return nonzero_out(self, out);
}

at::Tensor& masked_select_out(const at::Tensor& self, const at::Tensor& mask, at::Tensor& out) {
  // uint8 masks, long deprecated, are refused now, as on CPU and CUDA.
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_select: expected BoolTensor for mask");
  TORCH_CHECK(self.scalar_type() == out.scalar_type(),
              "masked_select(): self and result must have the same scalar type");
  check_same_device("masked_select", self.device(), {&mask, &out});
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  at::assert_no_overlap(out, mask);
  auto [b_mask, b_self] = at::expand_outplace(mask, self);
  int64_t n = count_nonzero_sync(*b_mask);
  at::native::resize_output(out, {n});
  if (n > 0) {
    launch(self.device().index(), make_call(TPU_OP_MASKED_SELECT,
                                            {core_view(*b_self), core_view(*b_mask)},
                                            {core_view(out)}));
  }
  return out;
}

at::Tensor masked_select(const at::Tensor& self, const at::Tensor& mask) {
  at::Tensor out = at::empty({0}, self.options());
  return masked_select_out(self, mask, out);
}

at::Tensor& masked_scatter_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& source) {
  at::assert_no_internal_overlap(self);
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "masked_scatter_: expected self and "
              "source to have same dtypes but got", self.scalar_type(), " and ",
              source.scalar_type());
  TORCH_CHECK(mask.scalar_type() == at::kBool,
              "masked_scatter_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  check_same_device("masked_scatter_", self.device(), {&mask, &source});
  c10::MaybeOwned<at::Tensor> b_mask = at::expand_inplace(self, mask, "masked_scatter_");
  if (self.numel() > 0) {
    at::Tensor src = source.contiguous();
    launch(self.device().index(), make_call(TPU_OP_MASKED_SCATTER,
                                            {core_view(*b_mask), core_view(src)},
                                            {core_view(self)}));
  }
  return self;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("index.Tensor", TORCH_FN(index));
  m.impl("index.Tensor_out", TORCH_FN(index_out));
  m.impl("_index_put_impl_", TORCH_FN(index_put_impl));
  m.impl("nonzero", TORCH_FN(nonzero));
  m.impl("nonzero.out", TORCH_FN(nonzero_out));
  m.impl("masked_select", TORCH_FN(masked_select));
  m.impl("masked_select.out", TORCH_FN(masked_select_out));
  m.impl("masked_scatter_", TORCH_FN(masked_scatter_));
}

} // namespace torch_tpu
