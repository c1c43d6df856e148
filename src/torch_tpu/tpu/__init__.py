"""``torch.tpu``: the tpu device module, mirroring ``torch.cuda``."""

from __future__ import annotations

import threading
from typing import Any

import torch

from .. import _C
from .._utils import device_index as _device_index
from .debug import (
    OpTraceEntry,
    TensorInfo,
    debug_nan_check,
    debug_op_trace,
    get_debug_nan_check,
    get_debug_op_trace,
    set_debug_nan_check,
    set_debug_op_trace,
)
from .memory import (
    empty_cache,
    host_memory_stats,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_peak_memory_stats,
)
from .modes import (
    EagerMode,
    compile_cache_stats,
    dump_pending_graph,
    eager_mode,
    fused_stats,
    get_eager_mode,
    is_materialized,
    reset_compile_cache_stats,
    reset_fused_stats,
    set_eager_mode,
)
from .random import (
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from .stats import env_vars, fallback_stats, op_stats, reset_op_stats
from .streams import (
    Event,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
    synchronize,
)

_initialized = False
_init_lock = threading.Lock()


def is_available() -> bool:
    """True when at least one tpu chip can be used (the simulated chip always can)."""
    return _C._device_count() > 0


def device_count() -> int:
    """Number of tpu chips: ``TORCH_TPU_NUM_DEVICES`` simulated ones (default 1) on the host
    driver, the plugin's devices on the PJRT driver."""
    return _C._device_count()


def _is_in_bad_fork() -> bool:
    return _C._is_in_bad_fork()


def is_initialized() -> bool:
    """True once the device runtime was initialized in this process."""
    return _initialized and not _is_in_bad_fork()


def _lazy_init() -> None:
    global _initialized
    if is_initialized():
        return
    with _init_lock:
        if is_initialized():
            return
        if _is_in_bad_fork():
            raise RuntimeError(
                "Cannot re-initialize TPU in forked subprocess. To use TPU with "
                "multiprocessing, you must use the 'spawn' start method"
            )
        _C._lazy_init()
        _initialized = True


def init() -> None:
    """Initializes the device runtime (it also happens on first use)."""
    _lazy_init()


# The exit drain's leaf and gradient per chip, kept for the process: its own graph task must not
# hold the last reference to a tensor Python has seen (freeing that one's Python object needs the
# GIL too).
_drain_tensors: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}


def _drain_autograd_threads() -> None:
    """At interpreter exit: makes autograd's thread of each chip let go of its last graph task.

    That thread may still hold the last backward's graph task when the main thread exits. The
    task holds Python objects (the contextvars context torch.autograd.backward stashes for it, and
    final callbacks such as FSDP2's), whose release takes the GIL, and a thread taking it while
    the interpreter finalizes is torn down mid-call (std::terminate). A tiny backward on the chip
    runs on the same thread after that task's iteration ended, so the task is gone when it
    returns; the tiny one holds nothing of Python's: it calls the engine directly (no stashed
    context), and its leaf and gradient outlive it."""
    if not is_initialized() or not _C._backward_ran():
        return
    from torch.autograd import Variable

    set_debug_op_trace(False)  # the drain's ops are not the program's
    set_debug_nan_check(False)

    for index in range(device_count()):
        if index not in _drain_tensors:
            device = torch.device("tpu", index)
            leaf = torch.zeros((), device=device, requires_grad=True)
            _drain_tensors[index] = (leaf, torch.ones((), device=device))
        leaf, grad = _drain_tensors[index]
        Variable._execution_engine.run_backward((leaf * 2,), (grad,), False, False, (), True, True)


def current_device() -> int:
    """Index of the calling thread's current tpu device."""
    _lazy_init()
    return _C._current_device()


def set_device(device: Any) -> None:
    """Sets the calling thread's current device; a negative index is ignored, as on CUDA."""
    index = _device_index(device)
    if index >= 0:
        _lazy_init()
        _C._set_device(index)


class device:
    """Context manager that changes the current device (``torch.cuda.device``)."""

    def __init__(self, device: Any) -> None:
        self.idx = _device_index(device, optional=True)
        self.prev_idx = -1

    def __enter__(self) -> None:
        self.prev_idx = current_device()
        if self.idx >= 0 and self.idx != self.prev_idx:
            _C._set_device(self.idx)

    def __exit__(self, *args: object) -> bool:
        if self.prev_idx != self.idx and self.idx >= 0:
            _C._set_device(self.prev_idx)
        return False


class device_of(device):
    """Context manager that makes the device of ``obj`` (a tensor) current."""

    def __init__(self, obj: torch.Tensor) -> None:
        super().__init__(obj.get_device() if obj.is_tpu else -1)


class _TpuDeviceProperties:
    """What ``get_device_properties`` returns: name, memory capacity, index, and the driver that
    runs the chip and what kind of chip it is (``simulated``, ``tpu``, ``gpu`` or ``cpu``)."""

    def __init__(self, index: int) -> None:
        props = _C._device_properties(index)
        self.name: str = props["name"]
        self.total_memory: int = props["total_memory"]
        self.driver: str = props["driver"]
        self.kind: str = props["kind"]
        self.index = index
        self.type = "tpu"
        self.major, self.minor = 5, 0

    def __repr__(self) -> str:
        return (
            f"_TpuDeviceProperties(name='{self.name}', "
            f"total_memory={self.total_memory // (1024 * 1024)}MB, driver='{self.driver}')"
        )


def get_device_properties(device: Any = None) -> _TpuDeviceProperties:
    """Properties of a chip; ``total_memory`` is its capacity in bytes."""
    _lazy_init()
    return _TpuDeviceProperties(_device_index(device, optional=True, default=current_device()))


def get_device_name(device: Any = None) -> str:
    """Name of a chip, e.g. ``TPU v5e (simulated)``."""
    return get_device_properties(device).name


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """A (major, minor) pair, for code that asks CUDA devices for one."""
    props = get_device_properties(device)
    return props.major, props.minor


def get_amp_supported_dtype() -> list[torch.dtype]:
    """Dtypes ``torch.autocast("tpu")`` can cast to."""
    return [torch.bfloat16, torch.float16]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """bfloat16 is native on tpu."""
    return True


__all__ = [
    "EagerMode",
    "Event",
    "OpTraceEntry",
    "Stream",
    "StreamContext",
    "TensorInfo",
    "compile_cache_stats",
    "current_device",
    "current_stream",
    "debug_nan_check",
    "debug_op_trace",
    "default_stream",
    "device",
    "device_count",
    "device_of",
    "dump_pending_graph",
    "eager_mode",
    "empty_cache",
    "env_vars",
    "fallback_stats",
    "fused_stats",
    "get_amp_supported_dtype",
    "get_debug_nan_check",
    "get_debug_op_trace",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "get_eager_mode",
    "get_rng_state",
    "get_rng_state_all",
    "host_memory_stats",
    "init",
    "initial_seed",
    "is_available",
    "is_initialized",
    "is_materialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "op_stats",
    "reset_accumulated_memory_stats",
    "reset_compile_cache_stats",
    "reset_fused_stats",
    "reset_max_memory_allocated",
    "reset_op_stats",
    "reset_peak_memory_stats",
    "seed",
    "seed_all",
    "set_debug_nan_check",
    "set_debug_op_trace",
    "set_device",
    "set_eager_mode",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "stream",
    "synchronize",
]
