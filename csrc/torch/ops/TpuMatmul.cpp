// The matmul family: mm, bmm, addmm, baddbmm, addbmm, addmv, dot and vdot, each one batched GEMM
// in the core (drivers/host/kernels/matmul/matmul.h), and addr's out= form. matmul, linear,
// einsum, mv and their backward (mm and bmm on transposed views) reach these through PyTorch's
// composites, so autograd stays PyTorch's own. Output metadata comes from the structured metas
// where the op has one.
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/addr.h>
#include <ATen/ops/addmm_meta.h>
#include <ATen/ops/addmv_meta.h>
#include <ATen/ops/baddbmm_meta.h>
#include <ATen/ops/bmm_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/mm_meta.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/scalar_tensor.h>
#include <torch/library.h>

#include "ops/TpuOps.h"
#include "ops/TpuStructured.h"
#include "runtime/TpuCore.h"

#include "core/drivers/host/host.h"
#include "core/drivers/tpu_driver.h"
#include "core/include/tpu.h"

namespace torch_tpu {
namespace {

// The functional form of a structured meta. TpuStructured.h's Functional calls empty_strided,
// which refuses the empty strides these metas pass (they mean "contiguous").
template <typename Meta>
struct Alloc final : Meta {
  void set_output_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::TensorOptions options) override {
    out_ = strides.empty() ? at::empty(sizes, options) : at::empty_strided(sizes, strides, options);
  }
  void set_output_raw_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                              at::TensorOptions options) override {
    set_output_strided(i, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t /*i*/) override {
    return out_;
  }
  at::Tensor out_;
};

// A [batch, rows, cols] core view of `t` with the given sizes and element strides.
tpu_tensor view3(const at::Tensor& t, int64_t b, int64_t r, int64_t c, int64_t bs, int64_t rs,
                 int64_t cs) {
  tpu_tensor v = core_view(t.dim() == 0 ? t.reshape({1}) : t);
  v.ndim = 3;
  const int64_t sizes[3] = {b, r, c}, strides[3] = {bs, rs, cs};
  for (int d = 0; d < 3; d++) {
    v.sizes[d] = sizes[d];
    v.strides[d] = strides[d];
  }
  return v;
}

tpu_tensor matrix(const at::Tensor& t) {
  return view3(t, 1, t.size(0), t.size(1), 0, t.stride(0), t.stride(1));
}

tpu_tensor batched(const at::Tensor& t) {
  return view3(t, t.size(0), t.size(1), t.size(2), t.stride(0), t.stride(1), t.stride(2));
}

// A vector as an [n, 1] column.
tpu_tensor column(const at::Tensor& t) {
  return view3(t, 1, t.size(0), 1, 0, t.stride(0), 1);
}

// Negative views are a lazy bit the kernel cannot see: materialize them (conjugate views of A and
// B are read conjugated by the kernel instead; see conj_flags).
at::Tensor resolved(const at::Tensor& t) {
  return t.resolve_neg();
}

// The kernel's scalars[4] bits for conjugate views of A and B.
int64_t conj_flags(const at::Tensor& a, const at::Tensor& b) {
  return (a.is_conj() ? TPU_GEMM_CONJ_A : 0) | (b.is_conj() ? TPU_GEMM_CONJ_B : 0);
}

void check_device(const at::Tensor& out, std::initializer_list<const at::Tensor*> inputs) {
  for (const at::Tensor* t : inputs) {
    TORCH_CHECK(t->device() == out.device(),
                "Expected all tensors to be on the same device, but found at least two devices, ",
                out.device(), " and ", t->device(), "!");
  }
}

// PyTorch CPU's refusal of bool matmuls (and CUDA's). Their kernels dispatch on the dtype only
// after the shortcuts for empty results and empty sums, so those take bool too.
void check_dtype(const at::Tensor& t, const char* op) {
  TORCH_CHECK_NOT_IMPLEMENTED(t.scalar_type() != at::kBool, "\"", op,
                              "\" not implemented for 'Bool'");
}

// The operands' dtype check of addmm_impl_cpu_ (CUDA's addmm makes it too): first, whatever the
// sizes.
void check_same_dtype(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.dtype() == b.dtype(), "expected m1 and m2 to have the same dtype, but got: ",
              a.dtype(), " != ", b.dtype());
}

