// sum, mean, prod, amax/amin, max/min (with indices, and whole), argmax/argmin, all/any,
// count_nonzero and cumsum on the core's reduction engine. Output metadata comes from ATen's
// structured metas (TpuStructured.h), so sizes, strides, dtypes and argument errors are CUDA's.
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/all.h>
#include <ATen/ops/all_meta.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/amin.h>
#include <ATen/ops/any.h>
#include <ATen/ops/argmax.h>
#include <ATen/ops/argmin.h>
#include <ATen/ops/count_nonzero.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/max.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/min.h>
#include <ATen/ops/prod.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/amax_meta.h>
#include <ATen/ops/amin_meta.h>
#include <ATen/ops/any_meta.h>
#include <ATen/ops/argmax_meta.h>
#include <ATen/ops/argmin_meta.h>
#include <ATen/ops/cumsum_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/max_meta.h>
#include <ATen/ops/mean_meta.h>
#include <ATen/ops/min_meta.h>
#include <ATen/ops/prod_meta.h>
#include <ATen/ops/sum_meta.h>
#include <c10/core/DefaultDtype.h>
#include <torch/library.h>

#include "ops/TpuReduce.h"
#include "ops/TpuStructured.h"

namespace torch_tpu {

DimMask reduce_mask(const at::Tensor& self, at::OptionalIntArrayRef dims, bool empty_is_none) {
  DimMask mask;
  const int64_t ndim = self.dim();
  if (!dims.has_value() || (dims->empty() && !empty_is_none)) {
    for (int64_t d = 0; d < ndim; d++) {
      mask.set(d);
    }
    return mask;
  }
  for (int64_t d : *dims) {
    const int64_t w = at::maybe_wrap_dim(d, ndim);
    TORCH_CHECK(!mask[w], "dim ", w, " appears multiple times in the list of dims");
    mask.set(w);
  }
  return mask;
}

tpu_tensor keepdim_view(const at::Tensor& out, const at::Tensor& self, DimMask mask) {
  tpu_tensor view = core_view(out);
  if (out.dim() == self.dim()) {
    return view;
  }
  tpu_tensor keep = view;
  keep.ndim = static_cast<int32_t>(self.dim());
  int64_t src = 0;
  for (int64_t d = 0; d < self.dim(); d++) {
    if (mask[d]) {
      keep.sizes[d] = 1;
      keep.strides[d] = 0;
    } else {
      keep.sizes[d] = view.sizes[src];
      keep.strides[d] = view.strides[src];
      src++;
    }
  }
  TORCH_INTERNAL_ASSERT(src == out.dim(), "reduction output rank does not match its dimensions");
  return keep;
}

void launch_reduce(tpu_op_id op, const at::Tensor& self, std::initializer_list<at::Tensor> outs,
                   DimMask mask, at::ScalarType compute, tpu_scalar s0, tpu_scalar s1) {
  std::vector<tpu_tensor> views{core_view(self)};
  for (const at::Tensor& out : outs) {
    if (out.numel() == 0) {
      return;
    }
    views.push_back(keepdim_view(out, self, mask));
  }
  const tpu_dtype core_compute = to_core_dtype(compute);
  OpCall call = new_call(op, 1, static_cast<int>(outs.size()));
  for (size_t i = 0; i < views.size(); i++) {
    call->tensors[i] = views[i];
  }
  call->compute = core_compute;
  call->scalars[0] = s0;
  call->scalars[1] = s1;
  launch(self.device().index(), std::move(call));
}

bool core_computes(at::ScalarType type) {
  return is_storable(type) && tpu_dtype_is_computable(to_core_dtype(type));
}

namespace {

tpu_scalar int_scalar(int64_t v) {
  tpu_scalar s;
  s.i = v;
  return s;
}

// The input a reduction into `out` reads: a complex input of a real output, or a real input of a
// complex one, first cast to the output's dtype (the imaginary part dropped), as ATen's
// make_reduction_from_out_ty casts it; the kernels sum complex into complex only.
at::Tensor reduction_input(const at::Tensor& self, const at::Tensor& out) {
  return self.is_complex() == out.is_complex() ? self : self.to(out.scalar_type());
}

// ---- sum and mean ----

void run_sum(const char* name, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
             std::optional<at::ScalarType> dtype, const at::Tensor& out, bool mean) {
  if (!core_computes(self.scalar_type()) || !core_computes(out.scalar_type())) {
    on_host(name, out, [&] {
      at::Tensor host = self.cpu();
      return mean ? at::mean(host, dim, keepdim, dtype) : at::sum(host, dim, keepdim, dtype);
    });
    return;
  }
  const at::Tensor input = reduction_input(self, out);
  launch_reduce(TPU_OP_SUM, input, {out}, reduce_mask(input, dim), out.scalar_type(),
                int_scalar(mean));
}

at::Tensor sum_dim(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   std::optional<at::ScalarType> dtype) {
  Functional<at::meta::structured_sum_dim_IntList> op;
  op.meta(self, dim, keepdim, dtype);
  run_sum("aten::sum.dim_IntList", self, dim, keepdim, dtype, op.outputs_[0], false);
  return op.outputs_[0];
}

at::Tensor& sum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype, at::Tensor& out) {
  Out<at::meta::structured_sum_dim_IntList> op(out);
  op.meta(self, dim, keepdim, dtype);
  run_sum("aten::sum.IntList_out", self, dim, keepdim, dtype, out, false);
  return out;
}

at::Tensor mean_dim(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype) {
  Functional<at::meta::structured_mean_dim> op;
  op.meta(self, dim, keepdim, dtype);
  run_sum("aten::mean.dim", self, dim, keepdim, dtype, op.outputs_[0], true);
  return op.outputs_[0];
}

at::Tensor& mean_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                     std::optional<at::ScalarType> dtype, at::Tensor& out) {
  Out<at::meta::structured_mean_dim> op(out);
  op.meta(self, dim, keepdim, dtype);
  // PyTorch CPU's mean_out is sum_out, then an in-place true division of out, which refuses an
  // integer or bool out (CUDA's integer mean divides by an integer factor that truncates to 0).
  TORCH_CHECK(!at::isIntegralType(out.scalar_type(), /*includeBool=*/true), "result type ",
              c10::get_default_dtype_as_scalartype(), " can't be cast to the desired output type ",
              out.scalar_type());
  run_sum("aten::mean.out", self, dim, keepdim, dtype, out, true);
  return out;
}

