"""Runs a program on tpu in one eager mode and compares it with its CPU run: errors, then dtypes,
shapes, strides and values of every result and of every input a step wrote into.

What is compared, and how:

- Errors. When CPU raises at step k, tpu must raise too, at step k with the same exception type.
  In strict and fused mode an error tpu finds while running an op surfaces at the next
  synchronization (README, "Eager modes"; CUDA's device asserts do the same): the program is
  rerun with a synchronization after each step to find the step that failed, and an error of
  step k at the synchronization is reported as kind "error-type" with extra "at_sync", which
  known.ALLOWED accepts when it is a RuntimeError. When CPU does not raise, tpu must not raise,
  neither at an op nor at the synchronization. Messages are not compared. An error difference at
  a step that reads earlier results is checked like a value (the local oracle below): if the
  step on CPU from tpu's inputs behaves as on tpu (a nonzero count that differs by one rounding),
  it is not a failure.
- Dtypes and shapes: equal.
- Strides: equal in every dimension of size > 1, for tensors with elements. The stride of a size-1
  dimension never changes which element is where (PyTorch itself is inconsistent there between
  kernels and devices), and an empty tensor has no layout. Everything else is compared, views and
  non-views alike: a view's strides follow from its base's, which are compared, and a kernel's
  output layout (TensorIterator's "follow the inputs' layout", or contiguous) is part of what CPU
  and CUDA agree on and programs rely on (`.view()` after an op).
- Values: integers and bool exactly. Floating and complex values with the tolerances below, NaN
  equal to NaN whatever its sign and payload (IEEE leaves them unspecified; x86's default NaN is
  negative, CUDA's positive), +0.0 equal to -0.0, an infinity only equal to itself.

Tolerances (`TOLERANCES`) are torch.testing's defaults for each dtype, a few units in the last
place relative plus a small absolute term: two correct kernels may round differently (another
polynomial for exp, another summation order, float32 accumulation of float16), and those differ by
about one unit in the last place of the dtype: 2^-10 for float16, 2^-7 for bfloat16 (so looser),
2^-23 and 2^-52 for float32 and float64 (tight). When a value is outside them, two more checks
decide before it is a failure:

- The local oracle. A step whose inputs are results of earlier steps sees the tpu's rounding of
  them, not CPU's: `floor` of an `exp` that is one ulp apart differs by 1. So the program runs
  again on tpu up to the step, with a device clone of each input of the step taken just before it
  (a clone, not a host read, so fused mode's graph is not cut), and the step runs on CPU from those
  values. The difference is a failure only if it remains.
- The rounding allowance. The step also runs on CPU in float64 (complex128) from the same values;
  the distance between CPU's result and that one measures how much this input amplifies rounding
  (a sum that cancels, a layer_norm of a near-constant row), and four times it is allowed on top
  of the tolerance. Sums and matmuls (SUM_OPS) also get 4 k eps sum(|terms|). A value that
  matches the float64 result rounded to the output dtype is accepted too (tpu more accurate than
  CPU), and for fmod/remainder CUDA's exact formula.
- The compute dtype. With an out= of another dtype the op computes in its inputs' dtype and
  casts: the tolerance is the coarser of the two dtypes', and where CPU's values are all values of
  the compute dtype, tpu's must be too (exp(bfloat16, out=float32) is a bfloat16 exp).

A difference in shape, dtype, stride or a spurious error is also run on the meta device, and the
detail notes when meta agrees with tpu: a hint for triage, not an allowance.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from .program import Program, Ref, Run, Step, execute, resolve, resolve_fn, run_step, tpu

# (rtol, atol) per dtype: torch.testing.assert_close's defaults.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}


# Counters of the local oracle: how often it ran, and how often it found no difference.
STATS: dict[str, int] = {"oracle": 0, "noise": 0}


def dtype_class(dtype: torch.dtype) -> str:
    if dtype == torch.bool:
        return "bool"
    if dtype.is_complex:
        return "complex"
    if dtype in (torch.float16, torch.bfloat16):
        return "lowp"
    if dtype.is_floating_point:
        return "float"
    return "int"


@dataclass
class Failure:
    """One difference between CPU and tpu. `step` is the index of the step it is blamed on."""

    kind: str
    mode: str
    step: int
    op: str
    variant: str
    dtype_class: str
    detail: str
    empty: bool = False
    value: str | None = None  # the value whose comparison failed
    cpu_error: str | None = None
    tpu_error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def signature(self) -> str:
        e = " empty" if self.empty else ""
        return f"{self.op}[{self.variant}] {self.kind} {self.dtype_class}{e}"


def _err(e: BaseException) -> str:
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {msg[:200]}"


def _tensors(v: Any, name: str) -> Iterator[tuple[str, torch.Tensor]]:
    if isinstance(v, torch.Tensor):
        yield name, v
    elif isinstance(v, (tuple, list)):
        for i, x in enumerate(v):
            if isinstance(x, torch.Tensor):
                yield f"{name}[{i}]", x


def _get(values: dict[str, Any], bases: dict[str, torch.Tensor], name: str) -> Any:
    if name.startswith("base:"):
        return bases[name[5:]]
    if name.endswith("]"):
        n, i = name[:-1].split("[")
        return values[n][int(i)]
    return values[name]


def _skey(t: torch.Tensor) -> int:
    return int(t.untyped_storage()._cdata)


def compared(program: Program, cpu: Run) -> list[tuple[int, str]]:
    """(blamed step, value name) for every value compared, in the order compared: each step's
    tensor results and, for every input a step writes into, the input and its base. A value is
    blamed on the last step that wrote into its storage."""
    steps = program.steps
    n = len(steps) if cpu.error is None else cpu.error[0]
    last: dict[int, int] = {}
    written_inputs: list[str] = []
    input_names = {i.name for i in program.inputs}
    for i in range(n):
        s = steps[i]
        for _, t in _tensors(cpu.values.get(s.name), s.name):
            last[_skey(t)] = i
        for r in s.writes():
            v = cpu.values[r.name] if r.index is None else cpu.values[r.name][r.index]
            if isinstance(v, torch.Tensor):
                last[_skey(v)] = i
            if r.name in input_names and r.name not in written_inputs:
                written_inputs.append(r.name)
    out: list[tuple[int, str]] = []
    for i in range(n):
        s = steps[i]
        for name, t in _tensors(cpu.values.get(s.name), s.name):
            out.append((last.get(_skey(t), i), name))
    for name in written_inputs:
        t = cpu.values[name]
        out.append((last.get(_skey(t), 0), name))
        out.append((last.get(_skey(cpu.bases[name]), 0), "base:" + name))
    out.sort(key=lambda p: p[0])
    return out


# ---------------------------------------------------------------------------------------------
# Comparing two tensors


def _plain(t: torch.Tensor) -> torch.Tensor:
    """The values of a tensor with its lazy conjugate and negative bits applied."""
    return t.resolve_conj().resolve_neg()


def compare_meta(c: torch.Tensor, t: torch.Tensor) -> tuple[str, str] | None:
    if not isinstance(t, torch.Tensor):
        return "type", f"cpu returns a tensor, tpu {type(t).__name__}"
    if (c.is_conj(), c.is_neg()) != (t.is_conj(), t.is_neg()):
        return "bits", (
            f"conj/neg bits: cpu {c.is_conj()}/{c.is_neg()}, tpu {t.is_conj()}/{t.is_neg()}"
        )
    if t.dtype != c.dtype:
        return "dtype", f"cpu {c.dtype}, tpu {t.dtype}"
    if t.shape != c.shape:
        return "shape", f"cpu {tuple(c.shape)}, tpu {tuple(t.shape)}"
    if c.numel() and any(c.stride(i) != t.stride(i) for i in range(c.dim()) if c.size(i) > 1):
        return "stride", f"shape {tuple(c.shape)}: cpu {c.stride()}, tpu {t.stride()}"
    return None


def _close(
    c: torch.Tensor,
    t: torch.Tensor,
    noise: torch.Tensor | None = None,
    alts: list[torch.Tensor] | None = None,
    loose_complex: bool = False,
    tol_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """Elementwise: t is close to c (NaN-aware), with `noise` allowed on top of the tolerance,
    or close to one of `alts` (the exact result from float64, CUDA's formula); for complex
    values with
    `loose_complex`, any non-finite value matches any other."""
    c, t = _plain(c), _plain(t)
    alts = [_plain(a) for a in alts or []]
    rtol, atol = TOLERANCES.get(c.dtype, (0.0, 0.0))
    if tol_dtype is not None and tol_dtype in TOLERANCES:  # computed in a coarser dtype
        rtol, atol = max(rtol, TOLERANCES[tol_dtype][0]), max(atol, TOLERANCES[tol_dtype][1])
    cplx = c.is_complex()
    if cplx:
        c, t = torch.view_as_real(c), torch.view_as_real(t)
        if noise is not None:
            noise = noise.unsqueeze(-1)
        alts = [torch.view_as_real(a) for a in alts or []]
    cd, td = c.double(), t.double()
    ok = torch.isclose(td, cd, rtol=rtol, atol=atol, equal_nan=True)
    if noise is not None and not bool(ok.all()):
        finite = torch.isfinite(cd) & torch.isfinite(td)
        ok = ok | (finite & ((td - cd).abs() <= atol + rtol * cd.abs() + 4 * noise))
        ok = ok | torch.isinf(noise)  # the terms overflow: no digit of the result is known
    for alt in alts or []:
        if not bool(ok.all()):
            ok = ok | torch.isclose(td, alt.double(), rtol=rtol, atol=atol, equal_nan=True)
    if cplx:
        ok = ok.all(-1)
        if loose_complex:
            ok = ok | (~torch.isfinite(cd).all(-1) & ~torch.isfinite(td).all(-1))
    elif loose_complex and not bool(ok.all()):
        ok = ok | (~torch.isfinite(cd) & ~torch.isfinite(td))
    return ok


def compare_values(
    c: torch.Tensor,
    t: torch.Tensor,
    noise: torch.Tensor | None = None,
    alts: list[torch.Tensor] | None = None,
    loose_complex: bool = False,
    tol_dtype: torch.dtype | None = None,
) -> str | None:
    """None when the CPU tensors c (expected) and t are equal (integers, bool) or close
    (floating, complex; see _close); else a description of the first difference."""
    if torch.equal(c, t):
        return None
    if c.is_floating_point() or c.is_complex():
        ok = _close(c, t, noise, alts, loose_complex, tol_dtype)
        if bool(ok.all()):
            return None
        bad = (~ok).nonzero()[0].tolist()
        n = int((~ok).sum())
    else:
        bad = (c != t).nonzero()[0].tolist()
        n = int((c != t).sum())
    cv, tv = c[tuple(bad)].item(), t[tuple(bad)].item()
    return f"{n} of {c.numel()} differ; at {bad}: cpu {cv!r}, tpu {tv!r}"


# Ops whose complex results come from multiplications (BLAS, complex products, transcendental
# functions, means, alpha * other in add/sub/index_add): for them a non-finite complex value
# matches any non-finite one. Which part of (inf + 1j) * (1 + 0j) becomes NaN depends on the
# formula (CPU's naive product gives inf+nanj; BLAS kernels and CUDA's differ; CPU's index_add
# multiplies by alpha 1 for some layouts only), and C99 Annex G treats all of them as one
# complex infinity.
COMPLEX_LOOSE_OPS = frozenset(
    "mm bmm matmul addmm addmv addbmm baddbmm dot vdot mv linear mul div pow prod mean "
    "exp exp2 expm1 log log2 log10 log1p sin cos tan tanh sinh cosh asin acos atan sqrt "
    "rsqrt reciprocal sigmoid lerp addcmul addcdiv add sub rsub norm vector_norm var std "
    "var_mean std_mean softmax log_softmax logsumexp index_add".split()
)


# ---------------------------------------------------------------------------------------------
# The local oracle


def _upcast(v: Any, ints: bool = False) -> Any:
    """float64 (complex128) for floating (complex) tensors and dtypes; with `ints`, for
    integer tensors too (a float result of integer inputs: cosh(89))."""
    if isinstance(v, torch.Tensor):
        if v.dtype in (torch.float16, torch.bfloat16, torch.float32):
            return v.double()
        if v.dtype == torch.complex64:
            return v.to(torch.complex128)
        if ints and not v.is_floating_point() and not v.is_complex() and v.dtype != torch.bool:
            return v.double()
        return v
    if isinstance(v, tuple):
        return tuple(_upcast(x, ints) for x in v)
    if isinstance(v, list):
        return [_upcast(x, ints) for x in v]
    if v in (torch.float16, torch.bfloat16, torch.float32):
        return torch.float64
    return v


def oracle(program: Program, k: int, mode: str) -> tuple[bool, str, dict[str, Any]]:
    """Reruns the program on tpu to step k with clones of step k's inputs taken just before it,
    runs step k on CPU from them, and compares. (True, detail, extra) when the step's outputs
    still differ (or the check cannot be made), (False, "", {}) when they agree. extra's
    "fp32_matches": the step's float16/bfloat16 inputs taken to float32 give tpu's result."""
    confirmed, detail, local = _oracle(program, k, mode)
    extra: dict[str, Any] = {}
    if confirmed and local is not None:
        extra["fp32_matches"] = _fp32_matches(program.steps[k], *local)
    return confirmed, detail, extra


def _fp32_matches(step: Step, local: dict[str, Any], got: dict[str, Any]) -> bool:
    lowp = (torch.float16, torch.bfloat16)

    def up(v: Any) -> Any:
        if isinstance(v, torch.Tensor) and v.dtype in lowp:
            return v.float()
        if isinstance(v, tuple):
            return tuple(up(x) for x in v)
        return v

    if not any(isinstance(v, torch.Tensor) and v.dtype in lowp for v in local.values()):
        return False
    vals = {n: up(v) for n, v in _copy_values(local).items()}
    try:
        run_step(vals, step)
    except Exception:
        return False
    want = vals.get(step.name)
    res = got.get(step.name)
    for (_, w), (_, g) in zip(_tensors(want, step.name), _tensors(res, step.name), strict=False):
        g = g.cpu()
        if compare_values(w.to(g.dtype), g) is not None:
            return False
    return True


def _tpu_inputs(program: Program, k: int, mode: str) -> tuple[Run, dict[str, Any] | None, str]:
    """Reruns the program on tpu to step k with a device clone of each of step k's inputs taken
    just before it: (the run, CPU copies of the clones by value name, or None and why not)."""
    step = program.steps[k]
    refs = list(dict.fromkeys(step.refs()))
    snaps: dict[Ref, Any] = {}

    def hook(i: int, values: dict[str, Any]) -> None:
        if i != k:
            return
        seen: dict[int, tuple[Any, torch.Tensor]] = {}
        for r in refs:
            v = values[r.name] if r.index is None else values[r.name][r.index]
            if isinstance(v, torch.Tensor):
                key = _skey(v)
                if key in seen and step.writes():
                    view, clone = seen[key]
                    if view != (v.data_ptr(), v.shape, v.stride()):
                        # Two views of memory the step writes: clones would not alias. (A step
                        # that only reads them computes the same from separate clones.)
                        raise _Aliased
                    snaps[r] = clone  # the same tensor twice (out= is an input): one clone
                    continue
                snaps[r] = _bits_kept(v, torch.clone)
                seen[key] = ((v.data_ptr(), v.shape, v.stride()), snaps[r])
            else:
                snaps[r] = v

    with tpu.eager_mode(mode):
        run = execute(program, "tpu", stop=k + 1, hook=hook)
    if run.error is not None and (run.error[0] < k or isinstance(run.error[1], _Aliased)):
        _recover()
        if isinstance(run.error[1], _Aliased):
            return run, None, "inputs alias"
        return run, None, f"the rerun raised {_err(run.error[1])}"
    local: dict[str, Any] = {}
    try:
        host: dict[int, torch.Tensor] = {}  # one host copy per clone, so aliases stay aliases
        for r, v in snaps.items():
            if isinstance(v, torch.Tensor):
                snaps[r] = host.setdefault(id(v), _bits_kept(v, lambda u: u.cpu()))
    except Exception as e:  # an input poisoned by an earlier asynchronous error
        _recover()
        return run, None, f"reading the inputs raised {_err(e)}"
    for r, v in snaps.items():
        if r.index is None:
            local[r.name] = v
        else:
            lst = list(local.get(r.name, ()))
            lst += [None] * (r.index + 1 - len(lst))
            lst[r.index] = v
            local[r.name] = tuple(lst)
    return run, local, ""


def cpu_raises_on_tpu_inputs(program: Program, k: int, mode: str) -> BaseException | None | bool:
    """Whether step k raises on CPU from tpu's values of its inputs: the exception, None, or
    False when they cannot be had."""
    run, local, _ = _tpu_inputs(program, k, mode)
    _recover()
    if local is None:
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run_step(local, program.steps[k])
    except Exception as e:
        return e
    return None


def _oracle(
    program: Program, k: int, mode: str
) -> tuple[bool, str, tuple[dict[str, Any], dict[str, Any]] | None]:
    step = program.steps[k]
    run, got_local, why = _tpu_inputs(program, k, mode)
    if got_local is None:
        return True, why, None
    if run.error is not None:
        return True, f"the rerun raised {_err(run.error[1])}", None
    local = got_local
    pristine = _copy_values(local)
    local = _copy_values(local)
    try:
        run_step(local, step)
    except Exception as e:
        return True, f"CPU raises on the tpu's inputs: {_err(e)}", None
    # The same step in float64 (integer inputs too when the result is floating: the op
    # promotes them anyway).
    result = dict(_tensors(local.get(step.name), step.name))
    floating = any(t.is_floating_point() or t.is_complex() for t in result.values())
    local64 = {
        n: _upcast(v.clone() if isinstance(v, torch.Tensor) else v, floating)
        for n, v in pristine.items()
    }
    try:
        run_step(local64, _upcast_step(step))
    except Exception:
        local64 = {}
    compute = _compute_dtypes(step, pristine)
    outs = [(step.name, None)] + [(r.name, r.index) for r in step.writes()]
    for pos, (name, idx) in enumerate(outs):
        want = local.get(name)
        got = run.values.get(name)
        want64 = local64.get(name)
        if idx is not None:
            want = want[idx] if want is not None else None
            got = got[idx] if got is not None else None
            want64 = want64[idx] if want64 is not None else None
        pairs = zip(_tensors(want, name), _tensors(got, name), strict=False)
        for j, ((wn, w), (_, g)) in enumerate(pairs):
            m = compare_meta(w, g)
            if m is not None and m[0] != "stride":
                return True, f"{wn}: {m[1]}", (pristine, run.values)
            noise = None
            alts = []
            # The dtype the op computes in: an out= of another dtype gets the result cast.
            at = j if pos == 0 else pos - 1
            cdt = compute[at] if at < len(compute) else w.dtype
            w64 = dict(_tensors(want64, name)).get(wn)
            if (
                w64 is not None
                and w64.shape == w.shape
                and (w.is_floating_point() or w.is_complex())
                and (w64.is_floating_point() or w64.is_complex())
            ):
                # The exact result, rounded to the dtype the op computes in (an out= of
                # another dtype gets the result cast: exp(bfloat16, out=float32) is a
                # bfloat16 exp), then to the output's.
                if cdt.is_floating_point or cdt.is_complex:
                    w64 = w64.to(cdt)
                noise = w.to(torch.complex128 if w64.is_complex() else torch.float64) - w64
                noise = noise.abs()
                noise = torch.where(torch.isfinite(noise), noise, torch.zeros_like(noise))
                noise = noise.double()
                # tpu may be more accurate than CPU (cosh(89.0) in float32 is finite; CPU's
                # overflows, CUDA's does not).
                alts.append(w64.to(w.dtype))
            bound = _sum_bound(step, pristine, wn, w)
            if bound is None:
                bound = _layer_norm_bound(step, pristine, w)
            if bound is not None:
                noise = bound if noise is None else torch.maximum(noise, bound)
            huge = _huge_quotient(step, pristine)
            if huge is not None and huge.shape == w.shape and bool(huge.any()):
                inf = torch.full(w.shape, math.inf, dtype=torch.float64)
                base = noise if noise is not None else torch.zeros_like(inf)
                noise = torch.where(huge, inf, base)
            # Other acceptable results: the formula without BLAS, the input cast first, the
            # exact product, the scaled norm, CUDA's formula, CPU's scalar loop.
            alternatives = (
                _naive_blas,
                _cast_first,
                _exact_prod,
                _scaled_norm,
                _cuda_formula,
                _scalar_loop,
            )
            for alternative in alternatives:
                alt = alternative(step, pristine)
                if alt is not None and alt.shape == w.shape:
                    alts.append(alt.to(w.dtype))
            loose = step.op in COMPLEX_LOOSE_OPS if w.is_complex() else step.op in BLAS_OPS
            gc = g.cpu()
            if _coarser(cdt, w.dtype) and _holds(cdt, w):
                # CPU computes in cdt, then casts to out=: each value must be one cdt holds
                # (exp(bfloat16, out=float32) is a bfloat16 exp, not a float32 one).
                same = _holds_each(cdt, gc)
                if not bool(same.all()):
                    bad = (~same).nonzero()[0].tolist()
                    v = gc[tuple(bad)].item()
                    return (
                        True,
                        f"{wn}: at {bad} tpu {v!r} is not a {cdt} value",
                        (
                            pristine,
                            run.values,
                        ),
                    )
            d = compare_values(w, gc, noise, alts, loose, cdt)
            if d is not None:
                return True, f"{wn}: {d}", (pristine, run.values)
    return False, "", None


def _coarser(a: torch.dtype, b: torch.dtype) -> bool:
    """a is a floating (complex) dtype with fewer mantissa bits than floating (complex) b."""
    if a.is_complex != b.is_complex or not (a.is_floating_point or a.is_complex):
        return False
    if not (b.is_floating_point or b.is_complex):
        return False
    return torch.finfo(a).eps > torch.finfo(b).eps


def _holds_each(dtype: torch.dtype, t: torch.Tensor) -> torch.Tensor:
    back = t.to(dtype).to(t.dtype)
    return (back == t) | (torch.isnan(back) & torch.isnan(t))


def _holds(dtype: torch.dtype, t: torch.Tensor) -> bool:
    return bool(_holds_each(dtype, t).all())


# Reductions whose out= dtype is the one they compute in.
OUT_DTYPE_REDUCTIONS = frozenset("sum mean prod nansum cumsum cumprod var std".split())


def _compute_dtypes(step: Step, local: dict[str, Any]) -> list[torch.dtype]:
    """For an out= call, the dtypes of the functional call's results (what the op computes in
    before the cast to out=); else []. Reductions compute in out's dtype (PyTorch's
    make_reduction_from_out_ty), the input cast to it: [] for them too."""
    if step.variant != "out" or step.op in OUT_DTYPE_REDUCTIONS:
        return []
    functional = replace(
        step, kwargs=tuple((k, v) for k, v in step.kwargs if k != "out"), variant="functional"
    )
    vals = _copy_values(local)
    try:
        run_step(vals, functional)
    except Exception:
        return []
    return [t.dtype for _, t in _tensors(vals.get(step.name), step.name)]


# Matrix products: BLAS kernels differ in how an infinity meets a zero or another infinity
# (MKL skips the zero terms of a row, IEEE arithmetic makes NaN), so for them any non-finite
# value matches any other (check.py _close).
BLAS_OPS = frozenset("mm bmm matmul addmm addmv addbmm baddbmm dot vdot mv linear".split())

# Ops that sum products (sums, matmuls): their rounding error is bounded by
# k * eps * sum(|terms|), which can dwarf the result when terms cancel.
SUM_OPS = frozenset(
    "sum mean cumsum mm bmm matmul addmm addmv addbmm baddbmm dot vdot mv linear index_add "
    "scatter_add addcmul addcdiv".split()
)


def _absolute(v: Any, ints: bool = False) -> Any:
    if isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex()):
        return v.abs().double()
    if ints and isinstance(v, torch.Tensor) and v.dtype != torch.bool:
        return v.double().abs()
    if isinstance(v, (float, complex)):
        return abs(v)
    if isinstance(v, tuple):
        return tuple(_absolute(x, ints) for x in v)
    if isinstance(v, list):
        return [_absolute(x, ints) for x in v]
    return v


def _sum_bound(
    step: Step, local: dict[str, Any], name: str, want: torch.Tensor
) -> torch.Tensor | None:
    """For SUM_OPS: 4 k eps sum(|terms|) per element (k: the longest dimension of an input),
    computed by running the step on the inputs' absolute values in float64."""
    summing = step.op in SUM_OPS or (step.op == "scatter" and "reduce" in dict(step.kwargs))
    # The mean of var_mean/std_mean is a sum too (CPU's Welford and a two-pass mean differ).
    mean_of_stats = step.op in ("var_mean", "std_mean") and name.endswith("[1]")
    if not (summing or mean_of_stats) or not (want.is_floating_point() or want.is_complex()):
        return None
    # Integer inputs summed into a floating result count too (not the indices of index ops).
    ints = step.op not in ("index_add", "scatter_add", "scatter")
    vals = {n: _absolute(v, ints) for n, v in _copy_values(local).items()}
    absolute = replace(
        step,
        args=tuple(_absolute(a) for a in step.args),
        kwargs=tuple(
            (k, _upcast(abs(v) if k in ("alpha", "beta", "value") else _absolute(v)))
            for k, v in step.kwargs
        ),
    )
    try:
        run_step(vals, absolute)
    except Exception:
        return None
    results = dict(_tensors(vals.get(step.name), step.name))
    got = results.get(name)
    if got is None:  # an out= tensor: the result is the same tensor
        got = next((t for t in results.values() if t.shape == want.shape), None)
    if got is None or got.shape != want.shape:
        return None
    k = max([1] + [max(t.shape, default=1) for t in local.values() if isinstance(t, torch.Tensor)])
    fi = torch.finfo(want.dtype)
    terms = got.abs().double()
    b = terms * (4 * k * fi.eps)
    # Sums of terms near the dtype's largest value may overflow in one order and not another.
    b = torch.where(terms >= fi.max / 16, torch.full_like(b, math.inf), b)
    return torch.where(torch.isnan(b), torch.zeros_like(b), b)


