// scatter_reduce (sum, prod, mean, amax, amin) and index_reduce (prod, mean, amax, amin), both
// with include_self, as PyTorch CPU computes them: without include_self the targets first take
// the reduction's identity (a scatter or index_fill_ of it), then one core scatter combines the
// sources (TPU_ACCUM_ADD, MUL, MAX or MIN), and mean divides by the number of values each target
// took (floor division for integers). Also take, put_ and nonzero_static as compositions of
// native ops.
#include <ATen/Dispatch.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/index_reduce_meta.h>
#include <ATen/ops/scatter_reduce_meta.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/index.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros_like.h>
#include <ATen/TensorOperators.h>
#include <torch/library.h>

#include <limits>

#include "ops/TpuIndexCommon.h"
#include "ops/TpuOps.h"
#include "ops/TpuStructured.h"

#include "core/include/tpu.h"

namespace torch_tpu {
namespace {

enum class Reduce { Sum, Prod, Mean, Max, Min };

Reduce parse(c10::string_view reduce) {
  if (reduce == "sum") {
    return Reduce::Sum;
  }
  if (reduce == "prod") {
    return Reduce::Prod;
  }
  if (reduce == "mean") {
    return Reduce::Mean;
  }
  if (reduce == "amax") {
    return Reduce::Max;
  }
  TORCH_CHECK(reduce == "amin", "reduce argument must be either sum, prod, mean, amax or amin, "
              "got ", reduce);
  return Reduce::Min;
}

// The value a target takes before the sources combine into it when self is left out.
at::Scalar identity(Reduce op, at::ScalarType type) {
  switch (op) {
  case Reduce::Prod:
    return 1;
  case Reduce::Max:
  case Reduce::Min: {
    at::Scalar value;
    AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, type, "index_reduce_init", [&] {
      using limits = std::numeric_limits<scalar_t>;
      if (op == Reduce::Max) {
        value = limits::has_infinity ? -limits::infinity() : limits::lowest();
      } else {
        value = limits::has_infinity ? limits::infinity() : limits::max();
      }
    });
    return value;
  }
  default:
    return 0;
  }
}

// One core scatter: out[p with coordinate dim replaced by index[p]] op= src[p]. A bool out
// combines as uint8, where a sum (or) is a maximum and a product (and) a minimum of 0 and 1.
void scatter_combine(const at::Tensor& out, int64_t dim, const at::Tensor& index,
                     const at::Tensor& src, Reduce op) {
  const bool boolean = out.scalar_type() == at::kBool;
  tpu_accum how = TPU_ACCUM_ADD;
  if (op == Reduce::Prod) {
    how = boolean ? TPU_ACCUM_MIN : TPU_ACCUM_MUL;
  } else if (op == Reduce::Max || (boolean && op != Reduce::Min)) {
    how = TPU_ACCUM_MAX;
  } else if (op == Reduce::Min) {
    how = TPU_ACCUM_MIN;
  }
  const at::Tensor target = boolean ? out.view(at::kByte) : out;
  const at::Tensor source = boolean ? src.view(at::kByte) : src;
  OpCall call = make_call(TPU_OP_SCATTER, {core_view_1d(index), core_view_1d(source)},
                          {core_view_1d(target)});
  call->scalars[0].i = dim;
  call->scalars[1].i = how;
  call->scalars[2].f = 1;
  call->scalars[4].i = 1;
  launch(out.device().index(), std::move(call));
}

// Divides each target by the number of values it took: `counts` holds them (1 for self when it
// is included); a target that took none keeps its value.
void divide_mean(const at::Tensor& out, at::Tensor counts) {
  counts.masked_fill_(counts == 0, 1);
  if (out.is_floating_point() || out.is_complex()) {
    out.div_(counts);
  } else {
    out.div_(counts, "floor");
  }
}

// ---- scatter_reduce ----------------------------------------------------------------------

void run_scatter_reduce(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                        const at::Tensor& src, c10::string_view reduce, bool include_self,
                        const at::Tensor& out) {
  check_same_device("scatter_reduce", out.device(), {&self, &index, &src});
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  if (!out.is_same(self)) {
    copy_into(self, out, false);
  }
  const Reduce op = parse(reduce);
  const at::ScalarType type = out.scalar_type();
  const char* kernel = op == Reduce::Max   ? "scatter_gather_tensor_cpu_reduce_amax"
                       : op == Reduce::Min ? "scatter_gather_tensor_cpu_reduce_amin"
                                           : "scatter_gather_tensor_cpu_reduce_mean";
  TORCH_CHECK_NOT_IMPLEMENTED(
      !(op == Reduce::Mean && type == at::kBool) &&
          !(at::isComplexType(type) && (op == Reduce::Max || op == Reduce::Min)),
      "\"", kernel, "\" not implemented for '", type, "'");
  if (index.numel() == 0) {
    return;
  }
  if (!include_self) {
    out.scatter_(dim, index, identity(op, out.scalar_type()));
  }
  scatter_combine(out, dim, index, src, op);
  if (op == Reduce::Mean) {
    at::Tensor counts = include_self ? at::ones_like(out) : at::zeros_like(out);
    counts.scatter_add_(dim, index, at::ones_like(src));
    divide_mean(out, std::move(counts));
  }
}

at::Tensor scatter_reduce(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                          const at::Tensor& src, c10::string_view reduce, bool include_self) {
  Functional<at::meta::structured_scatter_reduce_two> op;
  op.meta(self, dim, index, src, reduce, include_self);
  run_scatter_reduce(self, dim, index, src, reduce, include_self, op.outputs_[0]);
  return std::move(op.outputs_[0]);
}

at::Tensor& scatter_reduce_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                            const at::Tensor& src, c10::string_view reduce, bool include_self) {
  Inplace<at::meta::structured_scatter_reduce_two> op(self);
  op.meta(self, dim, index, src, reduce, include_self);
  run_scatter_reduce(self, dim, index, src, reduce, include_self, self);
  return self;
}

