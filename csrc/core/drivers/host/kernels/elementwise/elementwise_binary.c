/* The binary elementwise kernels (contract in ops/tpu_ops_elementwise.h): one inner loop per loop
 * dtype, generated from one expression per dtype family (elementwise.h). Integer division has no
 * SIMD form, so it is plain functions; they flag a division by zero, which the engine raises. */
#include "drivers/host/kernels/elementwise/elementwise.h"


/* ---- add, mul, div ---- */
#define ADD_F(D, T, U, op) EW_GEN2(D, T, U, op, fma(b, s0, a))
#define ADD_I(D, T, U, op) EW_GEN2(D, T, U, op, (T)((U)a + (U)s0 * (U)b))
EW_FLOATS(ADD_F, add)
EW_INTS(ADD_I, add)
EW_BOOLS(EW_GEN2, add, a | (s0 & b))
static const tpu_ew_op add_op = {
    .loops = {EW_FLOATS(EW_ENTRY, add) EW_INTS(EW_ENTRY, add) EW_BOOLS(EW_ENTRY, add)}};
EW_KERNEL(tpu_kernel_add, add_op)

EW_FLOATS(EW_GEN2, mul, a * b)
EW_INTS(EW_GEN2, mul, (T)((U)a * (U)b))
EW_BOOLS(EW_GEN2, mul, a & b)
static const tpu_ew_op mul_op = {
    .loops = {EW_FLOATS(EW_ENTRY, mul) EW_INTS(EW_ENTRY, mul) EW_BOOLS(EW_ENTRY, mul)},
    .flags = TPU_EW_OPMATH_SCALAR1};
EW_KERNEL(tpu_kernel_mul, mul_op)

EW_FLOATS(EW_GEN2, div, a / b)
static const tpu_ew_op div_op = {.loops = {EW_FLOATS(EW_ENTRY, div)},
                                 .flags = TPU_EW_OPMATH_SCALAR1};
EW_KERNEL(tpu_kernel_div, div_op)

/* ---- integer division: no SIMD for it, so plain functions; b == -1 is done by negation because
 * INT_MIN / -1 overflows (and traps on x86). ---- */
#define INT_DIVS(D, T, U, unused)                                                                  \
  static inline T i_trunc_div_##D(T a, T b, const tpu_ew_ctx *P) {                                 \
    if (b == 0)                                                                                    \
      return ew_flag_zero_division(P), (T)0;                                                       \
    return b == -1 ? (T)(0 - (U)a) : (T)(a / b);                                                   \
  }                                                                                                \
  static inline T i_c_mod_##D(T a, T b, const tpu_ew_ctx *P) {                                     \
    if (b == 0)                                                                                    \
      return ew_flag_zero_division(P), (T)0;                                                       \
    return b == -1 ? (T)0 : (T)(a % b);                                                            \
  }                                                                                                \
  static inline T i_floor_div_##D(T a, T b, const tpu_ew_ctx *P) {                                 \
    T q = i_trunc_div_##D(a, b, P);                                                                \
    return b != 0 && (a < 0) != (b < 0) && i_c_mod_##D(a, b, P) != 0 ? (T)(q - 1) : q;             \
  }                                                                                                \
  static inline T i_py_mod_##D(T a, T b, const tpu_ew_ctx *P) {                                    \
    T r = i_c_mod_##D(a, b, P);                                                                    \
    return r != 0 && (r < 0) != (b < 0) ? (T)((U)r + (U)b) : r;                                    \
  }
EW_INTS(INT_DIVS, unused)

#define INT_DIV_LOOP(D, T, U, op) EW_GEN2(D, T, U, op, i_##op##_##D(a, b, P))
EW_INTS(INT_DIV_LOOP, trunc_div)
EW_INTS(INT_DIV_LOOP, floor_div)
EW_INTS(INT_DIV_LOOP, py_mod)
EW_INTS(INT_DIV_LOOP, c_mod)