// ---- prod ----

void run_prod(const char* name, const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
              const at::Tensor& out) {
  if (out.is_complex() || !core_computes(self.scalar_type()) ||
      !core_computes(out.scalar_type())) {
    on_host(name, out, [&] {
      at::Tensor host = self.cpu();
      return dim ? at::prod(host, *dim, keepdim, out.scalar_type())
                 : at::prod(host, out.scalar_type());
    });
    return;
  }
  const at::Tensor input = reduction_input(self, out);
  DimMask mask = dim ? reduce_mask(input, at::IntArrayRef(*dim)) : reduce_mask(input, std::nullopt);
  launch_reduce(TPU_OP_PROD, input, {out}, mask, out.scalar_type());
}

at::Tensor prod_dim(const at::Tensor& self, int64_t dim, bool keepdim,
                    std::optional<at::ScalarType> dtype) {
  Functional<at::meta::structured_prod_dim_int> op;
  op.meta(self, dim, keepdim, dtype);
  run_prod("aten::prod.dim_int", self, dim, keepdim, op.outputs_[0]);
  return op.outputs_[0];
}

at::Tensor& prod_out(const at::Tensor& self, int64_t dim, bool keepdim,
                     std::optional<at::ScalarType> dtype, at::Tensor& out) {
  Out<at::meta::structured_prod_dim_int> op(out);
  op.meta(self, dim, keepdim, dtype);
  run_prod("aten::prod.int_out", self, dim, keepdim, out);
  return out;
}