at::Tensor& scatter_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                               const at::Tensor& src, c10::string_view reduce, bool include_self,
                               at::Tensor& out) {
  Out<at::meta::structured_scatter_reduce_two> op(out);
  op.meta(self, dim, index, src, reduce, include_self);
  run_scatter_reduce(self, dim, index, src, reduce, include_self, out);
  return out;
}

// ---- index_reduce ------------------------------------------------------------------------

// The 0-d or 1-d `index` as a scatter index over `sizes`: its elements along `dim`, stride 0
// elsewhere (as index_add's binding spreads it).
at::Tensor spread(const at::Tensor& index, int64_t dim, at::IntArrayRef sizes) {
  std::vector<int64_t> shape = sizes.vec();
  std::vector<int64_t> strides(shape.size(), 0);
  shape[dim] = index.numel();
  strides[dim] = index.dim() > 0 ? index.stride(0) : 1;
  return index.as_strided(shape, strides);
}

void run_index_reduce(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                      const at::Tensor& source, c10::string_view reduce, bool include_self,
                      const at::Tensor& out) {
  check_same_device("index_reduce", out.device(), {&self, &index, &source});
  if (!out.is_same(self)) {
    copy_into(self, out, false);
  }
  const Reduce op = parse(reduce);
  const at::ScalarType type = out.scalar_type();
  // CPU reduces bool into self (a mean then fails in its division), not without self.
  TORCH_CHECK_NOT_IMPLEMENTED(
      (type != at::kBool || include_self) && !at::isComplexType(type), "\"",
      include_self ? "index_reduce_func_cpu_" : "index_reduce_func_exclude_input_init",
      "\" not implemented for '", type, "'");
  TORCH_CHECK_NOT_IMPLEMENTED(type != at::kBool || op != Reduce::Mean,
                              "\"div_floor_cpu\" not implemented for 'Bool'");
  if (index.numel() == 0) {
    return;
  }
  const at::Tensor target = out.dim() == 0 ? out.unsqueeze(0) : out;
  const at::Tensor src = source.dim() == 0 ? source.reshape({1}) : source;
  if (!include_self) {
    target.index_fill_(dim, index.to(at::kLong), identity(op, out.scalar_type()));
  }
  const at::Tensor spread_index = spread(index, dim, src.sizes());
  scatter_combine(target, dim, spread_index, src, op);
  if (op == Reduce::Mean) {
    at::Tensor counts = include_self ? at::ones_like(target) : at::zeros_like(target);
    counts.index_add_(dim, index, at::ones_like(src));
    divide_mean(target, std::move(counts));
  }
}

