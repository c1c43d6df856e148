"""The op catalog: one drawing function per family of ops that torch_tpu runs natively, each
emitting one step (functional, in-place or out= variant) on values of the program being drawn.

Every op here resolves to an ATen op with a PrivateUse1 kernel of the binding (or to a composite
of such ops), except `signbit`, which runs through the CPU fallback: it observes the sign bit of
the tpu kernels' NaNs. `tests/test_fuzz.py` checks that drawing each family's ops on tpu calls no
other fallback.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812

from . import values as V
from .generate import OVERLAP_REFUSED_OPS, Gen, Redraw
from .program import Ref, _refs, resolve, resolve_fn

# ---------------------------------------------------------------------------------------------
# Helpers


def _variant(rng: random.Random, inplace: bool, out: bool) -> str:
    opts = ["functional"] + (["inplace"] if inplace else []) + (["out"] if out else [])
    weights = {"functional": 55, "inplace": 20, "out": 25}
    return rng.choices(opts, [weights[o] for o in opts])[0]


def _emit_out(
    g: Gen,
    op: str,
    fn: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any] | None = None,
    *,
    same_dtype: float = 0.75,
    strided: bool = True,
) -> Any:
    """Emits fn(*args, **kwargs, out=...) with out= tensors drawn from the functional result
    (contiguous ones only when not `strided`)."""
    kwargs = dict(kwargs or {})
    if op in OVERLAP_REFUSED_OPS and g.rng.random() < 0.3:
        # The input itself as out=: these ops refuse any overlap before they resize.
        kwargs["out"] = args[0]
        return g.emit(op, fn, args, kwargs, "out")
    try:
        exp = resolve_fn(fn)(
            *[resolve(g.values, a) for a in args],
            **{k: resolve(g.values, v) for k, v in kwargs.items()},
        )
    except Exception:
        exp = None
    if isinstance(exp, (tuple, list)):
        out: Any = tuple(g.out_tensor(e, same_dtype=same_dtype, strided=strided) for e in exp)
    elif isinstance(exp, torch.Tensor):
        out = g.out_tensor(exp, same_dtype=same_dtype, strided=strided)
    else:
        first = next(_refs(args))
        out = g.out_tensor(g.t(first), same_dtype=same_dtype, strided=strided)
    kwargs["out"] = out
    return g.emit(op, fn, args, kwargs, "out")


_SUPPORTED: dict[str, frozenset[torch.dtype]] = {}


def supported(key: str, call: Callable[[torch.Tensor], Any]) -> frozenset[torch.dtype]:
    """The dtypes CPU accepts for `call` on a small tensor (probed once per key)."""
    got = _SUPPORTED.get(key)
    if got is None:
        ok = []
        for dt in V.DTYPES:
            try:
                call(torch.ones(2, dtype=dt))
                ok.append(dt)
            except Exception:
                pass
        got = _SUPPORTED[key] = frozenset(ok)
    return got


def pick(g: Gen, dtypes: frozenset[torch.dtype] | None, *, ndim: int = 0) -> Ref:
    """A tensor to operate on, of a dtype the op accepts (most of the time: the rest test
    the dtype checks), with at least `ndim` dimensions."""
    ok = dtypes if dtypes and g.rng.random() < 0.88 else None
    return g.tensor(lambda t: t.dim() >= ndim and (ok is None or t.dtype in ok))


def _writable(g: Gen, x: Ref) -> bool:
    """In-place and out= writes into x are drawn rarely when x overlaps itself (CPU refuses)."""
    t = g.t(x)
    return not torch._debug_has_internal_overlap(t) == 1 or g.rng.random() < 0.15


def _maybe_dtype(g: Gen, p: float = 0.25) -> dict[str, Any]:
    return {"dtype": V.pick_dtype(g.rng)} if g.rng.random() < p else {}


# ---------------------------------------------------------------------------------------------
# Unary


# (name, has an in-place method, has out=)
UNARY: list[tuple[str, bool, bool]] = [
    (n, True, True)
    for n in (
        "neg sign sqrt rsqrt reciprocal exp exp2 expm1 log log2 log10 log1p sin cos tan tanh "
        "sinh cosh asin acos atan erf erfc erfinv sigmoid floor ceil round trunc frac bitwise_not "
        "abs logit nan_to_num logical_not"
    ).split()
] + [("isneginf", False, True), ("isposinf", False, True), ("isnan", False, False)]
UNARY += [("relu", True, False), ("signbit", False, False)]

# nn activations: (name, kwargs drawer)
NN_UNARY: list[tuple[str, Callable[[random.Random], dict[str, Any]]]] = [
    ("silu", lambda r: {}),
    ("mish", lambda r: {}),
    ("hardsigmoid", lambda r: {}),
    ("hardswish", lambda r: {}),
    # An unknown approximation now and then: PyTorch refuses it.
    ("gelu", lambda r: {"approximate": r.choice(["none", "tanh"] * 20 + ["asdf"])}),
    ("elu", lambda r: {"alpha": r.choice([1.0, 0.5, 2.0])}),
    ("leaky_relu", lambda r: {"negative_slope": r.choice([0.01, 0.2, -1.0])}),
    ("hardtanh", lambda r: {"min_val": r.choice([-1.0, -0.5]), "max_val": r.choice([1.0, 2.0])}),
    ("softplus", lambda r: {"beta": r.choice([1.0, 2.0]), "threshold": r.choice([20.0, 1.0])}),
]


def unary(g: Gen) -> None:
    rng = g.rng
    op, inplace, out = rng.choice(UNARY)
    f = resolve_fn(f"torch.{op}")
    x = pick(g, supported(op, f))
    inplace = inplace and _writable(g, x)
    kw: dict[str, Any] = {}
    if op == "round" and rng.random() < 0.3:
        kw["decimals"] = rng.choice([1, 2, -1])
    elif op == "logit" and rng.random() < 0.5:
        kw["eps"] = rng.choice([1e-6, 0.1])
    elif op == "nan_to_num":
        for k in ("nan", "posinf", "neginf"):
            if rng.random() < 0.4:
                kw[k] = rng.choice([0.0, 1.5, -2.0, 1e30])
    v = _variant(rng, inplace, out)
    if v == "inplace":
        g.emit(op, f".{op}_", (x,), kw, "inplace")
    elif v == "out":
        _emit_out(g, op, f"torch.{op}", (x,), kw)
    else:
        g.emit(op, f"torch.{op}", (x,), kw)


def nn_unary(g: Gen) -> None:
    rng = g.rng
    op, draw = rng.choice(NN_UNARY)
    kw = draw(rng)
    f = resolve_fn(f"F.{op}")
    x = pick(g, supported(f"nn.{op}", f))
    v = _variant(rng, _writable(g, x), op != "softplus")
    if v == "inplace" and op != "softplus":
        g.emit(op, f"torch._C._nn.{op}_", (x,), kw, "inplace")
    elif v == "out":
        args = (x,) + tuple(kw.values()) if op != "gelu" else (x,)
        kwo = kw if op == "gelu" else {}
        _emit_out(g, op, f"torch._C._nn.{op}", args, kwo)
    else:
        g.emit(op, f"F.{op}", (x,), kw)


def threshold(g: Gen) -> None:
    rng = g.rng
    x = pick(g, supported("threshold", lambda t: torch.threshold(t, 0, 0)))
    args = (x, rng.choice([0.0, 0.5, -1.0, 2]), rng.choice([0.0, -3.0, 7]))
    v = _variant(rng, _writable(g, x), True)
    if v == "inplace":
        g.emit("threshold", "torch.threshold_", args, None, "inplace")
    elif v == "out":
        _emit_out(g, "threshold", "torch.threshold", args)
    else:
        g.emit("threshold", "torch.threshold", args)


# ---------------------------------------------------------------------------------------------
# Binary and ternary

# (name, has an in-place method, has out=)
BINARY: list[tuple[str, bool, bool]] = [
    (n, True, True)
    for n in (
        "add sub mul div atan2 copysign pow fmod remainder bitwise_and bitwise_or bitwise_xor "
        "logical_and logical_or logical_xor eq ne lt le gt ge floor_divide clamp_min clamp_max"
    ).split()
] + [("maximum", False, True), ("minimum", False, True), ("rsub", False, False)]


def binary(g: Gen) -> None:
    rng = g.rng
    op, inplace, out = rng.choice(BINARY)
    f = resolve_fn(f"torch.{op}")
    x = pick(g, supported(f"bin.{op}", lambda t: f(t, t)))
    scalars = op not in ("maximum", "minimum", "logical_and", "logical_or", "logical_xor")
    y = g.operand(g.t(x), scalars=scalars)
    inplace = inplace and _writable(g, x)
    kw: dict[str, Any] = {}
    if op in ("add", "sub", "rsub") and rng.random() < 0.3:
        kw["alpha"] = rng.choice([2, -1, 0.5, True])
    if op == "div" and rng.random() < 0.4:
        kw["rounding_mode"] = rng.choice(["trunc", "floor"])
    args: tuple[Any, ...] = (x, y)
    if isinstance(y, Ref) and rng.random() < 0.2:
        args = (y, x)  # a CPU 0-d tensor or a broadcast operand first
    elif op in ("pow", "remainder") and not isinstance(y, Ref) and rng.random() < 0.3:
        args = (y, x)  # Scalar_Tensor overloads
        out = False
    if op in ("div", "floor_divide", "remainder", "fmod") and _traps(g, args[0], args[1]):
        raise Redraw  # CPU's integer division of INT_MIN by -1 traps (SIGFPE); CUDA wraps
    # In place only into a device tensor (a CPU 0-d tensor is a scalar operand, not an output).
    on_dev = isinstance(args[0], Ref) and args[0].name in g.on_dev
    v = _variant(rng, inplace and on_dev, out)
    if v == "inplace":
        g.emit(op, f".{op}_", args, kw, "inplace")
    elif v == "out":
        _emit_out(g, op, f"torch.{op}", args, kw)
    else:
        g.emit(op, f"torch.{op}", args, kw)


def _traps(g: Gen, a: Any, b: Any) -> bool:
    """a // b may divide an integer type's minimum by -1."""
    ta = g.t(a) if isinstance(a, Ref) else torch.tensor(a)
    tb = g.t(b) if isinstance(b, Ref) else torch.tensor(b)
    if ta.is_floating_point() or ta.is_complex() or ta.dtype == torch.bool:
        return False
    if tb.is_floating_point() or tb.is_complex():
        return False
    lo = torch.iinfo(ta.dtype).min
    return bool((ta == lo).any()) and bool((tb == -1).any())


