// torch.linalg on the core's linalg family (csrc/core/ops/tpu_ops_linalg.h): Cholesky, LU
// factor and solve, triangular solves and the symmetric eigendecomposition are core ops, and the
// rest are PyTorch's own formulas on them (solve = lu_factor + lu_solve, inv = solve against the
// identity, det and slogdet from the LU's diagonal and the pivots' parity, cholesky_solve and
// cholesky_inverse as two triangular solves). Output metadata comes from ATen's structured metas
// (TpuStructured.h), so sizes, column-major strides and argument errors are CPU's; the non-_ex
// variants raise PyTorch's messages through at::_linalg_check_errors, which reads info back to the
// host as CUDA does. The core computes in float32 and float64: other dtypes (complex, and the
// half dtypes CPU refuses with its own message) run on the host through the counted fallback.
#include <ATen/native/LinearAlgebraUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_cholesky_solve_helper.h>
#include <ATen/ops/_linalg_check_errors.h>
#include <ATen/ops/_linalg_det.h>
#include <ATen/ops/_linalg_det_meta.h>
#include <ATen/ops/_linalg_eigh.h>
#include <ATen/ops/_linalg_eigh_meta.h>
#include <ATen/ops/_linalg_slogdet.h>
#include <ATen/ops/_linalg_slogdet_meta.h>
#include <ATen/ops/_linalg_solve_ex.h>
#include <ATen/ops/_linalg_solve_ex_meta.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cholesky_inverse.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/linalg_cholesky_ex.h>
#include <ATen/ops/linalg_cholesky_ex_meta.h>
#include <ATen/ops/linalg_inv_ex.h>
#include <ATen/ops/linalg_inv_ex_meta.h>
#include <ATen/ops/linalg_lu_factor_ex.h>
#include <ATen/ops/linalg_lu_meta.h>
#include <ATen/ops/linalg_lu_factor_ex_meta.h>
#include <ATen/ops/linalg_lu_solve.h>
#include <ATen/ops/linalg_lu_solve_meta.h>
#include <ATen/ops/linalg_solve_triangular.h>
#include <ATen/ops/lu_unpack.h>
#include <ATen/ops/lu_unpack_meta.h>
#include <ATen/ops/tril.h>
#include <ATen/ops/triu.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/prod.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/triangular_solve.h>
#include <ATen/ops/triangular_solve_meta.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <initializer_list>
#include <string>

#include "ops/TpuOps.h"
#include "ops/TpuStructured.h"
#include "runtime/TpuCore.h"