def _layer_norm_bound(step: Step, local: dict[str, Any], want: torch.Tensor) -> torch.Tensor | None:
    """For layer_norm: y = (x - mean) rstd w + b sums terms that may cancel. Its rounding error
    is bounded by 4 eps (|x_hat w| + |b| + |w| rstd mean(|x|)): the last term is the mean's own
    rounding (a few units of mean(|x|)) scaled by the row's rstd and weight. eps is float32's for
    float16/bfloat16, which compute in float32 (opmath)."""
    if step.op != "layer_norm" or not want.is_floating_point():
        return None
    try:
        x = resolve(local, step.args[0]).double()
        shape = tuple(step.args[1])
        kw = {k: resolve(local, v) for k, v in step.kwargs}
        dims = tuple(range(x.dim() - len(shape), x.dim()))
        mean = x.mean(dims, keepdim=True)
        rstd = ((x - mean).square().mean(dims, keepdim=True) + kw.get("eps", 1e-5)).rsqrt()
        scale = kw["weight"].double().abs() if kw.get("weight") is not None else 1.0
        shift = kw["bias"].double().abs() if kw.get("bias") is not None else 0.0
        terms = ((x - mean) * rstd).abs() * scale + shift + scale * rstd * x.abs().mean(dims, True)
    except Exception:
        return None
    if terms.shape != want.shape:
        return None
    lowp = want.dtype in (torch.float16, torch.bfloat16)
    b = terms * (4 * torch.finfo(torch.float32 if lowp else want.dtype).eps)
    return torch.where(torch.isfinite(b), b, torch.zeros_like(b))


