// gather, scatter (src and value, reduce add/multiply), scatter_add, index_add, index_copy and
// index_fill_: one core gather and one core scatter. ATen's structured metas give the outputs;
// the functional and out= forms copy self into the output first, as PyTorch's kernels do.
// Indices out of range are found by the kernels (IndexError at the op in debug mode, a
// RuntimeError at the next synchronization in strict mode); duplicate indices combine in a fixed
// order (see index_gather.c).
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/gather_meta.h>
#include <ATen/ops/index_add_meta.h>
#include <ATen/ops/index_copy_meta.h>
#include <ATen/ops/scatter_add_meta.h>
#include <ATen/ops/scatter_meta.h>
#include <torch/library.h>

#include "ops/TpuIndexCommon.h"
#include "ops/TpuOps.h"
#include "ops/TpuStructured.h"

#include "core/include/tpu.h"

namespace torch_tpu {
namespace {

// ---- gather ------------------------------------------------------------------------------

void run_gather(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                const at::Tensor& out) {
  if (index.numel() == 0) {
    return;
  }
  check_same_device("gather", out.device(), {&self, &index});
  dim = at::maybe_wrap_dim(dim, self.dim());
  OpCall call = make_call(TPU_OP_GATHER, {core_view_1d(self), core_view_1d(index)},
                                {core_view_1d(out)});
  call->scalars[0].i = dim;
  launch(out.device().index(), std::move(call));
}

at::Tensor gather(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad) {
  Functional<at::meta::structured_gather> op;
  op.meta(self, dim, index, sparse_grad);
  run_gather(self, dim, index, op.outputs_[0]);
  return std::move(op.outputs_[0]);
}

at::Tensor& gather_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                       bool sparse_grad, at::Tensor& out) {
  Out<at::meta::structured_gather> op(out);
  op.meta(self, dim, index, sparse_grad);
  run_gather(self, dim, index, out);
  return out;
}

// ---- scatter -----------------------------------------------------------------------------

// What is scattered: a source tensor or a scalar value, combined by `how` (with `alpha`).
struct Source {
  const at::Tensor* src = nullptr;
  at::Scalar value;
  tpu_accum how = TPU_ACCUM_ASSIGN;
  at::Scalar alpha = 1;
};

tpu_accum parse_reduce(c10::string_view reduce) {
  if (reduce == "add") {
    return TPU_ACCUM_ADD;
  }
  TORCH_CHECK(reduce == "multiply", "reduce argument must be either add or multiply.");
  return TPU_ACCUM_MUL;
}

void set_alpha(tpu_op_call* call, const at::Scalar& alpha) {
  if (alpha.isComplex()) {
    c10::complex<double> a = alpha.toComplexDouble();
    call->scalars[2].f = a.real();
    call->scalars[3].f = a.imag();
    call->scalars[4].i = static_cast<int64_t>(a.real());
  } else if (alpha.isFloatingPoint()) {
    call->scalars[2].f = alpha.toDouble();
    call->scalars[4].i = static_cast<int64_t>(alpha.toDouble());
  } else {
    call->scalars[2].f = static_cast<double>(alpha.toLong());
    call->scalars[4].i = alpha.toLong();
  }
}

// Scatters into `out` (already holding self's values) along `dim`. `index` has the iteration
// sizes; a scalar value is read as a broadcast tensor of those sizes.
void run_scatter(tpu_op_id op, const char* name, const at::Tensor& out, int64_t dim,
                 const at::Tensor& index, const Source& source) {
  if (index.numel() == 0) {
    return;
  }
  check_same_device(name, out.device(), {&index, source.src ? source.src : &index});
  TORCH_CHECK_NOT_IMPLEMENTED(
      source.how == TPU_ACCUM_ASSIGN || is_computable(out.scalar_type()), "\"", name,
      "\" not implemented for '", out.scalar_type(), "'");
  TORCH_CHECK_NOT_IMPLEMENTED(
      source.src || is_computable(out.scalar_type()), "\"", name,
      "\" with a scalar value not implemented for '", out.scalar_type(), "'");
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(out.dim(), 1));
  tpu_tensor src_view = source.src ? core_view_1d(*source.src) : tpu_tensor{};
  OpCall call = make_call(op, {core_view_1d(index), src_view}, {core_view_1d(out)});
  if (!source.src) {
    const tpu_tensor& iv = call->tensors[0];
    set_scalar_tensor(call, 1, 5, source.value, out.scalar_type(),
                      at::IntArrayRef(iv.sizes, static_cast<size_t>(iv.ndim)));
  }
  call->scalars[0].i = dim;
  call->scalars[1].i = source.how;
  set_alpha(call, source.alpha);
  launch(out.device().index(), std::move(call));
}

