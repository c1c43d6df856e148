// Pooling on the conv family's kernels (POOL, POOL_BACKWARD): max pooling with indices (2-d, 3-d;
// max_pool1d reaches the 2-d one), average pooling (2-d, 3-d; avg_pool1d likewise) and the
// adaptive forms, each with its backward. Output sizes, memory formats and argument errors come
// from ATen's structured metas (or, for the ops without one, ATen's own shape helpers); the
// kernels see [N, C, spatial...], an unbatched input gaining N = 1.
#include <ATen/native/Pool.h>
#include <ATen/ops/adaptive_max_pool2d_backward_meta.h>
#include <ATen/ops/adaptive_max_pool2d_meta.h>
#include <ATen/ops/adaptive_max_pool3d_backward_meta.h>
#include <ATen/ops/adaptive_max_pool3d_meta.h>
#include <ATen/ops/avg_pool2d_backward_meta.h>
#include <ATen/ops/avg_pool2d_meta.h>
#include <ATen/ops/avg_pool3d_backward_meta.h>
#include <ATen/ops/avg_pool3d_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/max_pool2d_with_indices_backward_meta.h>
#include <ATen/ops/max_pool2d_with_indices_meta.h>
#include <torch/library.h>

#include "ops/TpuConvCommon.h"
#include "ops/TpuIndexCommon.h"

