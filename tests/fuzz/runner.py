"""The fuzz loop in one process: draw program after program, run each in every eager mode asked
for, group failures by signature, shrink the first program of each new group to a reproducer.

tests/test_fuzz.py calls `fuzz` directly; `python -m tests.fuzz` runs it in worker processes
(worker.py), so a crash or a hang of one program does not end the run.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .check import STATS, Failure, check
from .generate import generate
from .known import classify
from .program import Program, Run, tpu
from .report import format_groups
from .shrink import reproducer, shrink

MODES = ("debug", "strict", "fused")


@dataclass
class Group:
    """The failures that share a signature."""

    signature: str
    status: str  # new, open or allowed
    known: str | None
    failure: Failure
    program: Program
    index: int
    count: int = 0
    modes: set[str] = field(default_factory=set)
    reproducer: str | None = None

    def to_json(self) -> dict[str, Any]:
        f = self.failure
        return {
            "signature": self.signature,
            "status": self.status,
            "known": self.known,
            "kind": f.kind,
            "op": f.op,
            "mode": f.mode,
            "detail": f.detail,
            "index": self.index,
            "count": self.count,
            "modes": sorted(self.modes),
            "reproducer": self.reproducer,
        }


@dataclass
class Report:
    seed: int
    modes: tuple[str, ...]
    programs: int = 0
    steps: int = 0
    cpu_errors: int = 0
    gen_seconds: float = 0.0
    mode_seconds: dict[str, float] = field(default_factory=dict)
    shrink_seconds: float = 0.0
    groups: dict[str, Group] = field(default_factory=dict)
    shrunk: set[str] = field(default_factory=set)  # known ids with a reproducer already
    shrink_budget: int = -1  # how many more groups to shrink (-1: no limit)
    open_reproducers: bool = True  # a reproducer for the first group of each open issue
    started: float = field(default_factory=time.monotonic)

    def new(self) -> list[Group]:
        return [g for g in self.groups.values() if g.status == "new"]

    def rates(self) -> dict[str, float]:
        """Programs per second of each mode (its tpu runs and comparisons, plus its share of
        drawing and CPU runs), and of the whole loop."""
        out: dict[str, float] = {}
        share = self.gen_seconds / max(1, len(self.modes))
        for m in self.modes:
            out[m] = self.programs / max(1e-9, self.mode_seconds.get(m, 0.0) + share)
        total = self.gen_seconds + sum(self.mode_seconds.values())
        out["all modes"] = self.programs / max(1e-9, total)
        return out


def fuzz(
    seed: int,
    modes: Sequence[str] = MODES,
    *,
    programs: int | None = None,
    seconds: float | None = None,
    start: int = 0,
    stride: int = 1,
    shrink_new: bool = True,
    shrink_seconds: float = 20.0,
    shrink_known: bool = False,
    max_shrinks: int = -1,
    open_reproducers: bool = True,
    on_group: Callable[[Group], None] | None = None,
    on_run: Callable[[int, str], None] | None = None,
    on_hit: Callable[[Group, Failure], None] | None = None,
    on_progress: Callable[[Report], None] | None = None,
) -> Report:
    """Runs programs start, start+stride, ... of `seed` in each of `modes` until `programs`
    have run or `seconds` have passed."""
    rep = Report(seed, tuple(modes))
    rep.shrink_budget = max_shrinks
    rep.open_reproducers = open_reproducers
    deadline = None if seconds is None else time.monotonic() + seconds
    index = start
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while True:
            if programs is not None and rep.programs >= programs:
                break
            if deadline is not None and time.monotonic() >= deadline:
                break
            if on_run is not None:
                on_run(index, "cpu")
            t0 = time.perf_counter()
            prog, g = generate(seed, index)
            cpu = Run(g.values, g.bases, g.error)
            rep.gen_seconds += time.perf_counter() - t0
            rep.programs += 1
            rep.steps += len(prog.steps)
            rep.cpu_errors += g.error is not None
            for mode in modes:
                if on_run is not None:
                    on_run(index, mode)
                t1 = time.perf_counter()
                try:
                    f = check(prog, cpu, mode)
                except Exception as e:  # a bug of the fuzzer itself, or an odd tpu failure
                    f = Failure("fuzzer-error", mode, 0, "?", "?", "?", f"{type(e).__name__}: {e}")
                _settle()
                rep.mode_seconds[mode] = rep.mode_seconds.get(mode, 0.0) + (
                    time.perf_counter() - t1
                )
                if f is not None:
                    _record(
                        rep,
                        f,
                        prog,
                        index,
                        (shrink_new, shrink_known),
                        shrink_seconds,
                        on_group,
                        on_hit,
                    )
            index += stride
            if on_progress is not None and rep.programs % 1000 == 0:
                on_progress(rep)
    return rep


def _settle() -> None:
    """Leaves the device usable for the next program: a pending error is consumed."""
    try:
        tpu.synchronize()
    except Exception:
        pass


def _record(
    rep: Report,
    f: Failure,
    prog: Program,
    index: int,
    shrinks: tuple[bool, bool],
    shrink_seconds: float,
    on_group: Callable[[Group], None] | None,
    on_hit: Callable[[Group, Failure], None] | None,
) -> None:
    sig = f.signature
    grp = rep.groups.get(sig)
    if grp is None:
        status, known = classify(f)
        grp = Group(sig, status, known.id if known else None, f, prog, index)
        rep.groups[sig] = grp
        first_known = (
            rep.open_reproducers
            and status == "open"
            and known is not None
            and known.id not in rep.shrunk
        )
        if status == "new" or first_known or shrinks[1]:
            if known is not None:
                rep.shrunk.add(known.id)
            t0 = time.perf_counter()
            small, sf = prog, f
            if (shrinks[0] or shrinks[1]) and rep.shrink_budget != 0:
                rep.shrink_budget -= 1
                try:
                    small, sf = shrink(prog, f, seconds=shrink_seconds)
                except Exception:
                    small, sf = prog, f
            try:
                grp.reproducer = reproducer(small, sf)
            except Exception as e:
                grp.reproducer = f"# could not render the reproducer: {e!r}"
            grp.failure = sf
            rep.shrink_seconds += time.perf_counter() - t0
            _settle()
        if on_group is not None:
            on_group(grp)
    grp.count += 1
    grp.modes.add(f.mode)
    if on_hit is not None:
        on_hit(grp, f)


def summary(rep: Report, *, reproducers: bool = True, allowed: bool = False) -> str:
    """A human-readable report: rates, then the failure groups (format_groups)."""
    lines = [
        f"seed {rep.seed}: {rep.programs} programs ({rep.steps} ops, {rep.cpu_errors} ending in a "
        f"CPU error) in each of {', '.join(rep.modes)}",
        f"drawing + CPU {rep.gen_seconds:.1f}s, "
        + ", ".join(f"{m} {s:.1f}s" for m, s in rep.mode_seconds.items())
        + f", shrinking {rep.shrink_seconds:.1f}s; local oracle {STATS['oracle']} runs, "
        f"{STATS['noise']} rounding-only",
        "programs/s: " + ", ".join(f"{m} {r:.0f}" for m, r in rep.rates().items()),
    ]
    groups = [g.to_json() for g in rep.groups.values()]
    lines += format_groups(groups, open_reproducers=reproducers, new_reproducers=reproducers)
    if allowed and reproducers:
        for g in rep.groups.values():
            if g.status == "allowed" and g.reproducer:
                lines += ["", f"allowed ({g.known}): {g.signature}", g.reproducer]
    return "\n".join(lines)