def _nmatmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """torch.matmul as products and sums (IEEE: 0 * inf is NaN, nothing is skipped)."""
    x = a.unsqueeze(0) if a.dim() == 1 else a
    y = b.unsqueeze(-1) if b.dim() == 1 else b
    r = (x.unsqueeze(-1) * y.unsqueeze(-3)).sum(-2)
    if a.dim() == 1:
        r = r.squeeze(-2)
    if b.dim() == 1:
        r = r.squeeze(-1)
    return r


def _naive_blas(step: Step, local: dict[str, Any]) -> torch.Tensor | None:
    """The matmul family's result computed exactly as written, in float64 (complex128), without
    BLAS: MKL may scale an operand by alpha first (2 * -max is -inf, and 0 * -inf NaN) or skip
    zeros, where the formula gives a number."""
    if step.op not in BLAS_OPS:
        return None
    try:
        args = [resolve(local, a) for a in step.args]
        kw = {k: resolve(local, v) for k, v in step.kwargs if k != "out"}
        wide = [
            a.to(torch.complex128 if a.is_complex() else torch.float64)
            if isinstance(a, torch.Tensor)
            else a
            for a in args
        ]
        op = step.op
        if op in ("mm", "bmm", "matmul", "mv"):
            return _nmatmul(wide[0], wide[1])
        if op == "dot":
            return (wide[0] * wide[1]).sum()
        if op == "vdot":
            return (wide[0].conj() * wide[1]).sum()
        if op == "linear":
            r = _nmatmul(wide[0], wide[1].t())
            return r + wide[2] if len(wide) > 2 else r
        beta, alpha = kw.get("beta", 1), kw.get("alpha", 1)
        prod = _nmatmul(wide[1], wide[2])
        if op == "addbmm":
            prod = prod.sum(0)
        base = torch.zeros_like(prod) if beta == 0 else beta * wide[0]
        return base + alpha * prod
    except Exception:
        return None


