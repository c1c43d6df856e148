"""A fuzz program: inputs (values, dtype, views) and a chain of op calls, which runs on any device
and renders as a standalone Python script.

A program is data, not code: the generator builds it, the runner executes it on CPU and on tpu
from the same input values, and the shrinker edits it. Rendering turns it into the reproducer
printed for a failure; `execute` and `render` read the same fields, so the script does what the
fuzzer did.
"""

from __future__ import annotations

import math
import operator
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812 (PyTorch's own alias, as the reproducers spell it)

# torch.tpu, which torch_tpu adds when torch loads it (type checkers do not see it).
tpu: Any = getattr(torch, "tpu")  # noqa: B009


@dataclass(frozen=True)
class Ref:
    """A reference to a program value: an input (`a3`) or a step's result (`r2`), or element
    `index` of a step's tuple result."""

    name: str
    index: int | None = None

    def __str__(self) -> str:
        return self.name if self.index is None else f"{self.name}[{self.index}]"


@dataclass(frozen=True)
class View:
    """One transform applied to an input after it is moved to the device: a view (transpose,
    permute, step slice, expand, as_strided, unsqueeze, select), a math-bit view (conj, neg: the
    lazy conjugate and negative bits) or a layout copy (flip, channels_last)."""

    kind: str
    params: tuple[Any, ...] = ()


@dataclass(frozen=True, eq=False)
class Input:
    """A program input: `data` (a contiguous CPU tensor, the base) moved to the device, then
    `views` applied in order. `on_cpu` inputs stay on the host in the tpu run too: 0-d CPU
    tensors, which PyTorch treats as scalars when mixed with device tensors."""

    name: str
    data: torch.Tensor
    views: tuple[View, ...] = ()
    on_cpu: bool = False


@dataclass(frozen=True)
class Step:
    """One op call. `fn` is `torch.X`, `F.X` (torch.nn.functional), `torch.linalg.X`,
    `torch._C._nn.X`, `.X` (a method of the first argument) or `[]` (indexing with args[1]).
    Arguments are literals (None, bool, int, float, complex, str, dtype, memory format, slices,
    and tuples/lists of these and of Refs) or Refs. `variant` is functional, inplace, out or view;
    `op` names the op for grouping failures."""

    name: str
    op: str
    fn: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...] = ()
    variant: str = "functional"

    def refs(self) -> Iterator[Ref]:
        yield from _refs(self.args)
        yield from _refs(tuple(v for _, v in self.kwargs))

    def writes(self) -> list[Ref]:
        """The arguments the call writes into: self of an in-place call, out= tensors, and the
        running statistics a normalization updates."""
        out: list[Ref] = []
        if self.variant == "inplace" and isinstance(self.args[0], Ref):
            out.append(self.args[0])
        if self.fn in ("F.batch_norm", "F.instance_norm"):
            out.extend(a for a in self.args[1:3] if isinstance(a, Ref))
        for k, v in self.kwargs:
            if k == "out":
                out.extend(_refs((v,)))
        return out


def _refs(args: Any) -> Iterator[Ref]:
    for a in args:
        if isinstance(a, Ref):
            yield a
        elif isinstance(a, (tuple, list)):
            yield from _refs(a)


@dataclass(frozen=True, eq=False)
class Program:
    inputs: tuple[Input, ...]
    steps: tuple[Step, ...]
    meta: dict[str, Any] = field(default_factory=dict)

    def input(self, name: str) -> Input:
        for i in self.inputs:
            if i.name == name:
                return i
        raise KeyError(name)

    def with_steps(self, steps: tuple[Step, ...]) -> Program:
        return replace(self, steps=steps)

    def pruned(self) -> Program:
        """Without the inputs no step reads."""
        used = {r.name for s in self.steps for r in s.refs()}
        return replace(self, inputs=tuple(i for i in self.inputs if i.name in used))


# ---------------------------------------------------------------------------------------------
# Execution


def apply_view(t: torch.Tensor, v: View) -> torch.Tensor:
    k, p = v.kind, v.params
    if k == "transpose":
        return t.transpose(p[0], p[1])
    if k == "permute":
        return t.permute(*p)
    if k == "slice":
        dim, start, stop, step = p
        return t[(slice(None),) * dim + (slice(start, stop, step),)]
    if k == "expand":
        return t.expand(*p)
    if k == "as_strided":
        return t.as_strided(p[0], p[1], p[2])
    if k == "unsqueeze":
        return t.unsqueeze(p[0])
    if k == "select":
        return t.select(p[0], p[1])
    if k == "flip":
        return t.flip(p)
    if k == "channels_last":
        return t.contiguous(memory_format=torch.channels_last)
    if k == "conj":
        return t.conj()
    if k == "neg":
        return t._neg_view()
    raise ValueError(f"unknown view {k}")