def ternary(g: Gen) -> None:
    rng = g.rng
    op = rng.choice(["lerp", "addcmul", "addcdiv", "where", "where", "clamp", "clamp", "clamp"])
    probes: dict[str, Callable[[torch.Tensor], Any]] = {
        "lerp": lambda t: torch.lerp(t, t, 0.5),
        "addcmul": lambda t: torch.addcmul(t, t, t),
        "addcdiv": lambda t: torch.addcdiv(t, t, t),
        "where": lambda t: t,
        "clamp": lambda t: torch.clamp(t, 0, 1),
    }
    x = pick(g, supported(f"ter.{op}", probes[op]))
    xt = g.t(x)
    kw: dict[str, Any] = {}
    if op == "lerp":
        args: tuple[Any, ...] = (x, g.operand(xt, scalars=False), g.operand(xt))
        if not isinstance(args[2], Ref) or rng.random() < 0.5:
            args = (x, args[1], rng.choice([0.5, 0.25, 2.0, -1.0]))
    elif op in ("addcmul", "addcdiv"):
        args = (x, g.operand(xt, scalars=False), g.operand(xt, scalars=False))
        if rng.random() < 0.4:
            kw["value"] = rng.choice([2, 0.5, -1.0])
    elif op == "where":
        cond = g.shaped(g.broadcast_shape(tuple(xt.shape)), torch.bool)
        if rng.random() < 0.05:
            cond = g.shaped(tuple(xt.shape), torch.uint8)
        y = g.operand(xt)
        args = (cond, x, y) if rng.random() < 0.7 else (cond, y, x)
    else:
        lo = _clamp_bound(g, xt)
        hi = _clamp_bound(g, xt)
        if lo is None and hi is None and rng.random() < 0.8:
            hi = 1.0
        if isinstance(lo, Ref) != isinstance(hi, Ref) and rng.random() < 0.9:
            # clamp(Tensor, Tensor, Number) has no overload; make the other bound None
            if isinstance(lo, Ref):
                hi = None if hi is not None else hi
            else:
                lo = None if lo is not None else lo
        if rng.random() < 0.5 and not isinstance(lo, Ref) and not isinstance(hi, Ref):
            kw = {"min": lo, "max": hi}
            args = (x,)
        else:
            args = (x, lo, hi)
    inplace = op != "where" and isinstance(args[0], Ref) and _writable(g, x)
    v = _variant(rng, inplace, True)
    if v == "inplace":
        g.emit(op, f".{op}_", args, kw, "inplace")
    elif v == "out":
        _emit_out(g, op, f"torch.{op}", args, kw)
    else:
        g.emit(op, f"torch.{op}", args, kw)