def _cast_first(step: Step, local: dict[str, Any]) -> torch.Tensor | None:
    """For a call with a floating dtype= (softmax, sum, cumsum...): the exact result of the
    input cast to that dtype first, as PyTorch documents ("the input tensor is cast to dtype
    before the operation is performed"), rounded to the dtype. var/std with an out= compute in
    out's dtype, the input cast to it (std_var_out; CPU's fast path for a full reduction
    computes in the input's dtype instead, CUDA's kernel does not)."""
    kwargs = dict(step.kwargs)
    dtype = kwargs.get("dtype")
    if step.op in ("var", "std") and isinstance(kwargs.get("out"), Ref):
        out = resolve(local, kwargs["out"])
        dtype = out.dtype if isinstance(out, torch.Tensor) else None
    if not isinstance(dtype, torch.dtype) or not (dtype.is_floating_point or dtype.is_complex):
        return None
    wide = torch.complex128 if dtype.is_complex else torch.float64

    def cast(v: Any) -> Any:
        if isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex()):
            return v.to(dtype).to(wide)
        return v

    vals = {n: cast(v) for n, v in _copy_values(local).items()}
    kw = tuple((k, wide if k == "dtype" else v) for k, v in step.kwargs if k != "out")
    try:
        run_step(vals, replace(step, kwargs=kw))
    except Exception:
        return None
    got = next((t for _, t in _tensors(vals.get(step.name), step.name)), None)
    return None if got is None else got.to(dtype)


