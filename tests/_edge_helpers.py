"""Helpers of the tests of issue 38's classes (test_math_bits, test_fallback_mirror,
test_arg_checks): seeded samples and calls that silence debug mode's fallback warnings."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TypeVar

import torch

T = TypeVar("T")


def sample(*shape: int, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Standard normal values (complex ones for a complex dtype), the same on every run."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=dtype)


def quiet(fn: Callable[[], T]) -> T:
    """fn(), without the warning debug mode gives for each op that falls back to the CPU."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()