void copy_self(const at::Tensor& self, const at::Tensor& out) {
  if (!out.is_same(self)) {
    copy_into(self, out, false);
  }
}

// The functional, out= and in-place forms of one scatter overload, from its meta struct. `Args`
// are the meta's arguments after (self, dim, index); make_source turns them into a Source.
template <typename Meta, typename MakeSource>
struct ScatterForms {
  template <typename... Args>
  static at::Tensor functional(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                               Args... args) {
    Functional<Meta> op;
    op.meta(self, dim, index, args...);
    copy_self(self, op.outputs_[0]);
    run_scatter(TPU_OP_SCATTER, "scatter", op.outputs_[0], dim, index, MakeSource()(args...));
    return std::move(op.outputs_[0]);
  }
  template <typename... Args>
  static at::Tensor& inplace(at::Tensor& self, int64_t dim, const at::Tensor& index,
                             Args... args) {
    Inplace<Meta> op(self);
    op.meta(self, dim, index, args...);
    run_scatter(TPU_OP_SCATTER, "scatter_", self, dim, index, MakeSource()(args...));
    return self;
  }
};

struct FromSrc {
  Source operator()(const at::Tensor& src) const { return {&src, 0, TPU_ACCUM_ASSIGN}; }
  Source operator()(const at::Tensor& src, c10::string_view reduce) const {
    return {&src, 0, parse_reduce(reduce)};
  }
};

struct FromValue {
  Source operator()(const at::Scalar& value) const { return {nullptr, value, TPU_ACCUM_ASSIGN}; }
  Source operator()(const at::Scalar& value, c10::string_view reduce) const {
    return {nullptr, value, parse_reduce(reduce)};
  }
};

struct AddSrc {
  Source operator()(const at::Tensor& src) const { return {&src, 0, TPU_ACCUM_ADD}; }
};

using ScatterSrc = ScatterForms<at::meta::structured_scatter_src, FromSrc>;
using ScatterValue = ScatterForms<at::meta::structured_scatter_value, FromValue>;
using ScatterReduce = ScatterForms<at::meta::structured_scatter_reduce, FromSrc>;
using ScatterValueReduce = ScatterForms<at::meta::structured_scatter_value_reduce, FromValue>;
using ScatterAdd = ScatterForms<at::meta::structured_scatter_add, AddSrc>;

// out= forms: the meta checks and resizes `out`, then as the functional form.
at::Tensor& scatter_src_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                            const at::Tensor& src, at::Tensor& out) {
  Out<at::meta::structured_scatter_src> op(out);
  op.meta(self, dim, index, src);
  copy_self(self, out);
  run_scatter(TPU_OP_SCATTER, "scatter", out, dim, index, FromSrc()(src));
  return out;
}

at::Tensor& scatter_value_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                              const at::Scalar& value, at::Tensor& out) {
  Out<at::meta::structured_scatter_value> op(out);
  op.meta(self, dim, index, value);
  copy_self(self, out);
  run_scatter(TPU_OP_SCATTER, "scatter", out, dim, index, FromValue()(value));
  return out;
}

at::Tensor& scatter_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                               const at::Tensor& src, c10::string_view reduce, at::Tensor& out) {
  Out<at::meta::structured_scatter_reduce> op(out);
  op.meta(self, dim, index, src, reduce);
  copy_self(self, out);
  run_scatter(TPU_OP_SCATTER, "scatter", out, dim, index, FromSrc()(src, reduce));
  return out;
}

