"""Reports from the core: which ops ran natively, which fell back to the CPU, and env vars."""

from __future__ import annotations

from typing import NamedTuple

from .. import _C


def op_stats() -> dict[str, dict[str, int]]:
    """Calls per op since start or the last reset: native, fallback and driver fallback counts.

    ``{"native": {...}, "fallback": {...}, "driver_fallback": {...}}``. Native counts are keyed by
    the core's op (e.g. ``copy``); fallback counts by the ATen operator that ran on the CPU because
    torch-tpu has no kernel for it (e.g. ``aten::add.Tensor``); driver fallback counts by the core's
    op that the selected driver cannot run (the PJRT driver lacks a lowering for it), which the
    core then ran on the host driver's kernels; those calls count as native too.
    """
    return _C._op_stats()


def fallback_stats() -> dict[str, int]:
    """Calls per ATen operator that ran through the CPU fallback."""
    return _C._op_stats()["fallback"]


def reset_op_stats() -> None:
    """Zeroes the native and fallback counters."""
    _C._reset_op_stats()


class EnvVar(NamedTuple):
    name: str
    default: str
    meaning: str
    stage: str


def env_vars() -> list[EnvVar]:
    """Every environment variable torch_tpu reads, with its default, meaning and stability."""
    return [EnvVar(*entry) for entry in _C._env_vars()]