def _exact_prod(step: Step, local: dict[str, Any]) -> torch.Tensor | None:
    """For prod of a real floating input: the exact product, whatever the order: its sign and
    zeros from the product of the factors' signs (±1, ±0), its size from the sum of log|x|, NaN
    for a NaN or a zero times an infinity. Partial products that overflow before a zero comes
    make NaN in one order and ±0 in another."""
    if step.op != "prod" or not step.args or not isinstance(step.args[0], Ref):
        return None
    x = resolve(local, step.args[0])
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        return None
    kw = tuple((k, v) for k, v in step.kwargs if k not in ("out", "dtype"))
    x = x.double()
    finite = torch.isfinite(x) & (x != 0)
    one = torch.ones_like(x)

    def reduce(fn: str, v: torch.Tensor) -> torch.Tensor | None:
        vals = _copy_values(local)
        vals[step.args[0].name] = v
        try:
            run_step(vals, replace(step, fn=fn, kwargs=kw, variant="functional"))
        except Exception:
            return None
        got = vals.get(step.name)
        return got if isinstance(got, torch.Tensor) else None

    signs = reduce(step.fn, torch.where(x == 0, 0.0, one).copysign(x))
    logs = reduce("torch.sum", torch.where(finite, x.abs().log(), 0.0))
    infs = reduce("torch.sum", torch.isinf(x).double())
    nans = reduce("torch.sum", torch.isnan(x).double())
    if signs is None or logs is None or infs is None or nans is None:
        return None
    size = torch.where(infs > 0, math.inf, logs.exp())
    result = torch.where(signs == 0, torch.where(infs > 0, math.nan, signs), signs * size)
    return torch.where(nans > 0, math.nan, result)


def _scaled_norm(step: Step, local: dict[str, Any]) -> torch.Tensor | None:
    """For norm and vector_norm of a real floating input: the step in float64 on the input
    divided by its largest finite |x|, times that value. The exact norm where the sum of |x|^p
    overflows float64 but the norm does not (norm([-2, 1.8e308]) is 1.8e308)."""
    if step.op not in ("norm", "vector_norm") or not isinstance(step.args[0], Ref):
        return None
    x = resolve(local, step.args[0])
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.numel() == 0:
        return None
    finite = x.double().abs()[torch.isfinite(x)]
    m = float(finite.max()) if finite.numel() else 0.0
    if m == 0:
        return None
    vals = _copy_values(local)
    vals[step.args[0].name] = x.double() / m
    kw = tuple((k, v) for k, v in step.kwargs if k not in ("out", "dtype"))
    try:
        run_step(vals, replace(step, kwargs=kw, variant="functional"))
    except Exception:
        return None
    got = vals.get(step.name)
    return got * m if isinstance(got, torch.Tensor) else None