def _method(name: str) -> Callable[..., Any]:
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(self, name)(*args, **kwargs)

    return call


_FN_CACHE: dict[str, Callable[..., Any]] = {}


def resolve_fn(fn: str) -> Callable[..., Any]:
    f = _FN_CACHE.get(fn)
    if f is not None:
        return f
    if fn == "[]":
        f = operator.getitem
    elif fn.startswith("."):
        f = _method(fn[1:])
    else:
        obj: Any = {"torch": torch, "F": F}[fn.split(".", 1)[0]]
        for part in fn.split(".")[1:]:
            obj = getattr(obj, part)
        f = obj
    _FN_CACHE[fn] = f
    return f


def resolve(values: dict[str, Any], a: Any) -> Any:
    if isinstance(a, Ref):
        v = values[a.name]
        return v if a.index is None else v[a.index]
    if isinstance(a, tuple):
        return tuple(resolve(values, x) for x in a)
    if isinstance(a, list):
        return [resolve(values, x) for x in a]
    return a


def make_input(inp: Input, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(base, viewed) for `inp` on `device`; the base is a fresh copy of inp.data."""
    if inp.on_cpu or device == "cpu":
        base = inp.data.clone()
    else:
        base = inp.data.to(device)
    t = base
    for v in inp.views:
        t = apply_view(t, v)
    return base, t


@dataclass
class Run:
    """The state after running a program: every value by name, each input's base, and the first
    error: (index of the step that raised, or len(steps) for the final synchronization; the
    exception)."""

    values: dict[str, Any]
    bases: dict[str, torch.Tensor]
    error: tuple[int, BaseException] | None = None


def run_step(values: dict[str, Any], step: Step) -> Any:
    fn = resolve_fn(step.fn)
    args = [resolve(values, a) for a in step.args]
    kwargs = {k: resolve(values, v) for k, v in step.kwargs}
    out = fn(*args, **kwargs)
    if isinstance(out, list):
        out = tuple(out)
    values[step.name] = out
    return out


def execute(
    program: Program,
    device: str,
    *,
    stop: int | None = None,
    hook: Callable[[int, dict[str, Any]], None] | None = None,
) -> Run:
    """Runs `program` on `device` (all inputs there, except on_cpu ones), up to step `stop`
    (exclusive). `hook(i, values)` runs before step i. Exceptions are caught and recorded; on a
    non-CPU device the run ends with a synchronization, whose error counts as step
    len(steps)."""
    values: dict[str, Any] = {}
    bases: dict[str, torch.Tensor] = {}
    run = Run(values, bases)
    try:
        for inp in program.inputs:
            bases[inp.name], values[inp.name] = make_input(inp, device)
    except Exception as e:  # an input view the device refuses
        run.error = (-1, e)
        return run
    steps = program.steps if stop is None else program.steps[:stop]
    for i, step in enumerate(steps):
        try:
            if hook is not None:
                hook(i, values)
            run_step(values, step)
        except Exception as e:
            run.error = (i, e)
            break
    if device == "tpu":
        try:
            tpu.synchronize()
        except Exception as e:
            if run.error is None:
                run.error = (len(program.steps), e)
    return run


# ---------------------------------------------------------------------------------------------
# Rendering


def _short_float(v: float, dtype: torch.dtype) -> str:
    """The shortest decimal that converts back to `v` in `dtype`."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    if v == int(v) and abs(v) < 1e16:
        return f"{int(v)}.0"
    for p in range(1, 18):
        s = f"{v:.{p}g}"
        if _round_to(float(s), dtype) == v:
            return s
    return repr(v)


def _round_to(v: float, dtype: torch.dtype) -> float:
    if dtype in (torch.float32, torch.complex64):
        try:
            return float(struct.unpack("f", struct.pack("f", v))[0])
        except OverflowError:
            return math.copysign(math.inf, v)
    if dtype == torch.float16:
        try:
            return float(struct.unpack("e", struct.pack("e", v))[0])
        except OverflowError:
            return math.copysign(math.inf, v)
    if dtype == torch.bfloat16:
        return float(torch.tensor(v, dtype=torch.bfloat16).item())
    return v


def _scalar(v: Any, dtype: torch.dtype) -> str:
    if isinstance(v, bool):
        return repr(v)
    if isinstance(v, int):
        return repr(v)
    if isinstance(v, float):
        return _short_float(v, dtype)
    if isinstance(v, complex):
        return f"complex({_short_float(v.real, dtype)}, {_short_float(v.imag, dtype)})"
    return repr(v)


def _nested(v: Any, dtype: torch.dtype) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_nested(x, dtype) for x in v) + "]"
    return _scalar(v, dtype)


