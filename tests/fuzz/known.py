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
        "cpu-std-var-all-fast-path",
        # PyTorch's std_var_out takes a CPU-only fast path for a full reduction into a float32 or
        # float64 result (std_var_all_cpu), which dispatches on the input's dtype: it refuses
        # float16/bfloat16 inputs, and it computes a real input into a complex out=. CUDA's
        # kernel (and tpu) computes in out's dtype: it takes float16/bfloat16 inputs and refuses
        # a complex out of a real input (NotImplementedError), as CPU's kernel does elsewhere.
        "var/std of a whole float16/bfloat16 tensor into a wider out= computes, and of a real "
        "tensor into a complex out= raises NotImplementedError, as CUDA (CPU's fast path)",
        lambda f: (
            f.op in ("var", "std")
            and (
                "std_var_all: Unsupported dtype" in (f.cpu_error or "")
                or (
                    f.kind == "spurious-error"
                    and (f.tpu_error or "").startswith("NotImplementedError")
                    and "'Complex" in (f.tpu_error or "")
                )
            )
        ),
    ),
    Known(
        "fill-value-as-cuda",
        # PyTorch's fill_(Tensor) with a value on another device (a CPU 0-d tensor into a CUDA or
        # tpu tensor) fills with value.item() (fill_out: no overlap check, fill is idempotent),
        # and its fill kernel converts the value with Scalar::to, which raises "value cannot be
        # converted" for a complex value with an imaginary part or a float the dtype cannot
        # hold; scalar_tensor (where with a Python scalar) fills the same way. CPU takes two
        # other paths: a same-device value is copied (copy_: overlap refused, no conversion
        # check) and a one-element fill skips the check (torch.full((1,), 65536.0,
        # dtype=float16) is inf, torch.full((2,), ...) raises). tpu does as CUDA.
        "fill_ with a CPU 0-d value (and where with a Python scalar) converts the value checked "
        "and fills overlapping memory, as CUDA",
        lambda f: (
            f.op in ("fill_", "where")
            and (
                (
                    f.kind in ("spurious-error", "error-type")
                    and "cannot be converted" in (f.tpu_error or "")
                )
                or (
                    f.kind == "missing-error"
                    and "more than one element of the written-to" in (f.cpu_error or "")
                )
            )
        ),
    ),
    Known(
        "alpha-against-out-dtype",
        # add/sub's structured meta checks alpha against dtype(), the output operand's dtype.
        # TensorIterator swaps a CPU output of another dtype for a temporary in the common dtype
        # (cast_common_dtype_to_outputs is applied on CPU only); on CUDA, and on tpu, the output
        # keeps out='s dtype. So add(int, int, alpha=0.5, out=float) computes on CUDA and tpu
        # (CPU: "argument alpha must not be a floating point number"), and add(bool, bool,
        # alpha=True, out=int64) raises "Boolean alpha only supported for Boolean results".
        "add/sub check alpha against out='s dtype, as CUDA (CPU: the inputs' common dtype)",
        lambda f: (
            (f.kind == "missing-error" and "argument alpha must not be" in (f.cpu_error or ""))
            or (
                f.kind == "spurious-error" and "Boolean alpha only supported" in (f.tpu_error or "")
            )
        ),
    ),
    Known(
        "norm-infinite-mean-as-var-mean",
        # A channel holding an infinity: tpu's batch statistics come from the reduction engine's
        # var_mean, whose mean of [inf, inf] is NaN as PyTorch's own var_mean's (Welford) is, and
        # CUDA's batch_norm (Welford too); CPU's batch_norm sums, so its mean is inf. The
        # running mean then differs too.
        "batch_norm/instance_norm of a channel with an infinity: mean and running mean NaN, as "
        "var_mean and CUDA (CPU's batch_norm: inf)",
        lambda f: (
            f.op in ("batch_norm", "instance_norm")
            and f.kind == "value"
            and ("cpu inf, tpu nan" in f.detail or "cpu -inf, tpu nan" in f.detail)
        ),
    ),
    Known(
        "norm-variance-overflow",
        # A row or channel whose variance overflows: tpu computes layer_norm's statistics of
        # float32, float16 and bfloat16 rows in double (norm_layer.c), so it gives the exact
        # result; a float64 row, and batch/instance norm (whose statistics are rounded to the
        # compute type, as CUDA's are), gets var inf, rstd 0 and the bias, as CUDA's Welford
        # does. CPU's kernels give NaN or infinities.
        "layer_norm/batch_norm/instance_norm of a row or channel whose variance overflows: the "
        "exact result or the bias (CUDA's), where CPU gives NaN or an infinity",
        lambda f: (
            f.op in ("layer_norm", "batch_norm", "instance_norm")
            and f.kind == "value"
            and any(f"cpu {v}," in f.detail for v in ("nan", "inf", "-inf"))
        ),
    ),
    Known(
        "all-any-uint8-out-as-cuda",
        # PyTorch's get_allany_iter (ReduceOps.cpp): on CUDA the reduction reads the input in its
        # own dtype (each value tested against zero); elsewhere the input is first cast to
        # out's dtype, so with a uint8 out= CPU truncates -0.546 to 0 and all() is 0. CUDA's
        # and tpu's all(tensor([-0.546, -0.546]), -1, out=uint8) is 1.
        "all/any with a uint8 out= test the input's own values, as CUDA (CPU casts to uint8 first)",
        lambda f: f.kind == "value" and f.op in ("all", "any") and _dtype(f) == torch.uint8,
    ),
    Known(
        "strides-as-cuda",
        # TensorIterator (compute_types) converts the inputs of another dtype to the common
        # dtype when the common device is the CPU, and only there; CUDA's kernels cast while
        # loading. The converted copy of an overlapping or non-dense input (an expand, an
        # as_strided with a zero stride) is dense, so CPU orders the output's dimensions by the
        # copy's strides, CUDA (and tpu) by the input's own. check.py _cuda_layout_matches
        # reruns the step on CPU with inputs already of the common dtype and their own strides.
        "an elementwise result of mixed-dtype inputs is laid out from the inputs' own strides, "
        "as CUDA (CPU: from converted copies)",
        lambda f: f.kind == "stride" and bool(f.extra.get("cuda_layout")),
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
        "max-pool1d-layout-as-cuda",
        # PyTorch's max_pool1d runs a CPU-only kernel when no gradient or indices are needed,
        # which writes a contiguous result; every other device (CUDA's, and the meta functions)
        # runs max_pool1d_with_indices on the input unsqueezed to 4-d, whose result follows the
        # input's memory format. tpu does as they do; in-place ops that write the result later
        # are blamed for it.
        "max_pool1d's result follows the input's layout, as CUDA and the meta functions (CPU's "
        "fast path: contiguous)",
        lambda f: (
            f.kind == "stride"
            and f.extra.get("made_by") == "max_pool1d"
            and bool(f.extra.get("meta_matches"))
        ),
    ),
    Known(
        "pool3d-unbatched-layouts",
        # CPU's 3-d pooling picks its kernel by the input's suggested memory format: an
        # unbatched (4-d) input whose strides look channels-last is refused ("Unsupported memory
        # format. Supports only ChannelsLast3d, Contiguous"; PyTorch's own permuted-input tests
        # skip max_pool3d_with_indices for it) and others get a 4-d channels-last result. tpu
        # computes them, laid out as the meta functions lay them out.
        "3-d pooling of an unbatched input in a permuted layout computes, laid out as the meta "
        "functions (CPU refuses some and lays out others channels-last)",
        lambda f: (
            (f.op.endswith("pool3d") or (f.extra.get("made_by") or "").endswith("pool3d"))
            and (
                (f.kind == "stride" and f.extra.get("ndim") == 4)
                or (
                    f.kind == "missing-error" and "Unsupported memory format" in (f.cpu_error or "")
                )
            )
        ),
    ),
    Known(
        "integer-max-pool-index-range",
        # CPU's channels-last max pooling of an integer input keeps the winner's index in the
        # input's own integer type, so it refuses planes with more elements than that type
        # holds ("Expected input_depth * input_height * input_width <= std::numeric_limits
        # <integer_t>::max()", 255 for uint8); tpu's indices are int64 and it computes them.
        "max pooling of a large channels-last integer plane computes (CPU's kernel refuses it)",
        lambda f: (
            f.op.startswith("max_pool")
            and f.kind == "missing-error"
            and "numeric_limits<integer_t>" in (f.cpu_error or "")
        ),
    ),
    Known(
        "add-alpha-fused",
        # add/sub with alpha compute a + alpha * b in one rounding (a fused multiply-add, as
        # CUDA's compiled kernel does); CPU rounds alpha * b first, so where that product alone
        # overflows (inf - 2 * 1.8e308) CPU gives NaN and tpu the exact infinity.
        "add/sub with alpha round once: an overflowing alpha * b next to an infinity gives the "
        "infinity (CPU: NaN)",
        lambda f: (
            f.op in ("add", "sub")
            and f.kind == "value"
            and ("cpu nan, tpu inf" in f.detail or "cpu nan, tpu -inf" in f.detail)
        ),
    ),
    Known(
        "fused-dead-errors",
        # README "Eager modes": fused mode never runs a computation whose results nobody reads;
        # an error it would have found (an index out of range) is not raised. PyTorch's math-bit
        # fallback makes such computations: an in-place op on an empty conjugate or negative
        # view runs on a clone that is never copied back (nothing to copy).
        "fused mode: an op on an empty math view whose result is never read raises nothing",
        lambda f: f.mode == "fused" and f.kind == "missing-error" and f.empty,
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
        "batch-norm-mixed-dtypes",
        # ops.batch_norm: CPU's batch_norm refuses parameters and statistics of another dtype
        # than the input's ("mixed dtype (CPU)"), except float32 ones for a float16/bfloat16
        # input, and its instance_norm refuses those too; tpu computes every mix in the input's
        # compute type. The generator draws the mixes CPU takes.
        "batch_norm gets parameters of the input's dtype, or float32 ones for a float16/"
        "bfloat16 input; instance_norm gets the input's dtype",
    ),
    Known(
        "complex-branch-cuts-c99",
        # check.py _scalar_loop: CPU's scalar loops call libm (its vectorized cosh overflows
        # before libm's does), and for complex log, log1p, pow, asin and the like follow C99's
        # branch cuts by the sign of a zero imaginary part (log(-1 - 0j) is -pi j;
        # negative and conjugate views make such zeros), its vectorized loop ignores the sign,
        # and its vectorized complex negation (0 - z, resolving a negative view) makes +0 where
        # IEEE's -z makes -0: CPU's own result depends on the tensor's size. The result of CPU's
        # scalar loops, element by element, is accepted.
        "elementwise functions may give CPU's scalar loop's result (libm; C99's branch cuts by "
        "the sign of a zero imaginary part) where its vectorized loop differs",
    ),
    Known(
        "no-duplicate-scatter-indices",
        # values.unique_index_values: scatter, index_copy and index_put_ (accumulate=False) with
        # a repeated index write in an unspecified order on CUDA (and tpu); the generator draws
        # no repeats for them.
        "scatter/index_copy/index_put_ get no repeated indices",
    ),
]


def _dtype(f: Failure) -> torch.dtype | None:
    d = f.extra.get("dtype")
    return d if isinstance(d, torch.dtype) else None


OPEN_ISSUES: list[Known] = [
    # Empty: every class issue 20 filed and this fuzzer found since is fixed (tests/
    # test_fuzz_regressions.py, tests/test_kernel_edge_values.py) or, where CUDA differs from
    # CPU and tpu does as CUDA, listed in ALLOWED with the reason.
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