at::Tensor& scatter_value_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                     const at::Scalar& value, c10::string_view reduce,
                                     at::Tensor& out) {
  Out<at::meta::structured_scatter_value_reduce> op(out);
  op.meta(self, dim, index, value, reduce);
  copy_self(self, out);
  run_scatter(TPU_OP_SCATTER, "scatter", out, dim, index, FromValue()(value, reduce));
  return out;
}

at::Tensor& scatter_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                            const at::Tensor& src, at::Tensor& out) {
  Out<at::meta::structured_scatter_add> op(out);
  op.meta(self, dim, index, src);
  copy_self(self, out);
  run_scatter(TPU_OP_SCATTER, "scatter_add", out, dim, index, AddSrc()(src));
  return out;
}

// ---- index_add, index_copy, index_fill_ ---------------------------------------------------

// The 0-d or 1-d `index` as a scatter index over `sizes` (at least 1-d): its elements along
// `dim`, stride 0 elsewhere.
at::Tensor spread_index(const at::Tensor& index, int64_t dim, at::IntArrayRef sizes) {
  std::vector<int64_t> shape = sizes.vec();
  std::vector<int64_t> strides(shape.size(), 0);
  shape[dim] = index.numel();
  strides[dim] = index.dim() > 0 ? index.stride(0) : 1;
  return index.as_strided(shape, strides);
}

void run_index_add(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                   const at::Tensor& source, const at::Scalar& alpha, const at::Tensor& out) {
  copy_self(self, out);
  // PyTorch's index_add_cpu_ (and CUDA's) returns before reading an index when a self of two or
  // more dimensions is empty: nothing can be added to it.
  if (self.dim() > 1 && self.numel() == 0) {
    return;
  }
  at::Tensor src = source.dim() == 0 ? source.reshape({1}) : source;
  run_scatter(TPU_OP_INDEX_ADD, "index_add", out, dim, spread_index(index, dim, src.sizes()),
              {&src, 0, TPU_ACCUM_ADD, alpha});
}

at::Tensor index_add(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                     const at::Tensor& source, const at::Scalar& alpha) {
  Functional<at::meta::structured_index_add> op;
  auto pre = op.meta(self, dim, index, source, alpha);
  run_index_add(self, pre.dim, index, source, alpha, op.outputs_[0]);
  return std::move(op.outputs_[0]);
}

at::Tensor& index_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                          const at::Tensor& source, const at::Scalar& alpha, at::Tensor& out) {
  Out<at::meta::structured_index_add> op(out);
  auto pre = op.meta(self, dim, index, source, alpha);
  run_index_add(self, pre.dim, index, source, alpha, out);
  return out;
}

at::Tensor& index_add_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                       const at::Tensor& source, const at::Scalar& alpha) {
  Inplace<at::meta::structured_index_add> op(self);
  auto pre = op.meta(self, dim, index, source, alpha);
  run_index_add(self, pre.dim, index, source, alpha, self);
  return self;
}

void run_index_copy(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                    const at::Tensor& source, const at::Tensor& out) {
  copy_self(self, out);
  at::Tensor src = source.dim() == 0 ? source.reshape({1}) : source;
  run_scatter(TPU_OP_INDEX_COPY, "index_copy", out, dim, spread_index(index, dim, src.sizes()),
              {&src, 0, TPU_ACCUM_ASSIGN});
}

at::Tensor index_copy(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                      const at::Tensor& source) {
  Functional<at::meta::structured_index_copy> op;
  auto pre = op.meta(self, dim, index, source);
  run_index_copy(self, pre.dim, index, source, op.outputs_[0]);
  return std::move(op.outputs_[0]);
}

at::Tensor& index_copy_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                           const at::Tensor& source, at::Tensor& out) {
  Out<at::meta::structured_index_copy> op(out);
  auto pre = op.meta(self, dim, index, source);
  run_index_copy(self, pre.dim, index, source, out);
  return out;
}

at::Tensor& index_copy_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                        const at::Tensor& source) {
  Inplace<at::meta::structured_index_copy> op(self);
  auto pre = op.meta(self, dim, index, source);
  run_index_copy(self, pre.dim, index, source, self);
  return self;
}

