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


def rotations(names: Sequence[str], round_index: int) -> list[str]:
    """The order in which contenders run in one round: rotated every round, so no contender always
    runs first (cold caches, turbo state) or always runs right after the same neighbour."""
    if not names:
        return []
    k = round_index % len(names)
    return list(names[k:]) + list(names[:k])
