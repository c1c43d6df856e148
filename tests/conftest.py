"""Shared fixtures: every device test can run in each eager mode."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

# bench/ holds the project's fixed model definitions.
sys.path.append(str(Path(__file__).resolve().parent.parent))

EAGER_MODES = ["strict", "debug", "fused"]


@pytest.fixture(params=EAGER_MODES)
def eager_mode(request: pytest.FixtureRequest) -> Iterator[str]:
    """Runs the test in one eager mode, then restores the default (strict)."""
    torch.tpu.set_eager_mode(request.param)
    try:
        yield request.param
    finally:
        torch.tpu.synchronize()
        torch.tpu.set_eager_mode("strict")