namespace torch_tpu {
namespace {

// Whether the core computes in this dtype.
bool core_dtype(const at::Tensor& t) {
  return t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble;
}

// Launches `op` on the views of `inputs` then `outputs`, with integer scalars.
void run(tpu_op_id op, std::initializer_list<at::Tensor> inputs,
         std::initializer_list<at::Tensor> outputs, std::initializer_list<int64_t> scalars) {
  OpCall call = new_call(op, static_cast<int>(inputs.size()), static_cast<int>(outputs.size()));
  int i = 0;
  for (const at::Tensor& t : inputs) {
    call->tensors[i++] = core_view(t);
  }
  for (const at::Tensor& t : outputs) {
    call->tensors[i++] = core_view(t);
  }
  int s = 0;
  for (int64_t v : scalars) {
    call->scalars[s++].i = v;
  }
  launch(inputs.begin()->device().index(), std::move(call));
}

// Whether `out` shares memory with any of `inputs` (a fresh output never does).
bool overlaps(const at::Tensor& out, std::initializer_list<at::Tensor> inputs) {
  for (const at::Tensor& t : inputs) {
    if (t.defined() && out.storage().is_alias_of(t.storage())) {
      return true;
    }
  }
  return false;
}

// An uninitialized tensor of t's sizes, batched column-major (LAPACK's layout, CPU's strides).
at::Tensor empty_column_major(at::IntArrayRef sizes, const at::TensorOptions& options) {
  return at::empty_strided(sizes, at::native::batched_matrix_contiguous_strides(sizes, true),
                           options);
}

// Copies the host result `host` into the tpu tensor `out`.
void copy_back(const at::Tensor& host, const at::Tensor& out) {
  copy_into(host, out, false);
}

// The batch of `t` (all but its last `matrix_dims` sizes) followed by `tail`.
std::vector<int64_t> batch_then(const at::Tensor& t, int64_t matrix_dims,
                                std::initializer_list<int64_t> tail) {
  std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end() - matrix_dims);
  sizes.insert(sizes.end(), tail);
  return sizes;
}

// ---- Cholesky ----

void run_cholesky(const at::Tensor& A, bool upper, bool check_errors, const at::Tensor& L,
                  const at::Tensor& info) {
  if (!core_dtype(A)) {
    begin_host_fallback("aten::linalg_cholesky_ex.L");
    auto host = at::linalg_cholesky_ex(A.cpu(), upper, false);
    copy_back(std::get<0>(host), L);
    copy_back(std::get<1>(host), info);
  } else if (L.numel() == 0) {
    info.zero_();
  } else if (overlaps(L, {A}) || overlaps(info, {A})) {
    at::Tensor l = at::empty_like(L), i = at::empty_like(info);
    run(TPU_OP_CHOLESKY, {A}, {l, i}, {upper});
    copy_into(l, L, false);
    copy_into(i, info, false);
  } else {
    run(TPU_OP_CHOLESKY, {A}, {L, info}, {upper});
  }
  if (check_errors) {
    at::_linalg_check_errors(info, "linalg.cholesky_ex", A.dim() == 2);
  }
}

std::tuple<at::Tensor, at::Tensor> linalg_cholesky_ex(const at::Tensor& A, bool upper,
                                                      bool check_errors) {
  Functional<at::meta::structured_linalg_cholesky_ex, 2> op;
  op.meta(A, upper, check_errors);
  run_cholesky(A, upper, check_errors, op.outputs_[0], op.outputs_[1]);
  return {op.outputs_[0], op.outputs_[1]};
}

std::tuple<at::Tensor&, at::Tensor&> linalg_cholesky_ex_out(const at::Tensor& A, bool upper,
                                                            bool check_errors, at::Tensor& L,
                                                            at::Tensor& info) {
  Out<at::meta::structured_linalg_cholesky_ex, 2> op(L, info);
  op.meta(A, upper, check_errors);
  run_cholesky(A, upper, check_errors, L, info);
  return {L, info};
}

// The deprecated torch.cholesky: linalg.cholesky with its own name in the error.
at::Tensor cholesky_(const at::Tensor& self, bool upper) {
  TORCH_WARN_ONCE("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be ",
                  "removed in a future PyTorch release.");
  if (self.numel() == 0) {
    return at::empty_like(self, at::MemoryFormat::Contiguous);
  }
  at::native::squareCheckInputs(self, "cholesky");
  auto [L, info] = at::linalg_cholesky_ex(self, upper, false);
  at::_linalg_check_errors(info, "cholesky", self.dim() == 2);
  return L;
}

at::Tensor& cholesky_out(const at::Tensor& self, bool upper, at::Tensor& out) {
  at::Tensor L = cholesky_(self, upper);
  at::native::resize_output(out, L.sizes());
  copy_into(L, out, false);
  return out;
}

// ---- Triangular solves ----

// X with A X = B (left) or X A = B, A and B of equal batches, into x (any strides).
void solve_triangular_into(const at::Tensor& A, const at::Tensor& B, bool upper, bool left,
                           bool unit, const at::Tensor& x) {
  if (x.numel() == 0) {
    return;
  }
  if (overlaps(x, {A, B})) {
    at::Tensor fresh = at::empty_like(x);
    run(TPU_OP_TRIANGULAR_SOLVE, {A, B}, {fresh}, {upper, left, unit});
    copy_into(fresh, x, false);
    return;
  }
  run(TPU_OP_TRIANGULAR_SOLVE, {A, B}, {x}, {upper, left, unit});
}

at::Tensor& linalg_solve_triangular_out(const at::Tensor& A, const at::Tensor& B, bool upper,
                                        bool left, bool unitriangular, at::Tensor& out) {
  at::native::checkInputsSolver(A, B, left, "linalg.solve_triangular");
  auto [B_, A_] = at::native::_linalg_broadcast_batch_dims(B, A, nullptr);
  // CPU's resize_output with the result column-major.
  if (at::native::resize_output_check(out, B_.sizes())) {
    out.resize_(B_.mT().sizes(), at::MemoryFormat::Contiguous);
    out.transpose_(-2, -1);
  }
  if (!core_dtype(A) || !core_dtype(B) || A.scalar_type() != B.scalar_type() ||
      out.scalar_type() != A.scalar_type()) {
    begin_host_fallback("aten::linalg_solve_triangular.out");
    copy_back(at::linalg_solve_triangular(A.cpu(), B.cpu(), upper, left, unitriangular), out);
    return out;
  }
  solve_triangular_into(A_, B_, upper, left, unitriangular, out);
  return out;
}

at::Tensor linalg_solve_triangular(const at::Tensor& A, const at::Tensor& B, bool upper,
                                   bool left, bool unitriangular) {
  at::Tensor out = at::empty({0}, B.options());
  linalg_solve_triangular_out(A, B, upper, left, unitriangular, out);
  return out;
}

void run_triangular_solve(const at::Tensor& self, const at::Tensor& A, bool upper, bool transpose,
                          bool unitriangular, const at::Tensor& X, const at::Tensor& M) {
  auto [b, a] = at::native::_linalg_broadcast_batch_dims(self, A, "triangular_solve");
  if (!core_dtype(A) || !core_dtype(self)) {
    begin_host_fallback("aten::triangular_solve.X");
    auto host = at::triangular_solve(self.cpu(), A.cpu(), upper, transpose, unitriangular);
    copy_back(std::get<0>(host), X);
    copy_back(std::get<1>(host), M);
    return;
  }
  copy_into(a, M, false);
  // A^T X = b is the triangular solve of the other triangle of A^T.
  solve_triangular_into(transpose ? a.mT() : a, b, upper != transpose, true, unitriangular, X);
}

std::tuple<at::Tensor, at::Tensor> triangular_solve(const at::Tensor& self, const at::Tensor& A,
                                                    bool upper, bool transpose,
                                                    bool unitriangular) {
  Functional<at::meta::structured_triangular_solve, 2> op;
  op.meta(self, A, upper, transpose, unitriangular);
  run_triangular_solve(self, A, upper, transpose, unitriangular, op.outputs_[0], op.outputs_[1]);
  return {op.outputs_[0], op.outputs_[1]};
}

std::tuple<at::Tensor&, at::Tensor&> triangular_solve_out(const at::Tensor& self,
                                                          const at::Tensor& A, bool upper,
                                                          bool transpose, bool unitriangular,
                                                          at::Tensor& X, at::Tensor& M) {
  Out<at::meta::structured_triangular_solve, 2> op(X, M);
  op.meta(self, A, upper, transpose, unitriangular);
  run_triangular_solve(self, A, upper, transpose, unitriangular, X, M);
  return {X, M};
}

// X with L L^T X = B (U^T U X = B when upper), B and L of equal batches, column-major as CPU's.
at::Tensor cholesky_solve_helper(const at::Tensor& B, const at::Tensor& L, bool upper) {
  at::Tensor X = empty_column_major(B.sizes(), B.options());
  if (X.numel() == 0) {
    return X;
  }
  if (!core_dtype(B) || !core_dtype(L)) {
    begin_host_fallback("aten::_cholesky_solve_helper");
    copy_back(at::_cholesky_solve_helper(B.cpu(), L.cpu(), upper), X);
    return X;
  }
  at::Tensor Y = empty_column_major(B.sizes(), B.options());
  // Forward then back substitution: the lower factor first (L, or U^T).
  run(TPU_OP_TRIANGULAR_SOLVE, {upper ? L.mT() : L, B}, {Y}, {0, 1, 0});
  run(TPU_OP_TRIANGULAR_SOLVE, {upper ? L : L.mT(), Y}, {X}, {1, 1, 0});
  return X;
}

// The identity matrices of A's sizes, batched column-major.
at::Tensor identity_like(const at::Tensor& A) {
  at::Tensor eye = empty_column_major(A.sizes(), A.options());
  eye.zero_();
  eye.diagonal(0, -2, -1).fill_(1);
  return eye;
}

at::Tensor cholesky_inverse_(const at::Tensor& L, bool upper) {
  at::native::squareCheckInputs(L, "cholesky_inverse");
  at::native::checkFloatingOrComplex(L, "cholesky_inverse");
  if (!core_dtype(L)) {
    begin_host_fallback("aten::cholesky_inverse");
    at::Tensor out = empty_column_major(L.sizes(), L.options());
    copy_back(at::cholesky_inverse(L.cpu(), upper), out);
    return out;
  }
  return cholesky_solve_helper(identity_like(L), L, upper);
}

at::Tensor& cholesky_inverse_out(const at::Tensor& L, bool upper, at::Tensor& out) {
  at::native::checkSameDevice("cholesky_inverse", out, L);
  at::native::checkLinalgCompatibleDtype("cholesky_inverse", out, L);
  at::Tensor result = cholesky_inverse_(L, upper);
  at::native::resize_output(out, result.sizes());
  copy_into(result, out, false);
  return out;
}

// ---- LU ----

void run_lu_factor(const at::Tensor& A, bool pivot, bool check_errors, const at::Tensor& LU,
                   const at::Tensor& pivots, const at::Tensor& info) {
  TORCH_CHECK(pivot || A.numel() == 0,
              "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
  if (!core_dtype(A)) {
    begin_host_fallback("aten::linalg_lu_factor_ex.out");
    auto host = at::linalg_lu_factor_ex(A.cpu(), pivot, false);
    copy_back(std::get<0>(host), LU);
    copy_back(std::get<1>(host), pivots);
    copy_back(std::get<2>(host), info);
  } else if (A.numel() == 0) {
    info.zero_();
  } else if (overlaps(LU, {A}) || overlaps(pivots, {A}) || overlaps(info, {A})) {
    at::Tensor lu = at::empty_like(LU), p = at::empty_like(pivots), i = at::empty_like(info);
    run(TPU_OP_LU_FACTOR, {A}, {lu, p, i}, {});
    copy_into(lu, LU, false);
    copy_into(p, pivots, false);
    copy_into(i, info, false);
  } else {
    run(TPU_OP_LU_FACTOR, {A}, {LU, pivots, info}, {});
  }
  if (check_errors) {
    at::_linalg_check_errors(info, "torch.linalg.lu_factor_ex", A.dim() == 2);
  }
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> linalg_lu_factor_ex(const at::Tensor& A,
                                                                   bool pivot,
                                                                   bool check_errors) {
  Functional<at::meta::structured_linalg_lu_factor_ex, 3> op;
  op.meta(A, pivot, check_errors);
  run_lu_factor(A, pivot, check_errors, op.outputs_[0], op.outputs_[1], op.outputs_[2]);
  return {op.outputs_[0], op.outputs_[1], op.outputs_[2]};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> linalg_lu_factor_ex_out(
    const at::Tensor& A, bool pivot, bool check_errors, at::Tensor& LU, at::Tensor& pivots,
    at::Tensor& info) {
  Out<at::meta::structured_linalg_lu_factor_ex, 3> op(LU, pivots, info);
  op.meta(A, pivot, check_errors);
  run_lu_factor(A, pivot, check_errors, LU, pivots, info);
  return {LU, pivots, info};
}

void run_lu_solve(const at::Tensor& LU, const at::Tensor& pivots, const at::Tensor& B, bool left,
                  bool adjoint, const at::Tensor& result) {
  if (result.numel() == 0) {
    return;
  }
  if (!core_dtype(LU) || LU.scalar_type() != B.scalar_type()) {
    begin_host_fallback("aten::linalg_lu_solve.out");
    copy_back(at::linalg_lu_solve(LU.cpu(), pivots.cpu(), B.cpu(), left, adjoint), result);
    return;
  }
  // X A = B is A^T X^T = B^T: the solve of the other transposition on the transposes.
  at::Tensor x = left ? result : result.mT();
  const int64_t n = LU.size(-1);
  std::vector<int64_t> batch(x.sizes().begin(), x.sizes().end() - 2);
  std::vector<int64_t> lu_sizes = batch, piv_sizes = batch;
  lu_sizes.insert(lu_sizes.end(), {n, n});
  piv_sizes.push_back(n);
  at::Tensor b = (left ? B : B.mT()).expand(x.sizes());
  at::Tensor lu = LU.expand(lu_sizes), p = pivots.expand(piv_sizes);
  const int64_t trans = left ? adjoint : !adjoint;
  if (overlaps(x, {LU, pivots, B})) {
    at::Tensor fresh = at::empty_like(x);
    run(TPU_OP_LU_SOLVE, {lu, p, b}, {fresh}, {trans});
    copy_into(fresh, x, false);
    return;
  }
  run(TPU_OP_LU_SOLVE, {lu, p, b}, {x}, {trans});
}

at::Tensor linalg_lu_solve(const at::Tensor& LU, const at::Tensor& pivots, const at::Tensor& B,
                           bool left, bool adjoint) {
  Functional<at::meta::structured_linalg_lu_solve, 1> op;
  op.meta(LU, pivots, B, left, adjoint);
  run_lu_solve(LU, pivots, B, left, adjoint, op.outputs_[0]);
  return op.outputs_[0];
}

at::Tensor& linalg_lu_solve_out(const at::Tensor& LU, const at::Tensor& pivots,
                                const at::Tensor& B, bool left, bool adjoint, at::Tensor& out) {
  Out<at::meta::structured_linalg_lu_solve, 1> op(out);
  op.meta(LU, pivots, B, left, adjoint);
  run_lu_solve(LU, pivots, B, left, adjoint, out);
  return out;
}

// CPU's formula: L and U are LU's triangles (L with a unit diagonal), P the permutation matrix
// of the row swaps the pivots make in turn, applied to the identity permutation one swap at a
// time (min(m, n) launches of a gather and two scatters, all natively).
void run_lu_unpack(const at::Tensor& LU, const at::Tensor& pivots, bool unpack_lu,
                   bool unpack_pivots, const at::Tensor& P, const at::Tensor& L,
                   const at::Tensor& U) {
  const int64_t m = LU.size(-2), n = LU.size(-1), k = std::min(m, n);
  if (unpack_lu) {
    if (m > n || LU.is_same(L)) {
      at::triu_out(const_cast<at::Tensor&>(U), m == n ? LU : LU.narrow(-2, 0, n), 0);
      at::tril_out(const_cast<at::Tensor&>(L), LU, -1);
      L.diagonal(0, -2, -1).fill_(1.);
    } else {
      at::tril_out(const_cast<at::Tensor&>(L), m == n ? LU : LU.narrow(-1, 0, m), -1);
      L.diagonal(0, -2, -1).fill_(1.);
      at::triu_out(const_cast<at::Tensor&>(U), LU, 0);
    }
  }
  if (!unpack_pivots || P.numel() == 0) {
    return;
  }
  std::vector<int64_t> perm_sizes(P.sizes().begin(), P.sizes().end() - 1);
  at::Tensor perm = at::arange(m, pivots.options().dtype(at::kLong)).expand(perm_sizes).clone();
  at::Tensor swaps = pivots.to(at::kLong).sub_(1);
  for (int64_t i = 0; i < k; i++) {
    at::Tensor j = swaps.narrow(-1, i, 1);
    at::Tensor at_i = perm.narrow(-1, i, 1).clone(), at_j = perm.gather(-1, j);
    perm.scatter_(-1, j, at_i);
    perm.narrow(-1, i, 1).copy_(at_j);
  }
  P.zero_();
  P.scatter_(-2, perm.unsqueeze(-2), 1.);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lu_unpack(const at::Tensor& LU,
                                                         const at::Tensor& pivots,
                                                         bool unpack_lu, bool unpack_pivots) {
  Functional<at::meta::structured_lu_unpack, 3> op;
  op.meta(LU, pivots, unpack_lu, unpack_pivots);
  auto& o = op.outputs_;
  run_lu_unpack(LU, pivots, unpack_lu, unpack_pivots, o[0], o[1], o[2]);
  return {o[0], o[1], o[2]};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> lu_unpack_out(
    const at::Tensor& LU, const at::Tensor& pivots, bool unpack_lu, bool unpack_pivots,
    at::Tensor& P, at::Tensor& L, at::Tensor& U) {
  Out<at::meta::structured_lu_unpack, 3> op(P, L, U);
  op.meta(LU, pivots, unpack_lu, unpack_pivots);
  run_lu_unpack(LU, pivots, unpack_lu, unpack_pivots, P, L, U);
  return {P, L, U};
}

// CPU's formula: the factor into L (tall A) or U, then unpacked in place.
void run_linalg_lu(const at::Tensor& A, bool pivot, const at::Tensor& P, const at::Tensor& L,
                   const at::Tensor& U) {
  const bool use_L = A.size(-2) > A.size(-1);
  at::Tensor pivots = at::empty({0}, A.options().dtype(at::kInt));
  at::Tensor info = at::empty({0}, A.options().dtype(at::kInt));
  at::linalg_lu_factor_ex_out(const_cast<at::Tensor&>(use_L ? L : U), pivots, info, A, pivot,
                              false);
  at::lu_unpack_out(const_cast<at::Tensor&>(P), const_cast<at::Tensor&>(L),
                    const_cast<at::Tensor&>(U), use_L ? L : U, pivots, true, pivot);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> linalg_lu(const at::Tensor& A, bool pivot) {
  Functional<at::meta::structured_linalg_lu, 3> op;
  op.meta(A, pivot);
  auto& o = op.outputs_;
  run_linalg_lu(A, pivot, o[0], o[1], o[2]);
  return {o[0], o[1], o[2]};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> linalg_lu_out(const at::Tensor& A, bool pivot,
                                                                at::Tensor& P, at::Tensor& L,
                                                                at::Tensor& U) {
  Out<at::meta::structured_linalg_lu, 3> op(P, L, U);
  op.meta(A, pivot);
  run_linalg_lu(A, pivot, P, L, U);
  return {P, L, U};
}

// ---- solve, inv ----

// CPU's formula: the LU of A (the backward solves with its adjoint), then lu_solve; a vector
// right-hand side is a column.
void run_solve(const at::Tensor& A, const at::Tensor& B, bool left, bool check_errors,
               const at::Tensor& result, const at::Tensor& LU, const at::Tensor& pivots,
               const at::Tensor& info) {
  at::linalg_lu_factor_ex_out(const_cast<at::Tensor&>(LU), const_cast<at::Tensor&>(pivots),
                              const_cast<at::Tensor&>(info), A);
  if (check_errors) {
    at::_linalg_check_errors(info, "torch.linalg.solve_ex", A.dim() == 2);
  }
  const bool vector_case = at::native::linalg_solve_is_vector_rhs(LU, B);
  at::Tensor result_ = vector_case ? result.unsqueeze(-1) : result;
  at::Tensor B_ = vector_case ? B.unsqueeze(-1) : B;
  at::linalg_lu_solve_out(result_, LU, pivots, B_, left, /*adjoint=*/false);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> linalg_solve_ex(const at::Tensor& A,
                                                                           const at::Tensor& B,
                                                                           bool left,
                                                                           bool check_errors) {
  Functional<at::meta::structured__linalg_solve_ex, 4> op;
  op.meta(A, B, left, check_errors);
  auto& o = op.outputs_;
  run_solve(A, B, left, check_errors, o[0], o[1], o[2], o[3]);
  return {o[0], o[1], o[2], o[3]};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&, at::Tensor&> linalg_solve_ex_out(
    const at::Tensor& A, const at::Tensor& B, bool left, bool check_errors, at::Tensor& result,
    at::Tensor& LU, at::Tensor& pivots, at::Tensor& info) {
  Out<at::meta::structured__linalg_solve_ex, 4> op(result, LU, pivots, info);
  op.meta(A, B, left, check_errors);
  run_solve(A, B, left, check_errors, result, LU, pivots, info);
  return {result, LU, pivots, info};
}

void run_inv(const at::Tensor& A, bool check_errors, const at::Tensor& inverse,
             const at::Tensor& info) {
  auto solved = at::_linalg_solve_ex(A, identity_like(A), true, false);
  copy_into(std::get<0>(solved), inverse, false);
  copy_into(std::get<3>(solved), info, false);
  if (check_errors) {
    at::_linalg_check_errors(info, "linalg.inv_ex", A.dim() == 2);
  }
}

std::tuple<at::Tensor, at::Tensor> linalg_inv_ex(const at::Tensor& A, bool check_errors) {
  Functional<at::meta::structured_linalg_inv_ex, 2> op;
  op.meta(A, check_errors);
  run_inv(A, check_errors, op.outputs_[0], op.outputs_[1]);
  return {op.outputs_[0], op.outputs_[1]};
}

std::tuple<at::Tensor&, at::Tensor&> linalg_inv_ex_out(const at::Tensor& A, bool check_errors,
                                                       at::Tensor& inverse, at::Tensor& info) {
  Out<at::meta::structured_linalg_inv_ex, 2> op(inverse, info);
  op.meta(A, check_errors);
  run_inv(A, check_errors, inverse, info);
  return {inverse, info};
}

// ---- det, slogdet ----

// The determinant of the permutation that `pivots` make: 1 or -1 (int64), from the parity of the
// rows swapped with another.
at::Tensor lu_det_P(const at::Tensor& pivots) {
  return at::arange(1, pivots.size(-1) + 1, pivots.options())
      .ne(pivots)
      .sum(-1, false, at::kLong)
      .fmod_(2)
      .mul_(-2)
      .add_(1);
}

// The LU of A (of A^T when A is contiguous and real: the same determinant, no copy), as CPU.
void det_lu(const at::Tensor& A, const at::Tensor& LU, const at::Tensor& pivots) {
  at::Tensor info = at::empty({0}, A.options().dtype(at::kInt));
  at::linalg_lu_factor_ex_out(const_cast<at::Tensor&>(LU), const_cast<at::Tensor&>(pivots), info,
                              A.is_contiguous() && !A.is_complex() ? A.mH() : A);
}

void run_det(const at::Tensor& A, const at::Tensor& result, const at::Tensor& LU,
             const at::Tensor& pivots) {
  det_lu(A, LU, pivots);
  at::mul_out(const_cast<at::Tensor&>(result), lu_det_P(pivots),
              at::prod(LU.diagonal(0, -2, -1), -1));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> linalg_det(const at::Tensor& A) {
  Functional<at::meta::structured__linalg_det, 3> op;
  op.meta(A);
  run_det(A, op.outputs_[0], op.outputs_[1], op.outputs_[2]);
  return {op.outputs_[0], op.outputs_[1], op.outputs_[2]};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> linalg_det_out(const at::Tensor& A,
                                                                 at::Tensor& result,
                                                                 at::Tensor& LU,
                                                                 at::Tensor& pivots) {
  Out<at::meta::structured__linalg_det, 3> op(result, LU, pivots);
  op.meta(A);
  run_det(A, result, LU, pivots);
  return {result, LU, pivots};
}

void run_slogdet(const at::Tensor& A, const at::Tensor& sign, const at::Tensor& logabsdet,
                 const at::Tensor& LU, const at::Tensor& pivots) {
  det_lu(A, LU, pivots);
  at::Tensor diag = LU.diagonal(0, -2, -1);
  at::mul_out(const_cast<at::Tensor&>(sign), diag.sgn().prod(-1), lu_det_P(pivots));
  at::sum_out(const_cast<at::Tensor&>(logabsdet), diag.abs().log_(), -1);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> linalg_slogdet(const at::Tensor& A) {
  Functional<at::meta::structured__linalg_slogdet, 4> op;
  op.meta(A);
  auto& o = op.outputs_;
  run_slogdet(A, o[0], o[1], o[2], o[3]);
  return {o[0], o[1], o[2], o[3]};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&, at::Tensor&> linalg_slogdet_out(
    const at::Tensor& A, at::Tensor& sign, at::Tensor& logabsdet, at::Tensor& LU,
    at::Tensor& pivots) {
  Out<at::meta::structured__linalg_slogdet, 4> op(sign, logabsdet, LU, pivots);
  op.meta(A);
  run_slogdet(A, sign, logabsdet, LU, pivots);
  return {sign, logabsdet, LU, pivots};
}

// ---- eigh ----

void run_eigh(const at::Tensor& A, c10::string_view uplo, bool compute_v, const at::Tensor& L,
              const at::Tensor& V) {
  if (A.numel() == 0) {
    return;
  }
  const bool upper = std::toupper(static_cast<unsigned char>(uplo[0])) == 'U';
  if (!core_dtype(A)) {
    begin_host_fallback("aten::_linalg_eigh.eigenvalues");
    auto host = at::_linalg_eigh(A.cpu(), uplo, compute_v);
    copy_back(std::get<0>(host), L);
    if (compute_v) {
      copy_back(std::get<1>(host), V);
    }
    return;
  }
  at::Tensor vectors = compute_v && !overlaps(V, {A}) ? V : empty_column_major(A.sizes(),
                                                                                A.options());
  at::Tensor values = overlaps(L, {A}) ? at::empty_like(L) : L;
  at::Tensor info = at::empty(batch_then(A, 2, {}), A.options().dtype(at::kInt));
  run(TPU_OP_EIGH, {A}, {values, vectors, info}, {upper});
  if (!values.is_same(L)) {
    copy_into(values, L, false);
  }
  if (compute_v && !vectors.is_same(V)) {
    copy_into(vectors, V, false);
  }
  at::_linalg_check_errors(info, "linalg.eigh", A.dim() == 2);
}

std::tuple<at::Tensor, at::Tensor> linalg_eigh(const at::Tensor& A, c10::string_view uplo,
                                               bool compute_v) {
  Functional<at::meta::structured__linalg_eigh, 2> op;
  op.meta(A, uplo, compute_v);
  run_eigh(A, uplo, compute_v, op.outputs_[0], op.outputs_[1]);
  return {op.outputs_[0], op.outputs_[1]};
}

std::tuple<at::Tensor&, at::Tensor&> linalg_eigh_out(const at::Tensor& A, c10::string_view uplo,
                                                     bool compute_v, at::Tensor& L,
                                                     at::Tensor& V) {
  Out<at::meta::structured__linalg_eigh, 2> op(L, V);
  op.meta(A, uplo, compute_v);
  run_eigh(A, uplo, compute_v, L, V);
  return {L, V};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_cholesky_ex", TORCH_FN(linalg_cholesky_ex));
  m.impl("linalg_cholesky_ex.L", TORCH_FN(linalg_cholesky_ex_out));
  m.impl("cholesky", TORCH_FN(cholesky_));
  m.impl("cholesky.out", TORCH_FN(cholesky_out));
  m.impl("_cholesky_solve_helper", TORCH_FN(cholesky_solve_helper));
  m.impl("cholesky_inverse", TORCH_FN(cholesky_inverse_));
  m.impl("cholesky_inverse.out", TORCH_FN(cholesky_inverse_out));
  m.impl("linalg_solve_triangular", TORCH_FN(linalg_solve_triangular));
  m.impl("linalg_solve_triangular.out", TORCH_FN(linalg_solve_triangular_out));
  m.impl("triangular_solve", TORCH_FN(triangular_solve));
  m.impl("triangular_solve.X", TORCH_FN(triangular_solve_out));
  m.impl("linalg_lu_factor_ex", TORCH_FN(linalg_lu_factor_ex));
  m.impl("linalg_lu_factor_ex.out", TORCH_FN(linalg_lu_factor_ex_out));
  m.impl("linalg_lu_solve", TORCH_FN(linalg_lu_solve));
  m.impl("linalg_lu_solve.out", TORCH_FN(linalg_lu_solve_out));
  m.impl("lu_unpack", TORCH_FN(lu_unpack));
  m.impl("lu_unpack.out", TORCH_FN(lu_unpack_out));
  m.impl("linalg_lu", TORCH_FN(linalg_lu));
  m.impl("linalg_lu.out", TORCH_FN(linalg_lu_out));
  m.impl("_linalg_solve_ex", TORCH_FN(linalg_solve_ex));
  m.impl("_linalg_solve_ex.result", TORCH_FN(linalg_solve_ex_out));
  m.impl("linalg_inv_ex", TORCH_FN(linalg_inv_ex));
  m.impl("linalg_inv_ex.inverse", TORCH_FN(linalg_inv_ex_out));
  m.impl("_linalg_det", TORCH_FN(linalg_det));
  m.impl("_linalg_det.result", TORCH_FN(linalg_det_out));
  m.impl("_linalg_slogdet", TORCH_FN(linalg_slogdet));
  m.impl("_linalg_slogdet.sign", TORCH_FN(linalg_slogdet_out));
  m.impl("_linalg_eigh", TORCH_FN(linalg_eigh));
  m.impl("_linalg_eigh.eigenvalues", TORCH_FN(linalg_eigh_out));
}

} // namespace torch_tpu