// prod of everything: integers and bool promote to int64 unless a dtype is given, as on CPU.
at::Tensor prod_all(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  at::ScalarType type = dtype.value_or(
      at::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? at::kLong
                                                                  : self.scalar_type());
  at::Tensor out = at::empty({}, self.options().dtype(type));
  run_prod("aten::prod", self, std::nullopt, false, out);
  return out;
}

// ---- amax, amin, max, min ----

template <typename Meta>
at::Tensor extreme(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, tpu_op_id op,
                   const char* name) {
  Functional<Meta> meta;
  meta.meta(self, dim, keepdim);
  at::Tensor& out = meta.outputs_[0];
  if (self.is_complex() || !core_computes(self.scalar_type())) {
    on_host(name, out, [&] {
      return op == TPU_OP_AMAX ? at::amax(self.cpu(), dim, keepdim)
                               : at::amin(self.cpu(), dim, keepdim);
    });
  } else {
    launch_reduce(op, self, {out}, reduce_mask(self, dim), self.scalar_type());
  }
  return out;
}

template <typename Meta>
at::Tensor& extreme_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim,
                        at::Tensor& out, tpu_op_id op, const char* name) {
  Out<Meta> meta(out);
  meta.meta(self, dim, keepdim);
  if (self.is_complex() || !core_computes(self.scalar_type())) {
    on_host(name, out, [&] {
      return op == TPU_OP_AMAX ? at::amax(self.cpu(), dim, keepdim)
                               : at::amin(self.cpu(), dim, keepdim);
    });
  } else {
    launch_reduce(op, self, {out}, reduce_mask(self, dim), self.scalar_type());
  }
  return out;
}

at::Tensor amax(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  return extreme<at::meta::structured_amax>(self, dim, keepdim, TPU_OP_AMAX, "aten::amax");
}

at::Tensor& amax_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  return extreme_out<at::meta::structured_amax>(self, dim, keepdim, out, TPU_OP_AMAX,
                                                "aten::amax.out");
}

at::Tensor amin(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  return extreme<at::meta::structured_amin>(self, dim, keepdim, TPU_OP_AMIN, "aten::amin");
}

at::Tensor& amin_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  return extreme_out<at::meta::structured_amin>(self, dim, keepdim, out, TPU_OP_AMIN,
                                                "aten::amin.out");
}

// max() and min() of everything: a 0-d result, an error for an empty input, as on CPU.
at::Tensor& whole_extreme_out(const at::Tensor& self, at::Tensor& out, bool max) {
  const char* name = max ? "max()" : "min()";
  TORCH_CHECK(self.numel() > 0, name, ": Expected reduction dim to be specified for "
              "input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
  detail::resize_out(out, {}, {}, self.options());
  if (self.is_complex() || !core_computes(self.scalar_type())) {
    on_host(max ? "aten::max" : "aten::min", out,
            [&] { return max ? at::max(self.cpu()) : at::min(self.cpu()); });
    return out;
  }
  launch_reduce(max ? TPU_OP_AMAX : TPU_OP_AMIN, self, {out}, reduce_mask(self, std::nullopt),
                self.scalar_type());
  return out;
}

at::Tensor max_all(const at::Tensor& self) {
  at::Tensor out = at::empty({}, self.options());
  return whole_extreme_out(self, out, true);
}

at::Tensor& max_all_out(const at::Tensor& self, at::Tensor& out) {
  return whole_extreme_out(self, out, true);
}

at::Tensor min_all(const at::Tensor& self) {
  at::Tensor out = at::empty({}, self.options());
  return whole_extreme_out(self, out, false);
}

at::Tensor& min_all_out(const at::Tensor& self, at::Tensor& out) {
  return whole_extreme_out(self, out, false);
}

// max.dim and min.dim: values and the first index of the extreme (NaN first).
template <typename Meta>
void run_with_indices(Meta& meta, const at::Tensor& self, int64_t dim, bool keepdim,
                      const at::Tensor& values, const at::Tensor& indices, bool max) {
  int64_t wrapped = meta.meta(self, dim, keepdim).dim;
  if (self.is_complex() || !core_computes(self.scalar_type())) {
    begin_host_fallback(max ? "aten::max.dim" : "aten::min.dim");
    auto host = max ? at::max(self.cpu(), wrapped, keepdim) : at::min(self.cpu(), wrapped, keepdim);
    copy_into(std::get<0>(host), values, false);
    copy_into(std::get<1>(host), indices, false);
    return;
  }
  launch_reduce(max ? TPU_OP_MAX_DIM : TPU_OP_MIN_DIM, self, {values, indices},
                reduce_mask(self, at::IntArrayRef(wrapped)), self.scalar_type());
}

std::tuple<at::Tensor, at::Tensor> max_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  Functional<at::meta::structured_max_dim, 2> op;
  run_with_indices(op, self, dim, keepdim, op.outputs_[0], op.outputs_[1], true);
  return {op.outputs_[0], op.outputs_[1]};
}

