// segment_reduce (torch.segment_reduce, sum, prod, mean, max, min over segments given by lengths
// or offsets along the last dimension of those) and its backward, as compositions of native ops
// following PyTorch CPU's SegmentReduce.cpp: every position along the axis gets the id of the
// segment holding it (one past the last for a position in none), a scatter_reduce combines the
// data into an output initialised with `initial` or the reduction's identity, and the backward
// gathers the gradient of each position's segment back.
#include <ATen/Dispatch.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/all.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/full.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/TensorOperators.h>
#include <torch/library.h>

#include <limits>

#include "ops/TpuOps.h"

namespace torch_tpu {
namespace {

enum class Reduce { Sum, Prod, Mean, Max, Min };

Reduce parse(c10::string_view reduce) {
  if (reduce == "max" || reduce == "amax") {
    return Reduce::Max;
  }
  if (reduce == "min" || reduce == "amin") {
    return Reduce::Min;
  }
  if (reduce == "mean") {
    return Reduce::Mean;
  }
  if (reduce == "prod") {
    return Reduce::Prod;
  }
  TORCH_CHECK(reduce == "sum", "reduce argument must be either sum, prod, mean, amax or amin, got ",
              reduce);
  return Reduce::Sum;
}

// The scatter_reduce that combines a segment.
const char* combine_name(Reduce op) {
  switch (op) {
  case Reduce::Prod: return "prod";
  case Reduce::Max: return "amax";
  case Reduce::Min: return "amin";
  default: return "sum";
  }
}

// CPU's starting value of a segment without `initial`: -inf for max, inf for min, 1 for a
// product, else 0.
at::Scalar identity(Reduce op, at::ScalarType type) {
  at::Scalar value = op == Reduce::Prod ? 1 : 0;
  if (op == Reduce::Max || op == Reduce::Min) {
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, type, "_segment_reduce_cpu", [&] {
      const scalar_t inf = std::numeric_limits<scalar_t>::infinity();
      value = op == Reduce::Max ? -inf : inf;
    });
  }
  return value;
}

// Where each position along the axis lies: ids (int64, data's sizes, stride 0 after the axis)
// in [0, count], count for a position in no segment; the segments' lengths (int64, sizes
// lead... x count).
struct Segments {
  at::Tensor ids;
  at::Tensor lengths;
  int64_t count = 0;
};

Segments locate(const at::Tensor& data, const std::optional<at::Tensor>& lengths,
                const std::optional<at::Tensor>& offsets, int64_t axis) {
  at::Tensor starts, ends;
  if (offsets.has_value() && offsets->defined()) {
    const at::Tensor o = offsets->to(at::kLong);
    const int64_t count = o.size(-1) - 1;
    starts = o.narrow(-1, 0, count);
    ends = o.narrow(-1, 1, count);
  } else {
    ends = lengths->to(at::kLong).cumsum(-1);
    starts = ends - lengths->to(at::kLong);
  }
  const int64_t count = ends.size(-1), n = data.size(axis);
  // inside[..., j, s]: position j lies in segment s.
  at::Tensor j = at::arange(n, data.options().dtype(at::kLong)).unsqueeze(-1);
  at::Tensor inside = (j >= starts.unsqueeze(-2)) & (j < ends.unsqueeze(-2));
  at::Tensor which = at::arange(count, data.options().dtype(at::kLong));
  at::Tensor ids = at::where(inside.any(-1), (inside * which).sum(-1), count);
  std::vector<int64_t> shape = ids.sizes().vec();
  shape.resize(static_cast<size_t>(data.dim()), 1);
  Segments s;
  s.ids = ids.view(shape).expand(data.sizes());
  s.lengths = ends - starts;
  s.count = count;
  return s;
}

// `t` (sizes lead... x count) viewed to broadcast against an output of `rank` dimensions.
at::Tensor along(const at::Tensor& t, int64_t rank) {
  std::vector<int64_t> shape = t.sizes().vec();
  shape.resize(static_cast<size_t>(rank), 1);
  return t.view(shape);
}

void check_args(const at::Tensor& data, const std::optional<at::Tensor>& lengths,
                const std::optional<at::Tensor>& offsets, int64_t axis) {
  const bool has_lengths = lengths.has_value() && lengths->defined();
  const bool has_offsets = offsets.has_value() && offsets->defined();
  TORCH_CHECK(has_lengths || has_offsets,
              "segment_reduce(): Either lengths or offsets must be defined.");
  const at::Tensor& given = has_offsets ? *offsets : *lengths;
  TORCH_CHECK(data.device() == given.device(), "Expected all tensors to be on the same device");
  TORCH_CHECK(data.dim() >= given.dim());
  TORCH_CHECK(axis == given.dim() - 1, "segment_reduce(): Expected axis to be the last dimension "
              "of ", has_offsets ? "offsets" : "lengths", " but got ", axis, ".");
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(data.scalar_type()),
                              "\"_segment_reduce_cpu\" not implemented for '",
                              data.scalar_type(), "'");
}