def render_literal(a: Any) -> str:
    if isinstance(a, Ref):
        return str(a)
    if isinstance(a, torch.dtype):
        return str(a)
    if isinstance(a, torch.memory_format):
        return str(a)
    if isinstance(a, slice):
        s = "" if a.start is None else str(a.start)
        s += ":" + ("" if a.stop is None else str(a.stop))
        if a.step is not None:
            s += f":{a.step}"
        return s
    if isinstance(a, (bool, int, str)) or a is None:
        return repr(a)
    if isinstance(a, (float, complex)):
        return _scalar(a, torch.float64)
    if isinstance(a, tuple):
        inner = ", ".join(render_literal(x) for x in a)
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, list):
        return "[" + ", ".join(render_literal(x) for x in a) + "]"
    if a is Ellipsis:
        return "..."
    raise TypeError(f"cannot render {a!r}")


def render_view(v: View) -> str:
    k, p = v.kind, v.params
    if k == "transpose":
        return f".transpose({p[0]}, {p[1]})"
    if k == "permute":
        return f".permute{render_literal(tuple(p))}"
    if k == "slice":
        dim, start, stop, step = p
        return "[" + ":, " * dim + render_literal(slice(start, stop, step)) + "]"
    if k == "expand":
        return f".expand{render_literal(tuple(p))}"
    if k == "as_strided":
        return f".as_strided({render_literal(p[0])}, {render_literal(p[1])}, {p[2]})"
    if k == "unsqueeze":
        return f".unsqueeze({p[0]})"
    if k == "select":
        return f".select({p[0]}, {p[1]})"
    if k == "flip":
        return f".flip({render_literal(tuple(p))})"
    if k == "channels_last":
        return ".contiguous(memory_format=torch.channels_last)"
    if k == "conj":
        return ".conj()"
    if k == "neg":
        return "._neg_view()"
    raise ValueError(k)


def render_input(inp: Input) -> str:
    d = inp.data
    dev = "" if inp.on_cpu else ", device=dev"
    dt = "" if d.dtype == torch.float32 else f", dtype={d.dtype}"
    shape = render_literal(tuple(d.shape))
    if d.numel() == 0:
        src = f"torch.empty({shape}{dt}{dev})"
    elif d.dim() > 0 and d.numel() > 1 and bool((d == 0).all()) and not _has_neg_zero(d):
        src = f"torch.zeros({shape}{dt}{dev})"
    elif d.dim() > 0 and d.numel() > 1 and bool((d == 1).all()):
        src = f"torch.ones({shape}{dt}{dev})"
    else:
        src = f"torch.tensor({_nested(d.tolist(), d.dtype)}{dt}{dev})"
    return f"{inp.name} = {src}" + "".join(render_view(v) for v in inp.views)


def _has_neg_zero(d: torch.Tensor) -> bool:
    if not (d.is_floating_point() or d.is_complex()):
        return False
    r = torch.view_as_real(d) if d.is_complex() else d
    return bool(((r == 0) & torch.signbit(r)).any())


def render_step(s: Step) -> str:
    args = [render_literal(a) for a in s.args]
    kw = [f"{k}={render_literal(v)}" for k, v in s.kwargs]
    if s.fn == "[]":
        idx = s.args[1]
        inner = ", ".join(render_literal(x) for x in idx) if isinstance(idx, tuple) else args[1]
        return f"{s.name} = {args[0]}[{inner}]"
    if s.fn.startswith("."):
        return f"{s.name} = {args[0]}{s.fn}({', '.join(args[1:] + kw)})"
    return f"{s.name} = {s.fn}({', '.join(args + kw)})"


def renumbered(program: Program) -> Program:
    """The same program with inputs named a0, a1, ... and results r0, r1, ... in order."""
    names: dict[str, str] = {}
    for i, inp in enumerate(program.inputs):
        names[inp.name] = f"a{i}"
    for i, s in enumerate(program.steps):
        names[s.name] = f"r{i}"

    def sub(a: Any) -> Any:
        if isinstance(a, Ref):
            return Ref(names[a.name], a.index)
        if isinstance(a, tuple):
            return tuple(sub(x) for x in a)
        if isinstance(a, list):
            return [sub(x) for x in a]
        return a

    inputs = tuple(replace(i, name=names[i.name]) for i in program.inputs)
    steps = tuple(
        replace(
            s,
            name=names[s.name],
            args=tuple(sub(a) for a in s.args),
            kwargs=tuple((k, sub(v)) for k, v in s.kwargs),
        )
        for s in program.steps
    )
    return replace(program, inputs=inputs, steps=steps, meta={**program.meta, "renames": names})


def render_body(program: Program, returns: str) -> list[str]:
    lines = ["def run(dev):"]
    lines += ["    " + render_input(i) for i in program.inputs]
    lines += ["    " + render_step(s) for s in program.steps]
    lines.append(f"    return {returns}")
    return lines