def _clamp_bound(g: Gen, x: torch.Tensor) -> Any:
    rng = g.rng
    r = rng.random()
    if r < 0.3:
        return None
    if r < 0.6:
        return rng.choice([0, 1, -1, 0.5, -2.5, 3, float("nan")])
    if r < 0.8:
        return g.new_input((), x.dtype if rng.random() < 0.7 else V.pick_dtype(rng), on_cpu=True)
    return g.shaped(g.broadcast_shape(tuple(x.shape)), x.dtype)


def masked_fill(g: Gen) -> None:
    rng = g.rng
    x = g.tensor()
    xt = g.t(x)
    if not _writable(g, x):
        x = g.fresh()
        xt = g.t(x)
    mshape = g.broadcast_shape(tuple(xt.shape))
    mask = g.shaped(mshape, torch.bool if rng.random() < 0.95 else torch.uint8)
    r = rng.random()
    if r < 0.6:
        value: Any = g.py_scalar(xt.dtype)
    elif r < 0.8:
        value = g.new_input((), V.pick_dtype(rng), on_cpu=True)
    else:
        value = g.new_input((), V.pick_dtype(rng))
    if rng.random() < 0.5:
        g.emit("masked_fill", ".masked_fill_", (x, mask, value), None, "inplace")
    else:
        g.emit("masked_fill", "torch.masked_fill", (x, mask, value))


# ---------------------------------------------------------------------------------------------
# Reductions


