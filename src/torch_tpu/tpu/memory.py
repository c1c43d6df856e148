"""Memory statistics and cache control, with ``torch.cuda``'s names and key names."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import torch

from .. import _C
from .._utils import resolve_device


def memory_stats(device: Any = None) -> OrderedDict[str, Any]:
    """The caching allocator's statistics, keyed as ``torch.cuda.memory_stats`` keys them."""
    return torch.accelerator.memory_stats(resolve_device(device))


def memory_allocated(device: Any = None) -> int:
    """Bytes occupied by tensors on the device now."""
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device: Any = None) -> int:
    """Peak bytes occupied by tensors since start or the last peak reset."""
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device: Any = None) -> int:
    """Bytes the caching allocator holds, cached blocks included."""
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device: Any = None) -> int:
    """Peak bytes held by the caching allocator."""
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def reset_peak_memory_stats(device: Any = None) -> None:
    """Resets the peaks to the current values."""
    torch.accelerator.reset_peak_memory_stats(resolve_device(device))


def reset_max_memory_allocated(device: Any = None) -> None:
    """Same as ``reset_peak_memory_stats`` (``torch.cuda`` keeps both names)."""
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device: Any = None) -> None:
    """Resets the allocated/freed totals and event counts."""
    torch.accelerator.reset_accumulated_memory_stats(resolve_device(device))


def empty_cache() -> None:
    """Returns every cached, unused block to the system (after the device's queued work ran)."""
    torch.accelerator.empty_cache()


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of a chip: total is its capacity, free what is not reserved."""
    return torch.accelerator.get_memory_info(resolve_device(device))


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A readable table of the device's memory use."""
    return _C._memory_summary(resolve_device(device))


def host_memory_stats() -> dict[str, int]:
    """Statistics of the pinned host memory allocator."""
    return _C._host_memory_stats()
