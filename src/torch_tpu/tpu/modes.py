"""Eager execution modes. ``strict`` (the default) queues each op on the chip's stream and returns
at once, like CUDA; ``debug`` runs each op synchronously, so errors surface at the op; ``fused``
(DeferAndFuse) records ops in a graph per stream, which is fused, compiled once (cached) and run at
a materialization trigger, so intermediates whose tensors die are never given memory."""

from __future__ import annotations

import enum
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from .. import _C

_MODES = ("debug", "strict", "fused")


class EagerMode(str, enum.Enum):
    """Google TorchTPU's names for the eager modes; each member equals our name of its mode, so
    code written for TorchTPU (``set_eager_mode(EagerMode.DEFER_AND_FUSE)``) runs unchanged."""

    DEFER_NEVER_AND_LAUNCH_BLOCKING = "debug"
    DEFER_NEVER = "strict"
    DEFER_AND_FUSE = "fused"


def _check(mode: str) -> str:
    """Our name of `mode`: one of ours, an EagerMode member or a member's name."""
    if isinstance(mode, EagerMode):
        return mode.value
    if isinstance(mode, str) and mode in EagerMode.__members__:
        return EagerMode[mode].value
    if mode not in _MODES:
        names = _MODES + tuple(EagerMode.__members__)
        raise ValueError(f"eager mode must be one of {names}, got {mode!r}")
    return mode


def set_eager_mode(mode: str) -> None:
    """Selects the eager mode for the process (threads without an ``eager_mode`` override, and
    streams without their own mode). Cuts every open fused graph first. ``mode`` is ours
    (``"debug"``, ``"strict"``, ``"fused"``) or TorchTPU's (an ``EagerMode`` member or name)."""
    _C._set_eager_mode(_check(mode))


def get_eager_mode() -> str:
    """The calling thread's eager mode: its ``eager_mode`` override, else the process's."""
    return _C._get_eager_mode()


@contextmanager
def eager_mode(mode: str) -> Iterator[None]:
    """Runs the block in `mode` on the calling thread and on its current stream, so autograd's
    device thread runs backward in the same mode; nestable, restores both on exit. Other threads
    keep their own mode (in debug mode only this thread's launches, and backward's, block)."""
    mode = _check(mode)
    device = torch.tpu.current_device()
    stream_id = _C._current_stream(device)[0]
    old_thread = _C._thread_eager_mode()
    old_stream = _C._stream_eager_mode(stream_id, device)
    _C._set_thread_eager_mode(mode)
    _C._set_stream_eager_mode(stream_id, device, mode)
    try:
        yield
    finally:
        _C._set_thread_eager_mode(old_thread)
        _C._set_stream_eager_mode(stream_id, device, old_stream)


def is_materialized(tensor: torch.Tensor) -> bool:
    """True once the tensor's storage has memory (in fused mode a deferred result has none until a
    trigger runs its graph, and never gets any when it dies first)."""
    return _C._is_materialized(tensor)


def dump_pending_graph(dot: bool = False) -> str:
    """The current stream's open fused graph as text (one line per node) or Graphviz dot."""
    return _C._dump_pending_graph(torch.tpu.current_device(), dot)


def fused_stats() -> dict[str, object]:
    """Fused-mode cuts since start or reset: ``{"flushes": {reason: n}, "nodes": n}`` (nodes in
    the cut graphs). Reasons: sync, host_read, materialize, event, query, wait_stream, fallback,
    undeferrable, graph_cap, mode_switch, backward_start, backward, compiled (a torch.compile
    graph's start and end). ``recomputed`` and
    ``recomputed_bytes``: forward results that backward read again and that were computed again
    instead of kept (README, Fused mode). Also what the cut graphs ran so far (read after a
    synchronize): ``steps`` (kernels and fused steps), ``fused_steps`` and ``fused_nodes`` (the
    nodes those fused steps covered), ``gemm_epilogues`` (fused steps that were a GEMM with its
    epilogue)."""
    return _C._fused_stats()


def reset_fused_stats() -> None:
    """Zeroes the fused-mode cut and step counts."""
    _C._reset_fused_stats()


def compile_cache_stats() -> dict[str, int]:
    """The shared compile cache: hits, misses, compiles, evictions, entries, capacity, and
    plan_us / compile_us (microseconds spent looking graphs up and planning misses).

    Misses by reason: first_compiles (a graph whose skeleton, its ops and how they connect, the
    cache did not hold) and recompiles_shape, recompiles_dtype, recompiles_layout,
    recompiles_attribute, recompiles_placement (the first difference from the most recently used
    graph with the same skeleton: a tensor's sizes, a dtype, strides or offset, an attribute
    scalar, a buffer between host and device). TORCH_TPU_LOG=recompiles prints each recompile.

    On a compiling driver (PJRT) also its executables since start or reset: executables_compiled,
    executables_loaded (from the disk cache, TORCH_TPU_CACHE_DIR), executables_stored (written
    there), executable_compile_us / executable_load_us (microseconds those took), and
    executable_runs / executable_run_us (runs, and the time the devices were busy with them:
    the union of their launch-to-completion intervals, for runs completed by the last
    synchronization),
    modules_lowered (runs lowered to a StableHLO module: a structure's first run, plus each run
    lowered again below), modules_reused (runs that found their compiled module by structure and
    bound only buffers and scalars), modules_unkeyed (runs lowered every time because their
    structure alone could not be trusted to name the module) and device_copies (storages copied
    from one chip to another on the device, for copies between chips)."""
    return _C._compile_cache_stats()


def reset_compile_cache_stats() -> None:
    """Zeroes the compile cache's counters and times (entries stay)."""
    _C._reset_compile_cache_stats()