at::Tensor index_reduce(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                        const at::Tensor& source, c10::string_view reduce, bool include_self) {
  Functional<at::meta::structured_index_reduce> op;
  auto pre = op.meta(self, dim, index, source, reduce, include_self);
  run_index_reduce(self, pre.dim, index, source, reduce, include_self, op.outputs_[0]);
  return std::move(op.outputs_[0]);
}

at::Tensor& index_reduce_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                          const at::Tensor& source, c10::string_view reduce, bool include_self) {
  Inplace<at::meta::structured_index_reduce> op(self);
  auto pre = op.meta(self, dim, index, source, reduce, include_self);
  run_index_reduce(self, pre.dim, index, source, reduce, include_self, self);
  return self;
}

at::Tensor& index_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                             const at::Tensor& source, c10::string_view reduce,
                             bool include_self, at::Tensor& out) {
  Out<at::meta::structured_index_reduce> op(out);
  auto pre = op.meta(self, dim, index, source, reduce, include_self);
  run_index_reduce(self, pre.dim, index, source, reduce, include_self, out);
  return out;
}

// ---- take, put_ --------------------------------------------------------------------------

// PyTorch CPU's checks (TensorAdvancedIndexing.cpp); the elements are self's, flattened, read
// by advanced indexing, which wraps negative indices once and raises IndexError beyond that.
void check_take(const at::Tensor& self, const at::Tensor& index) {
  TORCH_CHECK(index.device() == self.device(), "take(): self and index expected to be on the "
              "same device, but got self.device = ", self.device(), " and index.device = ",
              index.device());
  TORCH_CHECK(index.scalar_type() == at::kLong,
              "take(): Expected a long tensor for index, but got ", index.scalar_type());
  TORCH_CHECK_INDEX(!(self.numel() == 0 && index.numel() != 0),
                    "take(): tried to take from an empty tensor");
}

at::Tensor take_flat(const at::Tensor& self, const at::Tensor& index) {
  check_take(self, index);
  if (index.numel() == 0) {
    return at::empty(index.sizes(), self.options());
  }
  return at::index(self.reshape({-1}), {std::optional<at::Tensor>(index)});
}

at::Tensor& take_out(const at::Tensor& self, const at::Tensor& index, at::Tensor& out) {
  check_take(self, index);
  check_out_device(self, out);
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "take(): self and out expected to have "
              "the same dtype, but got self.dtype = ", self.scalar_type(), " and out.dtype = ",
              out.scalar_type());
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, index);
  at::assert_no_overlap(out, self);
  at::Tensor result = take_flat(self, index);
  at::native::resize_output(out, index.sizes());
  copy_into(result, out, false);
  return out;
}

