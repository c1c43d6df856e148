"""Runs the op cases: every available contender, interleaved, outputs checked against PyTorch CPU,
and each time put against the roofline of the limits measured in the same run."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch

from bench.checks import Check, check_tensor
from bench.contenders import CPU_EAGER, Contender, enter, synchronize
from bench.limits import Limit, fp32_peak, value
from bench.ops import OpCase
from bench.timing import Outcome, interleave, na


class OpRunner:
    def __init__(self, case: OpCase, c: Contender, inputs: tuple[torch.Tensor, ...]):
        self.case, self.c = case, c
        enter(c)
        dev = torch.device(c.device)
        self.inputs = tuple(t.to(dev) for t in inputs)
        # out= cases write into a buffer shaped like their first input, allocated once up front.
        self.out = torch.empty_like(self.inputs[0]) if case.uses_out else None
        self.y: torch.Tensor | None = None
        synchronize(c)

    def enter(self) -> None:
        enter(self.c)

    def run(self, i: int) -> None:
        y = self.case.fn(self.inputs, self.out)
        synchronize(self.c)
        # The latency chain reads its value back inside the timed region: enqueued-but-unfinished
        # work cannot pass for speed.
        self.y = y.cpu() if self.case.readback else y

    def value(self) -> object:
        return self.y


def make_checker(case: OpCase, ref_name: str):  # noqa: ANN201 (a Checker, see timing.py)
    def check(values: dict[str, list[object]], final: bool) -> dict[str, Check]:
        ref = values.get(ref_name)
        out: dict[str, Check] = {}
        for name, vals in values.items():
            got = vals[-1]
            assert isinstance(got, torch.Tensor)
            if name == ref_name:
                c = Check(True, "reference")
            elif case.sampled:
                c = Check(True, "sampled")
            elif ref is None:
                c = Check(False, "the PyTorch CPU reference failed, nothing to compare with")
            else:
                c = check_tensor(got.cpu(), ref[-1].cpu())  # type: ignore[union-attr]
            if c.ok and case.expect is not None:
                c = case.expect(got)
            out[name] = c
        return out

    return check


def roofline(row: dict[str, Any], wall: float, limits: dict[str, Limit]) -> dict[str, float]:
    """Achieved rates and the fraction of the roofline bound t_min = max(bytes/B, flops/P)."""
    flops, nbytes = float(row["flops"]), float(row["bytes"])
    d: dict[str, float] = {"gflops": flops / wall / 1e9, "gbs": nbytes / wall / 1e9}
    if row["group"] == "latency":
        d["us_per_op"] = wall / int(row["ops_per_call"]) * 1e6
        return d
    bw = value(limits, "stream_triad")
    dot_peak = {"bfloat16": "bf16_dot_peak", "int8": "int8_dot_peak"}.get(row["dtype"])
    peak = value(limits, dot_peak) if dot_peak else fp32_peak(limits)
    if bw and peak:
        t_min = max(nbytes / (bw * 1e9), flops / (peak * 1e9))
        d["roofline_fraction"] = t_min / wall
    return d


def apply_roofline(rows: list[dict[str, Any]], limits: dict[str, Limit]) -> None:
    """Fills in rates and roofline fractions once the run's limits are final."""
    for row in rows:
        for o in row["results"].values():
            if o["status"] == "ok":
                o.update(roofline(row, o["wall_s"]["median"], limits))


def run_case(
    case: OpCase,
    contenders: list[Contender],
    avail: dict[str, str | None],
    warmup: int,
    reps: int,
    min_time_s: float,
    max_reps: int,
) -> dict[str, Outcome]:
    gen = torch.Generator().manual_seed(1234)
    inputs = case.make(gen)
    runners: dict[str, OpRunner] = {}
    out: dict[str, Outcome] = {}
    for c in contenders:
        if avail.get(c.name):
            out[c.name] = na(avail[c.name] or "")
            continue
        try:
            runners[c.name] = OpRunner(case, c, inputs)
        except Exception as e:
            out[c.name] = na(f"setup failed: {type(e).__name__}: {str(e).splitlines()[0][:150]}")
    check = make_checker(case, CPU_EAGER.name)
    out.update(interleave(runners, warmup, reps, check, False, min_time_s, max_reps))  # type: ignore[arg-type]
    return {c.name: out[c.name] for c in contenders}


def run_ops(
    cases: list[OpCase],
    contenders: list[Contender],
    avail: dict[str, str | None],
    warmup: int,
    reps: int,
    min_time_s: float = 0.0,
    max_reps: int = 50,
    log: Callable[[str], None] = lambda m: print(m, file=sys.stderr, flush=True),
) -> list[dict[str, object]]:
    rows = []
    for case in cases:
        log(f"  op {case.key}")
        res = run_case(case, contenders, avail, warmup, reps, min_time_s, max_reps)
        rows.append(
            {
                "group": case.group,
                "name": case.name,
                "shape": case.shape,
                "dtype": str(case.dtype).removeprefix("torch."),
                "flops": case.flops,
                "bytes": case.bytes,
                "ops_per_call": case.ops_per_call,
                "results": {k: v.to_json() for k, v in res.items()},
            }
        )
    return rows
