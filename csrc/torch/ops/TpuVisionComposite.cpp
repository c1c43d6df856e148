// im2col (F.unfold), col2im (F.fold) and max_unpool2d/3d as compositions of tpu ops that run
// natively on every driver, with CPU's checks (ATen/native/im2col_shape_check.h, MaxUnpooling.cpp):
// - im2col: the zero-padded input seen through a strided view [N, C, kh, kw, oh, ow], copied out;
// - col2im: each kernel tap's column block added into a strided view of a zeroed padded image, in
//   CPU's order of taps (so sums round alike), then the padding cut off;
// - max_unpool: a scatter of each plane's values to their indices in a zeroed output plane.
// Their gradients are each other (col2im and im2col) and a gather (max_unpool), through autograd.
#include <ATen/native/Resize.h>
#include <ATen/native/im2col_shape_check.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include "ops/TpuOps.h"

namespace torch_tpu {
namespace {

void check_pair(at::IntArrayRef v, const char* name) {
  TORCH_CHECK(v.size() == 2, "It is expected ", name, " equals to 2, but got size ", v.size());
}

// Writes `result` into `out` (resized to its sizes) for the out= forms.
at::Tensor& into(const at::Tensor& result, at::Tensor& out) {
  check_out_device(result, out);
  TORCH_CHECK(out.scalar_type() == result.scalar_type(), "Expected out tensor to have dtype ",
              result.scalar_type(), ", but got ", out.scalar_type(), " instead");
  at::native::resize_output(out, result.sizes());
  copy_into(result, out, false);
  return out;
}

// ---- im2col and col2im ----

at::Tensor tpu_im2col(const at::Tensor& self, at::IntArrayRef k, at::IntArrayRef dil,
                  at::IntArrayRef pad, at::IntArrayRef stride) {
  check_pair(k, "kernel_size");
  check_pair(dil, "dilation");
  check_pair(pad, "padding");
  check_pair(stride, "stride");
  at::native::im2col_shape_check(self, at::Tensor(), k[0], k[1], dil[0], dil[1], pad[0], pad[1],
                                 stride[0], stride[1]);
  const bool batched = self.dim() == 4;
  at::Tensor input = batched ? self : self.unsqueeze(0);
  const int64_t n = input.size(0), c = input.size(1);
  at::Tensor padded =
      at::constant_pad_nd(input, {pad[1], pad[1], pad[0], pad[0]}, 0).contiguous();
  const int64_t hp = padded.size(2), wp = padded.size(3);
  const int64_t oh = (hp - (dil[0] * (k[0] - 1) + 1)) / stride[0] + 1;
  const int64_t ow = (wp - (dil[1] * (k[1] - 1) + 1)) / stride[1] + 1;
  at::Tensor windows =
      padded.as_strided({n, c, k[0], k[1], oh, ow},
                        {c * hp * wp, hp * wp, dil[0] * wp, dil[1], stride[0] * wp, stride[1]});
  at::Tensor out = windows.reshape({n, c * k[0] * k[1], oh * ow});
  return batched ? out : out.squeeze(0);
}

at::Tensor& tpu_im2col_out(const at::Tensor& self, at::IntArrayRef k, at::IntArrayRef dil,
                       at::IntArrayRef pad, at::IntArrayRef stride, at::Tensor& out) {
  return into(tpu_im2col(self, k, dil, pad, stride), out);
}

at::Tensor tpu_col2im(const at::Tensor& self, c10::SymIntArrayRef size_sym, at::IntArrayRef k,
                  at::IntArrayRef dil, at::IntArrayRef pad, at::IntArrayRef stride) {
  at::IntArrayRef size = C10_AS_INTARRAYREF_SLOW(size_sym);
  TORCH_CHECK(size.size() == 2, "It is expected output_size equals to 2, but got size ",
              size.size());
  check_pair(k, "kernel_size");
  check_pair(dil, "dilation");
  check_pair(pad, "padding");
  check_pair(stride, "stride");
  at::native::col2im_shape_check(self, at::Tensor(), size[0], size[1], k[0], k[1], dil[0],
                                 dil[1], pad[0], pad[1], stride[0], stride[1]);
  const bool batched = self.dim() == 3;
  at::Tensor cols = batched ? self : self.unsqueeze(0);
  const int64_t n = cols.size(0), c = cols.size(1) / (k[0] * k[1]);
  const int64_t hp = size[0] + 2 * pad[0], wp = size[1] + 2 * pad[1];
  const int64_t oh = (hp - (dil[0] * (k[0] - 1) + 1)) / stride[0] + 1;
  const int64_t ow = (wp - (dil[1] * (k[1] - 1) + 1)) / stride[1] + 1;
  at::Tensor blocks = cols.reshape({n, c, k[0], k[1], oh, ow});
  at::Tensor image = at::zeros({n, c, hp, wp}, self.options());
  if (image.numel() != 0) {
    for (int64_t i = 0; i < k[0]; i++) {
      for (int64_t j = 0; j < k[1]; j++) {
        const int64_t top = i * dil[0], left = j * dil[1];
        image.slice(2, top, top + stride[0] * (oh - 1) + 1, stride[0])
            .slice(3, left, left + stride[1] * (ow - 1) + 1, stride[1])
            .add_(blocks.select(2, i).select(2, j));
      }
    }
  }
  at::Tensor out =
      image.slice(2, pad[0], pad[0] + size[0]).slice(3, pad[1], pad[1] + size[1]).contiguous();
  return batched ? out : out.squeeze(0);
}

at::Tensor& tpu_col2im_out(const at::Tensor& self, c10::SymIntArrayRef size, at::IntArrayRef k,
                       at::IntArrayRef dil, at::IntArrayRef pad, at::IntArrayRef stride,
                       at::Tensor& out) {
  return into(tpu_col2im(self, size, k, dil, pad, stride), out);
}

// ---- max_unpool ----

// CPU's checks of max_unpool2d and 3d (MaxUnpooling.cpp): int64 indices of the input's shape, a
// 3-d or 4-d (4-d or 5-d) input with non-empty non-batch dimensions, its dtypes.
void check_unpool(const at::Tensor& self, const at::Tensor& indices, at::IntArrayRef size,
                  size_t n, const char* name) {
  TORCH_CHECK(indices.scalar_type() == at::kLong,
              "elements in indices should be type int64 but got: ", indices.scalar_type());
  if (n == 2) {
    TORCH_CHECK(size.size() == 2,
                "There should be exactly two elements (height, width) in output_size, but got ",
                size.size(), " elements.");
  } else {
    TORCH_CHECK(size.size() == 3,
                "There should be exactly three elements (depth, height, width) in output_size, "
                "but got: ",
                size.size(), " elements.");
  }
  const int64_t dims = static_cast<int64_t>(n);
  TORCH_CHECK(self.dim() == dims + 1 || self.dim() == dims + 2, "Input to ", name,
              " should be a ", dims + 1, "d or ", dims + 2,
              "d Tensor, but got a tensor with ", self.dim(), " dimensions.");
  TORCH_CHECK(self.sizes() == indices.sizes(),
              "Expected shape of indices to be same as that of the input tensor (", self.sizes(),
              ") but got indices tensor with shape: ", indices.sizes());
  for (int64_t i = 1; i < self.dim(); i++) {
    TORCH_CHECK(self.size(i) > 0, name, "_forward_out_cpu(): ",
                "Expected input to have non-zero size for non-batch dimensions, but got ",
                self.sizes(), " with dimension ", i, " being empty.");
  }
  const at::ScalarType type = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(type) ||
                                  at::isIntegralType(type, /*includeBool=*/false),
                              "\"", name, "\" not implemented for '", toString(type), "'");
}

// Each plane's values scattered to their flat indices in a zeroed plane of `size`.
at::Tensor unpool(const at::Tensor& self, const at::Tensor& indices, at::IntArrayRef size) {
  const int64_t spatial = static_cast<int64_t>(size.size());
  const bool batched = self.dim() == spatial + 2;
  at::Tensor x = batched ? self : self.unsqueeze(0);
  at::Tensor idx = batched ? indices : indices.unsqueeze(0);
  const int64_t n = x.size(0), c = x.size(1);
  int64_t plane = 1;
  for (int64_t s : size) {
    plane *= s;
  }
  at::Tensor flat = at::zeros({n, c, plane}, self.options());
  if (flat.numel() != 0 && x.numel() != 0) {
    flat.scatter_(2, idx.reshape({n, c, -1}), x.reshape({n, c, -1}));
  }
  std::vector<int64_t> shape = {n, c};
  shape.insert(shape.end(), size.begin(), size.end());
  at::Tensor out = flat.view(shape);
  if (batched) {
    out = out.contiguous(self.suggest_memory_format());
  }
  return batched ? out : out.squeeze(0);
}

at::Tensor tpu_max_unpool2d(const at::Tensor& self, const at::Tensor& indices,
                        c10::SymIntArrayRef size_sym) {
  at::IntArrayRef size = C10_AS_INTARRAYREF_SLOW(size_sym);
  check_unpool(self, indices, size, 2, "max_unpooling2d");
  return unpool(self, indices, size);
}

at::Tensor& tpu_max_unpool2d_out(const at::Tensor& self, const at::Tensor& indices,
                             c10::SymIntArrayRef size, at::Tensor& out) {
  return into(tpu_max_unpool2d(self, indices, size), out);
}

at::Tensor tpu_max_unpool3d(const at::Tensor& self, const at::Tensor& indices,
                        c10::SymIntArrayRef size_sym, at::IntArrayRef stride,
                        at::IntArrayRef padding) {
  at::IntArrayRef size = C10_AS_INTARRAYREF_SLOW(size_sym);
  check_unpool(self, indices, size, 3, "max_unpooling3d");
  TORCH_CHECK(stride.size() == 3,
              "There should be exactly three elements (depth, height, width) in stride, but got: ",
              stride.size(), " elements.");
  TORCH_CHECK(padding.size() == 3,
              "There should be exactly three elements (depth, height, width) in padding, but "
              "got: ",
              padding.size(), " elements.");
  TORCH_CHECK(stride[0] > 0 && stride[1] > 0 && stride[2] > 0,
              "strides should be greater than zero, but got stride: ", stride);
  return unpool(self, indices, size);
}

at::Tensor& tpu_max_unpool3d_out(const at::Tensor& self, const at::Tensor& indices,
                             c10::SymIntArrayRef size, at::IntArrayRef stride,
                             at::IntArrayRef padding, at::Tensor& out) {
  return into(tpu_max_unpool3d(self, indices, size, stride, padding), out);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("im2col", TORCH_FN(tpu_im2col));
  m.impl("im2col.out", TORCH_FN(tpu_im2col_out));
  m.impl("col2im", TORCH_FN(tpu_col2im));
  m.impl("col2im.out", TORCH_FN(tpu_col2im_out));
  m.impl("max_unpool2d", TORCH_FN(tpu_max_unpool2d));
  m.impl("max_unpool2d.out", TORCH_FN(tpu_max_unpool2d_out));
  m.impl("max_unpool3d", TORCH_FN(tpu_max_unpool3d));
  m.impl("max_unpool3d.out", TORCH_FN(tpu_max_unpool3d_out));
}

} // namespace torch_tpu