def _cuda_formula(step: Step, local: dict[str, Any]) -> torch.Tensor | None:
    """CUDA's result where its formula differs from CPU's: fmod is exact (C's fmod), remainder
    is fmod and then the divisor's sign; CPU's vectorized kernels compute a - b * trunc(a / b)
    and a - b * floor(a / b), NaN for a huge a."""
    if step.op not in ("remainder", "fmod"):
        return None
    try:
        a, b = (resolve(local, x) for x in step.args[:2])
        dtype = torch.result_type(a, b)
        if not dtype.is_floating_point:
            return None
        # The values the kernel computes on: its dtype's, in float32 (float64 for float64).
        opmath = torch.float64 if dtype == torch.float64 else torch.float32

        def operand(v: Any) -> torch.Tensor:
            t = v.to(dtype) if isinstance(v, torch.Tensor) else torch.tensor(v, dtype=opmath)
            return t.to(opmath).double()

        ta, tb = torch.broadcast_tensors(operand(a), operand(b))
        pairs = zip(ta.flatten().tolist(), tb.flatten().tolist(), strict=True)
        out = [_cuda_remainder(x, y, step.op == "remainder") for x, y in pairs]
        return torch.tensor(out, dtype=torch.float64).reshape(ta.shape).to(opmath)
    except Exception:
        return None


def _scalar_loop(step: Step, local: dict[str, Any]) -> torch.Tensor | None:
    """A floating or complex elementwise op computed one element at a time on CPU: its scalar
    loops call libm (cosh(710.0) is finite) and follow C99's branch cuts by the sign of a zero
    imaginary part (log(-1 - 0j) is -pi j) and IEEE's negation of zeros; its vectorized loops do
    not (and which elements take which loop depends on the tensors' sizes and alignment). tpu,
    like CUDA, computes what the scalar loops do. The tensor arguments are broadcast and the op
    runs on each position's elements."""
    args = [resolve(local, a) for a in step.args]
    kwargs = {k: resolve(local, v) for k, v in step.kwargs if k != "out"}
    tensors = [a for a in [*args, *kwargs.values()] if isinstance(a, torch.Tensor)]
    if not any(t.is_complex() or t.is_floating_point() for t in tensors):
        return None
    try:
        shape = torch.broadcast_shapes(*(t.shape for t in tensors))
    except RuntimeError:
        return None
    if not 1 < math.prod(shape) <= 4096:
        return None
    fn = resolve_fn(step.fn)

    def at(v: Any, idx: tuple[int, ...]) -> Any:
        # Each element's bits are applied on its own: CPU's vectorized complex negation (0 - z)
        # loses the sign of a zero, its scalar one (-z) keeps it.
        if not isinstance(v, torch.Tensor):
            return v
        return _plain(v.expand(shape)[idx].reshape(1)).clone()

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parts = [
                fn(*(at(a, idx) for a in args), **{k: at(v, idx) for k, v in kwargs.items()})
                for idx in itertools.product(*map(range, shape))
            ]
        if not all(isinstance(p, torch.Tensor) and p.numel() == 1 for p in parts):
            return None
        return torch.cat([_plain(p).reshape(1) for p in parts]).reshape(shape)
    except Exception:
        return None


def _huge_quotient(step: Step, local: dict[str, Any]) -> torch.Tensor | None:
    """For fmod/remainder: where |a / b| is beyond the compute dtype's integers (2^24 in
    float32), so the result has no correct digit in any formula CPU, CUDA or tpu uses (CPU's
    vectorized and scalar loops even disagree with each other)."""
    if step.op not in ("remainder", "fmod"):
        return None
    try:
        a, b = (resolve(local, x) for x in step.args[:2])
        dtype = torch.result_type(a, b)
        if not dtype.is_floating_point:
            return None
        ta = a.double() if isinstance(a, torch.Tensor) else torch.tensor(float(a))
        tb = b.double() if isinstance(b, torch.Tensor) else torch.tensor(float(b))
        eps = torch.finfo(torch.float64 if dtype == torch.float64 else torch.float32).eps
        q = (ta / tb).abs()
        return torch.isfinite(ta) & torch.isfinite(tb) & (q * eps > 1)
    except Exception:
        return None


def _cuda_remainder(a: float, b: float, python_sign: bool) -> float:
    if math.isnan(a) or math.isnan(b) or math.isinf(a) or b == 0:
        return math.nan
    m = a if math.isinf(b) else math.fmod(a, b)  # exact
    return m + b if python_sign and m != 0 and (b < 0) != (m < 0) else m


def _bits_kept(t: torch.Tensor, fn: Any) -> torch.Tensor:
    """fn (a clone, a copy to the host) of t's stored values, with t's conjugate and negative
    bits set again: clone() and cpu() resolve the bits, the oracle's stand-ins must not."""
    conj, neg = t.is_conj(), t.is_neg()
    u = t.conj() if conj else t
    u = u._neg_view() if neg else u
    c = fn(u)
    c = c._neg_view() if neg else c
    return c.conj() if conj else c