std::tuple<at::Tensor&, at::Tensor&> max_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                 at::Tensor& values, at::Tensor& indices) {
  Out<at::meta::structured_max_dim, 2> op(values, indices);
  run_with_indices(op, self, dim, keepdim, values, indices, true);
  return {values, indices};
}

std::tuple<at::Tensor, at::Tensor> min_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  Functional<at::meta::structured_min_dim, 2> op;
  run_with_indices(op, self, dim, keepdim, op.outputs_[0], op.outputs_[1], false);
  return {op.outputs_[0], op.outputs_[1]};
}

std::tuple<at::Tensor&, at::Tensor&> min_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                 at::Tensor& values, at::Tensor& indices) {
  Out<at::meta::structured_min_dim, 2> op(values, indices);
  run_with_indices(op, self, dim, keepdim, values, indices, false);
  return {values, indices};
}

// ---- argmax, argmin ----

void run_arg(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
             const at::Tensor& out, bool max) {
  if (self.is_complex() || !core_computes(self.scalar_type())) {
    on_host(max ? "aten::argmax" : "aten::argmin", out, [&] {
      return max ? at::argmax(self.cpu(), dim, keepdim) : at::argmin(self.cpu(), dim, keepdim);
    });
    return;
  }
  DimMask mask = dim ? reduce_mask(self, at::IntArrayRef(*dim)) : reduce_mask(self, std::nullopt);
  launch_reduce(max ? TPU_OP_ARGMAX : TPU_OP_ARGMIN, self, {out}, mask, self.scalar_type());
}

at::Tensor argmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  Functional<at::meta::structured_argmax> op;
  op.meta(self, dim, keepdim);
  run_arg(self, dim, keepdim, op.outputs_[0], true);
  return op.outputs_[0];
}

at::Tensor& argmax_out(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
                       at::Tensor& out) {
  Out<at::meta::structured_argmax> op(out);
  op.meta(self, dim, keepdim);
  run_arg(self, dim, keepdim, out, true);
  return out;
}

at::Tensor argmin(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  Functional<at::meta::structured_argmin> op;
  op.meta(self, dim, keepdim);
  run_arg(self, dim, keepdim, op.outputs_[0], false);
  return op.outputs_[0];
}

at::Tensor& argmin_out(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
                       at::Tensor& out) {
  Out<at::meta::structured_argmin> op(out);
  op.meta(self, dim, keepdim);
  run_arg(self, dim, keepdim, out, false);
  return out;
}

// ---- all, any, count_nonzero ----