// The batched kernels read every operand as the first batch's dtype (data_ptr<scalar_t>), which
// is how CPU and CUDA refuse the others once past their shortcuts.
void check_batch_dtype(const at::Tensor& t, at::ScalarType expected) {
  TORCH_CHECK(t.scalar_type() == expected, "expected scalar type ", expected, " but found ",
              t.scalar_type());
}

// The shortcut of PyTorch's matmul kernels for a sum over nothing (k == 0): out = beta * c, made
// as they make it (zero_, or copy_ then mul_, whose checks refuse a beta out's dtype cannot hold,
// e.g. 0.5 for an integer out). `c` is the addend, already of out's sizes; undefined for mm/bmm.
void scale_addend(const at::Tensor& out, const at::Tensor& c, const at::Scalar& beta) {
  if (!c.defined() || beta.toComplexDouble() == 0.0) {
    out.zero_();
    return;
  }
  if (!c.is_same(out)) {
    out.copy_(c);
  }
  out.mul_(beta);
}

void set_scalars(tpu_op_call* call, c10::ScalarType type, const at::Scalar& alpha,
                 const at::Scalar& beta) {
  if (at::isComplexType(type)) {
    auto a = alpha.to<c10::complex<double>>(), b = beta.to<c10::complex<double>>();
    call->scalars[0].f = a.real();
    call->scalars[1].f = b.real();
    call->scalars[2].f = a.imag();
    call->scalars[3].f = b.imag();
  } else if (at::isIntegralType(type, /*includeBool=*/true)) {
    call->scalars[0].i = alpha.to<int64_t>();
    call->scalars[1].i = beta.to<int64_t>();
  } else {
    call->scalars[0].f = alpha.to<double>();
    call->scalars[1].f = beta.to<double>();
  }
}

// out = alpha * a @ b + beta * c over core views; c may be absent.
void launch_gemm(tpu_op_id op, const at::Tensor& out, const tpu_tensor& a, const tpu_tensor& b,
                 const tpu_tensor* c, const tpu_tensor& out_view, const at::Scalar& alpha,
                 const at::Scalar& beta, int64_t conj) {
  if (out.numel() == 0) {
    return;
  }
  OpCall call = new_call(op, c ? 3 : 2, 1);
  call->tensors[0] = a;
  call->tensors[1] = b;
  if (c) {
    call->tensors[2] = *c;
  }
  call->tensors[c ? 3 : 2] = out_view;
  set_scalars(call, out.scalar_type(), alpha, beta);
  call->scalars[4].i = conj;
  launch(out.device().index(), std::move(call));
}

// ---- mm, addmm ----

// A conjugate out: a conjugate view given as out= or as self of an in-place op (PyTorch's
// Conjugate key lets the matmuls through with the bit set, so that kernels can read conjugated
// operands). The kernel writes stored values, so compute into a plain tensor and copy_ it in, as
// CUDA's matmuls do. Returns false when out is plain and the caller goes on.
template <typename Kernel>
bool via_plain_out(const at::Tensor& self_in, const at::Tensor& out, Kernel kernel) {
  if (!out.is_conj()) {
    return false;
  }
  // Holds self's values where a meta already copied them into out.
  at::Tensor plain = out.resolve_conj();
  kernel(self_in.is_same(out) ? plain : self_in, plain);
  out.copy_(plain);
  return true;
}