def reduce(g: Gen) -> None:
    rng = g.rng
    op = rng.choice(
        "sum sum mean prod amax amin argmax argmin max min var std var_mean std_mean norm "
        "vector_norm logsumexp any all cumsum cumsum count_nonzero".split()
    )
    probe: Callable[[torch.Tensor], Any] = {
        "vector_norm": torch.linalg.vector_norm,
        "var_mean": torch.var_mean,
        "std_mean": torch.std_mean,
        "norm": torch.norm,
        "cumsum": lambda t: torch.cumsum(t, 0),
        "count_nonzero": torch.count_nonzero,
        "prod": torch.prod,
        "logsumexp": lambda t: torch.logsumexp(t, 0),
    }.get(op) or resolve_fn(f"torch.{op}")
    x = pick(g, supported(f"red.{op}", probe))
    xt = g.t(x)
    keep = rng.random() < 0.3
    kw: dict[str, Any] = {}
    args: tuple[Any, ...] = (x,)
    fn = f"torch.{op}"
    out_ok = True
    if op in ("sum", "mean"):
        if rng.random() < 0.25:
            kw = _maybe_dtype(g, 0.3)
            out_ok = op == "sum"
        else:
            args = (x, g.dims(xt))
            kw = {"keepdim": keep, **_maybe_dtype(g)}
    elif op == "prod":
        if rng.random() < 0.3:
            kw = _maybe_dtype(g)
            out_ok = False
        else:
            args = (x, g.dim(xt))
            kw = {"keepdim": keep, **_maybe_dtype(g)}
    elif op in ("amax", "amin", "logsumexp"):
        d = g.dims(xt)
        args = (x, () if d is None and op != "logsumexp" else d if d is not None else 0)
        kw = {"keepdim": keep}
    elif op in ("argmax", "argmin"):
        kw = {"dim": g.dim(xt, allow_none=True), "keepdim": keep}
    elif op in ("max", "min"):
        if rng.random() < 0.3:
            out_ok = False
        else:
            args = (x, g.dim(xt))
            kw = {"keepdim": keep}
    elif op in ("var", "std", "var_mean", "std_mean"):
        d = g.dims(xt)
        args = (x, d)
        kw = {"keepdim": keep}
        if rng.random() < 0.6:
            kw["correction"] = rng.choice([0, 1, 2])
        out_ok = op in ("var", "std")
    elif op == "norm":
        p = rng.choice([2, 1, 0, 3, float("inf"), float("-inf"), 0.5, "fro"])
        args = (x, p, g.dims(xt) if p != "fro" else None)
        kw = {"keepdim": keep, **_maybe_dtype(g, 0.15)}
        out_ok = p != "fro"
    elif op == "vector_norm":
        fn = "torch.linalg.vector_norm"
        args = (x, rng.choice([2, 1, 0, 3, float("inf"), float("-inf"), 1.5]))
        kw = {"dim": g.dims(xt), "keepdim": keep, **_maybe_dtype(g, 0.15)}
    elif op in ("any", "all"):
        if rng.random() < 0.6:
            args = (x, g.dims(xt) if rng.random() < 0.3 else g.dim(xt))
            kw = {"keepdim": keep}
    elif op == "cumsum":
        args = (x, g.dim(xt))
        kw = _maybe_dtype(g)
        if rng.random() < 0.2:
            g.emit(op, ".cumsum_", args, kw, "inplace")
            return
    elif op == "count_nonzero":
        args = (x, g.dims(xt))
        out_ok = False
    if out_ok and rng.random() < 0.25:
        _emit_out(g, op, fn, args, kw)
    else:
        g.emit(op, fn, args, kw)


# ---------------------------------------------------------------------------------------------
# Matmul family


def _mm_dtype(g: Gen) -> tuple[torch.dtype, torch.dtype]:
    rng = g.rng
    pool = [torch.float32, torch.float32, torch.float64, torch.float16, torch.bfloat16]
    pool += [torch.complex64, torch.int64, torch.int32]
    a = rng.choice(pool)
    return a, (a if rng.random() < 0.9 else V.pick_dtype(rng))


def matmul(g: Gen) -> None:
    rng = g.rng
    op = rng.choice("mm mm bmm matmul matmul addmm addmv addbmm baddbmm dot vdot mv linear".split())
    m, k, n, b = (rng.choice([0, 1, 2, 3, 4, 5, 8, 17]) for _ in range(4))
    k2 = k if rng.random() < 0.96 else k + 1
    da, db = _mm_dtype(g)
    mat = g.new_input
    kw: dict[str, Any] = {}
    if op == "mm":
        args: tuple[Any, ...] = (mat((m, k), da), mat((k2, n), db))
    elif op == "mv":
        args = (mat((m, k), da), mat((k2,), db))
    elif op == "bmm":
        args = (mat((b, m, k), da), mat((b, k2, n), db))
    elif op in ("dot", "vdot"):
        args = (mat((k,), da), mat((k2,), db))
    elif op == "matmul":
        sa = rng.choice([(k,), (m, k), (b, m, k), (2, b, m, k), (1, m, k)])
        sb = rng.choice([(k2,), (k2, n), (b, k2, n), (1, k2, n)])
        args = (mat(sa, da), mat(sb, db))
    elif op == "linear":
        args = (mat(rng.choice([(m, k), (b, m, k), (k,)]), da), mat((n, k2), db))
        if rng.random() < 0.6:
            args = args + (mat(rng.choice([(n,), ()]), da),)
        g.emit(op, "F.linear", args)
        return
    else:
        cs: tuple[int, ...]
        if op == "addmm":
            a1, a2, cs = mat((m, k), da), mat((k2, n), db), (m, n)
        elif op == "addmv":
            a1, a2, cs = mat((m, k), da), mat((k2,), db), (m,)
        elif op == "addbmm":
            a1, a2, cs = mat((b, m, k), da), mat((b, k2, n), db), (m, n)
        else:
            a1, a2, cs = mat((b, m, k), da), mat((b, k2, n), db), (b, m, n)
        c = mat(g.broadcast_shape(cs) if rng.random() < 0.3 else cs, da)
        args = (c, a1, a2)
        if rng.random() < 0.5:
            kw["beta"] = rng.choice([0, 1, 0.5, 2])
        if rng.random() < 0.5:
            kw["alpha"] = rng.choice([1, 2, -0.5])
        # CPU's addbmm_ resizes a self that only broadcasts to the result, then copies into it
        # from a view of self expanded to that size: the copy reads what it overwrites.
        resized = op == "addbmm" and tuple(g.t(c).shape) != cs
        if rng.random() < 0.2 and not resized:
            g.emit(op, f".{op}_", args, kw, "inplace")
            return
    if rng.random() < 0.25 and op not in ("dot", "vdot"):
        _emit_out(g, op, f"torch.{op}", args, kw, same_dtype=0.85)
    else:
        g.emit(op, f"torch.{op}", args, kw)