namespace torch_tpu {
namespace {

// Pooling parameters, one value per spatial dim.
struct Pool {
  std::vector<int64_t> kernel, stride, padding, dilation;
  unsigned mode = TPU_POOL_MAX;
  int64_t divisor = 0;
};

// A parameter list of 1 or `n` values (empty: `fallback`) as n values.
std::vector<int64_t> expand(at::IntArrayRef v, size_t n, at::IntArrayRef fallback = {}) {
  if (v.empty()) {
    v = fallback;
  }
  return v.size() == 1 ? std::vector<int64_t>(n, v[0]) : v.vec();
}

Pool pool_of(size_t n, at::IntArrayRef kernel, at::IntArrayRef stride, at::IntArrayRef padding,
             at::IntArrayRef dilation, unsigned mode) {
  Pool p;
  p.kernel = expand(kernel, n);
  p.stride = expand(stride, n, kernel);
  p.padding = expand(padding, n);
  p.dilation = expand(dilation, n);
  p.mode = mode;
  return p;
}

// Batched [N, C, spatial...] view: unbatched inputs (spatial dims + 1) gain N = 1.
at::Tensor batched(const at::Tensor& t, size_t spatial) {
  return t.dim() == static_cast<int64_t>(spatial) + 1 ? t.unsqueeze(0) : t;
}

void check_dtype(const at::Tensor& t, const char* name, bool integers) {
  bool ok = is_conv_float(t.scalar_type()) ||
            (integers && at::isIntegralType(t.scalar_type(), /*includeBool=*/false));
  TORCH_CHECK_NOT_IMPLEMENTED(ok, "\"", name, "\" not implemented for '", t.scalar_type(), "'");
}

void run(tpu_op_id op, const Pool& p, size_t spatial, std::vector<at::Tensor> inputs,
         std::vector<at::Tensor> outputs) {
  const at::Tensor& first = inputs[0];
  std::vector<tpu_tensor> in_views, out_views;
  for (const at::Tensor& t : inputs) {
    check_device("pooling", first.device(), {&t});
    in_views.push_back(core_view(batched(t, spatial)));
  }
  for (const at::Tensor& t : outputs) {
    check_device("pooling", first.device(), {&t});
    if (t.numel() == 0) {
      return;
    }
    out_views.push_back(core_view(batched(t, spatial)));
  }
  OpCall call = make_call(op, in_views, out_views);
  if (!p.kernel.empty()) {
    call->scalars[0].u = conv_pack(p.kernel, 1, "pooling: kernel size");
    call->scalars[1].u = conv_pack(p.stride, 1, "pooling: stride");
    call->scalars[2].u = conv_pack(p.padding, 0, "pooling: padding");
    call->scalars[3].u = conv_pack(p.dilation, 1, "pooling: dilation");
  }
  call->scalars[4].u = p.mode;
  call->scalars[5].i = p.divisor;
  launch(first.device().index(), std::move(call));
}

Pool adaptive(unsigned mode) {
  Pool p;
  p.mode = mode;
  return p;
}

// ---- max pooling ----

std::tuple<at::Tensor&, at::Tensor&> max_pool2d_out(const at::Tensor& self, at::IntArrayRef k,
                                                    at::IntArrayRef s, at::IntArrayRef pad,
                                                    at::IntArrayRef dil, bool ceil_mode,
                                                    at::Tensor& out, at::Tensor& indices) {
  Out<at::meta::structured_max_pool2d_with_indices, 2> op(out, indices);
  op.meta(self, k, s, pad, dil, ceil_mode);
  check_dtype(self, "max_pool2d", true);
  run(TPU_OP_POOL, pool_of(2, k, s, pad, dil, TPU_POOL_MAX), 2, {self}, {out, indices});
  return {out, indices};
}

std::tuple<at::Tensor, at::Tensor> max_pool2d(const at::Tensor& self, at::IntArrayRef k,
                                              at::IntArrayRef s, at::IntArrayRef pad,
                                              at::IntArrayRef dil, bool ceil_mode) {
  Functional<at::meta::structured_max_pool2d_with_indices, 2> op;
  op.meta(self, k, s, pad, dil, ceil_mode);
  check_dtype(self, "max_pool2d", true);
  run(TPU_OP_POOL, pool_of(2, k, s, pad, dil, TPU_POOL_MAX), 2, {self},
      {op.outputs_[0], op.outputs_[1]});
  return {op.outputs_[0], op.outputs_[1]};
}

at::Tensor& max_pool2d_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                    at::IntArrayRef k, at::IntArrayRef s, at::IntArrayRef pad,
                                    at::IntArrayRef dil, bool ceil_mode,
                                    const at::Tensor& indices, at::Tensor& grad_input) {
  Out<at::meta::structured_max_pool2d_with_indices_backward> op(grad_input);
  op.meta(grad, self, k, s, pad, dil, ceil_mode, indices);
  check_dtype(self, "max_pool2d_with_indices_backward", false);
  run(TPU_OP_POOL_BACKWARD, pool_of(2, k, s, pad, dil, TPU_POOL_MAX), 2, {grad, indices},
      {grad_input});
  return grad_input;
}

at::Tensor max_pool2d_backward(const at::Tensor& grad, const at::Tensor& self, at::IntArrayRef k,
                               at::IntArrayRef s, at::IntArrayRef pad, at::IntArrayRef dil,
                               bool ceil_mode, const at::Tensor& indices) {
  Functional<at::meta::structured_max_pool2d_with_indices_backward> op;
  op.meta(grad, self, k, s, pad, dil, ceil_mode, indices);
  check_dtype(self, "max_pool2d_with_indices_backward", false);
  run(TPU_OP_POOL_BACKWARD, pool_of(2, k, s, pad, dil, TPU_POOL_MAX), 2, {grad, indices},
      {op.outputs_[0]});
  return op.outputs_[0];
}

// max_pool3d has no structured meta: ATen's own checks and output sizes (Pool.h).
std::vector<int64_t> max_pool3d_sizes(const at::Tensor& self, const Pool& p, bool ceil_mode) {
  TORCH_CHECK(p.kernel.size() == 3 && p.stride.size() == 3 && p.padding.size() == 3 &&
                  p.dilation.size() == 3,
              "max_pool3d: kernel_size, stride, padding and dilation must be a single int or a "
              "tuple of three ints");
  TORCH_CHECK(self.dim() == 4 || self.dim() == 5,
              "non-empty 4D or 5D (batch mode) tensor expected for input");
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end() - 3);
  int64_t in[3], out[3];
  for (int d = 0; d < 3; d++) {
    in[d] = self.size(-3 + d);
    out[d] = at::native::pooling_output_shape<int64_t>(in[d], p.kernel[d], p.padding[d],
                                                       p.stride[d], p.dilation[d], ceil_mode);
    sizes.push_back(out[d]);
  }
  auto i32 = [](int64_t v) { return static_cast<int>(v); };
  at::native::pool3d_shape_check(
      self, self.size(-4), i32(p.kernel[0]), i32(p.kernel[1]), i32(p.kernel[2]),
      i32(p.stride[0]), i32(p.stride[1]), i32(p.stride[2]), i32(p.padding[0]),
      i32(p.padding[1]), i32(p.padding[2]), i32(p.dilation[0]), i32(p.dilation[1]),
      i32(p.dilation[2]), in[0], in[1], in[2], out[0], out[1], out[2],
      "max_pool3d_with_indices_out_cpu_template()");
  return sizes;
}