// addmm_impl_cpu_'s order: the dtypes, the shortcuts (nothing to write, k == 0), then the
// kernel's dtype dispatch.
void mm_kernel(tpu_op_id op, const at::Tensor& self_in, const at::Tensor& a_in,
               const at::Tensor& b_in, const at::Scalar& beta, const at::Scalar& alpha,
               const at::Tensor& out, bool with_self) {
  if (via_plain_out(self_in, out, [&](const at::Tensor& self, const at::Tensor& plain) {
        mm_kernel(op, self, a_in, b_in, beta, alpha, plain, with_self);
      })) {
    return;
  }
  // addmm_out_cpu expands self to the result's sizes before anything else.
  const at::Tensor addend =
      with_self ? *at::expand_size(self_in, {a_in.size(0), b_in.size(1)}, "addmm_out")
                : at::Tensor();
  check_same_dtype(a_in, b_in);
  check_device(out, {&a_in, &b_in});
  if (with_self) {
    check_device(out, {&self_in});
  }
  if (out.numel() == 0) {
    return;
  }
  if (a_in.size(1) == 0) {
    scale_addend(out, addend, beta);
    return;
  }
  check_dtype(out, "addmm_impl_cpu_");
  at::Tensor a = resolved(a_in), b = resolved(b_in);
  if (!with_self) {
    launch_gemm(op, out, matrix(a), matrix(b), nullptr, matrix(out), 1, 0, conj_flags(a, b));
    return;
  }
  at::Tensor c = resolved(self_in).resolve_conj().expand({a.size(0), b.size(1)});
  tpu_tensor c_view = matrix(c);
  launch_gemm(op, out, matrix(a), matrix(b), &c_view, matrix(out), alpha, beta,
              conj_flags(a, b));
}

at::Tensor mm(const at::Tensor& self, const at::Tensor& mat2) {
  Alloc<at::meta::structured_mm> op;
  op.meta(self, mat2);
  const at::Tensor& out = op.maybe_get_output(0);
  mm_kernel(TPU_OP_MM, self, self, mat2, 0, 1, out, false);
  return out;
}

at::Tensor& mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  Out<at::meta::structured_mm> op(out);
  op.meta(self, mat2);
  mm_kernel(TPU_OP_MM, self, self, mat2, 0, 1, out, false);
  return out;
}

at::Tensor addmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                 const at::Scalar& beta, const at::Scalar& alpha) {
  Alloc<at::meta::structured_addmm> op;
  op.meta(self, mat1, mat2, beta, alpha);
  const at::Tensor& out = op.maybe_get_output(0);
  mm_kernel(TPU_OP_ADDMM, self, mat1, mat2, beta, alpha, out, true);
  return out;
}

at::Tensor& addmm_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                      const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  Out<at::meta::structured_addmm> op(out);
  op.meta(self, mat1, mat2, beta, alpha);
  mm_kernel(TPU_OP_ADDMM, self, mat1, mat2, beta, alpha, out, true);
  return out;
}

at::Tensor& addmm_(at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                   const at::Scalar& beta, const at::Scalar& alpha) {
  Inplace<at::meta::structured_addmm> op(self);
  op.meta(self, mat1, mat2, beta, alpha);
  mm_kernel(TPU_OP_ADDMM, self, mat1, mat2, beta, alpha, self, true);
  return self;
}

// ---- bmm, baddbmm ----