# ---------------------------------------------------------------------------------------------
# Softmax and layer_norm


def softmax(g: Gen) -> None:
    rng = g.rng
    op = rng.choice(["softmax", "log_softmax"])
    x = pick(g, supported(op, lambda t: resolve_fn(f"torch.{op}")(t, 0)))
    kw: dict[str, Any] = {"dim": g.dim(g.t(x))}
    if rng.random() < 0.25:
        kw["dtype"] = rng.choice([torch.float32, torch.float64, torch.float16, torch.int64])
    g.emit(op, f"torch.{op}" if rng.random() < 0.5 else f"F.{op}", (x,), kw)


def layer_norm(g: Gen) -> None:
    rng = g.rng
    x = pick(g, supported("layer_norm", lambda t: F.layer_norm(t, (2,))), ndim=1)
    xt = g.t(x)
    k = rng.randint(1, max(1, xt.dim()))
    ns = tuple(xt.shape[xt.dim() - k :])
    if rng.random() < 0.03:
        ns = ns[:-1] + (ns[-1] + 1,) if ns else (2,)
    args: tuple[Any, ...] = (x, ns)
    kw: dict[str, Any] = {}
    dt = xt.dtype if rng.random() < 0.8 else V.pick_dtype(rng, V.FLOATS)
    if rng.random() < 0.6:
        kw["weight"] = g.new_input(ns, dt)
    if rng.random() < 0.5:
        kw["bias"] = g.new_input(ns, dt)
    if rng.random() < 0.3:
        kw["eps"] = rng.choice([1e-3, 0.0, 1.0])
    g.emit("layer_norm", "F.layer_norm", args, kw)


# ---------------------------------------------------------------------------------------------
# Batch and instance normalization, pooling


def batch_norm(g: Gen) -> None:
    """batch_norm (training or evaluation, with and without running statistics and affine
    parameters) or instance_norm, on inputs of any view recipe: broadcast and strided layouts
    reach the kernels' [N, C, S] views."""
    rng = g.rng
    x = g.tensor(lambda t: 2 <= t.dim() <= 5 and t.is_floating_point() and t.shape[1] > 0)
    xt = g.t(x)
    c = xt.shape[1]
    # Parameters and statistics of the input's dtype, or float32 for a float16/bfloat16 input:
    # CPU refuses other mixes (known.py "batch-norm-mixed-dtypes").
    lowp = xt.dtype in (torch.float16, torch.bfloat16)
    norm = "instance_norm" if xt.dim() >= 3 and rng.random() < 0.3 else "batch_norm"
    mixed = norm == "batch_norm" and lowp and rng.random() < 0.5
    dt = stats_dt = torch.float32 if mixed else xt.dtype
    # Running statistics are written in training: never a view that overlaps itself.
    stats: tuple[Any, Any] = (
        g.new_input((c,), stats_dt, views=False),
        g.new_input((c,), stats_dt, data=V.float_values(rng, (c,), stats_dt).abs()),
    )
    kw: dict[str, Any] = {}
    if rng.random() < 0.6:
        kw["weight"] = g.new_input((c,), dt)
    if rng.random() < 0.5:
        kw["bias"] = g.new_input((c,), dt)
    if rng.random() < 0.3:
        kw["eps"] = rng.choice([1e-3, 1.0])
    if rng.random() < 0.3:
        kw["momentum"] = rng.choice([0.0, 0.5, 1.0])
    if norm == "instance_norm":
        kw["use_input_stats"] = rng.random() < 0.8
        if kw["use_input_stats"] and rng.random() < 0.5:
            stats = (None, None)
        g.emit("instance_norm", "F.instance_norm", (x, *stats), kw)
        return
    kw["training"] = rng.random() < 0.6
    g.emit("batch_norm", "F.batch_norm", (x, *stats), kw)


