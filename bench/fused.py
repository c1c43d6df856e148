"""Fused mode's own figures: for every fused step, the compile cache's and the fused graphs'
counters read just before and just after it (outside the timed region), then summarized per model
step: compile latency, planning per step, graph cuts by reason, and the check that nothing
recompiles from the third step on.

The compile cache and the cut counters are process-global and other contenders run between the
fused steps, so nothing is reset: each step's figures are the difference of two readings."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from bench.checks import Check

Counters = dict[str, float]

CUT = "cut:"  # prefix of the per-reason cut counts in a flat Counters reading
CACHE_KEYS = ("hits", "misses", "compiles", "plan_us", "compile_us")
CHECK_FROM_STEP = 3  # 1-based: no compile in this step or any later one


def stats_reason() -> str | None:
    """Why fused mode's stats cannot be read here, or None when they can."""
    missing = [f for f in ("compile_cache_stats", "fused_stats") if not hasattr(torch.tpu, f)]
    return f"torch.tpu.{' and '.join(missing)} missing" if missing else None


def read() -> Counters:
    """One reading of the process-wide counters, flat: the compile cache's CACHE_KEYS, "nodes"
    (nodes in cut graphs) and "cut:<reason>" (graphs cut for that reason)."""
    cache = torch.tpu.compile_cache_stats()
    fused = torch.tpu.fused_stats()
    out: Counters = {k: float(cache[k]) for k in CACHE_KEYS}
    out["nodes"] = float(fused["nodes"])  # type: ignore[arg-type]
    flushes: dict[str, int] = fused["flushes"]  # type: ignore[assignment]
    out.update({CUT + reason: float(n) for reason, n in flushes.items()})
    return out


def recompile_check(misses: Sequence[float]) -> Check:
    """Compiles (cache misses) per step, warm-up steps first: none may happen from step
    CHECK_FROM_STEP on. Fewer steps than that cannot show it, which fails too."""
    first = CHECK_FROM_STEP - 1
    if len(misses) < CHECK_FROM_STEP:
        return Check(False, f"only {len(misses)} steps probed, need {CHECK_FROM_STEP} to check")
    late = [(i + 1, int(m)) for i, m in enumerate(misses) if i >= first and m]
    last = len(misses)
    if not late:
        return Check(True, f"no compile in steps {CHECK_FROM_STEP}–{last}")
    where = ", ".join(f"step {s}: {m}" for s, m in late)
    total = sum(m for _, m in late)
    return Check(False, f"{total} compiles in steps {CHECK_FROM_STEP}–{last} ({where})")


def _per_step(steps: Sequence[Counters], key: str) -> float:
    return sum(s.get(key, 0.0) for s in steps) / len(steps)


def summarize(steps: Sequence[Counters], warmup: int) -> dict[str, object]:
    """The JSON summary of one contender's fused steps (warm-up steps first, then the timed ones):
    the first step's planning and compiles, per-timed-step averages, and the recompile check."""
    if len(steps) <= warmup:
        raise ValueError(f"{len(steps)} steps probed, none after {warmup} warm-up steps")
    timed = steps[warmup:]
    planning = [s.get("plan_us", 0.0) + s.get("compile_us", 0.0) for s in steps]
    misses = [s.get("misses", 0.0) for s in steps]
    cut_keys = {k for s in timed for k in s if k.startswith(CUT)}
    reasons = sorted(r for r in cut_keys if _per_step(timed, r))
    check = recompile_check(misses)
    return {
        "steps": len(steps),
        "timed_steps": len(timed),
        "first_step_plan_us": planning[0],
        "plan_us_per_step": sum(planning[warmup:]) / len(timed),
        "misses_per_step": [int(m) for m in misses],
        "hits_per_step": _per_step(timed, "hits"),
        "graphs_per_step": sum(_per_step(timed, r) for r in reasons),
        "nodes_per_step": _per_step(timed, "nodes"),
        "cuts_per_step": {r.removeprefix(CUT): _per_step(timed, r) for r in reasons},
        "recompile_check": {"ok": check.ok, "detail": check.detail},
    }