// bmm_out_or_baddbmm_'s order (CUDA's baddbmm_out_cuda_impl has the same): the shortcuts for
// nothing to write and k == 0 first, then the dtype dispatch on batch1's dtype. baddbmm's meta
// has already copied self into out when beta != 0.
void bmm_kernel(tpu_op_id op, const at::Tensor& self_in, const at::Tensor& a_in,
                const at::Tensor& b_in, const at::Scalar& beta, const at::Scalar& alpha,
                const at::Tensor& out, bool with_self) {
  if (via_plain_out(self_in, out, [&](const at::Tensor& self, const at::Tensor& plain) {
        bmm_kernel(op, self, a_in, b_in, beta, alpha, plain, with_self);
      })) {
    return;
  }
  check_device(out, {&a_in, &b_in});
  if (with_self) {
    check_device(out, {&self_in});
  }
  if (out.numel() == 0) {
    return;
  }
  if (a_in.size(2) == 0) {
    scale_addend(out, with_self ? out : at::Tensor(), beta);
    return;
  }
  check_dtype(a_in, with_self ? "baddbmm_cpu" : "bmm");
  check_batch_dtype(b_in, a_in.scalar_type());
  check_batch_dtype(out, a_in.scalar_type());
  at::Tensor a = resolved(a_in), b = resolved(b_in);
  if (!with_self) {
    launch_gemm(op, out, batched(a), batched(b), nullptr, batched(out), 1, 0,
                conj_flags(a, b));
    return;
  }
  at::Tensor c = resolved(self_in).resolve_conj().expand(out.sizes());
  tpu_tensor c_view = batched(c);
  launch_gemm(op, out, batched(a), batched(b), &c_view, batched(out), alpha, beta,
                conj_flags(a, b));
}

at::Tensor bmm(const at::Tensor& self, const at::Tensor& mat2) {
  Alloc<at::meta::structured_bmm> op;
  op.meta(self, mat2);
  const at::Tensor& out = op.maybe_get_output(0);
  bmm_kernel(TPU_OP_BMM, self, self, mat2, 0, 1, out, false);
  return out;
}

at::Tensor& bmm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  Out<at::meta::structured_bmm> op(out);
  op.meta(self, mat2);
  bmm_kernel(TPU_OP_BMM, self, self, mat2, 0, 1, out, false);
  return out;
}

at::Tensor baddbmm(const at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2,
                   const at::Scalar& beta, const at::Scalar& alpha) {
  Alloc<at::meta::structured_baddbmm> op;
  op.meta(self, b1, b2, beta, alpha);
  const at::Tensor& out = op.maybe_get_output(0);
  bmm_kernel(TPU_OP_BADDBMM, self, b1, b2, beta, alpha, out, true);
  return out;
}

at::Tensor& baddbmm_out(const at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2,
                        const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  Out<at::meta::structured_baddbmm> op(out);
  op.meta(self, b1, b2, beta, alpha);
  bmm_kernel(TPU_OP_BADDBMM, self, b1, b2, beta, alpha, out, true);
  return out;
}

at::Tensor& baddbmm_(at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2,
                     const at::Scalar& beta, const at::Scalar& alpha) {
  Inplace<at::meta::structured_baddbmm> op(self);
  op.meta(self, b1, b2, beta, alpha);
  bmm_kernel(TPU_OP_BADDBMM, self, b1, b2, beta, alpha, self, true);
  return self;
}

// ---- addbmm: not structured; PyTorch CPU's addbmm_out and addbmm_impl_ ----

