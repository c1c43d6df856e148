// Interpolation (upsample_nearest, _upsample_nearest_exact, upsample_linear1d, bilinear2d,
// trilinear3d, bicubic2d, the antialiased _upsample_bilinear2d_aa and _bicubic2d_aa) and the reflection and replication pads, each with its backward, on the
// core's RESAMPLE and RESAMPLE_BACKWARD (csrc/core/ops/tpu_ops_vision.h). Output sizes, memory
// formats and argument errors come from ATen's structured metas; the pads without one
// (reflection_pad2d and its backward, the 2-d and 3-d replication backwards) repeat CPU's checks.
// CPU's interpolation of uint8 by (antialiased) bilinear and bicubic weights rounds in fixed point,
// and the pads'
// backward of complex gradients: those run on the host (a counted fallback).
#include <ATen/native/Padding.h>
#include <ATen/ops/_upsample_bicubic2d_aa.h>
#include <ATen/ops/_upsample_bicubic2d_aa_backward_meta.h>
#include <ATen/ops/_upsample_bicubic2d_aa_meta.h>
#include <ATen/ops/_upsample_bilinear2d_aa.h>
#include <ATen/ops/_upsample_bilinear2d_aa_backward_meta.h>
#include <ATen/ops/_upsample_bilinear2d_aa_meta.h>
#include <ATen/ops/_upsample_nearest_exact1d_backward_meta.h>
#include <ATen/ops/_upsample_nearest_exact1d_meta.h>
#include <ATen/ops/_upsample_nearest_exact2d_backward_meta.h>
#include <ATen/ops/_upsample_nearest_exact2d_meta.h>
#include <ATen/ops/_upsample_nearest_exact3d_backward_meta.h>
#include <ATen/ops/_upsample_nearest_exact3d_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/reflection_pad1d_backward.h>
#include <ATen/ops/reflection_pad2d_backward.h>
#include <ATen/ops/reflection_pad3d_backward.h>
#include <ATen/ops/replication_pad1d_backward.h>
#include <ATen/ops/replication_pad2d_backward.h>
#include <ATen/ops/replication_pad3d_backward.h>
#include <ATen/ops/reflection_pad1d_backward_meta.h>
#include <ATen/ops/reflection_pad1d_meta.h>
#include <ATen/ops/reflection_pad3d_backward_meta.h>
#include <ATen/ops/reflection_pad3d_meta.h>
#include <ATen/ops/replication_pad1d_backward_meta.h>
#include <ATen/ops/replication_pad1d_meta.h>
#include <ATen/ops/replication_pad2d_meta.h>
#include <ATen/ops/replication_pad3d_meta.h>
#include <ATen/ops/upsample_bicubic2d.h>
#include <ATen/ops/upsample_bicubic2d_backward_meta.h>
#include <ATen/ops/upsample_bicubic2d_meta.h>
#include <ATen/ops/upsample_bilinear2d.h>
#include <ATen/ops/upsample_bilinear2d_backward_meta.h>
#include <ATen/ops/upsample_bilinear2d_meta.h>
#include <ATen/ops/upsample_linear1d_backward_meta.h>
#include <ATen/ops/upsample_linear1d_meta.h>
#include <ATen/ops/upsample_nearest1d_backward_meta.h>
#include <ATen/ops/upsample_nearest1d_meta.h>
#include <ATen/ops/upsample_nearest2d_backward_meta.h>
#include <ATen/ops/upsample_nearest2d_meta.h>
#include <ATen/ops/upsample_nearest3d_backward_meta.h>
#include <ATen/ops/upsample_nearest3d_meta.h>
#include <ATen/ops/upsample_trilinear3d_backward_meta.h>
#include <ATen/ops/upsample_trilinear3d_meta.h>
#include <torch/library.h>

#include "ops/TpuConvCommon.h"
#include "ops/TpuIndexCommon.h"
#include "ops/TpuOps.h"
#include "ops/TpuStructured.h"