at::Tensor segment_reduce(const at::Tensor& data, c10::string_view reduce,
                          const std::optional<at::Tensor>& lengths,
                          const std::optional<at::Tensor>& indices,
                          const std::optional<at::Tensor>& offsets, int64_t axis, bool unsafe,
                          const std::optional<at::Scalar>& initial) {
  axis = at::maybe_wrap_dim(axis, data.dim());
  TORCH_CHECK(!indices.has_value(),
              "segment_reduce(): indices based reduction is not supported yet.");
  check_args(data, lengths, offsets, axis);
  const Reduce op = parse(reduce);
  const bool by_offsets = offsets.has_value() && offsets->defined();
  if (!by_offsets && !unsafe) {
    // CPU's checks, which read the lengths on the host as it does.
    TORCH_CHECK(lengths->numel() == 0 || lengths->min().item<int64_t>() >= 0,
                "lengths contains negative value!");
    TORCH_CHECK(at::all(lengths->sum({-1}) == data.size(axis)).item<bool>(),
                "segment_reduce(): Expected all rows of lengths along axis ",
                "to sum to data.size(lengths.dim()-1) when !unsafe.");
  }
  const Segments seg = locate(data, lengths, offsets, axis);
  std::vector<int64_t> shape = data.sizes().vec();
  shape[static_cast<size_t>(axis)] = seg.count + 1;  // the last slot takes positions in none
  const at::Scalar start = initial.has_value() ? *initial : identity(op, data.scalar_type());
  at::Tensor out = at::full(shape, start, data.options());
  out.scatter_reduce_(axis, seg.ids, data, combine_name(op), /*include_self=*/true);
  out = out.narrow(axis, 0, seg.count);
  if (op == Reduce::Mean) {
    at::Tensor len = along(seg.lengths, data.dim()).to(data.scalar_type());
    out = at::where(len > 0, out / len, out);
    if (!initial.has_value()) {
      out = out.masked_fill(len == 0, std::numeric_limits<double>::quiet_NaN());
    }
  }
  return out.contiguous();
}

// Pads `t` along `axis` with one slot of `value`, the one positions in no segment read.
at::Tensor padded(const at::Tensor& t, int64_t axis, const at::Scalar& value) {
  std::vector<int64_t> shape = t.sizes().vec();
  shape[static_cast<size_t>(axis)] = 1;
  return at::cat({t, at::full(shape, value, t.options())}, axis);
}

at::Tensor segment_reduce_backward(const at::Tensor& grad, const at::Tensor& output,
                                   const at::Tensor& data, c10::string_view reduce,
                                   const std::optional<at::Tensor>& lengths,
                                   const std::optional<at::Tensor>& offsets, int64_t axis,
                                   const std::optional<at::Scalar>& initial) {
  axis = at::maybe_wrap_dim(axis, data.dim());
  check_args(data, lengths, offsets, axis);
  const Reduce op = parse(reduce);
  const Segments seg = locate(data, lengths, offsets, axis);
  const at::Tensor& ids = seg.ids;
  const at::Tensor inside = ids < seg.count;
  const at::Tensor g = padded(grad, axis, 0).gather(axis, ids);
  at::Tensor result;
  switch (op) {
  case Reduce::Sum:
    result = g;
    break;
  case Reduce::Mean: {
    at::Tensor len = padded(along(seg.lengths, data.dim()).to(data.scalar_type()), axis, 1);
    result = g / len.expand(padded(grad, axis, 0).sizes()).gather(axis, ids);
    break;
  }
  case Reduce::Max:
  case Reduce::Min: {
    // The positions equal to their segment's result (or NaN) share its gradient, a positive one
    // split evenly when there are several, as CPU does.
    at::Tensor hit = (data.isnan() | (data == padded(output, axis, 0).gather(axis, ids))) & inside;
    at::Tensor share = at::where(hit, g, 0);
    at::Tensor counts = at::zeros(padded(grad, axis, 0).sizes(), data.options())
                            .scatter_add_(axis, ids, hit.to(data.scalar_type()))
                            .gather(axis, ids);
    result = at::where((counts >= 2) & (share > 0), share / counts, share);
    break;
  }
  case Reduce::Prod: {
    // grad * output / x, except where x is 0 or NaN: there grad times the product of the
    // segment's other elements (and `initial`), 0 when another is 0, NaN when another is NaN.
    const at::Tensor zero = data == 0, nan = data.isnan(), special = zero | nan;
    const at::Tensor pad = at::zeros(padded(grad, axis, 0).sizes(), data.options());
    auto per_segment = [&](const at::Tensor& values, const char* how, const at::Scalar& init) {
      return at::full_like(pad, init)
          .scatter_reduce_(axis, ids, values, how, true)
          .gather(axis, ids);
    };
    const at::Scalar first = initial.has_value() ? *initial : at::Scalar(1);
    at::Tensor others = per_segment(at::where(special, 1, data), "prod", first);
    at::Tensor zeros_else = per_segment(zero.to(data.scalar_type()), "sum", 0) - zero.to(
        data.scalar_type());
    at::Tensor nans_else = per_segment(nan.to(data.scalar_type()), "sum", 0) - nan.to(
        data.scalar_type());
    others = at::where(zeros_else > 0, 0, others);
    others = others.masked_fill(nans_else > 0, std::numeric_limits<double>::quiet_NaN());
    at::Tensor out_g = padded(output, axis, 0).gather(axis, ids);
    result = at::where(special, g * others, g * out_g / data);
    break;
  }
  }
  return at::where(inside, result, 0).contiguous();
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("segment_reduce", TORCH_FN(segment_reduce));
  m.impl("_segment_reduce_backward", TORCH_FN(segment_reduce_backward));
}

} // namespace torch_tpu