// out = beta * self + alpha * sum_i b1[i] @ b2[i], with CPU's checks in CPU's order: out takes
// self's broadcast sizes (resize_as_: in place, self itself is resized), a sum over no batches is
// out.mul_(beta), and each batch is an addmm_ into out, whose checks compare out's dtype (not
// self's) with the batches'.
at::Tensor& addbmm_impl(const at::Tensor& self, const at::Tensor& b1_in, const at::Tensor& b2_in,
                        const at::Scalar& beta, const at::Scalar& alpha, const at::Tensor& out) {
  TORCH_CHECK(b1_in.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(b2_in.dim() == 3, "batch2 must be a 3D tensor");
  TORCH_CHECK(b1_in.size(0) == b2_in.size(0),
              "batch1 and batch2 must have same number of batches, got ", b1_in.size(0), " and ",
              b2_in.size(0));
  TORCH_CHECK(b1_in.size(2) == b2_in.size(1), "Incompatible matrix sizes for bmm (",
              b1_in.size(1), "x", b1_in.size(2), " and ", b2_in.size(1), "x", b2_in.size(2), ")");
  check_device(out, {&self, &b1_in, &b2_in});
  const int64_t m = b1_in.size(1), n = b2_in.size(2);
  // In place with a self that only broadcasts to the result: its values, before it is resized.
  at::Tensor c = out.is_same(self) && self.sizes() != at::IntArrayRef{m, n}
                     ? self.expand({m, n}).clone()
                     : *at::expand_size(self, {m, n}, "addbmm_out");
  out.resize_({m, n});
  const bool with_beta = beta.toComplexDouble() != 0.0;
  if (b1_in.size(0) == 0) {
    if (with_beta && !c.is_same(out)) {
      out.copy_(c);
    }
    scale_addend(out, with_beta ? out : at::Tensor(), beta);
    return const_cast<at::Tensor&>(out);
  }
  // addmm_'s meta, then addmm_impl_cpu_, for the first batch (the others repeat them).
  TORCH_CHECK(out.scalar_type() == b2_in.scalar_type(),
              "self and mat2 must have the same dtype, but got ", out.scalar_type(), " and ",
              b2_in.scalar_type());
  TORCH_CHECK(b1_in.scalar_type() == b2_in.scalar_type(),
              "mat1 and mat2 must have the same dtype, but got ", b1_in.scalar_type(), " and ",
              b2_in.scalar_type());
  if (out.numel() == 0) {
    return const_cast<at::Tensor&>(out);
  }
  if (b1_in.size(2) == 0) {
    if (with_beta && !c.is_same(out)) {
      out.copy_(c);
    }
    scale_addend(out, with_beta ? out : at::Tensor(), beta);
    return const_cast<at::Tensor&>(out);
  }
  check_dtype(out, "addmm_impl_cpu_");
  at::Tensor b1 = resolved(b1_in), b2 = resolved(b2_in);
  at::Tensor addend = resolved(c).resolve_conj();
  tpu_tensor c_view = matrix(addend);
  launch_gemm(TPU_OP_ADDBMM, out, batched(b1), batched(b2), &c_view, matrix(out), alpha, beta,
              conj_flags(b1, b2));
  return const_cast<at::Tensor&>(out);
}

at::Tensor& addbmm_out(const at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2,
                       const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  return addbmm_impl(self, b1, b2, beta, alpha, out);
}

at::Tensor addbmm(const at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2,
                  const at::Scalar& beta, const at::Scalar& alpha) {
  at::Tensor out = at::empty({0}, self.options());
  return addbmm_impl(self, b1, b2, beta, alpha, out);
}

at::Tensor& addbmm_(at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2,
                    const at::Scalar& beta, const at::Scalar& alpha) {
  return addbmm_impl(self, b1, b2, beta, alpha, self);
}

// ---- addmv (mv and matmul's matrix-vector case) and dot ----

// addmv_out_cpu's order (addmv_out_cuda's too): an empty matrix gives beta * self through
// mul_out, which lays the result out as self broadcast with a 0-d tensor, not as the meta's
// [rows]; then nothing to write; then the dtype dispatch.
void addmv_kernel(const at::Tensor& self_in, const at::Tensor& mat_in, const at::Tensor& vec_in,
                  const at::Scalar& beta, const at::Scalar& alpha, const at::Tensor& out) {
  check_device(out, {&self_in, &mat_in, &vec_in});
  if (mat_in.numel() == 0) {
    if (beta.toComplexDouble() == 0.0) {
      out.zero_();
    } else {
      at::mul_out(const_cast<at::Tensor&>(out), self_in,
                  at::scalar_tensor(beta, self_in.options().device(at::kCPU)));
    }
    return;
  }
  if (out.numel() == 0) {
    return;
  }
  check_dtype(out, "addmv_impl_cpu");
  at::Tensor mat = resolved(mat_in), vec = resolved(vec_in);
  at::Tensor c = resolved(self_in).resolve_conj().expand({mat.size(0)});
  tpu_tensor c_view = column(c);
  launch_gemm(TPU_OP_ADDMV, out, matrix(mat), column(vec), &c_view, column(out), alpha, beta,
              conj_flags(mat, vec));
}

at::Tensor addmv(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                 const at::Scalar& beta, const at::Scalar& alpha) {
  Alloc<at::meta::structured_addmv> op;
  op.meta(self, mat, vec, beta, alpha);
  const at::Tensor& out = op.maybe_get_output(0);
  addmv_kernel(self, mat, vec, beta, alpha, out);
  return out;
}

at::Tensor& addmv_out(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                      const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  Out<at::meta::structured_addmv> op(out);
  op.meta(self, mat, vec, beta, alpha);
  addmv_kernel(self, mat, vec, beta, alpha, out);
  return out;
}

at::Tensor& addmv_(at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                   const at::Scalar& beta, const at::Scalar& alpha) {
  Inplace<at::meta::structured_addmv> op(self);
  op.meta(self, mat, vec, beta, alpha);
  addmv_kernel(self, mat, vec, beta, alpha, self);
  return self;
}

// The checks of PyTorch's dot_check.
void check_dot(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.dim() == 1 && other.dim() == 1, "1D tensors expected, but got ", self.dim(),
              "D and ", other.dim(), "D tensors");
  TORCH_CHECK(self.scalar_type() == other.scalar_type(),
              "dot : expected both vectors to have same dtype, but found ", self.scalar_type(),
              " and ", other.scalar_type());
  TORCH_CHECK(self.numel() == other.numel(), "inconsistent tensor size, expected tensor [",
              self.numel(), "] and src [", other.numel(),
              "] to have the same number of elements, but got ", self.numel(), " and ",
              other.numel(), " elements respectively");
  check_device(self, {&other});
  check_dtype(self, "dot");
}

