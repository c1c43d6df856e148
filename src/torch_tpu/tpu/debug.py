"""Debug mode's extra checks: a per-op NaN/Inf check and an op trace.

Both apply in debug mode only (``torch.tpu.set_eager_mode("debug")``), where every op runs
synchronously on the calling thread, so a failed check raises at the op, on its Python line. In
strict and fused mode they do nothing (the first op says so once, as a warning).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

import torch

from .. import _C


def set_debug_nan_check(enabled: bool) -> None:
    """Turns the NaN/Inf check on or off for the process (initially ``TORCH_TPU_CHECK_NAN``).

    With it on, in debug mode every floating-point or complex output of every op is scanned; the
    first op that makes a NaN or an infinity from finite inputs raises ``RuntimeError`` naming the
    op, the output, its shape and the first bad element, like ``torch.autograd.detect_anomaly``.
    An op whose device inputs already held a NaN or infinity only passes it on and is not blamed;
    values from the host (CPU tensors copied in, Python scalars such as ``-inf``) count as new.
    """
    _C._set_nan_check(bool(enabled))


def get_debug_nan_check() -> bool:
    """Whether the NaN/Inf check is on (it runs in debug mode only)."""
    return _C._nan_check()


@contextmanager
def debug_nan_check(enabled: bool = True) -> Iterator[None]:
    """Turns the NaN/Inf check on (or off) for the block, process-wide; restores it on exit."""
    old = get_debug_nan_check()
    set_debug_nan_check(enabled)
    try:
        yield
    finally:
        set_debug_nan_check(old)


def set_debug_op_trace(enabled: bool) -> None:
    """Turns printing of the op trace on or off for the process (initially ``TORCH_TPU_OP_TRACE``):
    in debug mode each op then prints one line to stderr, e.g. ``tpu_op_trace op=add
    in=float32[2,3],float32[]@cpu out=float32[2,3] us=1.5 status=ok`` (``@cpu``: host memory)."""
    _C._set_op_trace(bool(enabled))


def get_debug_op_trace() -> bool:
    """Whether the op trace is printed (in debug mode only)."""
    return _C._op_trace()


class TensorInfo(NamedTuple):
    """A tensor an op read or wrote: dtype, shape and whether it was host memory."""

    dtype: torch.dtype
    shape: tuple[int, ...]
    host: bool


class OpTraceEntry(NamedTuple):
    """One op of the trace: its core op name, its tensors, the kernel's time, whether it succeeded,
    and the line the trace prints for it."""

    op: str
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    time_us: float
    ok: bool
    line: str


def _tensor_infos(raw: list[tuple[str, list[int], bool]]) -> list[TensorInfo]:
    return [TensorInfo(getattr(torch, dtype), tuple(shape), host) for dtype, shape, host in raw]


@contextmanager
def debug_op_trace() -> Iterator[list[OpTraceEntry]]:
    """Collects the ops run in debug mode during the block into the list it yields (filled on
    exit). Process-wide: ops of every thread are collected (autograd's too); nestable."""
    entries: list[OpTraceEntry] = []
    mark = _C._begin_op_trace()
    try:
        yield entries
    finally:
        for op, inputs, outputs, us, ok, line in _C._end_op_trace(mark):
            entries.append(
                OpTraceEntry(op, _tensor_infos(inputs), _tensor_infos(outputs), us, ok, line)
            )