/* c10::div_floor_floating: the quotient rounded down, computed from fmod so it is exact. */
#define FLOOR_DIV_F(D, T, U, unused)                                                               \
  static inline T f_floor_div_##D(T a, T b) {                                                      \
    if (b == 0)                                                                                    \
      return a / b;                                                                                \
    T mod = fmod(a, b);                                                                            \
    T div = (a - mod) / b;                                                                         \
    if (mod != 0 && (b < 0) != (mod < 0))                                                          \
      div -= 1;                                                                                    \
    if (div == 0)                                                                                  \
      return copysign((T)0, a / b);                                                                \
    T floordiv = floor(div);                                                                       \
    return div - floordiv > (T)0.5 ? floordiv + 1 : floordiv;                                      \
  }                                                                                                \
  static inline T f_py_mod_##D(T a, T b) {                                                         \
    T mod = fmod(a, b);                                                                            \
    return mod != 0 && (b < 0) != (mod < 0) ? mod + b : mod;                                       \
  }
EW_FLOATS(FLOOR_DIV_F, unused)

EW_FLOATS(EW_GEN2, trunc_div, trunc(a / b))
static const tpu_ew_op div_trunc_op = {
    .loops = {EW_FLOATS(EW_ENTRY, trunc_div) EW_INTS(EW_ENTRY, trunc_div)},
    .flags = TPU_EW_OPMATH_SCALAR1};
EW_KERNEL(tpu_kernel_div_trunc, div_trunc_op)

#define FLOOR_DIV_LOOP(D, T, U, op) EW_GEN2(D, T, U, op, f_##op##_##D(a, b))
EW_FLOATS(FLOOR_DIV_LOOP, floor_div)
static const tpu_ew_op div_floor_op = {
    .loops = {EW_FLOATS(EW_ENTRY, floor_div) EW_INTS(EW_ENTRY, floor_div)},
    .flags = TPU_EW_OPMATH_SCALAR1};
EW_KERNEL(tpu_kernel_div_floor, div_floor_op)

EW_FLOATS(FLOOR_DIV_LOOP, py_mod)
static const tpu_ew_op remainder_op = {
    .loops = {EW_FLOATS(EW_ENTRY, py_mod) EW_INTS(EW_ENTRY, py_mod)}};
EW_KERNEL(tpu_kernel_remainder, remainder_op)

EW_FLOATS(EW_GEN2, c_mod, fmod(a, b))
static const tpu_ew_op fmod_op = {.loops = {EW_FLOATS(EW_ENTRY, c_mod) EW_INTS(EW_ENTRY, c_mod)}};
EW_KERNEL(tpu_kernel_fmod, fmod_op)

/* ---- atan2, copysign, pow ---- */
EW_FLOATS(EW_GEN2, atan2, atan2(a, b))
static const tpu_ew_op atan2_op = {.loops = {EW_FLOATS(EW_ENTRY, atan2)}};
EW_KERNEL(tpu_kernel_atan2, atan2_op)

EW_FLOATS(EW_GEN2, copysign, copysign(a, b))
static const tpu_ew_op copysign_op = {.loops = {EW_FLOATS(EW_ENTRY, copysign)}};
EW_KERNEL(tpu_kernel_copysign, copysign_op)

/* Integer powers by squaring, as c10's powi: a negative exponent gives 0 except for bases 1, -1. */
#define POWI(D, T, U, unused)                                                                      \
  static inline T powi_##D(T a, T b) {                                                             \
    if (b < 0)                                                                                     \
      return a == 1 ? 1 : a == -1 ? ((U)b & 1 ? (T)-1 : 1) : 0; /* b's parity: -b may overflow */ \
    U result = 1, base = (U)a;                                                                     \
    for (U e = (U)b; e; e >>= 1) {                                                                 \
      if (e & 1)                                                                                   \
        result *= base;                                                                            \
      base *= base;                                                                                \
    }                                                                                              \
    return (T)result;                                                                              \
  }
