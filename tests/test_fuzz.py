"""A short fixed-seed run of the differential fuzzer (tests/fuzz/): random programs of 1-6 ops run
on CPU and on tpu in debug, strict and fused mode, compared (errors, dtypes, shapes, strides,
values). A difference fails the test unless tests/fuzz/known.py lists it: ALLOWED (deliberate,
with the reason) or OPEN_ISSUES (reported bugs not fixed yet; empty that list as fixes land).
The failure message has every new difference with a shrunk, standalone reproducer.

The run is split between this file's tests so pytest-xdist spreads them over its workers."""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

from tests.fuzz.check import Failure, check
from tests.fuzz.generate import generate
from tests.fuzz.program import _FN_CACHE, Input, Program, Ref, Run, Step, execute, tpu
from tests.fuzz.runner import fuzz, summary
from tests.fuzz.shrink import reproducer

SEED = 20  # issue 20
PARTS = 3
PROGRAMS_PER_PART = 800  # 2,400 programs in all, each in the three modes


@pytest.mark.parametrize("part", range(PARTS))
def test_fuzz_fixed_seed(part: int) -> None:
    rep = fuzz(
        SEED,
        programs=PROGRAMS_PER_PART,
        start=part,
        stride=PARTS,
        shrink_seconds=10,
        max_shrinks=6,  # a broken build fails fast; `python -m tests.fuzz --program I` for more
        open_reproducers=False,
    )
    assert rep.programs == PROGRAMS_PER_PART
    assert not rep.new(), "new differences from CPU:\n" + summary(rep)


def test_fuzz_catalog_runs_natively() -> None:
    """Programs on float32, int64 and bool values (without dtype= arguments) call no CPU
    fallback but signbit (drawn on purpose: it observes the sign of tpu's NaNs)."""
    ran = 0
    fallbacks: dict[str, int] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(1500):
            prog, g = generate(SEED + 1, i)
            plain = (torch.float32, torch.int64, torch.bool)
            if g.error is not None or any(inp.data.dtype not in plain for inp in prog.inputs):
                continue
            vals = [g.values.get(s.name) for s in prog.steps]
            if any(isinstance(v, torch.Tensor) and v.dtype not in plain for v in vals):
                continue
            if any(k == "dtype" for s in prog.steps for k, _ in s.kwargs):
                continue  # e.g. log_softmax(dtype=int64) of an empty tensor falls back
            tpu.reset_op_stats()
            with tpu.eager_mode("strict"):
                execute(prog, "tpu")
            for k, n in tpu.fallback_stats().items():
                fallbacks[k] = fallbacks.get(k, 0) + n
            ran += 1
    assert ran >= 150
    assert set(fallbacks) <= {"aten::signbit.out"}, fallbacks


def test_fuzz_reproducer_is_a_script() -> None:
    """A reproducer runs on its own and prints CPU's and tpu's results."""
    for i in range(40):
        prog, g = generate(SEED + 2, i)
        if g.error is None and prog.steps:
            break
    cpu = Run(g.values, g.bases, g.error)
    last = prog.steps[-1].name
    value = last if isinstance(cpu.values[last], torch.Tensor) else f"{last}[0]"
    f = Failure(
        "value", "fused", len(prog.steps) - 1, "op", "functional", "float", "x", value=value
    )
    script = reproducer(prog, f)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(script, "<reproducer>", "exec"), {})
    assert "tensor(" in out.getvalue(), script


def _fake(name: str, on_cpu: Callable[..., Any], on_tpu: Callable[..., Any]) -> str:
    """Registers an op that runs `on_tpu` when its first tensor is on tpu, `on_cpu` otherwise:
    a difference planted for the checker to find."""

    def call(*args: Any, **kwargs: Any) -> Any:
        first = next(a for a in args if isinstance(a, torch.Tensor))
        return (on_tpu if first.device.type == "tpu" else on_cpu)(*args, **kwargs)

    key = f"fake.{name}"
    _FN_CACHE[key] = call
    return key


def _one_step(op: str, fn: str, inputs: list[torch.Tensor], **kwargs: Any) -> Program:
    ins = tuple(Input(f"a{i}", t) for i, t in enumerate(inputs))
    args = tuple(Ref(i.name) for i in ins if i.name not in kwargs.values())
    kw = tuple((k, Ref(v)) for k, v in kwargs.items())
    return Program(ins, (Step("r0", op, fn, args, kw, "out" if kw else "functional"),))


def _check(p: Program, mode: str = "debug") -> Failure | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return check(p, execute(p, "cpu"), mode)


@pytest.mark.parametrize("mode", ["debug", "strict", "fused"])
def test_fuzz_finds_planted_differences(mode: str) -> None:
    """The checker reports a planted wrong value, dtype, shape, stride, missing or spurious
    error, and ignores a rounding difference and its propagation through floor."""
    x = torch.tensor([[0.5, 1.25, -2.0], [3.0, 0.0, 7.5]])

    def plus_one(t: torch.Tensor) -> torch.Tensor:
        return t + 1

    def raises(t: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("planted")

    cases: list[tuple[str, Callable[..., Any], Callable[..., Any], str | None]] = [
        ("neg", torch.neg, lambda t: torch.neg(t) + (t == 3.0), "value"),
        ("neg", torch.neg, lambda t: torch.neg(t).double(), "dtype"),
        ("neg", torch.neg, lambda t: torch.neg(t)[:1], "shape"),
        (
            "neg",
            lambda t: torch.neg(t.t().contiguous()).t(),
            torch.neg,
            "stride",
        ),
        ("neg", raises, torch.neg, "missing-error"),
        ("neg", torch.neg, raises, "spurious-error"),
        ("neg", torch.neg, lambda t: torch.neg(t) * (1 + 2**-22), None),  # rounding
        ("neg", plus_one, plus_one, None),
    ]
    for op, cpu_fn, tpu_fn, kind in cases:
        f = _check(_one_step(op, _fake(f"{op}{kind}", cpu_fn, tpu_fn), [x]), mode)
        got = None if f is None else f.kind
        assert got == kind, (kind, f)
    # exp(bfloat16, out=float32) computed in float32: a value difference (issue 20's class)
    b = torch.tensor([0.3, 1.7, -2.2], dtype=torch.bfloat16)
    wide = _fake("exp_wide", torch.exp, lambda t, out: out.copy_(torch.exp(t.float())))
    f = _check(_one_step("exp", wide, [b, torch.zeros(3)], out="a1"), mode)
    assert f is not None and f.kind == "value" and f.extra.get("fp32_matches"), f
    # One ulp of exp flips a floor: the local oracle blames the rounding, not floor.
    e = torch.tensor([0.6931472])  # exp is 2.0 in float32
    ulp = _fake("exp_ulp", torch.exp, lambda t: torch.nextafter(torch.exp(t), t.new_zeros(())))
    two = Program(
        (Input("a0", e),),
        (
            Step("r0", "exp", ulp, (Ref("a0"),)),
            Step("r1", "floor", "torch.floor", (Ref("r0"),)),
        ),
    )
    assert _check(two, mode) is None
