"""Summaries of repeated measurements: the median with its min-max spread."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Summary:
    median: float
    min: float
    max: float
    n: int

    def to_json(self) -> dict[str, float | int]:
        return {"median": self.median, "min": self.min, "max": self.max, "n": self.n}

    @staticmethod
    def from_json(d: dict[str, float]) -> Summary:
        return Summary(float(d["median"]), float(d["min"]), float(d["max"]), int(d["n"]))


def summarize(values: Sequence[float]) -> Summary:
    if not values:
        raise ValueError("summarize() needs at least one value")
    return Summary(statistics.median(values), min(values), max(values), len(values))


def ratio(baseline: float, contender: float) -> float:
    """Speed ratio: how many times faster the contender is than the baseline (>1 is faster)."""
    if baseline <= 0 or contender <= 0:
        raise ValueError(f"times must be positive, got {baseline} and {contender}")
    return baseline / contender


def round_order(names: Sequence[str], round_index: int) -> list[str]:
    """The order in which contenders run in one round. Over n rounds (2n when n is odd) every
    contender runs first once and right after every other contender equally often (a Williams
    design): a contender's leftovers, such as PyTorch's OpenMP threads spinning for milliseconds
    after a CPU op, then slow each neighbour in as many rounds, never one neighbour in all. A plain
    rotation keeps the cyclic neighbours and does not."""
    n = len(names)
    base = [0]
    lo, hi = 1, n - 1
    while len(base) < n:
        base.append(lo)
        lo += 1
        if len(base) < n:
            base.append(hi)
            hi -= 1
    order = [(b + round_index) % n for b in base] if n else []
    if n % 2 and (round_index // n) % 2:
        order.reverse()
    return [names[i] for i in order]