at::Tensor& put_(at::Tensor& self, const at::Tensor& index, const at::Tensor& source,
                 bool accumulate) {
  TORCH_CHECK(index.scalar_type() == at::kLong,
              "put_(): Expected a long tensor for index, but got ", index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "put_(): self and source expected to "
              "have the same dtype, but got self.dtype = ", self.scalar_type(),
              " and source.dtype = ", source.scalar_type());
  TORCH_CHECK(self.device() == source.device() && self.device() == index.device(),
              "put_(): self, index and source expected to be in the same device, but got "
              "self.device = ", self.device(), ", index.device = ", index.device(),
              ", and source.device = ", source.device());
  at::assert_no_internal_overlap(self);
  at::assert_no_overlap(self, index);
  at::assert_no_overlap(self, source);
  TORCH_CHECK_INDEX(index.numel() == source.numel(),
                    "put_(): Expected source and index to have the same number of elements, but "
                    "got source.numel() = ", source.numel(), ", index.numel() = ", index.numel());
  if (index.numel() == 0) {
    return self;
  }
  TORCH_CHECK_INDEX(self.numel() > 0, "put_(): Tried to put elements into an empty tensor");
  const bool direct = self.is_contiguous();
  at::Tensor flat = direct ? self.view({-1}) : self.contiguous().view({-1});
  flat.index_put_({std::optional<at::Tensor>(index.reshape({-1}))}, source.reshape({-1}),
                  accumulate);
  if (!direct) {
    copy_into(flat.view(self.sizes()), self, false);
  }
  return self;
}

// ---- nonzero_static ----------------------------------------------------------------------

// The first `size` nonzero positions in row-major order as coordinates, padded with fill_value,
// without reading the count on the host: positions of zeros sort after every nonzero one.
at::Tensor first_nonzero(const at::Tensor& self, int64_t size, int64_t fill_value) {
  TORCH_CHECK(size >= 0, "nonzero_static: 'size' must be an non-negative integer");
  TORCH_CHECK(self.numel() < std::numeric_limits<int>::max(),
              "nonzero_static is not supported for tensors with more than INT_MAX elements, "
              "See https://github.com/pytorch/pytorch/issues/51871");
  const int64_t n = self.numel(), ndim = self.dim();
  at::TensorOptions longs = self.options().dtype(at::kLong);
  if (n == 0 || size == 0 || ndim == 0) {
    return at::full({size, ndim}, fill_value, longs);
  }
  at::Tensor positions = at::arange(n, longs);
  at::Tensor keys = at::where(self.reshape({-1}) != 0, positions, positions + n);
  at::Tensor first = std::get<0>(at::sort(keys, /*stable=*/true, 0, false));
  first = size <= n ? first.narrow(0, 0, size)
                    : at::cat({first, at::full({size - n}, 2 * n, longs)});
  at::Tensor valid = first < n;
  std::vector<at::Tensor> coords(static_cast<size_t>(ndim));
  at::Tensor rest = first;
  for (int64_t d = ndim - 1; d >= 0; d--) {
    const int64_t extent = self.size(d);
    coords[static_cast<size_t>(d)] =
        at::where(valid, rest.remainder(extent), at::full({}, fill_value, longs));
    rest = rest.div(extent, "floor");
  }
  return at::stack(coords, 1);
}

at::Tensor& nonzero_static_out(const at::Tensor& self, int64_t size, int64_t fill_value,
                               at::Tensor& out) {
  check_out_device(self, out);
  TORCH_CHECK(out.scalar_type() == at::kLong, "nonzero_static: Expected out tensor to have "
              "scalar type Long but got scalar type", out.scalar_type());
  at::Tensor result = first_nonzero(self, size, fill_value);
  at::native::resize_output(out, result.sizes());
  copy_into(result, out, false);
  return out;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("scatter_reduce.two", TORCH_FN(scatter_reduce));
  m.impl("scatter_reduce_.two", TORCH_FN(scatter_reduce_));
  m.impl("scatter_reduce.two_out", TORCH_FN(scatter_reduce_out));
  m.impl("index_reduce", TORCH_FN(index_reduce));
  m.impl("index_reduce_", TORCH_FN(index_reduce_));
  m.impl("index_reduce.out", TORCH_FN(index_reduce_out));
  m.impl("take", TORCH_FN(take_flat));
  m.impl("take.out", TORCH_FN(take_out));
  m.impl("put_", TORCH_FN(put_));
  m.impl("nonzero_static", TORCH_FN(first_nonzero));
  m.impl("nonzero_static.out", TORCH_FN(nonzero_static_out));
}

} // namespace torch_tpu