def _copy_values(values: dict[str, Any]) -> dict[str, Any]:
    """Clones of the tensors in `values`, one per tensor object (aliases stay aliases)."""
    memo: dict[int, torch.Tensor] = {}

    def copy(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return memo.setdefault(id(v), _bits_kept(v, torch.clone))
        if isinstance(v, tuple):
            return tuple(copy(x) for x in v)
        return v

    return {n: copy(v) for n, v in values.items()}


class _Aliased(Exception):
    pass


def _upcast_step(step: Any) -> Any:
    kw = tuple((k, _upcast(v)) for k, v in step.kwargs)
    return replace(step, kwargs=kw)


# ---------------------------------------------------------------------------------------------
# A program in one mode


def _step_info(program: Program, cpu: Run, k: int) -> tuple[str, str, str, bool]:
    """(op, variant, dtype class of the first tensor input, whether an input or result is
    empty) of step k."""
    if k < 0 or k >= len(program.steps):
        return "?", "?", "?", False
    s = program.steps[k]
    dc = "?"
    empty = False
    for r in s.refs():
        v = cpu.values.get(r.name)
        if r.index is not None and isinstance(v, tuple):
            v = v[r.index]
        if isinstance(v, torch.Tensor):
            if dc == "?":
                dc = dtype_class(v.dtype)
            empty = empty or v.numel() == 0
    res = cpu.values.get(s.name)
    for _, t in _tensors(res, s.name):
        empty = empty or t.numel() == 0
    return s.op, s.variant, dc, empty


def _failure(
    program: Program, cpu: Run, kind: str, mode: str, k: int, detail: str, **kw: Any
) -> Failure:
    op, variant, dc, empty = _step_info(program, cpu, k)
    return Failure(kind, mode, k, op, variant, dc, detail, empty, **kw)


def locate_error(program: Program, mode: str) -> int:
    """The step whose error surfaced at the final synchronization: reruns the program with a
    synchronization after each step."""
    values: dict[str, Any] = {}
    bases: dict[str, torch.Tensor] = {}
    from .program import make_input

    with tpu.eager_mode(mode):
        for inp in program.inputs:
            bases[inp.name], values[inp.name] = make_input(inp, "tpu")
        for i, step in enumerate(program.steps):
            try:
                run_step(values, step)
                tpu.synchronize()
            except Exception:
                _recover()
                return i
    return len(program.steps) - 1


def _is_async(e: BaseException) -> bool:
    return "asynchronous error" in str(e)


def _recover() -> None:
    try:
        tpu.synchronize()
    except Exception:
        pass


def check(program: Program, cpu: Run, mode: str, *, use_oracle: bool = True) -> Failure | None:
    """Runs `program` on tpu in `mode` and compares it with its CPU run `cpu`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tpu.eager_mode(mode):
            run = execute(program, "tpu")
            return _compare(program, cpu, run, mode, use_oracle)


def _compare(program: Program, cpu: Run, run: Run, mode: str, use_oracle: bool) -> Failure | None:
    nsteps = len(program.steps)
    ce, te = cpu.error, run.error
    if te is not None and te[0] == -1:
        return _failure(program, cpu, "input-error", mode, 0, _err(te[1]), tpu_error=_err(te[1]))
    if te is not None and 0 <= te[0] < nsteps and _is_async(te[1]):
        # An asynchronous error surfaced at a later op that synchronizes (nonzero, a host
        # read): blame the op that failed.
        te = (locate_error(program, mode), te[1])
        if ce is not None and te[0] >= ce[0]:
            te = (nsteps, te[1])  # as if at the synchronization
    if ce is None and te is not None:
        k = te[0] if te[0] < nsteps else locate_error(program, mode)
        where = "at the op" if te[0] < nsteps else "at the synchronization"
        if use_oracle and _rounding_error(program, cpu, k, mode, type(te[1])):
            return None
        f = _failure(
            program,
            cpu,
            "spurious-error",
            mode,
            k,
            f"tpu raises {where}: {_err(te[1])}",
            tpu_error=_err(te[1]),
        )
        return _with_meta(program, f)
    if ce is not None:
        k, cexc = ce
        if te is None:
            if use_oracle and _rounding_error(program, cpu, k, mode, None):
                return None
            return _failure(
                program,
                cpu,
                "missing-error",
                mode,
                k,
                f"cpu raises {_err(cexc)}; tpu does not",
                cpu_error=_err(cexc),
            )
        tk, texc = te
        if tk < k:
            if use_oracle and _rounding_error(program, cpu, tk, mode, type(texc)):
                return None
            f = _failure(
                program,
                cpu,
                "spurious-error",
                mode,
                tk,
                f"tpu raises {_err(texc)}",
                tpu_error=_err(texc),
            )
            return _with_meta(program, f)
        if tk == k:
            if type(texc) is not type(cexc):
                if use_oracle and _rounding_error(program, cpu, k, mode, type(texc)):
                    return None
                return _failure(
                    program,
                    cpu,
                    "error-type",
                    mode,
                    k,
                    f"cpu {_err(cexc)}; tpu {_err(texc)}",
                    cpu_error=_err(cexc),
                    tpu_error=_err(texc),
                )
            return None
        # Raised at the synchronization: fine in the asynchronous modes (as CUDA), if it is
        # step k's error.
        tk = locate_error(program, mode)
        if tk < k:
            if use_oracle and _rounding_error(program, cpu, tk, mode, type(texc)):
                return None
            f = _failure(
                program,
                cpu,
                "spurious-error",
                mode,
                tk,
                f"tpu raises at the synchronization: {_err(texc)}",
                tpu_error=_err(texc),
            )
            return _with_meta(program, f)
        return _failure(
            program,
            cpu,
            "error-type",
            mode,
            k,
            f"cpu {_err(cexc)} at the op; tpu {_err(texc)} at the synchronization",
            cpu_error=_err(cexc),
            tpu_error=_err(texc),
            extra={"at_sync": True},
        )
    # Neither raised: compare every value.
    oracles = 0
    for k, name in compared(program, cpu):
        c = _get(cpu.values, cpu.bases, name)
        try:
            t = _get(run.values, run.bases, name)
        except (KeyError, IndexError, TypeError) as e:
            return _failure(program, cpu, "type", mode, k, f"{name}: {e!r}", value=name)
        m = compare_meta(c, t)
        if m is not None and m[0] != "stride":
            kind, detail = m
            if kind == "shape" and use_oracle and _chained(program, cpu, k):
                if oracles >= 3:
                    return None
                oracles += 1
                confirmed, why, _ = oracle(program, k, mode)
                STATS["oracle"] += 1
                if not confirmed:
                    STATS["noise"] += 1
                    continue
            f = _failure(program, cpu, kind, mode, k, f"{name}: {detail}", value=name)
            return _with_meta(program, f, t)
        try:
            tc = t.cpu()
        except Exception as e:
            _recover()
            return _failure(
                program,
                cpu,
                "spurious-error",
                mode,
                k,
                f"reading {name}: {_err(e)}",
                tpu_error=_err(e),
                value=name,
            )
        d = compare_values(c, tc)
        if d is not None:
            if use_oracle and (
                c.is_floating_point() or c.is_complex() or _chained(program, cpu, k)
            ):
                if oracles >= 3:
                    return None
                oracles += 1
                confirmed, why, extra = oracle(program, k, mode)
                STATS["oracle"] += 1
                if not confirmed:
                    STATS["noise"] += 1
                    continue
                d = f"{d} (step alone: {why})"
            else:
                extra = {}
            extra["lossy_cast"] = _lossy_cast(program, cpu, k, c.dtype)
            extra["subnormal_inputs"] = _subnormal_inputs(program, cpu, k)
            extra["dtype"] = c.dtype
            return _failure(program, cpu, "value", mode, k, f"{name}: {d}", value=name, extra=extra)
        if m is not None:
            f = _failure(program, cpu, m[0], mode, k, f"{name}: {m[1]}", value=name)
            f.extra["made_by"] = _made_by(program, cpu, c)
            f.extra["ndim"] = c.dim()
            if m[0] == "stride" and _cuda_layout_matches(program, name, t, mode):
                f.extra["cuda_layout"] = True
                f.detail += " (CPU's layout from inputs not converted to the common dtype agrees)"
            return _with_meta(program, f, t)
    return None


def _made_by(program: Program, cpu: Run, t: torch.Tensor) -> str | None:
    """The op of the first step whose result lives in t's storage: the op that laid it out (later
    in-place ops and views keep that layout)."""
    key = _skey(t)
    for s in program.steps:
        for _, v in _tensors(cpu.values.get(s.name), s.name):
            if _skey(v) == key:
                return s.op
    return None


def _common_dtype(args: list[Any]) -> torch.dtype | None:
    """TensorIterator's common dtype of an op's tensor and number arguments."""
    acc: Any = None
    for a in args:
        if not isinstance(a, (torch.Tensor, bool, int, float, complex)):
            continue
        if acc is None:
            acc = a
            continue
        dt = torch.result_type(acc, a)
        dims = any(isinstance(x, torch.Tensor) and x.dim() > 0 for x in (acc, a))
        acc = torch.empty((1,) if dims else (), dtype=dt)
    return acc.dtype if isinstance(acc, torch.Tensor) else None


def _cuda_layout_matches(program: Program, name: str, t: torch.Tensor, mode: str) -> bool:
    """Whether tpu's strides for value `name` are the ones CUDA's TensorIterator chooses: on CPU
    (only) it converts inputs of another dtype to the common dtype before choosing the output's
    layout, and the copy of an overlapping or non-dense input is dense. Runs the step that made
    `name` (a functional or out= call) on CPU from stand-ins of its tensors as the tpu run had
    them just before it (sizes, strides, offsets; values irrelevant, only the layout is
    compared), those of another dtype than the common one already converted. The common dtype is
    the inputs' promoted one, or the result's where the op promotes integers to it."""
    made = [j for j, s in enumerate(program.steps) if s.name == name]
    if not made or program.steps[made[0]].variant not in ("functional", "out"):
        return False
    j = made[0]
    step = program.steps[j]
    layouts: dict[str, Any] = {}

    def hook(i: int, values: dict[str, Any]) -> None:
        if i == j:
            layouts.update({r.name: values[r.name] for r in step.refs() if r.index is None})

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tpu.eager_mode(mode):
            run = execute(program, "tpu", stop=j + 1, hook=hook)
    _recover()
    if run.error is not None or not layouts:
        return False
    written = {r.name for r in step.writes()}
    plain = {n: _stand_in(v, None) for n, v in layouts.items()}
    # where's condition takes no part in the promotion and stays bool.
    condition = step.args[0] if step.op == "where" and isinstance(step.args[0], Ref) else None
    kept = written | ({condition.name} if condition is not None else set())
    args = [resolve(plain, a) for a in step.args[1 if condition is not None else 0 :]]
    args += [resolve(plain, v) for k, v in step.kwargs if k != "out"]
    common = _common_dtype(args)
    for floating in (False, True):
        vals = dict(plain)
        dt = common
        if floating:
            done = dict(plain)
            try:
                run_step(done, step)
            except Exception:
                return False
            made_value = done.get(name)
            if not isinstance(made_value, torch.Tensor) or not made_value.is_floating_point():
                return False
            dt = made_value.dtype
        for n, v in layouts.items():
            if n not in kept and isinstance(v, torch.Tensor) and v.dim() > 0:
                vals[n] = _stand_in(v, dt)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run_step(vals, step)
        except Exception:
            continue
        out = vals.get(name)
        if isinstance(out, torch.Tensor) and compare_meta(out, t) is None:
            return True
    return False


def _stand_in(v: Any, dtype: torch.dtype | None) -> Any:
    """A CPU tensor of ones with v's sizes, strides and offset (dtype, or v's own); v itself when
    it is no device tensor."""
    if not isinstance(v, torch.Tensor) or v.device.type == "cpu":
        return v
    n = sum((d - 1) * st for d, st in zip(v.shape, v.stride(), strict=True))
    base = torch.ones(max(v.storage_offset() + n + 1, 1), dtype=dtype or v.dtype)
    return base.as_strided(v.shape, v.stride(), v.storage_offset())


def _lossy_cast(program: Program, cpu: Run, k: int, dtype: torch.dtype) -> bool:
    """Step k converts a floating value that `dtype` (an integer type) cannot hold: NaN, an
    infinity, or out of range (uint8 converts through int64, as c10::convert does)."""
    if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
        return False
    info = torch.iinfo(torch.int64 if dtype == torch.uint8 else dtype)
    step = program.steps[k]
    for r in step.refs():
        v = cpu.values.get(r.name)
        if r.index is not None and isinstance(v, tuple):
            v = v[r.index]
        if isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex()):
            x = torch.view_as_real(_plain(v)) if v.is_complex() else v
            x = x.double()
            if bool((~torch.isfinite(x) | (x < info.min) | (x > info.max)).any()):
                return True

    def scalars(a: Any) -> Iterator[Any]:
        if isinstance(a, (tuple, list)):
            for b in a:
                yield from scalars(b)
        elif isinstance(a, (float, complex)):
            yield a

    for a in list(step.args) + [v for _, v in step.kwargs]:
        for x in scalars(a):
            parts = [x.real, x.imag] if isinstance(x, complex) else [x]
            for p in parts:
                if not math.isfinite(p) or not info.min <= p <= info.max:
                    return True
    return False


def _with_meta(program: Program, f: Failure, t: Any = None) -> Failure:
    """Runs the program on the meta device to step f.step and notes (in the detail and in extra
    "meta_raises" or "meta_matches") whether PyTorch's meta functions agree with tpu: for a
    spurious error, meta raises the same type at the step; for a shape, dtype or stride
    difference, meta's value has tpu's. A hint for triage, not an allowance: the meta device
    runs Python reference checks for some ops (stricter than CPU's and CUDA's kernels) and lays
    out resized out= tensors its own way."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = execute(program, "meta", stop=f.step + 1)
    except Exception:
        return f
    if f.kind == "spurious-error":
        if run.error is not None and run.error[0] == f.step:
            e = run.error[1]
            same = (f.tpu_error or "").startswith(type(e).__name__ + ":")
            if same and "meta" not in str(e).lower():
                f.extra["meta_raises"] = True
                f.detail += " (the meta device raises too)"
    elif isinstance(t, torch.Tensor) and run.error is None and f.value is not None:
        try:
            mv = _get(run.values, run.bases, f.value)
        except (KeyError, IndexError, TypeError):
            return f
        if isinstance(mv, torch.Tensor) and compare_meta(mv, t) is None:
            f.extra["meta_matches"] = True
            f.detail += " (the meta device agrees with tpu)"
    return f