namespace torch_tpu {
namespace {

using OptScale = std::optional<double>;

// A RESAMPLE call's attributes: mode and flag, spatial rank, scale factors and pads (outermost
// spatial dimension first).
struct Resample {
  int64_t mode = TPU_RESAMPLE_NEAREST;
  int spatial = 1;
  double scales[3] = {0, 0, 0};
  int64_t pads[3] = {0, 0, 0};
};

Resample interp(int64_t mode, bool align_corners, std::initializer_list<OptScale> scales) {
  Resample r;
  r.mode = mode | (align_corners ? TPU_RESAMPLE_ALIGN_CORNERS : 0);
  r.spatial = static_cast<int>(scales.size());
  int s = 0;
  for (const OptScale& scale : scales) {
    r.scales[s++] = scale.value_or(0.0);
  }
  return r;
}

// PyTorch's padding list (last dimension first, before and after) as pads before each spatial
// dimension, outermost first.
Resample pad(int64_t mode, at::IntArrayRef padding) {
  Resample r;
  r.mode = mode;
  r.spatial = static_cast<int>(padding.size() / 2);
  for (int s = 0; s < r.spatial; s++) {
    r.pads[s] = padding[2 * (r.spatial - 1 - s)];
  }
  return r;
}

// Launches RESAMPLE (src = x, dst = y) or RESAMPLE_BACKWARD (src = dy, dst = dx).
void run(tpu_op_id op, const Resample& r, const at::Tensor& src, const at::Tensor& dst) {
  check_device("resample", src.device(), {&dst});
  if (dst.numel() == 0) {
    return;
  }
  if (src.numel() == 0) {
    dst.zero_();
    return;
  }
  if (dst.storage().is_alias_of(src.storage())) {
    at::Tensor fresh = at::empty_like(dst);
    run(op, r, src, fresh);
    copy_into(fresh, dst, false);
    return;
  }
  OpCall call = new_call(op, 1, 1);
  call->tensors[0] = core_view(src);
  call->tensors[1] = core_view(dst);
  call->scalars[0].i = r.mode;
  call->scalars[1].i = r.spatial;
  for (int s = 0; s < 3; s++) {
    call->scalars[2 + s].f = r.scales[s];
    call->scalars[5 + s].i = r.pads[s];
  }
  launch(src.device().index(), std::move(call));
}

// CPU's dtype checks: the nearest modes also take uint8, the backwards only floating dtypes.
void check_interp_dtype(const at::Tensor& t, const char* name, bool uint8) {
  const at::ScalarType type = t.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(is_conv_float(type) || (uint8 && type == at::kByte), "\"", name,
                              "\" not implemented for '", toString(type), "'");
}

// The pads take CPU's dtypes: the integers through int64 but no bool or wider unsigned ones, the
// floating and complex dtypes (copied bit for bit).
void check_pad_dtype(const at::Tensor& t, const char* name) {
  const at::ScalarType type = t.scalar_type();
  const bool ok = at::isFloatingType(type) || at::isComplexType(type) ||
                  (at::isIntegralType(type, /*includeBool=*/false) && type != at::kUInt16 &&
                   type != at::kUInt32 && type != at::kUInt64);
  TORCH_CHECK_NOT_IMPLEMENTED(ok && is_storable(type), "\"", name, "\" not implemented for '",
                              toString(type), "'");
}

// ---- interpolation ----

// uint8 by linear or cubic weights: CPU's fixed-point kernels, on the host.
template <typename Fn>
void host_uint8(const char* name, const at::Tensor& out, Fn&& fn) {
  begin_host_fallback(name);
  copy_into(fn(), out, false);
}

#define NEAREST(NAME, ATEN, MODE, N, ...)                                                          \
  at::Tensor& NAME##_out(const at::Tensor& self, c10::SymIntArrayRef size_sym, SCALE_PARAMS_##N,   \
                         at::Tensor& out) {                                                        \
    at::IntArrayRef size = C10_AS_INTARRAYREF_SLOW(size_sym);                                      \
    Out<at::meta::structured_##ATEN> op(out);                                                      \
    op.meta(self, size, SCALE_ARGS_##N);                                                           \
    check_interp_dtype(self, "compute_indices_weights_nearest", true);                             \
    run(TPU_OP_RESAMPLE, interp(MODE, false, {SCALE_ARGS_##N}), self, out);                        \
    return out;                                                                                    \
  }                                                                                                \
  at::Tensor NAME(const at::Tensor& self, c10::SymIntArrayRef size_sym, SCALE_PARAMS_##N) {        \
    at::IntArrayRef size = C10_AS_INTARRAYREF_SLOW(size_sym);                                      \
    Functional<at::meta::structured_##ATEN> op;                                                    \
    op.meta(self, size, SCALE_ARGS_##N);                                                           \
    check_interp_dtype(self, "compute_indices_weights_nearest", true);                             \
    run(TPU_OP_RESAMPLE, interp(MODE, false, {SCALE_ARGS_##N}), self, op.outputs_[0]);             \
    return op.outputs_[0];                                                                         \
  }                                                                                                \
  at::Tensor& NAME##_backward_out(const at::Tensor& grad, c10::SymIntArrayRef size_sym,            \
                                  c10::SymIntArrayRef input_sym, SCALE_PARAMS_##N,                 \
                                  at::Tensor& grad_input) {                                        \
    at::IntArrayRef size = C10_AS_INTARRAYREF_SLOW(size_sym);                                      \
    at::IntArrayRef input = C10_AS_INTARRAYREF_SLOW(input_sym);                                    \
    Out<at::meta::structured_##ATEN##_backward> op(grad_input);                                    \
    op.meta(grad, size, input, SCALE_ARGS_##N);                                                    \
    check_interp_dtype(grad, #ATEN "_backward", false);                                            \
    run(TPU_OP_RESAMPLE_BACKWARD, interp(MODE, false, {SCALE_ARGS_##N}), grad, grad_input);        \
    return grad_input;                                                                             \
  }                                                                                                \
  at::Tensor NAME##_backward(const at::Tensor& grad, c10::SymIntArrayRef size_sym,                 \
                             c10::SymIntArrayRef input_sym, SCALE_PARAMS_##N) {                    \
    at::IntArrayRef size = C10_AS_INTARRAYREF_SLOW(size_sym);                                      \
    at::IntArrayRef input = C10_AS_INTARRAYREF_SLOW(input_sym);                                    \
    Functional<at::meta::structured_##ATEN##_backward> op;                                         \
    op.meta(grad, size, input, SCALE_ARGS_##N);                                                    \
    check_interp_dtype(grad, #ATEN "_backward", false);                                            \
    run(TPU_OP_RESAMPLE_BACKWARD, interp(MODE, false, {SCALE_ARGS_##N}), grad, op.outputs_[0]);    \
    return op.outputs_[0];                                                                         \
  }

#define SCALE_PARAMS_1 OptScale s0
#define SCALE_PARAMS_2 OptScale s0, OptScale s1
#define SCALE_PARAMS_3 OptScale s0, OptScale s1, OptScale s2
#define SCALE_ARGS_1 s0
#define SCALE_ARGS_2 s0, s1
#define SCALE_ARGS_3 s0, s1, s2

NEAREST(nearest1d, upsample_nearest1d, TPU_RESAMPLE_NEAREST, 1)
NEAREST(nearest2d, upsample_nearest2d, TPU_RESAMPLE_NEAREST, 2)
NEAREST(nearest3d, upsample_nearest3d, TPU_RESAMPLE_NEAREST, 3)
NEAREST(nearest_exact1d, _upsample_nearest_exact1d, TPU_RESAMPLE_NEAREST_EXACT, 1)
NEAREST(nearest_exact2d, _upsample_nearest_exact2d, TPU_RESAMPLE_NEAREST_EXACT, 2)
NEAREST(nearest_exact3d, _upsample_nearest_exact3d, TPU_RESAMPLE_NEAREST_EXACT, 3)

// UINT8(N) computes the uint8 forms on the host; NO_UINT8 refuses them as CPU's linear and
// trilinear kernels do.
#define INTERP(NAME, ATEN, MODE, N, WEIGHTS, U8FORM)                                                \
  at::Tensor& NAME##_out(const at::Tensor& self, c10::SymIntArrayRef size_sym, bool align,         \
                         SCALE_PARAMS_##N, at::Tensor& out) {                                      \
    at::IntArrayRef size = C10_AS_INTARRAYREF_SLOW(size_sym);                                      \
    Out<at::meta::structured_##ATEN> op(out);                                                      \
    op.meta(self, size, align, SCALE_ARGS_##N);                                                    \
    U8FORM(ATEN, out, align, N)                                                                    \
    check_interp_dtype(self, WEIGHTS, false);                                                      \
    run(TPU_OP_RESAMPLE, interp(MODE, align, {SCALE_ARGS_##N}), self, out);                        \
    return out;                                                                                    \
  }                                                                                                \
  at::Tensor NAME(const at::Tensor& self, c10::SymIntArrayRef size_sym, bool align,                \
                  SCALE_PARAMS_##N) {                                                              \
    at::IntArrayRef size = C10_AS_INTARRAYREF_SLOW(size_sym);                                      \
    Functional<at::meta::structured_##ATEN> op;                                                    \
    op.meta(self, size, align, SCALE_ARGS_##N);                                                    \
    const at::Tensor& out = op.outputs_[0];                                                        \
    U8FORM(ATEN, out, align, N)                                                                    \
    check_interp_dtype(self, WEIGHTS, false);                                                      \
    run(TPU_OP_RESAMPLE, interp(MODE, align, {SCALE_ARGS_##N}), self, out);                        \
    return out;                                                                                    \
  }                                                                                                \
  at::Tensor& NAME##_backward_out(const at::Tensor& grad, c10::SymIntArrayRef size_sym,            \
                                  c10::SymIntArrayRef input_sym, bool align, SCALE_PARAMS_##N,     \
                                  at::Tensor& grad_input) {                                        \
    at::IntArrayRef size = C10_AS_INTARRAYREF_SLOW(size_sym);                                      \
    at::IntArrayRef input = C10_AS_INTARRAYREF_SLOW(input_sym);                                    \
    Out<at::meta::structured_##ATEN##_backward> op(grad_input);                                    \
    op.meta(grad, size, input, align, SCALE_ARGS_##N);                                             \
    check_interp_dtype(grad, #ATEN "_backward", false);                                            \
    run(TPU_OP_RESAMPLE_BACKWARD, interp(MODE, align, {SCALE_ARGS_##N}), grad, grad_input);        \
    return grad_input;                                                                             \
  }                                                                                                \
  at::Tensor NAME##_backward(const at::Tensor& grad, c10::SymIntArrayRef size_sym,                 \
                             c10::SymIntArrayRef input_sym, bool align, SCALE_PARAMS_##N) {        \
    at::IntArrayRef size = C10_AS_INTARRAYREF_SLOW(size_sym);                                      \
    at::IntArrayRef input = C10_AS_INTARRAYREF_SLOW(input_sym);                                    \
    Functional<at::meta::structured_##ATEN##_backward> op;                                         \
    op.meta(grad, size, input, align, SCALE_ARGS_##N);                                             \
    check_interp_dtype(grad, #ATEN "_backward", false);                                            \
    run(TPU_OP_RESAMPLE_BACKWARD, interp(MODE, align, {SCALE_ARGS_##N}), grad, op.outputs_[0]);   \
    return op.outputs_[0];                                                                         \
  }

#define NO_UINT8(ATEN, out, align, N)
#define UINT8(ATEN, out, align, N)                                                                 \
  if (self.scalar_type() == at::kByte) {                                                           \
    host_uint8("aten::" #ATEN, out,                                                                \
               [&] { return at::ATEN(self.cpu(), size, align, SCALE_ARGS_##N); });                 \
    return out;                                                                                    \
  }

INTERP(linear1d, upsample_linear1d, TPU_RESAMPLE_LINEAR, 1, "compute_indices_weights_linear",
       NO_UINT8)
INTERP(bilinear2d, upsample_bilinear2d, TPU_RESAMPLE_LINEAR, 2,
       "compute_indices_weights_linear", UINT8)
INTERP(trilinear3d, upsample_trilinear3d, TPU_RESAMPLE_LINEAR, 3,
       "compute_indices_weights_linear", NO_UINT8)
INTERP(bicubic2d, upsample_bicubic2d, TPU_RESAMPLE_CUBIC, 2, "compute_indices_weights_cubic",
       UINT8)
INTERP(bilinear2d_aa, _upsample_bilinear2d_aa, TPU_RESAMPLE_LINEAR_AA, 2,
       "compute_index_ranges_weights", UINT8)
INTERP(bicubic2d_aa, _upsample_bicubic2d_aa, TPU_RESAMPLE_CUBIC_AA, 2,
       "compute_index_ranges_weights", UINT8)

// ---- pads ----

#define STRUCTURED_PAD(NAME, MODE)                                                                 \
  at::Tensor& NAME##_out(const at::Tensor& self, c10::SymIntArrayRef pad_sym, at::Tensor& out) {   \
    at::IntArrayRef padding = C10_AS_INTARRAYREF_SLOW(pad_sym);                                    \
    Out<at::meta::structured_##NAME> op(out);                                                      \
    op.meta(self, padding);                                                                        \
    check_pad_dtype(self, #NAME);                                                                  \
    run(TPU_OP_RESAMPLE, pad(MODE, padding), self, out);                                           \
    return out;                                                                                    \
  }                                                                                                \
  at::Tensor NAME(const at::Tensor& self, c10::SymIntArrayRef pad_sym) {                           \
    at::IntArrayRef padding = C10_AS_INTARRAYREF_SLOW(pad_sym);                                    \
    Functional<at::meta::structured_##NAME> op;                                                    \
    op.meta(self, padding);                                                                        \
    check_pad_dtype(self, #NAME);                                                                  \
    run(TPU_OP_RESAMPLE, pad(MODE, padding), self, op.outputs_[0]);                                \
    return op.outputs_[0];                                                                         \
  }

STRUCTURED_PAD(reflection_pad1d, TPU_RESAMPLE_REFLECT)
STRUCTURED_PAD(reflection_pad3d, TPU_RESAMPLE_REFLECT)
STRUCTURED_PAD(replication_pad1d, TPU_RESAMPLE_REPLICATE)
STRUCTURED_PAD(replication_pad2d, TPU_RESAMPLE_REPLICATE)
STRUCTURED_PAD(replication_pad3d, TPU_RESAMPLE_REPLICATE)

// A pad's backward: floating gradients; the others go to CPU's kernel for its error.
bool backward_native(const at::Tensor& grad, const char* name) {
  TORCH_CHECK_NOT_IMPLEMENTED(is_conv_float(grad.scalar_type()) ||
                                  at::isComplexType(grad.scalar_type()),
                              "\"", name, "\" not implemented for '",
                              toString(grad.scalar_type()), "'");
  return is_conv_float(grad.scalar_type());
}

#define STRUCTURED_PAD_BACKWARD(NAME, MODE)                                                        \
  at::Tensor& NAME##_backward_out(const at::Tensor& grad, const at::Tensor& self,                  \
                                  c10::SymIntArrayRef pad_sym, at::Tensor& grad_input) {           \
    at::IntArrayRef padding = C10_AS_INTARRAYREF_SLOW(pad_sym);                                    \
    Out<at::meta::structured_##NAME##_backward> op(grad_input);                                    \
    op.meta(grad, self, padding);                                                                  \
    pad_backward(#NAME "_backward", MODE, grad, padding, grad_input);                              \
    return grad_input;                                                                             \
  }                                                                                                \
  at::Tensor NAME##_backward(const at::Tensor& grad, const at::Tensor& self,                       \
                             c10::SymIntArrayRef pad_sym) {                                        \
    at::IntArrayRef padding = C10_AS_INTARRAYREF_SLOW(pad_sym);                                    \
    Functional<at::meta::structured_##NAME##_backward> op;                                         \
    op.meta(grad, self, padding);                                                                  \
    pad_backward(#NAME "_backward", MODE, grad, padding, op.outputs_[0]);                          \
    return op.outputs_[0];                                                                         \
  }

// Runs a pad's backward into grad_input (complex gradients on the host).
void pad_backward(const char* name, int64_t mode, const at::Tensor& grad, at::IntArrayRef padding,
                  const at::Tensor& grad_input) {
  if (backward_native(grad, name)) {
    run(TPU_OP_RESAMPLE_BACKWARD, pad(mode, padding), grad, grad_input);
    return;
  }
  begin_host_fallback(name);
  at::Tensor input = at::empty(grad_input.sizes(), grad_input.options().device(at::kCPU));
  at::Tensor host;
  const size_t n = padding.size() / 2;
  if (mode == TPU_RESAMPLE_REFLECT) {
    host = n == 1   ? at::reflection_pad1d_backward(grad.cpu(), input, padding)
           : n == 2 ? at::reflection_pad2d_backward(grad.cpu(), input, padding)
                    : at::reflection_pad3d_backward(grad.cpu(), input, padding);
  } else {
    host = n == 1   ? at::replication_pad1d_backward(grad.cpu(), input, padding)
           : n == 2 ? at::replication_pad2d_backward(grad.cpu(), input, padding)
                    : at::replication_pad3d_backward(grad.cpu(), input, padding);
  }
  copy_into(host, grad_input, false);
}

STRUCTURED_PAD_BACKWARD(reflection_pad1d, TPU_RESAMPLE_REFLECT)
STRUCTURED_PAD_BACKWARD(reflection_pad3d, TPU_RESAMPLE_REFLECT)
STRUCTURED_PAD_BACKWARD(replication_pad1d, TPU_RESAMPLE_REPLICATE)

// reflection_pad2d has no structured meta: CPU's checks and output (ReflectionPad.cpp).
std::vector<int64_t> reflection_pad2d_size(const at::Tensor& input, at::IntArrayRef padding) {
  at::native::padding::check_valid_input<2>(input, padding);
  const int64_t dim_w = input.dim() == 4 ? 3 : 2, dim_h = dim_w - 1;
  const int64_t pad_l = padding[0], pad_r = padding[1], pad_t = padding[2], pad_b = padding[3];
  const int64_t input_h = input.size(dim_h), input_w = input.size(dim_w);
  const int64_t output_h = input_h + pad_t + pad_b, output_w = input_w + pad_l + pad_r;
  TORCH_CHECK(pad_l < input_w && pad_r < input_w,
              "Argument #4: Padding size should be less than the corresponding input dimension, "
              "but got: padding (",
              pad_l, ", ", pad_r, ") at dimension ", dim_w, " of input ", input.sizes());
  TORCH_CHECK(pad_t < input_h && pad_b < input_h,
              "Argument #6: Padding size should be less than the corresponding input dimension, "
              "but got: padding (",
              pad_t, ", ", pad_b, ") at dimension ", dim_h, " of input ", input.sizes());
  TORCH_CHECK(output_w >= 1 || output_h >= 1, "input (H: ", input_h, ", W: ", input_w,
              ") is too small. Calculated output H: ", output_h, " W: ", output_w);
  std::vector<int64_t> size = input.sizes().vec();
  size[dim_h] = output_h;
  size[dim_w] = output_w;
  return size;
}

at::Tensor& reflection_pad2d_out(const at::Tensor& self, c10::SymIntArrayRef pad_sym,
                                 at::Tensor& out) {
  at::IntArrayRef padding = C10_AS_INTARRAYREF_SLOW(pad_sym);
  std::vector<int64_t> size = reflection_pad2d_size(self, padding);
  check_out_device(self, out);
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "Expected out tensor to have dtype ",
              self.scalar_type(), ", but got ", out.scalar_type(), " instead");
  if (self.dim() == 4) {
    at::native::resize_output(out, size);
    if (!out.is_contiguous(self.suggest_memory_format())) {
      out.unsafeGetTensorImpl()->empty_tensor_restride(self.suggest_memory_format());
    }
  } else {
    at::native::resize_output(out, size);
  }
  check_pad_dtype(self, "reflection_pad2d");
  run(TPU_OP_RESAMPLE, pad(TPU_RESAMPLE_REFLECT, padding), self, out);
  return out;
}

at::Tensor reflection_pad2d(const at::Tensor& self, c10::SymIntArrayRef pad_sym) {
  at::IntArrayRef padding = C10_AS_INTARRAYREF_SLOW(pad_sym);
  std::vector<int64_t> size = reflection_pad2d_size(self, padding);
  at::Tensor out = self.dim() == 4 ? at::empty(size, self.options().memory_format(
                                                         self.suggest_memory_format()))
                                   : at::empty(size, self.options());
  check_pad_dtype(self, "reflection_pad2d");
  run(TPU_OP_RESAMPLE, pad(TPU_RESAMPLE_REFLECT, padding), self, out);
  return out;
}

// The unstructured backwards' checks: the gradient has the padded input's sizes.
void check_pad_grad(const at::Tensor& grad, const at::Tensor& self, at::IntArrayRef padding,
                    size_t n) {
  TORCH_CHECK(padding.size() == 2 * n, "padding size is expected to be ", 2 * n);
  TORCH_CHECK(grad.dim() == self.dim(), "gradOutput and input must have the same rank, but got ",
              grad.dim(), " and ", self.dim());
  const char* names[3] = {"width", "height", "depth"};
  for (size_t i = 0; i < n; i++) {
    const int64_t d = self.dim() - 1 - static_cast<int64_t>(i);
    const int64_t expected = self.size(d) + padding[2 * i] + padding[2 * i + 1];
    TORCH_CHECK(expected == grad.size(d), "gradOutput ", names[i],
                " unexpected. Expected: ", expected, ", Got: ", grad.size(d));
  }
}

#define UNSTRUCTURED_PAD_BACKWARD(NAME, MODE, N, FORMAT)                                           \
  at::Tensor& NAME##_backward_out(const at::Tensor& grad, const at::Tensor& self,                  \
                                  c10::SymIntArrayRef pad_sym, at::Tensor& grad_input) {           \
    at::IntArrayRef padding = C10_AS_INTARRAYREF_SLOW(pad_sym);                                    \
    check_pad_grad(grad, self, padding, N);                                                        \
    check_out_device(self, grad_input);                                                            \
    at::native::resize_output(grad_input, self.sizes());                                           \
    pad_backward(#NAME "_backward", MODE, grad, padding, grad_input);                              \
    return grad_input;                                                                             \
  }                                                                                                \
  at::Tensor NAME##_backward(const at::Tensor& grad, const at::Tensor& self,                       \
                             c10::SymIntArrayRef pad_sym) {                                        \
    at::IntArrayRef padding = C10_AS_INTARRAYREF_SLOW(pad_sym);                                    \
    check_pad_grad(grad, self, padding, N);                                                        \
    at::Tensor grad_input = at::empty(self.sizes(), grad.options().memory_format(FORMAT));         \
    pad_backward(#NAME "_backward", MODE, grad, padding, grad_input);                              \
    return grad_input;                                                                             \
  }

UNSTRUCTURED_PAD_BACKWARD(reflection_pad2d, TPU_RESAMPLE_REFLECT, 2, self.suggest_memory_format())
UNSTRUCTURED_PAD_BACKWARD(replication_pad2d, TPU_RESAMPLE_REPLICATE, 2,
                          at::MemoryFormat::Contiguous)
UNSTRUCTURED_PAD_BACKWARD(replication_pad3d, TPU_RESAMPLE_REPLICATE, 3,
                          at::MemoryFormat::Contiguous)

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
#define REGISTER(ATEN, NAME)                                                                       \
  m.impl(#ATEN, TORCH_FN(NAME));                                                                   \
  m.impl(#ATEN ".out", TORCH_FN(NAME##_out));                                                      \
  m.impl(#ATEN "_backward", TORCH_FN(NAME##_backward));                                            \
  m.impl(#ATEN "_backward.grad_input", TORCH_FN(NAME##_backward_out));
  REGISTER(upsample_nearest1d, nearest1d)
  REGISTER(upsample_nearest2d, nearest2d)
  REGISTER(upsample_nearest3d, nearest3d)
  REGISTER(_upsample_nearest_exact1d, nearest_exact1d)
  REGISTER(_upsample_nearest_exact2d, nearest_exact2d)
  REGISTER(_upsample_nearest_exact3d, nearest_exact3d)
  REGISTER(upsample_linear1d, linear1d)
  REGISTER(upsample_bilinear2d, bilinear2d)
  REGISTER(upsample_trilinear3d, trilinear3d)
  REGISTER(upsample_bicubic2d, bicubic2d)
  REGISTER(_upsample_bilinear2d_aa, bilinear2d_aa)
  REGISTER(_upsample_bicubic2d_aa, bicubic2d_aa)
  REGISTER(reflection_pad1d, reflection_pad1d)
  REGISTER(reflection_pad2d, reflection_pad2d)
  REGISTER(reflection_pad3d, reflection_pad3d)
  REGISTER(replication_pad1d, replication_pad1d)
  REGISTER(replication_pad2d, replication_pad2d)
  REGISTER(replication_pad3d, replication_pad3d)
#undef REGISTER
}

} // namespace torch_tpu