at::TensorOptions format_of(const at::Tensor& self) {
  auto fmt = self.dim() == 5 ? self.suggest_memory_format() : at::MemoryFormat::Contiguous;
  return self.options().memory_format(fmt);
}

std::tuple<at::Tensor&, at::Tensor&> max_pool3d_out(const at::Tensor& self, at::IntArrayRef k,
                                                    at::IntArrayRef s, at::IntArrayRef pad,
                                                    at::IntArrayRef dil, bool ceil_mode,
                                                    at::Tensor& out, at::Tensor& indices) {
  check_dtype(self, "max_pool3d", true);
  Pool p = pool_of(3, k, s, pad, dil, TPU_POOL_MAX);
  auto sizes = max_pool3d_sizes(self, p, ceil_mode);
  auto fmt = self.dim() == 5 ? self.suggest_memory_format() : at::MemoryFormat::Contiguous;
  TORCH_CHECK(out.scalar_type() == self.scalar_type() && indices.scalar_type() == at::kLong,
              "max_pool3d: out= tensors have the wrong dtype");
  out.resize_(sizes, fmt);
  indices.resize_(sizes, fmt);
  run(TPU_OP_POOL, p, 3, {self}, {out, indices});
  return {out, indices};
}

std::tuple<at::Tensor, at::Tensor> max_pool3d(const at::Tensor& self, at::IntArrayRef k,
                                              at::IntArrayRef s, at::IntArrayRef pad,
                                              at::IntArrayRef dil, bool ceil_mode) {
  check_dtype(self, "max_pool3d", true);
  Pool p = pool_of(3, k, s, pad, dil, TPU_POOL_MAX);
  auto sizes = max_pool3d_sizes(self, p, ceil_mode);
  at::Tensor out = at::empty(sizes, format_of(self));
  at::Tensor indices = at::empty(sizes, format_of(self).dtype(at::kLong));
  run(TPU_OP_POOL, p, 3, {self}, {out, indices});
  return {out, indices};
}

at::Tensor& max_pool3d_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                    at::IntArrayRef k, at::IntArrayRef s, at::IntArrayRef pad,
                                    at::IntArrayRef dil, bool ceil_mode,
                                    const at::Tensor& indices, at::Tensor& grad_input) {
  check_dtype(self, "max_pool3d_with_indices_backward", false);
  Pool p = pool_of(3, k, s, pad, dil, TPU_POOL_MAX);
  auto sizes = max_pool3d_sizes(self, p, ceil_mode);
  TORCH_CHECK(grad.sizes() == at::IntArrayRef(sizes) && indices.sizes() == grad.sizes(),
              "max_pool3d_with_indices_backward: grad_output and indices must have the "
              "output's sizes ", at::IntArrayRef(sizes));
  grad_input.resize_(self.sizes(), self.dim() == 5 ? self.suggest_memory_format()
                                                   : at::MemoryFormat::Contiguous);
  run(TPU_OP_POOL_BACKWARD, p, 3, {grad, indices}, {grad_input});
  return grad_input;
}

at::Tensor max_pool3d_backward(const at::Tensor& grad, const at::Tensor& self, at::IntArrayRef k,
                               at::IntArrayRef s, at::IntArrayRef pad, at::IntArrayRef dil,
                               bool ceil_mode, const at::Tensor& indices) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return max_pool3d_backward_out(grad, self, k, s, pad, dil, ceil_mode, indices, grad_input);
}

// ---- average pooling ----

Pool avg_pool(size_t n, at::IntArrayRef k, at::IntArrayRef s, at::IntArrayRef pad,
              bool count_include_pad, std::optional<int64_t> divisor) {
  Pool p = pool_of(n, k, s, pad, {1}, TPU_POOL_AVG | (count_include_pad ? TPU_POOL_COUNT_PAD : 0));
  p.divisor = divisor.value_or(0);
  return p;
}

