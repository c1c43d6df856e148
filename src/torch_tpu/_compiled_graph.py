"""A compiled ATen graph in the form AOTAutograd's cache stores (imported by the torch.compile
backend only, as it imports Dynamo)."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torch._dynamo.backends.debugging import AOTEagerOutputCode

from . import _C
from .compile import replay_counts


@dataclasses.dataclass
class CompiledGraph(AOTEagerOutputCode):
    """Runs its graph module, in AOTAutograd's boxed calling convention, as one fused graph
    (``_C._CompiledRegion``) on chip ``device_index`` (None: the current chip). Serializable, so
    AOTAutograd's bundled cache keeps it on disk and a later process loads it instead of tracing
    the forward and backward graphs again.

    The first call on a chip also captures the op calls the graph launches; later calls whose
    inputs are laid out alike replay them (``_C._CompiledReplay``) without running the graph's
    Python code. ``replayable`` is False for a graph with a call the capture cannot see through
    (anything but ATen and prims ops)."""

    device_index: int | None = None
    replayable: bool = False

    def __post_init__(self) -> None:
        self._boxed_call = True  # OutputCode's field: AOTAutograd then passes the list itself
        self._replay: Any = None
        self._captured = False

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_replay", None)
        state.pop("_captured", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__post_init__()

    def __call__(self, inputs: list[Any]) -> Any:
        if self.gm is None:
            raise RuntimeError("a compiled tpu graph was called before it was loaded")
        if self._replay is not None:
            out = self._replay.run(inputs)
            if out is not None:
                replay_counts["replayed"] += 1
                return out
        index = torch.tpu.current_device() if self.device_index is None else self.device_index
        capture = self.replayable and self.device_index is not None and not self._captured
        region = _C._CompiledRegion(index, inputs if capture else None)
        with region:
            out = self.gm.forward(inputs)
        replay_counts["recorded"] += 1
        if capture:
            self._captured = True
            self._replay = region.replay(out)
            if self._replay is None:
                replay_counts[f"refused: {region.why}"] += 1
            else:
                replay_counts["captured"] += 1
        return out
