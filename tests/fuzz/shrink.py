"""Shrinking a failing program to a minimal one that fails the same way (same signature: op,
variant, kind of difference, dtype class), and rendering it as a standalone script.

Greedy: each pass tries, in order, to drop a step, to cut a step (its result becomes an input
holding CPU's value of it), to drop the steps after the failing one, to replace a viewed input by
a contiguous one with the same values, to shrink each dimension of each input, to simplify input
values, and to drop keyword arguments; the first candidate that still fails is kept and the pass
starts again, until no candidate fails or the budget runs out.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import torch

from .check import Failure, check
from .program import Input, Program, Ref, Step, execute, make_input, render_body, renumbered


def _sub_refs(a: Any, name: str, by: dict[int | None, Any]) -> Any:
    if isinstance(a, Ref):
        if a.name == name:
            return by[a.index] if a.index is not None else by[None]
        return a
    if isinstance(a, tuple):
        return tuple(_sub_refs(x, name, by) for x in a)
    if isinstance(a, list):
        return [_sub_refs(x, name, by) for x in a]
    return a


def _replace_refs(
    steps: tuple[Step, ...], name: str, by: dict[int | None, Any]
) -> tuple[Step, ...]:
    return tuple(
        replace(
            s,
            args=tuple(_sub_refs(a, name, by) for a in s.args),
            kwargs=tuple((k, _sub_refs(v, name, by)) for k, v in s.kwargs),
        )
        for s in steps
    )


def _uses(steps: tuple[Step, ...], name: str) -> bool:
    return any(r.name == name for s in steps for r in s.refs())


def _fresh_name(p: Program, stem: str) -> str:
    names = {i.name for i in p.inputs}
    k = 0
    while f"{stem}{k}" in names:
        k += 1
    return f"{stem}{k}"


def _candidates(p: Program, fail_step: int) -> Iterator[Program]:
    steps = p.steps
    # Steps after the failing one.
    if fail_step + 1 < len(steps):
        yield p.with_steps(steps[: fail_step + 1]).pruned()
    # Drop a step nothing reads.
    for j in range(len(steps)):
        if j != fail_step and not _uses(steps[j + 1 :], steps[j].name):
            yield p.with_steps(steps[:j] + steps[j + 1 :]).pruned()
    # Cut a step: its result becomes an input with CPU's value.
    for j in range(len(steps)):
        if j == fail_step or steps[j].variant == "inplace":
            continue
        cut = _cut(p, j)
        if cut is not None:
            yield cut
    # Inputs: contiguous instead of views, smaller, simpler values.
    for inp in p.inputs:
        if inp.views:
            _, v = make_input(inp, "cpu")
            yield _with_input(p, replace(inp, data=v.contiguous(), views=()))
    for inp in p.inputs:
        if inp.views:
            continue
        d = inp.data
        for dim in range(d.dim()):
            n = d.shape[dim]
            if n == 0:
                continue
            h = n // 2
            # (start, length): empty, halves, all but the first or last, the first or last one
            spans = [(0, 0), (0, h), (h, n - h), (1, n - 1), (0, n - 1), (0, 1), (n - 1, 1)]
            for start, m in dict.fromkeys(spans):
                if m < n:
                    yield _with_input(p, replace(inp, data=d.narrow(dim, start, m).contiguous()))
        if d.dim() > 0 and d.numel() == 1:
            yield _with_input(p, replace(inp, data=d.reshape(())))
    for inp in p.inputs:
        yield from (_with_input(p, replace(inp, data=s)) for s in _simpler(inp.data))
    # Keyword arguments.
    for j, s in enumerate(steps):
        for i, (k, _) in enumerate(s.kwargs):
            if k != "out":
                s2 = replace(s, kwargs=s.kwargs[:i] + s.kwargs[i + 1 :])
                yield p.with_steps(steps[:j] + (s2,) + steps[j + 1 :]).pruned()


def _simpler(d: torch.Tensor) -> Iterator[torch.Tensor]:
    if d.numel() == 0:
        return
    if d.dtype == torch.bool:
        if bool(d.any()):
            yield torch.zeros_like(d)
        return
    one = torch.ones_like(d)
    if not torch.equal(d, one):
        yield one
    zero = torch.zeros_like(d)
    if not torch.equal(d, zero):
        yield zero
    if d.is_floating_point():
        r = torch.where(torch.isfinite(d), d.round(), d)
        if not torch.equal(torch.nan_to_num(r), torch.nan_to_num(d)):
            yield r


def _with_input(p: Program, inp: Input) -> Program:
    return replace(p, inputs=tuple(inp if i.name == inp.name else i for i in p.inputs))


def _cut(p: Program, j: int) -> Program | None:
    step = p.steps[j]
    if not _uses(p.steps[j + 1 :], step.name):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = execute(p, "cpu", stop=j + 1)
    if run.error is not None:
        return None
    v = run.values.get(step.name)
    inputs = list(p.inputs)
    by: dict[int | None, Any] = {}
    vals = [(None, v)] if isinstance(v, torch.Tensor) else list(enumerate(v or ()))
    for idx, t in vals:
        if not isinstance(t, torch.Tensor):
            return None
        name = _fresh_name(p, "c") + (f"_{idx}" if idx is not None else "")
        inputs.append(Input(name, t.detach().clone().contiguous()))
        by[idx] = Ref(name)
    if isinstance(v, tuple):
        by[None] = tuple(by[i] for i in range(len(v)))
    rest = _replace_refs(p.steps[j + 1 :], step.name, by)
    return replace(p, inputs=tuple(inputs), steps=p.steps[:j] + rest).pruned()


def failure_of(p: Program, mode: str) -> Failure | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cpu = execute(p, "cpu")
    return check(p, cpu, mode)


def shrink(
    p: Program, failure: Failure, *, seconds: float = 20.0, max_checks: int = 600
) -> tuple[Program, Failure]:
    """A smaller program that fails with `failure`'s signature in its mode, and its failure."""
    sig, mode = failure.signature, failure.mode
    deadline = time.monotonic() + seconds
    cur, cur_f = p, failure
    checks = 0
    progress = True
    while progress and checks < max_checks and time.monotonic() < deadline:
        progress = False
        for cand in _candidates(cur, cur_f.step):
            if checks >= max_checks or time.monotonic() > deadline:
                break
            checks += 1
            try:
                f = failure_of(cand, mode)
            except Exception:
                continue
            if f is not None and f.signature == sig:
                cur, cur_f = cand, f
                progress = True
                break
    return cur, cur_f


