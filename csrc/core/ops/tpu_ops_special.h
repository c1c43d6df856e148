/* The special family's ops: X(ID, "name", attribute scalars) per op; see ops/tpu_op.h. The
 * functions of torch.special that are neither elementwise arithmetic nor reductions: the classical
 * orthogonal polynomials and the Bessel-family functions, with the semantics of PyTorch CPU's
 * kernels (ATen/native/Math.h), special cases included.
 *
 * Operands, broadcasting and types are the elementwise family's (ops/tpu_ops_elementwise.h):
 * call->tensors holds the inputs, then the output; inputs broadcast to the output's shape, any
 * strides, scalar operands through tpu_op_set_scalar_input, an input or output of another dtype
 * converted as COPY converts. call->compute is float32 or float64 (the caller promotes integer
 * and bool inputs, as PyTorch does); other compute dtypes are TPU_ERR_NOT_IMPLEMENTED (PyTorch
 * CPU has no float16 or bfloat16 kernel for these). Each op computes in the compute dtype itself,
 * float32 in float, as CPU does. No op takes scalars.
 *
 * Polynomials (inputs x, n): the degree n is converted to int64 as x86 converts (toward zero; NaN,
 * infinities and values out of range become INT64_MIN), and a negative degree gives 0. Degrees 0
 * and 1 are the polynomial's first two terms; higher ones run the three-term recurrence from them
 * (r = c q - p for the Chebyshev kinds, with c = 2x, or 2(2x - 1) shifted), which stops early
 * once the running term is NaN (giving NaN), except HERMITE_H and HERMITE_HE. Before that:
 *   CHEBYSHEV_T/U/V/W  |x| == 1 gives the closed values (T: 1 or (-1)^n; U: (n+1) or
 *     (-1)^n (n+1); V: 1 at 1, (-1)^n (2n+1) at -1; W: 2n+1 at 1, (-1)^n at -1). For |x| < 1 and
 *     n > 6 (T) or n > 8 (U, V, W) the trigonometric forms with t = acos(x): cos(n t);
 *     sin((n+1) t) / sin(t) (or (n+1) cos((n+1) t) / x where sin(t) is 0); cos((n+1/2) t) /
 *     cos(t/2) (or the value at -1 where sin(t/2) is 1); sin((n+1/2) t) / sin(t/2) (or the value
 *     at +-1 by the sign of x where cos(t/2) is 1).
 *   SHIFTED_CHEBYSHEV_T/U/V/W  the same of y = 2x - 1 (computed x + x - 1), with x == 1 and
 *     x == 0 as the closed values' points and the trigonometric forms for |y| < 1 and n > 6
 *     (T, U, V) or n > 4 (W).
 *   HERMITE_H, HERMITE_HE  the physicists' and probabilists' Hermite polynomials; degrees above
 *     128 (float32) or 512 (float64) give NaN.
 *   LAGUERRE_L  x == 0 (either sign) gives 1.
 *   LEGENDRE_P  |x| == 1 gives 1 or (-1)^n.
 *
 * Bessel-family functions (input x), by the Cephes library's expansions (S. L. Moshier, Methods
 * and Programs for Mathematical Functions, 1989), as PyTorch CPU computes them:
 *   AIRY_AI  Ai(x): NaN at +-inf, 0 above 103.892.
 *   BESSEL_J0, BESSEL_J1  J0, J1 (odd).
 *   BESSEL_Y0, BESSEL_Y1  Y0, Y1: -inf at 0, NaN below 0.
 *   MODIFIED_BESSEL_I0, MODIFIED_BESSEL_I1  I0 (even), I1 (odd).
 *   MODIFIED_BESSEL_K0, MODIFIED_BESSEL_K1  K0, K1: inf at 0, NaN below 0.
 *   SCALED_MODIFIED_BESSEL_K0, SCALED_MODIFIED_BESSEL_K1  e^x K0(x), e^x K1(x): likewise.
 *   SPHERICAL_BESSEL_J0  sin(x) / x (a series below |x| = 0.5), 0 at +-inf. */
#ifndef TPU_OPS_SPECIAL_H
#define TPU_OPS_SPECIAL_H

#define TPU_OPS_SPECIAL(X)                                                                         \
  X(CHEBYSHEV_T, "chebyshev_polynomial_t", 0)                                                      \
  X(CHEBYSHEV_U, "chebyshev_polynomial_u", 0)                                                      \
  X(CHEBYSHEV_V, "chebyshev_polynomial_v", 0)                                                      \
  X(CHEBYSHEV_W, "chebyshev_polynomial_w", 0)                                                      \
  X(SHIFTED_CHEBYSHEV_T, "shifted_chebyshev_polynomial_t", 0)                                      \
  X(SHIFTED_CHEBYSHEV_U, "shifted_chebyshev_polynomial_u", 0)                                      \
  X(SHIFTED_CHEBYSHEV_V, "shifted_chebyshev_polynomial_v", 0)                                      \
  X(SHIFTED_CHEBYSHEV_W, "shifted_chebyshev_polynomial_w", 0)                                      \
  X(HERMITE_H, "hermite_polynomial_h", 0)                                                          \
  X(HERMITE_HE, "hermite_polynomial_he", 0)                                                        \
  X(LAGUERRE_L, "laguerre_polynomial_l", 0)                                                        \
  X(LEGENDRE_P, "legendre_polynomial_p", 0)                                                        \
  X(AIRY_AI, "airy_ai", 0)                                                                         \
  X(BESSEL_J0, "bessel_j0", 0)                                                                     \
  X(BESSEL_J1, "bessel_j1", 0)                                                                     \
  X(BESSEL_Y0, "bessel_y0", 0)                                                                     \
  X(BESSEL_Y1, "bessel_y1", 0)                                                                     \
  X(MODIFIED_BESSEL_I0, "modified_bessel_i0", 0)                                                   \
  X(MODIFIED_BESSEL_I1, "modified_bessel_i1", 0)                                                   \
  X(MODIFIED_BESSEL_K0, "modified_bessel_k0", 0)                                                   \
  X(MODIFIED_BESSEL_K1, "modified_bessel_k1", 0)                                                   \
  X(SCALED_MODIFIED_BESSEL_K0, "scaled_modified_bessel_k0", 0)                                     \
  X(SCALED_MODIFIED_BESSEL_K1, "scaled_modified_bessel_k1", 0)                                     \
  X(SPHERICAL_BESSEL_J0, "spherical_bessel_j0", 0)

#endif
