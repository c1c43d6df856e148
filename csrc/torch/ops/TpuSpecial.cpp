// torch.special's orthogonal polynomials and Bessel-family functions on the core's special family
// (csrc/core/ops/tpu_ops_special.h). They are structured TensorIterator ops, so ATen's metas give
// the output, broadcasting and type promotion (integer and bool inputs compute in the default
// float dtype), and the elementwise binding (TpuElementwise.h) launches one core call for the
// functional and out= kernels. The overloads taking a Scalar x or n are ATen composites that wrap
// it as a CPU scalar tensor, which the call carries by value. PyTorch computes these in float32
// and float64 only and refuses the other floating dtypes, as the tpu kernels do.
#include <ATen/ops/special_airy_ai_meta.h>
#include <ATen/ops/special_bessel_j0_meta.h>
#include <ATen/ops/special_bessel_j1_meta.h>
#include <ATen/ops/special_bessel_y0_meta.h>
#include <ATen/ops/special_bessel_y1_meta.h>
#include <ATen/ops/special_chebyshev_polynomial_t_meta.h>
#include <ATen/ops/special_chebyshev_polynomial_u_meta.h>
#include <ATen/ops/special_chebyshev_polynomial_v_meta.h>
#include <ATen/ops/special_chebyshev_polynomial_w_meta.h>
#include <ATen/ops/special_hermite_polynomial_h_meta.h>
#include <ATen/ops/special_hermite_polynomial_he_meta.h>
#include <ATen/ops/special_laguerre_polynomial_l_meta.h>
#include <ATen/ops/special_legendre_polynomial_p_meta.h>
#include <ATen/ops/special_modified_bessel_i0_meta.h>
#include <ATen/ops/special_modified_bessel_i1_meta.h>
#include <ATen/ops/special_modified_bessel_k0_meta.h>
#include <ATen/ops/special_modified_bessel_k1_meta.h>
#include <ATen/ops/special_scaled_modified_bessel_k0_meta.h>
#include <ATen/ops/special_scaled_modified_bessel_k1_meta.h>
#include <ATen/ops/special_shifted_chebyshev_polynomial_t_meta.h>
#include <ATen/ops/special_shifted_chebyshev_polynomial_u_meta.h>
#include <ATen/ops/special_shifted_chebyshev_polynomial_v_meta.h>
#include <ATen/ops/special_shifted_chebyshev_polynomial_w_meta.h>
#include <ATen/ops/special_spherical_bessel_j0_meta.h>
#include <torch/library.h>

#include "ops/TpuElementwise.h"

namespace torch_tpu::special {
namespace {

using at::Tensor;
using at::TensorIteratorBase;

// Launches `Op` after refusing the dtypes PyTorch has no kernel for, with its message.
template <tpu_op_id Op>
void check_dtype(const TensorIteratorBase& it) {
  const at::ScalarType compute = it.common_dtype();
  TORCH_CHECK_NOT_IMPLEMENTED(compute == at::kFloat || compute == at::kDouble, "\"",
                              tpu_op_name(Op), "_tpu\" not implemented for '",
                              c10::toString(compute), "'");
}

template <tpu_op_id Op>
void polynomial(const TensorIteratorBase& it, const Tensor&, const Tensor&) {
  check_dtype<Op>(it);
  ew::run(Op, it);
}

template <tpu_op_id Op>
void unary(const TensorIteratorBase& it, const Tensor&) {
  check_dtype<Op>(it);
  ew::run(Op, it);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
// (core op, ATen name without "special_"): the functional and out= kernels.
#define POLYNOMIAL(op, name)                                                                       \
  TPU_EW_STRUCTURED(m, at::meta::structured_special_##name, polynomial<TPU_OP_##op>,              \
                    "special_" #name, "special_" #name, "", "special_" #name ".out")
#define UNARY(op, name)                                                                            \
  TPU_EW_STRUCTURED(m, at::meta::structured_special_##name, unary<TPU_OP_##op>, "special_" #name, \
                    "special_" #name, "", "special_" #name ".out")
  POLYNOMIAL(CHEBYSHEV_T, chebyshev_polynomial_t);
  POLYNOMIAL(CHEBYSHEV_U, chebyshev_polynomial_u);
  POLYNOMIAL(CHEBYSHEV_V, chebyshev_polynomial_v);
  POLYNOMIAL(CHEBYSHEV_W, chebyshev_polynomial_w);
  POLYNOMIAL(SHIFTED_CHEBYSHEV_T, shifted_chebyshev_polynomial_t);
  POLYNOMIAL(SHIFTED_CHEBYSHEV_U, shifted_chebyshev_polynomial_u);
  POLYNOMIAL(SHIFTED_CHEBYSHEV_V, shifted_chebyshev_polynomial_v);
  POLYNOMIAL(SHIFTED_CHEBYSHEV_W, shifted_chebyshev_polynomial_w);
  POLYNOMIAL(HERMITE_H, hermite_polynomial_h);
  POLYNOMIAL(HERMITE_HE, hermite_polynomial_he);
  POLYNOMIAL(LAGUERRE_L, laguerre_polynomial_l);
  POLYNOMIAL(LEGENDRE_P, legendre_polynomial_p);
  UNARY(AIRY_AI, airy_ai);
  UNARY(BESSEL_J0, bessel_j0);
  UNARY(BESSEL_J1, bessel_j1);
  UNARY(BESSEL_Y0, bessel_y0);
  UNARY(BESSEL_Y1, bessel_y1);
  UNARY(MODIFIED_BESSEL_I0, modified_bessel_i0);
  UNARY(MODIFIED_BESSEL_I1, modified_bessel_i1);
  UNARY(MODIFIED_BESSEL_K0, modified_bessel_k0);
  UNARY(MODIFIED_BESSEL_K1, modified_bessel_k1);
  UNARY(SCALED_MODIFIED_BESSEL_K0, scaled_modified_bessel_k0);
  UNARY(SCALED_MODIFIED_BESSEL_K1, scaled_modified_bessel_k1);
  UNARY(SPHERICAL_BESSEL_J0, spherical_bessel_j0);
#undef UNARY
#undef POLYNOMIAL
}

} // namespace torch_tpu::special