at::Tensor dot_impl(const at::Tensor& a_in, const at::Tensor& b_in) {
  at::Tensor a = resolved(a_in), b = resolved(b_in);
  at::Tensor out = at::empty({}, a.options());
  int64_t k = a.numel();
  if (k == 0) {  // a sum over nothing, as on CPU; a DOT of empty vectors has nothing to read
    return out.zero_();
  }
  launch_gemm(TPU_OP_DOT, out, view3(a, 1, 1, k, 0, k, a.stride(0)), column(b), nullptr,
              view3(out, 1, 1, 1, 0, 1, 1), 1, 0, conj_flags(a, b));
  return out;
}

// dot and vdot of conjugate views return what CUDA's (and CPU's) do: where both factors end up
// conjugated, the conjugate view of the plain product (sum conj(a) conj(b) = conj(sum a b)).
at::Tensor dot(const at::Tensor& self, const at::Tensor& other) {
  check_dot(self, other);
  if (self.is_conj() && other.is_conj()) {
    return dot_impl(self.conj(), other.conj()).conj();
  }
  return dot_impl(self, other);
}

at::Tensor vdot(const at::Tensor& self, const at::Tensor& other) {
  check_dot(self, other);
  if (self.is_complex() && !self.is_conj() && other.is_conj()) {
    return dot_impl(self, other.conj()).conj();
  }
  return dot_impl(self.is_complex() ? self.conj() : self, other);
}