# ---------------------------------------------------------------------------------------------
# Reproducers


def reproducer(p: Program, f: Failure) -> str:
    """A standalone script that shows the failure: CPU against tpu in the failure's mode."""
    p = renumbered(p.pruned())
    names: dict[str, str] = p.meta["renames"]
    value = f.value
    base_of = None
    if value is not None and value.startswith("base:"):
        base_of = names.get(value[5:], value[5:])
        ret = f"{base_of}_base"
    elif value is not None:
        stem, _, idx = value.partition("[")
        ret = names.get(stem, stem) + (f"[{idx}" if idx else "")
    else:
        ret = p.steps[-1].name if p.steps else "None"
    body = render_body(p, ret)
    if base_of is not None:
        body = [_split_base(line, base_of) for line in body]
    head = [
        f"# {f.signature} ({f.mode} mode): {f.detail}",
        "import torch",
        "import torch.nn.functional as F",
        "",
        'nan, inf = float("nan"), float("inf")',
        "",
        "",
    ]
    m = f.mode
    if f.kind in ("value", "shape", "dtype", "stride", "type"):
        show = "x.stride()" if f.kind == "stride" else "x.dtype" if f.kind == "dtype" else "x"
        foot = [
            "",
            "",
            'expected = run("cpu")',
            f'with torch.tpu.eager_mode("{m}"):',
            '    actual = run("tpu")',
            "    torch.tpu.synchronize()",
            f"for x in (expected, actual.cpu(){'' if f.kind != 'stride' else ''}):",
            f"    print({show})",
        ]
        if f.kind == "stride":
            foot[-2] = "for x in (expected, actual):"
    else:
        foot = [
            "",
            "",
            'for dev in ("cpu", "tpu"):',
            "    try:",
            f'        with torch.tpu.eager_mode("{m}"):',
            "            run(dev)",
            "            torch.tpu.synchronize()",
            '        print(dev, "no error")',
            "    except Exception as e:",
            "        print(dev, type(e).__name__, e)",
        ]
    return "\n".join(head + body + foot) + "\n"


def _split_base(line: str, name: str) -> str:
    prefix = f"    {name} = "
    if not line.startswith(prefix):
        return line
    src = line[len(prefix) :]
    # The input's source ends at the first view applied to it.
    depth = 0
    for i, ch in enumerate(src):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth == 0 and i + 1 < len(src) and src[i + 1] in ".[":
                base, views = src[: i + 1], src[i + 1 :]
                return f"    {name}_base = {base}\n    {name} = {name}_base{views}"
    return f"    {name}_base = {src}\n    {name} = {name}_base"


def script_of(p: Program) -> str:
    """The program alone (no comparison), for logs."""
    return "\n".join(render_body(renumbered(p.pruned()), "None"))