EW_INTS(POWI, unused)
#define POWI_LOOP(D, T, U, op) EW_GEN2(D, T, U, op, powi_##D(a, b))
EW_INTS(POWI_LOOP, pow)
/* pow's NaN from two numbers (a negative base, a fraction exponent) is the positive one: a + b is
 * NaN when an input is, which then passes through. */
EW_FLOATS(EW_GEN2, pow, EW_DOMAIN(a + b, pow(a, b)))
static const tpu_ew_op pow_op = {.loops = {EW_FLOATS(EW_ENTRY, pow) EW_INTS(EW_ENTRY, pow)}};
EW_KERNEL(tpu_kernel_pow, pow_op)

/* ---- maximum, minimum ---- */
EW_FLOATS(EW_GEN2, maximum, a != a ? a : b != b ? b : a > b ? a : b)
EW_INTS(EW_GEN2, maximum, a > b ? a : b)
EW_BOOLS(EW_GEN2, maximum, a | b)
static const tpu_ew_op maximum_op = {.loops = {EW_FLOATS(EW_ENTRY, maximum)
                                                   EW_INTS(EW_ENTRY, maximum)
                                                       EW_BOOLS(EW_ENTRY, maximum)}};
EW_KERNEL(tpu_kernel_maximum, maximum_op)

EW_FLOATS(EW_GEN2, minimum, a != a ? a : b != b ? b : a < b ? a : b)
EW_INTS(EW_GEN2, minimum, a < b ? a : b)
EW_BOOLS(EW_GEN2, minimum, a & b)
static const tpu_ew_op minimum_op = {.loops = {EW_FLOATS(EW_ENTRY, minimum)
                                                   EW_INTS(EW_ENTRY, minimum)
                                                       EW_BOOLS(EW_ENTRY, minimum)}};
EW_KERNEL(tpu_kernel_minimum, minimum_op)

/* ---- comparisons and logical ops: every dtype in, bool out ---- */
#define PREDICATE_OP(op, kernel, expr)                                                             \
  EW_FLOATS(EW_PRED2, op, expr)                                                                    \
  EW_INTS(EW_PRED2, op, expr)                                                                      \
  EW_BOOLS(EW_PRED2, op, expr)                                                                     \
  static const tpu_ew_op op##_op = {                                                               \
      .loops = {EW_FLOATS(EW_ENTRY, op) EW_INTS(EW_ENTRY, op) EW_BOOLS(EW_ENTRY, op)},             \
      .bool_operands = TPU_EW_BOOL(0)};                                                            \
  EW_KERNEL(kernel, op##_op)

PREDICATE_OP(eq, tpu_kernel_eq, a == b)
PREDICATE_OP(ne, tpu_kernel_ne, a != b)
PREDICATE_OP(lt, tpu_kernel_lt, a < b)
PREDICATE_OP(le, tpu_kernel_le, a <= b)
PREDICATE_OP(gt, tpu_kernel_gt, a > b)
PREDICATE_OP(ge, tpu_kernel_ge, a >= b)
PREDICATE_OP(logical_and, tpu_kernel_logical_and, a != 0 && b != 0)
PREDICATE_OP(logical_or, tpu_kernel_logical_or, a != 0 || b != 0)
PREDICATE_OP(logical_xor, tpu_kernel_logical_xor, (a != 0) != (b != 0))

/* ---- bitwise ops ---- */
#define BITWISE_OP(op, kernel, expr)                                                               \
  EW_INTS(EW_GEN2, op, expr)                                                                       \
  EW_BOOLS(EW_GEN2, op, expr)                                                                      \
  static const tpu_ew_op op##_op = {.loops = {EW_INTS(EW_ENTRY, op) EW_BOOLS(EW_ENTRY, op)}};      \
  EW_KERNEL(kernel, op##_op)

BITWISE_OP(bitwise_and, tpu_kernel_bitwise_and, a & b)
BITWISE_OP(bitwise_or, tpu_kernel_bitwise_or, a | b)
BITWISE_OP(bitwise_xor, tpu_kernel_bitwise_xor, a ^ b)
