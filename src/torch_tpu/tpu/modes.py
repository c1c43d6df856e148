"""Eager execution modes. ``strict`` (the default) queues each op on the chip's stream and returns
at once, like CUDA; ``debug`` runs each op synchronously, so errors surface at the op.
``fused`` (DeferAndFuse) is not built yet."""

from __future__ import annotations

from .. import _C

_MODES = ("debug", "strict", "fused")


def set_eager_mode(mode: str) -> None:
    """Selects the eager mode for the process."""
    if mode not in _MODES:
        raise ValueError(f"eager mode must be one of {_MODES}, got {mode!r}")
    if mode == "fused":
        raise NotImplementedError("the fused (DeferAndFuse) eager mode is not implemented yet")
    _C._set_launch_blocking(mode == "debug")


def get_eager_mode() -> str:
    """The current eager mode."""
    return "debug" if _C._launch_blocking() else "strict"
