"""The timing loop shared by op and model benchmarks: warm-up, a result check, then interleaved
repeated runs measured in wall time and in process CPU time."""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from bench.checks import Check
from bench.contenders import first_line
from bench.stats import Summary, round_order, summarize

OK, NA, WRONG = "ok", "n/a", "wrong"


class Runner(Protocol):
    def enter(self) -> None:
        """Untimed, before each call (selects the eager mode)."""

    def run(self, i: int) -> None:
        """Timed: one call on input i; returns only once the work is synchronized."""

    def value(self) -> object:
        """Untimed, after a call: the result to check against the reference."""


@dataclass
class Outcome:
    status: str  # OK, NA or WRONG
    reason: str = ""
    wall: Summary | None = None  # seconds per call
    cpu: Summary | None = None  # process CPU seconds per call (all threads)
    first_s: float | None = None  # the first call, including any compile
    check: str = ""
    extra: dict[str, object] = field(default_factory=dict)
    # What the runner's probe saw change over each call, warm-up calls first (not in the JSON).
    probed: list[dict[str, float]] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        d: dict[str, object] = {"status": self.status}
        if self.reason:
            d["reason"] = self.reason
        if self.wall is not None:
            d["wall_s"] = self.wall.to_json()
        if self.cpu is not None:
            d["cpu_s"] = self.cpu.to_json()
        if self.first_s is not None:
            d["first_s"] = self.first_s
        if self.check:
            d["check"] = self.check
        d.update(self.extra)
        return d


def na(reason: str) -> Outcome:
    return Outcome(NA, reason)


Checker = Callable[[dict[str, list[object]], bool], dict[str, Check]]
# Reads counters (e.g. the compile cache's); called untimed right before and right after a call.
Probe = Callable[[], dict[str, float]]


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """What changed between two probe readings (a key absent from one reading counts 0 there)."""
    return {k: after.get(k, 0.0) - before.get(k, 0.0) for k in before.keys() | after.keys()}


def rounds_for(warm_times: list[float], reps: int, min_time_s: float, max_reps: int) -> int:
    """Timed rounds: at least `reps`, more for fast calls so the slowest contender still runs for
    about `min_time_s` (one scheduler hiccup on a shared 2-core machine costs milliseconds)."""
    slowest = max(warm_times, default=0.0)
    if slowest <= 0:
        return reps
    return max(reps, min(max_reps, math.ceil(min_time_s / slowest)))


# The most the harness waits for the process's other threads to go quiet before a call.
SETTLE_LIMIT_S = 0.05


def running_threads() -> int:
    """The process's threads, other than this one, that are running or runnable now (Linux's
    /proc; 0 where it is missing)."""
    me = threading.get_native_id()
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return 0
    n = 0
    for tid in tids:
        if int(tid) == me:
            continue
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:  # the thread exited meanwhile
            continue
        n += stat[stat.rindex(")") + 2] == "R"
    return n


def settle(limit_s: float = SETTLE_LIMIT_S) -> float:
    """Waits, busy on this thread, until no other thread of the process runs (or `limit_s` has
    passed) and returns the seconds waited. PyTorch's OpenMP workers spin for milliseconds after
    each CPU op: untreated, they hold a core through the next contender's call. The wait is busy so
    that no core goes idle (a core waking from idle runs slower at first)."""
    start = time.perf_counter()
    while running_threads() and time.perf_counter() - start < limit_s:
        pause = time.perf_counter()
        while time.perf_counter() - pause < 1e-4:
            pass
    return time.perf_counter() - start


def interleave(
    runners: dict[str, Runner],
    warmup: int,
    reps: int,
    check: Checker,
    keep_values: bool = True,
    min_time_s: float = 0.0,
    max_reps: int = 50,
    probes: Mapping[str, Probe] | None = None,
) -> dict[str, Outcome]:
    """Run every runner `warmup` times, check, then timed rounds in a balanced order (round_order):
    `reps` of them, or more (up to `max_reps`) when calls are fast and `min_time_s` asks for it.
    Every call starts once the process's other threads are quiet (settle).

    `check(values, final)` compares each runner's values with the reference's; it is called after
    the warm-up (a failure means the runner is never timed) and after the timed rounds. With
    keep_values False only each runner's latest value is kept (large op outputs). A runner with a
    probe gets the difference of its readings around every call, after enter() and before value(),
    outside the timed region, in Outcome.probed."""
    if warmup < 1 or reps < 1:
        raise ValueError("need at least one warm-up call and one timed call")
    out: dict[str, Outcome] = {}
    values: dict[str, list[object]] = {n: [] for n in runners}
    walls: dict[str, list[float]] = {n: [] for n in runners}
    cpus: dict[str, list[float]] = {n: [] for n in runners}
    first: dict[str, float] = {}
    last_warm: dict[str, float] = {}
    probed: dict[str, list[dict[str, float]]] = {n: [] for n in runners}
    active = list(runners)

    def one(name: str, i: int, timed: bool) -> None:
        r = runners[name]
        probe = probes.get(name) if probes else None
        try:
            r.enter()
            before = probe() if probe else {}
            settle()
            c0, w0 = time.process_time(), time.perf_counter()
            r.run(i)
            w1, c1 = time.perf_counter(), time.process_time()
            if probe:
                probed[name].append(delta(before, probe()))
            v = r.value()
        except Exception as e:  # any failure of a contender is its n/a, not the harness's crash
            out[name] = na(f"{type(e).__name__}: {first_line(e)}")
            active.remove(name)
            return
        values[name] = [*values[name], v] if keep_values else [v]
        if name not in first:
            first[name] = w1 - w0
        last_warm[name] = w1 - w0
        if timed:
            walls[name].append(w1 - w0)
            cpus[name].append(c1 - c0)

    def apply_checks(final: bool) -> dict[str, Check]:
        results = check({n: values[n] for n in active}, final) if active else {}
        for name in list(active):
            c = results.get(name)
            if c is not None and not c.ok:
                out[name] = Outcome(WRONG, f"result differs from reference: {c.detail}")
                active.remove(name)
        return results

    for rnd in range(warmup):
        for name in round_order(list(active), rnd):
            one(name, rnd, timed=False)
    apply_checks(final=False)
    total = rounds_for([last_warm[n] for n in active], reps, min_time_s, max_reps)
    for rnd in range(total):
        for name in round_order(list(active), rnd):
            if name in active:
                one(name, warmup + rnd, timed=True)
    results = apply_checks(final=True)
    for name in active:
        out[name] = Outcome(
            OK,
            wall=summarize(walls[name]),
            cpu=summarize(cpus[name]),
            first_s=first.get(name),
            check=results[name].detail if name in results else "",
            probed=probed[name],
        )
    return {n: out[n] for n in runners}