def _pool_geometry(rng: random.Random, nd: int) -> tuple[Any, Any, Any]:
    """kernel_size, stride, padding for `nd` spatial dimensions: one int or a tuple each, the
    padding at most half the kernel (PyTorch refuses more; now and then drawn anyway)."""
    kernel = tuple(rng.choice([1, 2, 2, 3]) for _ in range(nd))
    stride = None if rng.random() < 0.3 else tuple(rng.choice([1, 2, 3]) for _ in range(nd))
    pad = tuple(rng.randint(0, k // 2 + (rng.random() < 0.03)) for k in kernel)
    if rng.random() < 0.5:
        return kernel[0], stride[0] if stride else None, pad[0]
    return kernel, stride, pad


def pool(g: Gen) -> None:
    """avg_pool1d/2d/3d (divisor_override of either sign, ceil_mode, count_include_pad) and
    max_pool1d/2d/3d (dilation, indices), with and without the batch dimension."""
    rng = g.rng
    nd = rng.choice([1, 2, 2, 3])
    kind = rng.choice(["avg", "max"])
    dtypes = supported(
        f"{kind}_pool{nd}d", lambda t: _pool_fn(kind, nd)(t.reshape((1,) * nd + (2,)), 1)
    )
    x = g.tensor(
        lambda t: t.dim() in (nd + 1, nd + 2) and all(s > 0 for s in t.shape) and t.dtype in dtypes
    )
    kernel, stride, pad = _pool_geometry(rng, nd)
    kw: dict[str, Any] = {"stride": stride, "padding": pad, "ceil_mode": rng.random() < 0.4}
    if kind == "avg":
        kw["count_include_pad"] = rng.random() < 0.5
        if nd > 1 and rng.random() < 0.4:
            # Not -1 for integers: CPU's kernel divides INT64_MIN by it and dies of SIGFPE.
            floating = g.t(x).is_floating_point()
            kw["divisor_override"] = rng.choice([1, 3, -2, 0] + ([-1] if floating else []))
    else:
        if rng.random() < 0.3:
            kw["dilation"] = rng.choice([1, 2])
        kw["return_indices"] = rng.random() < 0.3
    g.emit(f"{kind}_pool{nd}d", f"F.{kind}_pool{nd}d", (x, kernel), kw)


def _pool_fn(kind: str, nd: int) -> Callable[..., Any]:
    return resolve_fn(f"F.{kind}_pool{nd}d")


# ---------------------------------------------------------------------------------------------
# Indexing


def _mask_dtype(rng: random.Random) -> torch.dtype:
    """bool, or now and then uint8, which masked_select and masked_scatter_ refuse (indexing
    with it is deprecated but allowed)."""
    return torch.uint8 if rng.random() < 0.05 else torch.bool


def index(g: Gen) -> None:
    rng = g.rng
    op = rng.choice(
        "index_select gather scatter scatter_add scatter_reduce index_add index_copy index_fill "
        "masked_select nonzero getitem getitem_mask index_put masked_scatter".split()
    )
    x = g.tensor(lambda t: t.dim() >= 1) if op != "nonzero" else g.tensor()
    xt = g.t(x)
    nd = xt.dim()
    d = g.dim(xt)
    dd = d if d is not None and -nd <= d < nd else 0
    size = xt.shape[dd] if nd else 1
    out_ok = False
    kw: dict[str, Any] = {}
    inplace = False
    if op == "index_select":
        n = rng.choice([0, 1, 2, 3, 5])
        idx = g.new_input((n,), torch.int64, data=V.index_values(rng, (n,), size))
        if rng.random() < 0.05:
            idx = g.new_input((n,), torch.int32, data=V.index_values(rng, (n,), size).int())
        args: tuple[Any, ...] = (x, d, idx)
        fn, out_ok = "torch.index_select", True
    elif op == "gather":
        ishape = tuple(
            rng.randint(0, s) if i != dd else rng.randint(0, 4) for i, s in enumerate(xt.shape)
        )
        idx = g.new_input(ishape, torch.int64, data=V.index_values(rng, ishape, size))
        args = (x, d, idx)
        fn, out_ok = "torch.gather", True
    elif op in ("scatter", "scatter_add", "scatter_reduce"):
        ishape = tuple(rng.randint(0, s) for s in xt.shape)
        if op == "scatter":
            data = V.unique_index_values(rng, ishape, dd, size)
        else:
            data = V.index_values(rng, ishape, size)
        idx = g.new_input(ishape, torch.int64, data=data)
        if op == "scatter" and rng.random() < 0.3:
            src: Any = rng.choice([1.5, -2, 0])
        else:
            src = g.new_input(ishape, xt.dtype if rng.random() < 0.9 else V.pick_dtype(rng))
        args = (x, d, idx, src)
        if op == "scatter_reduce":
            op = "scatter"
            kw["reduce"] = rng.choice(["add", "multiply"])
        fn, out_ok, inplace = f"torch.{op}", True, True
    elif op in ("index_add", "index_copy"):
        n = rng.choice([0, 1, 2, 3])
        if op == "index_copy":
            data = V.unique_index_values(rng, (min(n, size),), 0, size)
        else:
            data = V.index_values(rng, (n,), size)
        n = data.numel()
        idx = g.new_input((n,), torch.int64, data=data)
        sshape = list(xt.shape)
        sshape[dd] = n
        src = g.new_input(tuple(sshape), xt.dtype if rng.random() < 0.9 else V.pick_dtype(rng))
        args = (x, d, idx, src)
        if op == "index_add" and rng.random() < 0.3:
            kw["alpha"] = rng.choice([2, -1, 0.5])
        fn, out_ok, inplace = f"torch.{op}", True, True
    elif op == "index_fill":
        n = rng.choice([0, 1, 2])
        idx = g.new_input((n,), torch.int64, data=V.index_values(rng, (n,), size))
        val: Any = (
            g.py_scalar(xt.dtype)
            if rng.random() < 0.7
            else g.new_input((), V.pick_dtype(rng), on_cpu=rng.random() < 0.5)
        )
        args = (x, d, idx, val)
        fn, inplace = "torch.index_fill", True
    elif op in ("masked_select", "getitem_mask"):
        mshape = g.broadcast_shape(tuple(xt.shape)) if op == "masked_select" else tuple(xt.shape)
        if op == "getitem_mask" and rng.random() < 0.5:
            mshape = tuple(xt.shape[: rng.randint(1, nd)])
        mask = g.shaped(mshape, _mask_dtype(rng))
        if op == "getitem_mask":
            g.emit("index", "[]", (x, mask))
            return
        args = (x, mask)
        fn, out_ok = "torch.masked_select", True
    elif op == "nonzero":
        args = (x,)
        fn, out_ok = "torch.nonzero", True
    elif op == "getitem":
        n = rng.choice([0, 1, 2, 4])
        ishape = rng.choice([(n,), (2, n), ()])
        idx = g.new_input(ishape, torch.int64, data=V.index_values(rng, ishape, xt.shape[0]))
        key: Any = idx
        if nd >= 2 and rng.random() < 0.4:
            idx2 = g.new_input(ishape, torch.int64, data=V.index_values(rng, ishape, xt.shape[1]))
            key = (idx, idx2) if rng.random() < 0.5 else (slice(None, None, 2), idx2)
        g.emit("index", "[]", (x, key))
        return
    elif op == "index_put":
        n = min(rng.choice([0, 1, 2, 3]), xt.shape[0])
        acc = rng.random() < 0.4
        data = (
            V.index_values(rng, (n,), xt.shape[0])
            if acc
            else V.unique_index_values(rng, (n,), 0, xt.shape[0])
        )
        idx = g.new_input((data.numel(),), torch.int64, data=data)
        vshape = (data.numel(),) + tuple(xt.shape[1:])
        vs = vshape if rng.random() < 0.7 else vshape[1:] if rng.random() < 0.5 else ()
        values = g.new_input(vs, xt.dtype if rng.random() < 0.85 else V.pick_dtype(rng))
        g.emit("index_put", ".index_put_", (x, (idx,), values, acc), None, "inplace")
        return
    else:  # masked_scatter
        mask = g.shaped(g.broadcast_shape(tuple(xt.shape)), _mask_dtype(rng))
        src = g.new_input(
            (rng.choice([xt.numel(), xt.numel() + 1, max(0, xt.numel() - 1)]),),
            xt.dtype if rng.random() < 0.9 else V.pick_dtype(rng),
        )
        g.emit("masked_scatter", ".masked_scatter_", (x, mask, src), None, "inplace")
        return
    variant = _variant(rng, inplace, out_ok)
    if variant == "inplace":
        g.emit(op, f".{fn.split('.')[-1]}_", args, kw, "inplace")
    elif variant == "out":
        _emit_out(g, op, fn, args, kw, same_dtype=0.85)
    else:
        g.emit(op, fn, args, kw)


def shape_ops(g: Gen) -> None:
    rng = g.rng
    op = rng.choice("cat flip roll tril triu narrow_copy".split())
    x = g.tensor(lambda t: t.dim() >= (2 if op in ("tril", "triu") else 1))
    xt = g.t(x)
    nd = xt.dim()
    d = g.dim(xt)
    kw: dict[str, Any] = {}
    if op == "cat":
        others = []
        for _ in range(rng.randint(1, 3)):
            shape = list(xt.shape)
            if d is not None and -nd <= d < nd:
                shape[d] = rng.choice([0, 1, 2, 3])
            dt = xt.dtype if rng.random() < 0.7 else V.pick_dtype(rng)
            others.append(g.new_input(tuple(shape), dt) if rng.random() < 0.95 else g.fresh())
        args: tuple[Any, ...] = ([x, *others],)
        kw = {"dim": d}
        fn, out_ok, inplace = "torch.cat", True, False
    elif op == "flip":
        args = (x, tuple(rng.sample(range(nd), rng.randint(0, nd))))
        fn, out_ok, inplace = "torch.flip", False, False
    elif op == "roll":
        k = rng.randint(1, nd)
        args = (x, tuple(rng.randint(-5, 5) for _ in range(k)), tuple(rng.sample(range(nd), k)))
        fn, out_ok, inplace = "torch.roll", False, False
    elif op in ("tril", "triu"):
        args = (x, rng.choice([0, 0, 1, -1, 3]))
        fn, out_ok, inplace = f"torch.{op}", True, True
    else:
        dd = d if d is not None and -nd <= d < nd else 0
        s = xt.shape[dd]
        start = rng.randint(0, s)
        args = (x, d, start, rng.randint(0, s - start + (1 if rng.random() < 0.05 else 0)))
        fn, out_ok, inplace = "torch.narrow_copy", False, False
    v = _variant(rng, inplace and nd >= 2, out_ok)
    if v == "inplace":
        g.emit(op, f".{op}_", args, kw, "inplace")
    elif v == "out":
        # CPU's tril/triu with a non-contiguous out= crash (a PyTorch bug), so none is drawn.
        _emit_out(g, op, fn, args, kw, strided=op not in ("tril", "triu"))
    else:
        g.emit(op, fn, args, kw)


# ---------------------------------------------------------------------------------------------
# Copies, conversions and views


def copies(g: Gen) -> None:
    rng = g.rng
    op = rng.choice("to to clone contiguous copy_ copy_ fill_ zero_".split())
    x = g.tensor()
    if op in ("copy_", "fill_", "zero_") and not _writable(g, x):
        x = g.fresh()
    xt = g.t(x)
    if op == "to":
        g.emit("to", ".to", (x, V.pick_dtype(rng)))
    elif op == "clone":
        fmt = torch.channels_last if xt.dim() == 4 and rng.random() < 0.5 else None
        g.emit("clone", ".clone", (x,), {"memory_format": fmt} if fmt else None)
    elif op == "contiguous":
        g.emit("contiguous", ".contiguous", (x,))
    elif op == "copy_":
        src = g.operand(xt, scalars=False)
        if rng.random() < 0.15:
            src = g.new_input((), V.pick_dtype(rng), on_cpu=True)
        g.emit("copy_", ".copy_", (x, src), None, "inplace")
    elif op == "fill_":
        val: Any = (
            g.py_scalar(xt.dtype)
            if rng.random() < 0.7
            else g.new_input((), V.pick_dtype(rng), on_cpu=rng.random() < 0.5)
        )
        g.emit("fill_", ".fill_", (x, val), None, "inplace")
    else:
        g.emit("zero_", ".zero_", (x,), None, "inplace")


def views(g: Gen) -> None:
    """A view of a value, for the ops that follow (in-place ops then write through it)."""
    rng = g.rng
    x = g.tensor()
    xt = g.t(x)
    nd = xt.dim()
    op = rng.choice(
        ["t", "transpose", "slice", "reshape", "unsqueeze", "expand", "unfold", "conj", "neg"]
    )
    if op == "conj" and xt.is_complex():
        # The lazy conjugate, and its imaginary part: a real view with the negative bit.
        g.emit("view", ".conj", (x,), None, "view")
        if rng.random() < 0.3:
            g.emit("view", "torch.imag", (Ref(g.steps[-1].name),), None, "view")
    elif op == "neg" and (xt.is_floating_point() or xt.is_complex()):
        g.emit("view", "._neg_view", (x,), None, "view")
    elif op == "t" and nd <= 2:
        g.emit("view", ".t", (x,), None, "view")
    elif op == "transpose" and nd >= 2:
        i, j = rng.sample(range(nd), 2)
        g.emit("view", ".transpose", (x, i, j), None, "view")
    elif op == "slice" and nd >= 1:
        dim = rng.randrange(nd)
        key = (slice(None),) * dim + (slice(rng.choice([None, 1]), None, rng.choice([None, 2, 3])),)
        g.emit("view", "[]", (x, key), None, "view")
    elif op == "reshape":
        g.emit("view", ".reshape", (x, (-1,)), None, "view")
    elif op == "expand" and nd >= 1 and 1 in xt.shape:
        shape = tuple(rng.choice([2, 3]) if s == 1 else s for s in xt.shape)
        g.emit("view", ".expand", (x, shape), None, "view")
    elif op == "unfold" and nd >= 1:
        dim = rng.randrange(nd)
        g.emit("view", ".unfold", (x, dim, rng.choice([1, 2]), rng.choice([1, 2])), None, "view")
    else:
        g.emit("view", ".unsqueeze", (x, rng.randint(-nd - 1, nd)), None, "view")


# ---------------------------------------------------------------------------------------------

FAMILIES: list[tuple[Callable[[Gen], None], float]] = [
    (unary, 16),
    (nn_unary, 6),
    (threshold, 1),
    (binary, 22),
    (ternary, 8),
    (masked_fill, 3),
    (reduce, 16),
    (matmul, 7),
    (softmax, 3),
    (layer_norm, 3),
    (batch_norm, 3),
    (pool, 3),
    (index, 11),
    (shape_ops, 4),
    (copies, 6),
    (views, 4),
]
_FNS = [f for f, _ in FAMILIES]
_WEIGHTS = [w for _, w in FAMILIES]


def pick_op(rng: random.Random) -> Callable[[Gen], None]:
    return rng.choices(_FNS, _WEIGHTS)[0]