#define AVG_POOL(N)                                                                                \
  at::Tensor& avg_pool##N##d_out(const at::Tensor& self, at::IntArrayRef k, at::IntArrayRef s,   \
                                 at::IntArrayRef pad, bool ceil_mode, bool count_include_pad,    \
                                 std::optional<int64_t> divisor, at::Tensor& out) {              \
    Out<at::meta::structured_avg_pool##N##d> op(out);                                            \
    op.meta(self, k, s, pad, ceil_mode, count_include_pad, divisor);                             \
    TORCH_CHECK_NOT_IMPLEMENTED(                                                                 \
        is_conv_float(self.scalar_type()) || self.scalar_type() == at::kLong,                    \
        "\"avg_pool" #N "d_out_frame\" not implemented for '", self.scalar_type(), "'");       \
    run(TPU_OP_POOL, avg_pool(N, k, s, pad, count_include_pad, divisor), N, {self}, {out});      \
    return out;                                                                                  \
  }                                                                                              \
  at::Tensor avg_pool##N##d(const at::Tensor& self, at::IntArrayRef k, at::IntArrayRef s,        \
                            at::IntArrayRef pad, bool ceil_mode, bool count_include_pad,         \
                            std::optional<int64_t> divisor) {                                    \
    Functional<at::meta::structured_avg_pool##N##d> op;                                          \
    op.meta(self, k, s, pad, ceil_mode, count_include_pad, divisor);                             \
    TORCH_CHECK_NOT_IMPLEMENTED(                                                                 \
        is_conv_float(self.scalar_type()) || self.scalar_type() == at::kLong,                    \
        "\"avg_pool" #N "d_out_frame\" not implemented for '", self.scalar_type(), "'");       \
    run(TPU_OP_POOL, avg_pool(N, k, s, pad, count_include_pad, divisor), N, {self},              \
        {op.outputs_[0]});                                                                       \
    return op.outputs_[0];                                                                       \
  }                                                                                              \
  at::Tensor& avg_pool##N##d_backward_out(                                                       \
      const at::Tensor& grad, const at::Tensor& self, at::IntArrayRef k, at::IntArrayRef s,      \
      at::IntArrayRef pad, bool ceil_mode, bool count_include_pad,                               \
      std::optional<int64_t> divisor, at::Tensor& grad_input) {                                  \
    Out<at::meta::structured_avg_pool##N##d_backward> op(grad_input);                            \
    op.meta(grad, self, k, s, pad, ceil_mode, count_include_pad, divisor);                       \
    check_dtype(self, "avg_pool" #N "d_backward_out_frame", false);                              \
    run(TPU_OP_POOL_BACKWARD, avg_pool(N, k, s, pad, count_include_pad, divisor), N, {grad},     \
        {grad_input});                                                                           \
    return grad_input;                                                                           \
  }                                                                                              \
  at::Tensor avg_pool##N##d_backward(const at::Tensor& grad, const at::Tensor& self,             \
                                     at::IntArrayRef k, at::IntArrayRef s, at::IntArrayRef pad,  \
                                     bool ceil_mode, bool count_include_pad,                     \
                                     std::optional<int64_t> divisor) {                           \
    Functional<at::meta::structured_avg_pool##N##d_backward> op;                                 \
    op.meta(grad, self, k, s, pad, ceil_mode, count_include_pad, divisor);                       \
    check_dtype(self, "avg_pool" #N "d_backward_out_frame", false);                              \
    run(TPU_OP_POOL_BACKWARD, avg_pool(N, k, s, pad, count_include_pad, divisor), N, {grad},     \
        {op.outputs_[0]});                                                                       \
    return op.outputs_[0];                                                                       \
  }

AVG_POOL(2)
AVG_POOL(3)

// ---- adaptive pooling ----

#define ADAPTIVE_MAX_POOL(N)                                                                       \
  std::tuple<at::Tensor&, at::Tensor&> adaptive_max_pool##N##d_out(                              \
      const at::Tensor& self, at::IntArrayRef size, at::Tensor& out, at::Tensor& indices) {      \
    Out<at::meta::structured_adaptive_max_pool##N##d, 2> op(out, indices);                       \
    op.meta(self, size);                                                                         \
    check_dtype(self, "adaptive_max_pool" #N "d", false);                                        \
    run(TPU_OP_POOL, adaptive(TPU_POOL_ADAPTIVE_MAX), N, {self}, {out, indices});                \
    return {out, indices};                                                                       \
  }                                                                                              \
  std::tuple<at::Tensor, at::Tensor> adaptive_max_pool##N##d(const at::Tensor& self,             \
                                                             at::IntArrayRef size) {             \
    Functional<at::meta::structured_adaptive_max_pool##N##d, 2> op;                              \
    op.meta(self, size);                                                                         \
    check_dtype(self, "adaptive_max_pool" #N "d", false);                                        \
    run(TPU_OP_POOL, adaptive(TPU_POOL_ADAPTIVE_MAX), N, {self},                                 \
        {op.outputs_[0], op.outputs_[1]});                                                       \
    return {op.outputs_[0], op.outputs_[1]};                                                     \
  }                                                                                              \
  at::Tensor& adaptive_max_pool##N##d_backward_out(const at::Tensor& grad,                       \
                                                   const at::Tensor& self,                       \
                                                   const at::Tensor& indices,                    \
                                                   at::Tensor& grad_input) {                     \
    Out<at::meta::structured_adaptive_max_pool##N##d_backward> op(grad_input);                   \
    op.meta(grad, self, indices);                                                                \
    check_dtype(self, "adaptive_max_pool" #N "d_backward", false);                               \
    run(TPU_OP_POOL_BACKWARD, adaptive(TPU_POOL_ADAPTIVE_MAX), N, {grad, indices},               \
        {grad_input});                                                                           \
    return grad_input;                                                                           \
  }                                                                                              \
  at::Tensor adaptive_max_pool##N##d_backward(const at::Tensor& grad, const at::Tensor& self,    \
                                              const at::Tensor& indices) {                       \
    Functional<at::meta::structured_adaptive_max_pool##N##d_backward> op;                        \
    op.meta(grad, self, indices);                                                                \
    check_dtype(self, "adaptive_max_pool" #N "d_backward", false);                               \
    run(TPU_OP_POOL_BACKWARD, adaptive(TPU_POOL_ADAPTIVE_MAX), N, {grad, indices},               \
        {op.outputs_[0]});                                                                       \
    return op.outputs_[0];                                                                       \
  }

ADAPTIVE_MAX_POOL(2)
ADAPTIVE_MAX_POOL(3)

// CPU's layouts: the 2-d adaptive average keeps a batched input's memory format, the 3-d one is
// always contiguous.
at::MemoryFormat avg_format(const at::Tensor& self, size_t n) {
  return n == 2 && self.dim() == 4 ? self.suggest_memory_format() : at::MemoryFormat::Contiguous;
}

// _adaptive_avg_pool has no structured meta; CPU's checks: a non-empty (batched) input and an
// output size per spatial dim.
at::Tensor adaptive_avg_pool(const at::Tensor& self, c10::SymIntArrayRef size_sym, size_t n) {
  auto size = C10_AS_INTARRAYREF_SLOW(size_sym);
  TORCH_CHECK(size.size() == n, "adaptive_avg_pool", n, "d: output_size must be ", n);
  TORCH_CHECK(self.dim() == static_cast<int64_t>(n) + 1 || self.dim() == static_cast<int64_t>(n) + 2,
              "adaptive_avg_pool", n, "d(): Expected ", n + 1, "D or ", n + 2,
              "D tensor, but got ", self.sizes());
  for (int64_t d = 1; d < self.dim(); d++) {
    TORCH_CHECK(self.size(d) > 0, "adaptive_avg_pool", n, "d(): Expected input to have non-zero "
                "size for non-batch dimensions, but input has sizes ", self.sizes(),
                " with dimension ", d, " being empty");
  }
  check_dtype(self, "adaptive_avg_pool", false);
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end() - n);
  sizes.insert(sizes.end(), size.begin(), size.end());
  at::Tensor out = at::empty(sizes, self.options().memory_format(avg_format(self, n)));
  run(TPU_OP_POOL, adaptive(TPU_POOL_ADAPTIVE_AVG), n, {self}, {out});
  return out;
}