void run_logical(const at::Tensor& self, DimMask mask, const at::Tensor& out, bool all) {
  if (!core_computes(self.scalar_type())) {
    on_host(all ? "aten::all" : "aten::any", out, [&] {
      at::Tensor host = self.cpu();
      std::vector<int64_t> dims;
      for (int64_t d = 0; d < self.dim(); d++) {
        if (mask[d]) {
          dims.push_back(d);
        }
      }
      bool keepdim = out.dim() == self.dim();
      return all ? at::all(host, dims, keepdim) : at::any(host, dims, keepdim);
    });
    return;
  }
  launch_reduce(all ? TPU_OP_ALL : TPU_OP_ANY, self, {out}, mask, self.scalar_type());
}

template <typename Meta, bool All>
at::Tensor logical_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  Functional<Meta> op;
  op.meta(self, dim, keepdim);
  run_logical(self, reduce_mask(self, at::IntArrayRef(dim)), op.outputs_[0], All);
  return op.outputs_[0];
}

template <typename Meta, bool All>
at::Tensor& logical_dim_out(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& out) {
  Out<Meta> op(out);
  op.meta(self, dim, keepdim);
  run_logical(self, reduce_mask(self, at::IntArrayRef(dim)), out, All);
  return out;
}

template <typename Meta, bool All>
at::Tensor logical_dims(const at::Tensor& self, at::OptionalIntArrayRef dims, bool keepdim) {
  Functional<Meta> op;
  op.meta(self, dims, keepdim);
  run_logical(self, reduce_mask(self, dims, /*empty_is_none=*/true), op.outputs_[0], All);
  return op.outputs_[0];
}

template <typename Meta, bool All>
at::Tensor& logical_dims_out(const at::Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
                             at::Tensor& out) {
  Out<Meta> op(out);
  op.meta(self, dims, keepdim);
  run_logical(self, reduce_mask(self, dims, /*empty_is_none=*/true), out, All);
  return out;
}

template <typename Meta, bool All>
at::Tensor logical_all(const at::Tensor& self) {
  Functional<Meta> op;
  op.meta(self);
  run_logical(self, reduce_mask(self, std::nullopt), op.outputs_[0], All);
  return op.outputs_[0];
}

template <typename Meta, bool All>
at::Tensor& logical_all_out(const at::Tensor& self, at::Tensor& out) {
  Out<Meta> op(out);
  op.meta(self);
  run_logical(self, reduce_mask(self, std::nullopt), out, All);
  return out;
}

at::Tensor count_nonzero(const at::Tensor& self, at::IntArrayRef dims) {
  DimMask mask = reduce_mask(self, dims);
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < self.dim(); d++) {
    if (!mask[d]) {
      shape.push_back(self.size(d));
    }
  }
  at::Tensor out = at::empty(shape, self.options().dtype(at::kLong));
  if (!core_computes(self.scalar_type())) {
    on_host("aten::count_nonzero.dim_IntList", out,
            [&] { return at::count_nonzero(self.cpu(), dims); });
  } else {
    launch_reduce(TPU_OP_COUNT_NONZERO, self, {out}, mask, self.scalar_type());
  }
  return out;
}

// ---- cumsum ----

void run_cumsum(const char* name, const at::Tensor& self, int64_t dim, const at::Tensor& out) {
  if (out.numel() == 0) {
    return;
  }
  // PyTorch's kernels scan no bool (a 0-d input is copied, so it takes any dtype).
  TORCH_CHECK_NOT_IMPLEMENTED(self.dim() == 0 || out.scalar_type() != at::kBool,
                              "\"cumsum\" not implemented for 'Bool' on tpu");
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  if (!core_computes(self.scalar_type()) || !core_computes(out.scalar_type()) ||
      self.is_complex() != out.is_complex()) {
    on_host(name, out, [&] { return at::cumsum(self.cpu(), wrapped, out.scalar_type()); });
    return;
  }
  tpu_tensor in = core_view(self), result = core_view(out);
  OpCall call = new_call(TPU_OP_CUMSUM, 1, 1);
  call->tensors[0] = in;
  call->tensors[1] = result;
  call->compute = result.dtype;
  call->scalars[0].i = wrapped;
  launch(self.device().index(), std::move(call));
}