def _rounding_error(
    program: Program, cpu: Run, k: int, mode: str, raises: type[BaseException] | None
) -> bool:
    """Whether an error difference at step k comes from tpu's rounding of earlier results (a
    nonzero count, an index computed from a float): step k on CPU from tpu's inputs raises
    `raises` (or, for None, does not raise)."""
    if not _chained(program, cpu, k):
        return False
    STATS["oracle"] += 1
    r = cpu_raises_on_tpu_inputs(program, k, mode)
    if r is False:
        return False
    same = r is None if raises is None else isinstance(r, BaseException) and type(r) is raises
    if same:
        STATS["noise"] += 1
    return same


def _subnormal_inputs(program: Program, cpu: Run, k: int) -> bool:
    """A floating input of step k holds a subnormal value."""
    for r in program.steps[k].refs():
        v = cpu.values.get(r.name)
        if r.index is not None and isinstance(v, tuple):
            v = v[r.index]
        if isinstance(v, torch.Tensor) and v.is_floating_point() and v.numel():
            a = v.abs()
            if bool(((a > 0) & (a < torch.finfo(v.dtype).tiny)).any()):
                return True
    return False


def _chained(program: Program, cpu: Run, k: int) -> bool:
    """Step k reads a value an earlier step made or wrote (so tpu's rounding of it matters)."""
    made = {s.name for s in program.steps[:k]}
    for s in program.steps[:k]:
        made.update(r.name for r in s.writes())
    return any(r.name in made for r in program.steps[k].refs())
