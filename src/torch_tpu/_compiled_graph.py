"""A compiled ATen graph in the form AOTAutograd's cache stores (imported by the torch.compile
backend only, as it imports Dynamo)."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torch._dynamo.backends.debugging import AOTEagerOutputCode

from . import _C


@dataclasses.dataclass
class CompiledGraph(AOTEagerOutputCode):
    """Runs its graph module, in AOTAutograd's boxed calling convention, as one fused graph
    (``_C._CompiledRegion``) on chip ``device_index`` (None: the current chip). Serializable, so
    AOTAutograd's bundled cache keeps it on disk and a later process loads it instead of tracing
    the forward and backward graphs again."""

    device_index: int | None = None

    def __post_init__(self) -> None:
        self._boxed_call = True  # OutputCode's field: AOTAutograd then passes the list itself

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._boxed_call = True

    def __call__(self, inputs: list[Any]) -> Any:
        if self.gm is None:
            raise RuntimeError("a compiled tpu graph was called before it was loaded")
        index = torch.tpu.current_device() if self.device_index is None else self.device_index
        with _C._CompiledRegion(index):
            return self.gm.forward(inputs)