// PyTorch's index_fill_ checks (TensorAdvancedIndexing.cpp), then a scatter of the value.
at::Tensor& index_fill_scalar(at::Tensor& self, int64_t dim, const at::Tensor& index,
                              const at::Scalar& value) {
  TORCH_CHECK_INDEX(index.scalar_type() == at::kLong,
                    "index_fill_(): Expected dtype int64 for index.");
  at::assert_no_overlap(self, index);
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
    TORCH_WARN(
        "Use of index_fill_ on expanded tensors is deprecated. "
        "Please clone() the tensor before performing this operation. "
        "This also applies to advanced indexing e.g. tensor[mask] = scalar");
  }
  TORCH_CHECK(self.is_complex() || !value.isComplex(),
              "index_fill_(): Converting complex Scalar to non-complex type is not supported");
  at::Tensor target = self.dim() == 0 ? self.unsqueeze(-1) : self;
  dim = at::maybe_wrap_dim(dim, target.dim());
  TORCH_CHECK(index.dim() <= 1, "Index has to be a vector/scalar");
  const at::Scalar fill = converted(value, self.scalar_type());
  run_scatter(TPU_OP_INDEX_FILL, "index_fill_", target, dim,
              spread_index(index, dim, target.sizes()), {nullptr, fill, TPU_ACCUM_ASSIGN});
  return self;
}

at::Tensor& index_fill_tensor(at::Tensor& self, int64_t dim, const at::Tensor& index,
                              const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but got "
              "tensor with ", value.dim(), " dimension(s).");
  return index_fill_scalar(self, dim, index, value.item());
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("gather", TORCH_FN(gather));
  m.impl("gather.out", TORCH_FN(gather_out));
  m.impl("scatter.src", TORCH_FN((ScatterSrc::functional<const at::Tensor&>)));
  m.impl("scatter_.src", TORCH_FN((ScatterSrc::inplace<const at::Tensor&>)));
  m.impl("scatter.src_out", TORCH_FN(scatter_src_out));
  m.impl("scatter.value", TORCH_FN((ScatterValue::functional<const at::Scalar&>)));
  m.impl("scatter_.value", TORCH_FN((ScatterValue::inplace<const at::Scalar&>)));
  m.impl("scatter.value_out", TORCH_FN(scatter_value_out));
  m.impl("scatter.reduce",
         TORCH_FN((ScatterReduce::functional<const at::Tensor&, c10::string_view>)));
  m.impl("scatter_.reduce",
         TORCH_FN((ScatterReduce::inplace<const at::Tensor&, c10::string_view>)));
  m.impl("scatter.reduce_out", TORCH_FN(scatter_reduce_out));
  m.impl("scatter.value_reduce",
         TORCH_FN((ScatterValueReduce::functional<const at::Scalar&, c10::string_view>)));
  m.impl("scatter_.value_reduce",
         TORCH_FN((ScatterValueReduce::inplace<const at::Scalar&, c10::string_view>)));
  m.impl("scatter.value_reduce_out", TORCH_FN(scatter_value_reduce_out));
  m.impl("scatter_add", TORCH_FN((ScatterAdd::functional<const at::Tensor&>)));
  m.impl("scatter_add_", TORCH_FN((ScatterAdd::inplace<const at::Tensor&>)));
  m.impl("scatter_add.out", TORCH_FN(scatter_add_out));
  m.impl("index_add", TORCH_FN(index_add));
  m.impl("index_add_", TORCH_FN(index_add_));
  m.impl("index_add.out", TORCH_FN(index_add_out));
  m.impl("index_copy", TORCH_FN(index_copy));
  m.impl("index_copy_", TORCH_FN(index_copy_));
  m.impl("index_copy.out", TORCH_FN(index_copy_out));
  m.impl("index_fill_.int_Scalar", TORCH_FN(index_fill_scalar));
  m.impl("index_fill_.int_Tensor", TORCH_FN(index_fill_tensor));
}

} // namespace torch_tpu