at::Tensor cumsum(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  Functional<at::meta::structured_cumsum> op;
  op.meta(self, dim, dtype);
  run_cumsum("aten::cumsum", self, dim, op.outputs_[0]);
  return op.outputs_[0];
}

at::Tensor& cumsum_out(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype,
                       at::Tensor& out) {
  Out<at::meta::structured_cumsum> op(out);
  op.meta(self, dim, dtype);
  run_cumsum("aten::cumsum.out", self, dim, out);
  return out;
}

at::Tensor& cumsum_(at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  Inplace<at::meta::structured_cumsum> op(self);
  op.meta(self, dim, dtype);
  run_cumsum("aten::cumsum_", self, dim, self);
  return self;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("sum.dim_IntList", TORCH_FN(sum_dim));
  m.impl("sum.IntList_out", TORCH_FN(sum_out));
  m.impl("mean.dim", TORCH_FN(mean_dim));
  m.impl("mean.out", TORCH_FN(mean_out));
  m.impl("prod", TORCH_FN(prod_all));
  m.impl("prod.dim_int", TORCH_FN(prod_dim));
  m.impl("prod.int_out", TORCH_FN(prod_out));
  m.impl("amax", TORCH_FN(amax));
  m.impl("amax.out", TORCH_FN(amax_out));
  m.impl("amin", TORCH_FN(amin));
  m.impl("amin.out", TORCH_FN(amin_out));
  m.impl("max", TORCH_FN(max_all));
  m.impl("max.unary_out", TORCH_FN(max_all_out));
  m.impl("min", TORCH_FN(min_all));
  m.impl("min.unary_out", TORCH_FN(min_all_out));
  m.impl("max.dim", TORCH_FN(max_dim));
  m.impl("max.dim_max", TORCH_FN(max_dim_out));
  m.impl("min.dim", TORCH_FN(min_dim));
  m.impl("min.dim_min", TORCH_FN(min_dim_out));
  m.impl("argmax", TORCH_FN(argmax));
  m.impl("argmax.out", TORCH_FN(argmax_out));
  m.impl("argmin", TORCH_FN(argmin));
  m.impl("argmin.out", TORCH_FN(argmin_out));
  using at::meta::structured_all;
  using at::meta::structured_all_dim;
  using at::meta::structured_all_dims;
  using at::meta::structured_any;
  using at::meta::structured_any_dim;
  using at::meta::structured_any_dims;
  m.impl("all", TORCH_FN((logical_all<structured_all, true>)));
  m.impl("all.all_out", TORCH_FN((logical_all_out<structured_all, true>)));
  m.impl("all.dim", TORCH_FN((logical_dim<structured_all_dim, true>)));
  m.impl("all.out", TORCH_FN((logical_dim_out<structured_all_dim, true>)));
  m.impl("all.dims", TORCH_FN((logical_dims<structured_all_dims, true>)));
  m.impl("all.dims_out", TORCH_FN((logical_dims_out<structured_all_dims, true>)));
  m.impl("any", TORCH_FN((logical_all<structured_any, false>)));
  m.impl("any.all_out", TORCH_FN((logical_all_out<structured_any, false>)));
  m.impl("any.dim", TORCH_FN((logical_dim<structured_any_dim, false>)));
  m.impl("any.out", TORCH_FN((logical_dim_out<structured_any_dim, false>)));
  m.impl("any.dims", TORCH_FN((logical_dims<structured_any_dims, false>)));
  m.impl("any.dims_out", TORCH_FN((logical_dims_out<structured_any_dims, false>)));
  m.impl("count_nonzero.dim_IntList", TORCH_FN(count_nonzero));
  m.impl("cumsum", TORCH_FN(cumsum));
  m.impl("cumsum.out", TORCH_FN(cumsum_out));
  m.impl("cumsum_", TORCH_FN(cumsum_));
}

} // namespace torch_tpu
