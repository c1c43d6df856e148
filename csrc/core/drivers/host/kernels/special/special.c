/* The special family's kernels (contract in ops/tpu_ops_special.h): each a float and a double
 * inner loop of special_math.h's functions, run by the elementwise engine
 * (engine_elementwise.h), which broadcasts, converts and splits the work as it does for the
 * elementwise family. The loops branch per element (recurrences, ranges), so they are plain
 * scalar loops rather than the vectorized clones of the elementwise kernels. */
#include <float.h>
#include <stdbool.h>
#include <stdint.h>
#include <tgmath.h> /* special_math.h is written once for float and double */

#include "drivers/host/engine/engine_elementwise.h"
#include "drivers/host/kernels/kernels.h"
#include "ops/tpu_special_coeffs.h"

#define T float
#define SP(name) name##_f32
#define SP_EPS FLT_EPSILON
#define SP_HERMITE_LIMIT 128
#include "drivers/host/kernels/special/special_math.h"
#undef T
#undef SP
#undef SP_EPS
#undef SP_HERMITE_LIMIT

#define T double
#define SP(name) name##_f64
#define SP_EPS DBL_EPSILON
#define SP_HERMITE_LIMIT 512
#include "drivers/host/kernels/special/special_math.h"
#undef T
#undef SP
#undef SP_EPS
#undef SP_HERMITE_LIMIT

/* Loops of dense operands (the engine's data: output first, then the inputs). */
#define POLY_LOOP(fn, T, sfx)                                                                      \
  static void fn##_loop_##sfx(char **data, int64_t n, const tpu_ew_ctx *ctx) {                     \
    (void)ctx;                                                                                     \
    T *o = (T *)data[0];                                                                           \
    const T *x = (const T *)data[1], *d = (const T *)data[2];                                      \
    for (int64_t i = 0; i < n; i++)                                                                \
      o[i] = fn##_##sfx(x[i], degree_##sfx(d[i]));                                                 \
  }
#define UNARY_LOOP(fn, T, sfx)                                                                     \
  static void fn##_loop_##sfx(char **data, int64_t n, const tpu_ew_ctx *ctx) {                     \
    (void)ctx;                                                                                     \
    T *o = (T *)data[0];                                                                           \
    const T *x = (const T *)data[1];                                                               \
    for (int64_t i = 0; i < n; i++)                                                                \
      o[i] = fn##_##sfx(x[i]);                                                                     \
  }

/* A kernel from its float and double loops. Only float32 and float64 compute: the engine would
 * run the float loop for float16 and bfloat16, which CPU does not compute these ops in. */
#define SPECIAL_KERNEL(fn, kernel)                                                                 \
  static const tpu_ew_op fn##_op = {                                                               \
      .loops = {[TPU_FLOAT32] = fn##_loop_f32, [TPU_FLOAT64] = fn##_loop_f64}};                    \
  tpu_status kernel(const tpu_op_call *call) {                                                     \
    if (call->compute != TPU_FLOAT32 && call->compute != TPU_FLOAT64)                              \
      return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "\"%s\" is not implemented for '%s' on tpu",      \
                       tpu_op_name(call->op), tpu_dtype_name(call->compute));                      \
    return tpu_ew_run(call, &fn##_op);                                                             \
  }

#define POLY(fn, kernel)                                                                           \
  POLY_LOOP(fn, float, f32)                                                                        \
  POLY_LOOP(fn, double, f64)                                                                       \
  SPECIAL_KERNEL(fn, kernel)
#define UNARY(fn, kernel)                                                                          \
  UNARY_LOOP(fn, float, f32)                                                                       \
  UNARY_LOOP(fn, double, f64)                                                                      \
  SPECIAL_KERNEL(fn, kernel)

POLY(chebyshev_t, tpu_kernel_chebyshev_t)
POLY(chebyshev_u, tpu_kernel_chebyshev_u)
POLY(chebyshev_v, tpu_kernel_chebyshev_v)
POLY(chebyshev_w, tpu_kernel_chebyshev_w)
POLY(shifted_chebyshev_t, tpu_kernel_shifted_chebyshev_t)
POLY(shifted_chebyshev_u, tpu_kernel_shifted_chebyshev_u)
POLY(shifted_chebyshev_v, tpu_kernel_shifted_chebyshev_v)
POLY(shifted_chebyshev_w, tpu_kernel_shifted_chebyshev_w)
POLY(hermite_h, tpu_kernel_hermite_h)
POLY(hermite_he, tpu_kernel_hermite_he)
POLY(laguerre_l, tpu_kernel_laguerre_l)
POLY(legendre_p, tpu_kernel_legendre_p)
UNARY(airy_ai, tpu_kernel_airy_ai)
UNARY(bessel_j0, tpu_kernel_bessel_j0)
UNARY(bessel_j1, tpu_kernel_bessel_j1)
UNARY(bessel_y0, tpu_kernel_bessel_y0)
UNARY(bessel_y1, tpu_kernel_bessel_y1)
UNARY(modified_bessel_i0, tpu_kernel_modified_bessel_i0)
UNARY(modified_bessel_i1, tpu_kernel_modified_bessel_i1)
UNARY(spherical_bessel_j0, tpu_kernel_spherical_bessel_j0)

/* K0 and K1 and their scaled forms share one function each. */
#define BESSEL_K(T, sfx)                                                                           \
  static T modified_bessel_k0_##sfx(T x) { return bessel_k0_##sfx(x, false); }                     \
  static T modified_bessel_k1_##sfx(T x) { return bessel_k1_##sfx(x, false); }                     \
  static T scaled_modified_bessel_k0_##sfx(T x) { return bessel_k0_##sfx(x, true); }               \
  static T scaled_modified_bessel_k1_##sfx(T x) { return bessel_k1_##sfx(x, true); }
BESSEL_K(float, f32)
BESSEL_K(double, f64)
UNARY(modified_bessel_k0, tpu_kernel_modified_bessel_k0)
UNARY(modified_bessel_k1, tpu_kernel_modified_bessel_k1)
UNARY(scaled_modified_bessel_k0, tpu_kernel_scaled_modified_bessel_k0)
UNARY(scaled_modified_bessel_k1, tpu_kernel_scaled_modified_bessel_k1)
