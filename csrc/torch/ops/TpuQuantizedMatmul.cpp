// Quantized matmuls: torch._int_mm (int8 or uint8 @ int8 -> int32), the core's int_mm op
// (ops/tpu_ops_matmul.h). Its checks are PyTorch CPU's int_mm_out_cpu, in its order and words; CPU
// takes a uint8 self too, so this does (CUDA takes int8 only).
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "ops/TpuOps.h"
#include "runtime/TpuCore.h"

#include "core/include/tpu.h"

namespace torch_tpu {
namespace {

void check_int_mm_operands(const at::Tensor& self, const at::Tensor& mat2) {
  TORCH_CHECK(self.dim() == 2, "int_mm_out_cpu: Expected self to be of dimension 2 but got ",
              self.dim());
  TORCH_CHECK(mat2.dim() == 2, "int_mm_out_cpu: Expected mat2 to be of dimension 2 but got ",
              mat2.dim());
  TORCH_CHECK(self.size(1) == mat2.size(0),
              "int_mm_out_cpu: self.size(1) needs to match mat2.size(0) but got ", self.size(1),
              " and ", mat2.size(0));
  TORCH_CHECK(self.scalar_type() == at::kChar || self.scalar_type() == at::kByte,
              "int_mm_out_cpu: Expected self dtype to be int8 or uint8 but got ", self.dtype());
  TORCH_CHECK(mat2.scalar_type() == at::kChar,
              "int_mm_out_cpu: Expected mat2 dtype to be of type int8 but got ", mat2.dtype());
  TORCH_CHECK(self.device() == mat2.device(),
              "Expected all tensors to be on the same device, but found at least two devices, ",
              self.device(), " and ", mat2.device(), "!");
}

at::Tensor& int_mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& result) {
  check_int_mm_operands(self, mat2);
  check_out_device(self, result);
  TORCH_CHECK(result.scalar_type() == at::kInt,
              "int_mm_out_cpu: Expected result dtype to be of type kInt but got ", result.dtype());
  TORCH_CHECK(result.dim() == 2 && result.size(0) == self.size(0),
              "int_mm_out_cpu: Expected result.size(0) to be ", self.size(0), " but got ",
              result.dim() > 0 ? result.size(0) : 0);
  TORCH_CHECK(result.size(1) == mat2.size(1), "int_mm_out_cpu: Expected result.size(1) to be ",
              mat2.size(1), " but got ", result.size(1));
  TORCH_CHECK(result.is_contiguous(), "int_mm_out_cpu: Expected result to be contiguous.");
  if (result.numel() == 0) {
    return result;
  }
  OpCall call = new_call(TPU_OP_INT_MM, 2, 1);
  // The core's matmul layout: [1, rows, cols].
  call->tensors[0] = core_view(self.unsqueeze(0));
  call->tensors[1] = core_view(mat2.unsqueeze(0));
  call->tensors[2] = core_view(result.unsqueeze(0));
  launch(result.device().index(), std::move(call));
  return result;
}

// CPU's functional form sizes its result before any check: a 1-d operand raises IndexError there.
at::Tensor int_mm(const at::Tensor& self, const at::Tensor& mat2) {
  at::Tensor result =
      at::empty({self.size(0), mat2.size(1)}, self.options().dtype(at::kInt));
  return int_mm_out(self, mat2, result);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_int_mm", TORCH_FN(int_mm));
  m.impl("_int_mm.out", TORCH_FN(int_mm_out));
}

} // namespace torch_tpu
