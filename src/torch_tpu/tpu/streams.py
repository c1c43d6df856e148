"""Streams and events: in-order queues on a chip, served by a worker thread, as CUDA streams."""

from __future__ import annotations

from typing import Any

import torch

from .. import _C
from .._utils import resolve_device


class Stream(torch.Stream):
    """An in-order queue of device work (``torch.cuda.Stream``)."""

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs: Any) -> Stream:
        if {"stream_id", "device_index", "device_type"} & kwargs.keys():
            return super().__new__(cls, **kwargs)
        index = resolve_device(device)
        return super().__new__(cls, device=torch.device("tpu", index), priority=priority)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def wait_event(self, event: torch.Event) -> None:
        """Makes future work on this stream wait for ``event``."""
        event.wait(self)

    def wait_stream(self, stream: torch.Stream) -> None:
        """Makes future work on this stream wait for the work queued on ``stream`` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event: torch.Event | None = None) -> torch.Event:
        """Records ``event`` (a new one if None) on this stream."""
        event = event if event is not None else torch.Event(device="tpu")
        event.record(self)
        return event


class _EventMeta(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, torch.Event) and obj.device.type == "tpu"


class Event(metaclass=_EventMeta):
    """A marker in a stream (``torch.cuda.Event``).

    It makes a plain ``torch.Event`` of the tpu device: PyTorch's ``elapsed_time`` accepts only that
    exact type, so a subclass could not be timed against another event.
    """

    def __new__(  # type: ignore[misc]
        cls,
        enable_timing: bool = False,
        blocking: bool = False,
        interprocess: bool = False,
    ) -> torch.Event:
        if interprocess:
            raise NotImplementedError("interprocess events are not supported on tpu")
        return torch.Event(device="tpu", enable_timing=enable_timing, blocking=blocking)


def _wrap(stream_id: int, device_index: int, device_type: int) -> Stream:
    return Stream(stream_id=stream_id, device_index=device_index, device_type=device_type)


def current_stream(device: Any = None) -> Stream:
    """The calling thread's current stream of a chip."""
    return _wrap(*_C._current_stream(resolve_device(device)))


def default_stream(device: Any = None) -> Stream:
    """The default stream of a chip."""
    return _wrap(*_C._default_stream(resolve_device(device)))


def set_stream(stream: torch.Stream | None) -> None:
    """Makes ``stream`` current for its chip (None is a no-op, as on CUDA)."""
    if stream is not None:
        _C._set_stream(stream.stream_id, stream.device_index)


def synchronize(device: Any = None) -> None:
    """Waits for all work queued on a chip; raises an error an asynchronous op ran into."""
    _C._synchronize(resolve_device(device))


class StreamContext:
    """Context manager that makes a stream current (``torch.cuda.StreamContext``)."""

    def __init__(self, stream: torch.Stream | None) -> None:
        self.stream = stream
        self.previous: list[Stream] = []

    def __enter__(self) -> torch.Stream | None:
        if self.stream is not None:
            self.previous.append(current_stream(self.stream.device_index))
            set_stream(self.stream)
        return self.stream

    def __exit__(self, *args: object) -> None:
        if self.stream is not None:
            set_stream(self.previous.pop())


def stream(stream: torch.Stream | None) -> StreamContext:
    """``with torch.tpu.stream(s):`` queues the block's work on ``s``."""
    return StreamContext(stream)
