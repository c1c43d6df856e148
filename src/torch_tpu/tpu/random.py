"""Random number generation: one Philox generator per chip, seeded like ``torch.cuda``'s."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from .. import _C
from .._utils import resolve_device


def _generator(device: Any = None) -> torch.Generator:
    return _C._get_default_generator(resolve_device(device))


def get_rng_state(device: Any = "tpu") -> torch.Tensor:
    """The generator state of a chip: 16 bytes, seed then offset, as on CUDA."""
    return _generator(device).get_state()


def get_rng_state_all() -> list[torch.Tensor]:
    """The generator states of all chips."""
    return [get_rng_state(i) for i in range(torch.tpu.device_count())]


def set_rng_state(new_state: torch.Tensor, device: Any = "tpu") -> None:
    """Restores a state from ``get_rng_state``."""
    _generator(device).set_state(new_state.clone(memory_format=torch.contiguous_format))


def set_rng_state_all(new_states: Iterable[torch.Tensor]) -> None:
    """Restores the states of all chips."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def manual_seed(seed: int) -> None:
    """Seeds the current chip's generator."""
    _generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seeds every chip's generator."""
    for i in range(torch.tpu.device_count()):
        _generator(i).manual_seed(int(seed))


def seed() -> None:
    """Seeds the current chip's generator with a random number."""
    _generator().seed()


def seed_all() -> None:
    """Seeds every chip's generator with one random number."""
    random_seed = _generator().seed()
    for i in range(torch.tpu.device_count()):
        _generator(i).manual_seed(random_seed)


def initial_seed() -> int:
    """The current chip's seed."""
    return _generator().initial_seed()