// ---- addr: PyTorch's composite functional form (outer product and an add, native ops), with
// the checks of CPU's out= kernel, which the composite out= form other devices get does not make:
// out on the inputs' device, and in place self is the result itself, not broadcast.
at::Tensor& addr_out(const at::Tensor& self, const at::Tensor& vec1, const at::Tensor& vec2,
                     const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  check_out_device(self, out);
  for (auto [vec, name] : {std::pair{&vec1, "vec1"}, std::pair{&vec2, "vec2"}}) {
    TORCH_CHECK(vec->dim() == 1, "addr: Expected 1-D argument ", name, ", but got ", vec->dim(),
                "-D");
  }
  if (out.is_same(self)) {
    TORCH_CHECK(self.dim() == 2, "2D tensor expected, got ", self.dim(), "D tensor for input");
    TORCH_CHECK(self.size(0) == vec1.size(0) && self.size(1) == vec2.size(0),
                "size mismatch, input: ", self.sizes(), ", v1: ", vec1.sizes(), ", v2: ",
                vec2.sizes());
  }
  at::Tensor result = at::addr(self, vec1, vec2, beta, alpha);
  TORCH_CHECK(at::can_cast(result.scalar_type(), out.scalar_type()), "result type ",
              result.scalar_type(), " can't be cast to the desired output type ",
              out.scalar_type());
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

// ---- the BLAS hand-over from Python ----

// The driver's extra `name` as a function of type Fn, or nullptr when it has none.
template <typename Fn>
Fn driver_proc(const char* name) {
  return reinterpret_cast<Fn>(tpu_driver_proc(name));
}

// Handed to the host driver whichever driver runs: the PJRT driver's fallback runs the host
// kernels, whose linalg ops find LAPACK in this library.
void set_blas_library(c10::string_view path) {
  const tpu_driver_i* host = tpu_driver_find("host");
  if (!host || !host->get_proc_address) return;
  if (auto set_path =
          reinterpret_cast<tpu_host_set_blas_path_fn>(host->get_proc_address(TPU_HOST_SET_BLAS_PATH))) {
    set_path(std::string(path).c_str());
  }
}

std::string blas_info() {
  check(tpu_driver_error());
  auto info = driver_proc<tpu_host_blas_info_fn>(TPU_HOST_BLAS_INFO);
  if (!info) {
    return std::string("none: the ") + tpu_driver()->name + " driver runs GEMMs itself";
  }
  char text[512];
  info(text, sizeof text);
  return text;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("mm", TORCH_FN(mm));
  m.impl("mm.out", TORCH_FN(mm_out));
  m.impl("addmm", TORCH_FN(addmm));
  m.impl("addmm.out", TORCH_FN(addmm_out));
  m.impl("addmm_", TORCH_FN(addmm_));
  m.impl("bmm", TORCH_FN(bmm));
  m.impl("bmm.out", TORCH_FN(bmm_out));
  m.impl("baddbmm", TORCH_FN(baddbmm));
  m.impl("baddbmm.out", TORCH_FN(baddbmm_out));
  m.impl("baddbmm_", TORCH_FN(baddbmm_));
  m.impl("addbmm", TORCH_FN(addbmm));
  m.impl("addbmm.out", TORCH_FN(addbmm_out));
  m.impl("addbmm_", TORCH_FN(addbmm_));
  m.impl("addmv", TORCH_FN(addmv));
  m.impl("addmv.out", TORCH_FN(addmv_out));
  m.impl("addmv_", TORCH_FN(addmv_));
  m.impl("addr.out", TORCH_FN(addr_out));
  m.impl("dot", TORCH_FN(dot));
  m.impl("vdot", TORCH_FN(vdot));
}

void use_f32_kernel(bool enabled) {
  check(tpu_driver_error());
  auto use = driver_proc<tpu_host_use_f32_kernel_fn>(TPU_HOST_USE_F32_KERNEL);
  TORCH_CHECK(use, "the ", tpu_driver()->name, " driver has no fp32 kernel switch");
  use(enabled);
}

// torch.ops.torch_tpu._set_blas_library(path) and _blas_info(): the Python package hands the
// BLAS's path to the core at import (opened on the first GEMM) and tests read what runs.
// _use_f32_kernel(False) sends float32 GEMMs to the BLAS: tests and bench compare the two.
TORCH_LIBRARY_FRAGMENT(torch_tpu, m) {
  m.def("_set_blas_library(str path) -> ()", &set_blas_library);
  m.def("_blas_info() -> str", &blas_info);
  m.def("_use_f32_kernel(bool enabled) -> ()", &use_f32_kernel);
}

} // namespace torch_tpu