at::Tensor adaptive_avg_pool_backward(const at::Tensor& grad, const at::Tensor& self, size_t n) {
  check_dtype(self, "adaptive_avg_pool_backward", false);
  TORCH_CHECK(grad.dim() == self.dim(), "adaptive_avg_pool", n,
              "d_backward(): grad_output and input must have the same rank");
  at::Tensor grad_input =
      at::empty(self.sizes(), self.options().memory_format(avg_format(self, n)));
  run(TPU_OP_POOL_BACKWARD, adaptive(TPU_POOL_ADAPTIVE_AVG), n, {grad}, {grad_input});
  return grad_input;
}

at::Tensor adaptive_avg_pool2d(const at::Tensor& self, c10::SymIntArrayRef size) {
  return adaptive_avg_pool(self, size, 2);
}

at::Tensor adaptive_avg_pool3d(const at::Tensor& self, c10::SymIntArrayRef size) {
  return adaptive_avg_pool(self, size, 3);
}

at::Tensor adaptive_avg_pool2d_backward(const at::Tensor& grad, const at::Tensor& self) {
  return adaptive_avg_pool_backward(grad, self, 2);
}

at::Tensor adaptive_avg_pool3d_backward(const at::Tensor& grad, const at::Tensor& self) {
  return adaptive_avg_pool_backward(grad, self, 3);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("max_pool2d_with_indices", TORCH_FN(max_pool2d));
  m.impl("max_pool2d_with_indices.out", TORCH_FN(max_pool2d_out));
  m.impl("max_pool2d_with_indices_backward", TORCH_FN(max_pool2d_backward));
  m.impl("max_pool2d_with_indices_backward.grad_input", TORCH_FN(max_pool2d_backward_out));
  m.impl("max_pool3d_with_indices", TORCH_FN(max_pool3d));
  m.impl("max_pool3d_with_indices.out", TORCH_FN(max_pool3d_out));
  m.impl("max_pool3d_with_indices_backward", TORCH_FN(max_pool3d_backward));
  m.impl("max_pool3d_with_indices_backward.grad_input", TORCH_FN(max_pool3d_backward_out));
  m.impl("avg_pool2d", TORCH_FN(avg_pool2d));
  m.impl("avg_pool2d.out", TORCH_FN(avg_pool2d_out));
  m.impl("avg_pool2d_backward", TORCH_FN(avg_pool2d_backward));
  m.impl("avg_pool2d_backward.grad_input", TORCH_FN(avg_pool2d_backward_out));
  m.impl("avg_pool3d", TORCH_FN(avg_pool3d));
  m.impl("avg_pool3d.out", TORCH_FN(avg_pool3d_out));
  m.impl("avg_pool3d_backward", TORCH_FN(avg_pool3d_backward));
  m.impl("avg_pool3d_backward.grad_input", TORCH_FN(avg_pool3d_backward_out));
  m.impl("adaptive_max_pool2d", TORCH_FN(adaptive_max_pool2d));
  m.impl("adaptive_max_pool2d.out", TORCH_FN(adaptive_max_pool2d_out));
  m.impl("adaptive_max_pool2d_backward", TORCH_FN(adaptive_max_pool2d_backward));
  m.impl("adaptive_max_pool2d_backward.grad_input", TORCH_FN(adaptive_max_pool2d_backward_out));
  m.impl("adaptive_max_pool3d", TORCH_FN(adaptive_max_pool3d));
  m.impl("adaptive_max_pool3d.out", TORCH_FN(adaptive_max_pool3d_out));
  m.impl("adaptive_max_pool3d_backward", TORCH_FN(adaptive_max_pool3d_backward));
  m.impl("adaptive_max_pool3d_backward.grad_input", TORCH_FN(adaptive_max_pool3d_backward_out));
  m.impl("_adaptive_avg_pool2d", TORCH_FN(adaptive_avg_pool2d));
  m.impl("_adaptive_avg_pool2d_backward", TORCH_FN(adaptive_avg_pool2d_backward));
  m.impl("_adaptive_avg_pool3d", TORCH_FN(adaptive_avg_pool3d));
  m.impl("_adaptive_avg_pool3d_backward", TORCH_FN(adaptive_avg_pool3d_backward));
}

} // namespace torch_tpu
