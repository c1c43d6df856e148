"""Small helpers shared by the torch.tpu modules."""

from __future__ import annotations

from typing import Any

import torch


def device_index(device: Any, optional: bool = False, default: int | None = None) -> int:
    """Index of a tpu device given as an int, string or torch.device; -1 or ``default`` if None."""
    if device is None:
        if default is not None:
            return default
        if optional:
            return -1
        raise ValueError("Expected a tpu device, but got None")
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = torch.device(device)
    if not isinstance(device, torch.device):
        raise TypeError(f"Expected a torch.device, str or int, but got {type(device).__name__}")
    if device.type != "tpu":
        raise ValueError(f"Expected a tpu device, but got: {device}")
    if device.index is None:
        if default is not None:
            return default
        return -1 if optional else torch.tpu.current_device()
    return device.index


def resolve_device(device: Any = None) -> int:
    """Index of ``device``, the current device when it is None or has no index."""
    index = device_index(device, optional=True)
    return index if index >= 0 else torch.tpu.current_device()
