"""Known differences between tpu and CPU.

ALLOWED: deliberate differences, each with its reason. Where CPU and CUDA differ, CUDA's behaviour
is the reference, so tpu may behave as CUDA does. An entry either matches failures (`match`), or
documents a rule that check.py or the generator applies (`match` is None), so that every allowance
of the fuzzer is listed here.

OPEN_ISSUES: differences that are bugs, reported (issue 20, and those this fuzzer found) and not
fixed yet. They do not fail tests/test_fuzz.py while listed; remove an entry when its fix lands,
and the test then fails if the difference comes back. Each entry's `text` describes the class.

Anything that matches neither list is a new difference: the fixed-seed test fails on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from .check import Failure


@dataclass(frozen=True)
class Known:
    id: str
    text: str
    match: Callable[[Failure], bool] | None = None


ALLOWED: list[Known] = [
    Known(
        "cpu-scalar-where-cuda-refuses",
        # Issue 20 filed this as a bug, but CUDA raises it too: clamp's tensor overload builds
        # its TensorIterator without allow_cpu_scalars (only the binary ops, clamp_min/max,
        # lerp's weight, addcmul, pow and where do), so a CPU 0-d bound is a device mismatch on
        # CUDA (wrapper_CUDA_clamp_Tensor); CPU accepts it. README "Limitations" says so.
        "clamp with a CPU 0-d tensor bound (and addcdiv, lerp with two CPU scalars, masked_fill "
        "with a CPU mask) raises a device mismatch, as on CUDA",
        lambda f: (
            f.op.startswith(("clamp", "addcdiv", "lerp", "masked_fill"))
            and "same device" in (f.tpu_error or "")
        ),
    ),
    Known(
        "async-errors-at-sync",
        # README "Eager modes": strict and fused mode run ops asynchronously, as CUDA does, and
        # report an error found while running one (an index out of range, an integer division by
        # zero) at the next synchronization as a RuntimeError naming the op. CUDA's device-side
        # asserts surface the same way.
        "strict/fused: an error CPU raises at the op surfaces at the synchronization as a "
        "RuntimeError",
        lambda f: (
            f.kind == "error-type"
            and f.mode != "debug"
            and bool(f.extra.get("at_sync"))
            and (f.tpu_error or "").startswith("RuntimeError")
        ),
    ),
    Known(
        "index-error-type",
        # README "Debug mode": index ops check their indices and raise IndexError at the op.
        # CPU's type for the same mistake depends on the op (IndexError from indexing and
        # index_select, RuntimeError from gather, scatter, index_add, index_fill on an empty
        # tensor, and from a 0-d index); CUDA reports a device-side assert.
        "an index or dimension out of range raises IndexError on tpu, RuntimeError on CPU",
        lambda f: (
            f.kind == "error-type"
            and (f.tpu_error or "").startswith("IndexError")
            and (f.cpu_error or "").startswith("RuntimeError")
            and any(
                w in (f.cpu_error or "")
                for w in ("out of bounds", "out of DATA bounds", "indexing axis", "Expected dim")
            )
        ),
    ),
    Known(
        "no-complex32",
        # tests/_dtypes.py: the device stores no ComplexHalf (complex32); an op whose result
        # would be one (a float16 tensor with a complex scalar) raises TypeError naming it.
        "ComplexHalf results raise TypeError (not a tpu dtype)",
        lambda f: "ComplexHalf" in (f.tpu_error or ""),
    ),
    Known(
        "lowp-prod-fp32-accumulation",
        # CUDA's prod of float16/bfloat16 accumulates in float32 (its reduce kernels use
        # acc_type); CPU multiplies in the storage dtype. tpu does as CUDA.
        "prod of float16/bfloat16 accumulates in float32 (as CUDA)",
        lambda f: (
            f.kind == "value"
            and f.op == "prod"
            and f.dtype_class == "lowp"
            and bool(f.extra.get("fp32_matches"))
        ),
    ),
    Known(
        "float-to-int-out-of-range",
        # Converting NaN, an infinity or a float outside the integer type's range to an integer
        # is undefined behaviour in C++ (c10::convert); CPU and CUDA give different values.
        "float to integer conversion of NaN, infinities or out-of-range values is unspecified",
        lambda f: f.kind == "value" and bool(f.extra.get("lossy_cast")),
    ),
    Known(
        "nan-sign",
        # Compared NaN-agnostically in check.py: IEEE 754 leaves the sign and payload of a NaN an
        # op makes unspecified; x86 (CPU) makes a negative NaN (log2(-1), gelu(-inf)), CUDA a
        # positive one. Ops that observe the sign (signbit, copysign) are compared by the local
        # oracle on tpu's own inputs, so they follow it.
        "the sign and payload of NaN are not compared",
    ),
    Known(
        "float-tolerance",
        # check.py TOLERANCES and the local oracle: two correct kernels may round differently.
        "floating values are compared with per-dtype tolerances and a rounding allowance",
    ),
    Known(
        "size-1-strides",
        # check.py compare_meta: the stride of a size-1 dimension, or of an empty tensor, never
        # changes which element is where.
        "strides of size-1 dimensions and of empty tensors are not compared",
    ),
    Known(
        "cuda-formulas",
        # check.py _cuda_formula: CUDA's fmod is C's fmod (exact) and its remainder is fmod plus
        # the divisor's sign; CPU's vectorized kernels compute a - b * trunc(a / b) (and floor),
        # NaN for a huge a. tpu's result may be CUDA's.
        # Where |a / b| is beyond the compute dtype's integers (2^24 for float32) no formula
        # keeps a correct digit (CPU's vectorized and scalar loops disagree), so any value is
        # accepted there (check.py _huge_quotient).
        "fmod/remainder may give CUDA's exact result where CPU's formula loses it; any result "
        "where |a / b| exceeds the compute dtype's integers",
    ),
    Known(
        "blas-nonfinite",
        # check.py BLAS_OPS and SUM_OPS: BLAS kernels differ in how an infinity meets a zero or
        # another infinity, and sums of terms near the dtype's largest value overflow in some
        # orders only; there any non-finite value matches any other, and rounding differences
        # up to 4 k eps sum(|terms|) are allowed.
        "matmul and sum rounding follows the size of the terms, not of the result",
    ),
    Known(
        "more-accurate-than-cpu",
        # check.py oracle: a value that matches the float64 result rounded to the output dtype
        # is accepted where CPU's is further off (cosh(89.0) in float32 is finite, CPU's SLEEF
        # overflows; CUDA's coshf does not).
        "tpu may be closer to the exact result than CPU",
    ),
    Known(
        "complex-nonfinite",
        # check.py COMPLEX_LOOSE_OPS: which part of a complex product with an infinite factor
        # becomes NaN depends on the formula (C99 Annex G, BLAS kernels).
        "for complex products, any non-finite value matches any other",
    ),
    Known(
        "undefined-writes",
        # generate.undefined_write: PyTorch leaves writes into memory that overlaps itself or an
        # input undefined unless the op checks (CPU's tril with an overlapping out= corrupts its
        # heap); the generator draws none of them, except those CPU detects and refuses.
        "no writes into self-overlapping or input-overlapping memory CPU does not check",
    ),
    Known(
        "no-duplicate-scatter-indices",
        # values.unique_index_values: scatter, index_copy and index_put_ (accumulate=False) with
        # a repeated index write in an unspecified order on CUDA (and tpu); the generator draws
        # no repeats for them.
        "scatter/index_copy/index_put_ get no repeated indices",
    ),
]


BLAS = frozenset("mm bmm matmul addmm addmv addbmm baddbmm dot vdot mv linear".split())
STATS_OPS = frozenset("var std var_mean std_mean layer_norm norm vector_norm".split())


# The words of CPU's dtype and value checks.
DTYPE_CHECKS = (
    "not implemented for",
    "can't be cast",
    "same dtype",
    "scalar type",
    "cannot be converted",
    "argument alpha",
    "Boolean alpha",
    "dtype",
)


def _dtype(f: Failure) -> torch.dtype | None:
    d = f.extra.get("dtype")
    return d if isinstance(d, torch.dtype) else None


OPEN_ISSUES: list[Known] = [
    # -- Issue 20, as filed. Fixed meanwhile, so no longer listed: the unary op with a wider
    # out= dtype, sum(complex64, dtype=float64), layer_norm of an empty non-contiguous input,
    # and, of the dtype checks on empty tensors, abs/ceil/trunc/bitwise ops.
    Known(
        "empty-skips-dtype-checks",
        "ops on empty tensors skip dtype checks (cumsum out=bool, masked_fill out-of-range value, "
        "bitwise ops on floats, abs/ceil/trunc/fmod/floor-division on bool)",
        lambda f: (
            f.kind == "missing-error"
            and f.empty
            and any(w in (f.cpu_error or "") for w in DTYPE_CHECKS)
        ),
    ),
    Known(
        "output-strides",
        "non-view outputs with strides differing from CPU",
        lambda f: f.kind == "stride",
    ),
    # -- Found by this fuzzer (not in the issue yet) -----------------------------------------
    Known(
        "empty-skips-shape-checks",
        "copy_ into an empty tensor from a source that does not broadcast to it (a [1, 0] "
        "tensor from a [0, 0] one, a [0, 2] from a [0, 4]) does not raise CPU's 'output with "
        "shape ... doesn't match the broadcast shape' or 'The size of tensor a must match'",
        lambda f: (
            f.kind == "missing-error"
            and f.empty
            and any(w in (f.cpu_error or "") for w in ("broadcast shape", "must match the size"))
        ),
    ),
    Known(
        "scalar-conversion-refused",
        "fill_ of a real tensor with a complex 0-d tensor, nan_to_num(float16, posinf=1e30) and "
        "masked_fill with a complex scalar raise ('value cannot be converted', 'complex scalars "
        "are not supported'); CPU converts the value",
        lambda f: (
            f.kind in ("spurious-error", "error-type")
            and any(
                w in (f.tpu_error or "")
                for w in ("cannot be converted", "complex scalars are not supported")
            )
        ),
    ),
    Known(
        "var-std-out-dtype",
        "var/std with an out= of another dtype raise 'Expected out tensor to have dtype'",
        lambda f: f.op in ("var", "std") and "Expected out tensor" in (f.tpu_error or ""),
    ),
    Known(
        "matmul-dtype-errors",
        "matmul-family ops with operands of different dtypes raise TypeError ('matmul: operands "
        "must share one dtype') or NotImplementedError ('\"bmm\" not implemented for Bool'); CPU "
        "and CUDA raise RuntimeError ('expected m1 and m2 to have the same dtype'); with empty "
        "operands tpu checks dtypes where CPU does not",
        lambda f: (
            f.op in BLAS
            and f.kind in ("error-type", "spurious-error")
            and any(w in (f.tpu_error or "") for w in ("dtype", "not implemented for"))
        ),
    ),
    Known(
        "stats-overflow",
        "var/std/var_mean/std_mean/layer_norm/norm overflow to inf or NaN for values near the "
        "dtype's largest (a sum of squares or a two-pass mean overflows; CPU uses Welford and "
        "scaled norms, as CUDA)",
        lambda f: (
            f.op in STATS_OPS and f.kind == "value" and any(w in f.detail for w in ("inf", "nan"))
        ),
    ),
    Known(
        "mean-out-dtype",
        "mean with an integer out= does not raise CPU's 'result type Float can't be cast to "
        "the desired output type'",
        lambda f: (
            f.op == "mean" and f.kind == "missing-error" and "can't be cast" in (f.cpu_error or "")
        ),
    ),
    Known(
        "reduction-to-bool",
        "sum/prod/cumsum with dtype=torch.bool or a bool out= give False for nonzero values "
        "below 1 (torch.sum(torch.tensor([0.25, 0.0]), 0, dtype=torch.bool); cumsum of "
        "2.9e-39 into a bool out=): the values go through an integer",
        lambda f: (
            f.kind == "value" and f.op in ("sum", "prod", "cumsum") and _dtype(f) == torch.bool
        ),
    ),
    Known(
        "index-fill-negative-index",
        "index_fill with a negative index raises IndexError (CPU wraps it)",
        lambda f: (
            f.op == "index_fill" and f.kind == "spurious-error" and "index -" in (f.tpu_error or "")
        ),
    ),
    Known(
        "index-add-empty",
        "index_add into an empty dimension with indices raises IndexError (CPU and CUDA do "
        "nothing when there is nothing to add)",
        lambda f: f.op == "index_add" and f.kind == "spurious-error" and f.empty,
    ),
    Known(
        "index-add-bool",
        "index_add on bool tensors with alpha differs from CPU (CPU: self | (alpha and src))",
        lambda f: f.op == "index_add" and f.kind == "value" and f.dtype_class == "bool",
    ),
    Known(
        "overlap-not-refused",
        "writes into a tensor whose elements overlap (an expanded out=, fill_ or cumsum_ of an "
        "expand) or that partially overlap an input do not raise CPU's 'unsupported operation: "
        "... refers to a single memory location'",
        lambda f: f.kind == "missing-error" and "single memory location" in (f.cpu_error or ""),
    ),
    Known(
        "complex-accumulate-nonfinite",
        "index_put_(accumulate=True), scatter_add and index_add of complex values with an "
        "infinite part make the other part NaN ((0.75-infj) accumulated into 0 gives nan-infj)",
        lambda f: (
            f.op in ("index_put", "scatter_add", "index_add", "scatter")
            and f.kind == "value"
            and f.dtype_class == "complex"
            and "nan" in f.detail
        ),
    ),
    Known(
        "alpha-checked-against-out-dtype",
        "add/sub check alpha against the out= dtype instead of the inputs' common dtype: "
        "add(int, int, alpha=0.5, out=float) does not raise CPU's 'For integral input tensors, "
        "argument alpha must not be a floating point number', and add(bool, bool, alpha=True, "
        "out=int64) raises 'Boolean alpha only supported for Boolean results'",
        lambda f: (
            (f.kind == "missing-error" and "argument alpha must not be" in (f.cpu_error or ""))
            or (
                f.kind == "spurious-error" and "Boolean alpha only supported" in (f.tpu_error or "")
            )
        ),
    ),
    Known(
        "bf16-matmul-subnormals",
        "bfloat16 matmul treats subnormal inputs as zero: mm([[3.39e38]], [[2.9e-39]]) is 0.0 "
        "(CPU 0.996; float16, float32 and the elementwise mul keep them). AVX-512 BF16 dot "
        "products flush subnormals; CPU and CUDA do not",
        lambda f: (
            f.op in BLAS
            and f.kind == "value"
            and f.dtype_class == "lowp"
            and bool(f.extra.get("subnormal_inputs"))
        ),
    ),
    Known(
        "all-any-uint8-out",
        "all/any with a uint8 out= test the input's values; CPU (and CUDA, same kernel) cast "
        "the input to uint8 first: all(tensor([-0.546, -0.546], dtype=float16), -1, out=uint8) "
        "is 0 on CPU, 1 on tpu",
        lambda f: f.kind == "value" and f.op in ("all", "any") and _dtype(f) == torch.uint8,
    ),
    Known(
        "logsumexp-complex-real-out",
        "logsumexp of a complex tensor into a real out= gives the real part of the result; CPU's "
        "composite (amax, exp, sum, log) gives NaN",
        lambda f: f.kind == "value" and f.op == "logsumexp" and f.dtype_class == "complex",
    ),
    Known(
        "masked-scatter-checks",
        "masked_scatter_ requires a contiguous source of self's dtype (ValueError); CPU accepts "
        "any layout and raises RuntimeError for a short source",
        lambda f: f.op == "masked_scatter" and "ValueError" in (f.tpu_error or ""),
    ),
    Known(
        "addbmm-inplace-resize",
        "addbmm_ whose self broadcasts to the result raises 'cannot hold the result'; CPU "
        "resizes self",
        lambda f: f.op == "addbmm" and "cannot hold the result" in (f.tpu_error or ""),
    ),
    Known(
        "addmv-empty-shape",
        "addmv with an empty matrix gives a result of the broadcast shape; CPU gives self's",
        lambda f: f.op == "addmv" and f.kind == "shape" and f.empty,
    ),
]


def classify(f: Failure) -> tuple[str, Known | None]:
    """("allowed", entry), ("open", entry) or ("new", None)."""
    for k in ALLOWED:
        if k.match is not None and k.match(f):
            return "allowed", k
    for k in OPEN_ISSUES:
        if k.match is not None and k.match(f):
            return "open", k
    return "new", None
