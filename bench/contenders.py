"""Who competes: PyTorch CPU (eager with AdamW foreach or fused, torch.compile with inductor) and
the tpu device in each eager mode and under torch.compile. A contender that cannot run here is kept
in the tables as "n/a" with the reason, never dropped and never given a made-up figure."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch

EAGER_MODES = ("debug", "strict", "fused")


@dataclass(frozen=True)
class Contender:
    name: str
    short: str  # table column header
    label: str
    device: str  # "cpu" or "tpu"
    eager_mode: str | None = None  # tpu eager mode to select before every call
    compile_backend: str | None = None  # torch.compile backend, None for eager
    adamw: dict[str, bool] = field(default_factory=dict)  # AdamW implementation switches

    @property
    def is_tpu(self) -> bool:
        return self.device == "tpu"

    @property
    def is_fused(self) -> bool:
        """tpu in fused eager mode: its steps are probed for compiles, planning and cuts."""
        return self.is_tpu and self.eager_mode == "fused"


CPU_EAGER = Contender(
    "cpu-eager",
    "CPU eager",
    "PyTorch CPU eager, AdamW(foreach=True)",
    "cpu",
    adamw={"foreach": True},
)
CPU_EAGER_FUSED = Contender(
    "cpu-eager-fused",
    "CPU eager fusedAdamW",
    "PyTorch CPU eager, AdamW(fused=True)",
    "cpu",
    adamw={"fused": True},
)
# A careful user compiling the model also picks the faster optimizer: fused AdamW.
CPU_COMPILE = Contender(
    "cpu-compile",
    "CPU compile",
    "PyTorch CPU torch.compile(model) with inductor, AdamW(fused=True) (optimizer not compiled)",
    "cpu",
    None,
    "inductor",
    {"fused": True},
)
# Default AdamW (foreach=None) on tpu: PyTorch picks foreach itself when the device supports it.
TPU_MODES = tuple(
    Contender(f"tpu-{m}", f"tpu {m}", f"tpu eager mode {m!r}, AdamW() defaults", "tpu", m)
    for m in EAGER_MODES
)
# As for CPU compile: the model compiled, fused AdamW; the eager mode around it is the default.
TPU_COMPILE = Contender(
    "tpu-compile",
    "tpu compile",
    'tpu torch.compile(model, backend="tpu"), AdamW(fused=True), strict eager mode around it',
    "tpu",
    "strict",
    "tpu",
    {"fused": True},
)
TPU_DEFAULT = Contender(
    "tpu", "tpu", "tpu in its default eager mode (no set_eager_mode yet)", "tpu"
)


def tpu_reason() -> str | None:
    """Why the tpu device cannot be used here, or None when it can."""
    if os.environ.get("BENCH_AUTOLOAD_ERROR"):  # set by bench.run when it had to disable autoload
        return os.environ["BENCH_AUTOLOAD_ERROR"]
    if not hasattr(torch, "tpu"):
        try:
            import torch_tpu  # noqa: F401  # autoload normally does this on `import torch`
        except Exception as e:  # an import can fail in many ways; all mean "no device"
            return f"torch_tpu not importable ({type(e).__name__}: {first_line(e)})"
        if not hasattr(torch, "tpu"):
            return "torch_tpu imported but torch.tpu is missing"
    try:
        if not torch.tpu.is_available():
            return "torch.tpu.is_available() is False"
    except Exception as e:
        return f"torch.tpu.is_available() raised {type(e).__name__}: {first_line(e)}"
    return None


def first_line(e: BaseException, limit: int = 160) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def mode_reason(mode: str) -> str | None:
    """Whether eager `mode` exists: select it once (restoring the previous mode afterwards)."""
    if not hasattr(torch.tpu, "set_eager_mode"):
        return "torch.tpu.set_eager_mode does not exist yet"
    previous = torch.tpu.get_eager_mode() if hasattr(torch.tpu, "get_eager_mode") else None
    try:
        torch.tpu.set_eager_mode(mode)
    except NotImplementedError as e:
        return f"eager mode {mode!r} not implemented: {first_line(e)}"
    except Exception as e:
        return f"set_eager_mode({mode!r}) raised {type(e).__name__}: {first_line(e)}"
    finally:
        if previous is not None:
            with contextlib.suppress(Exception):
                torch.tpu.set_eager_mode(previous)
    return None


def compile_reason(backend: str) -> str | None:
    if backend == "inductor":
        return None
    try:
        from torch._dynamo.backends.registry import list_backends

        if backend in list_backends(exclude_tags=()):
            return None
    except Exception as e:
        return f"cannot list torch.compile backends: {first_line(e)}"
    return f'torch.compile backend "{backend}" is not registered yet'


def availability(contenders: list[Contender]) -> dict[str, str | None]:
    """name -> None when the contender can run here, else the reason it cannot."""
    tpu = tpu_reason() if any(c.is_tpu for c in contenders) else None
    out: dict[str, str | None] = {}
    for c in contenders:
        reason = tpu if c.is_tpu else None
        if reason is None and c.eager_mode is not None:
            reason = mode_reason(c.eager_mode)
        if reason is None and c.compile_backend is not None:
            reason = compile_reason(c.compile_backend)
        out[c.name] = reason
    return out


def with_default_mode(contenders: list[Contender]) -> list[Contender]:
    """When the device exists but its modes cannot be selected, still measure it in whatever mode it
    runs by default (labelled as such), rather than showing nothing for the device at all."""
    if tpu_reason() is None and not hasattr(torch.tpu, "set_eager_mode"):
        return [*contenders, TPU_DEFAULT]
    return contenders


def model_contenders() -> list[Contender]:
    return with_default_mode([CPU_EAGER, CPU_EAGER_FUSED, CPU_COMPILE, *TPU_MODES, TPU_COMPILE])


def op_contenders() -> list[Contender]:
    return with_default_mode([CPU_EAGER, *TPU_MODES])


def enter(c: Contender) -> None:
    """Untimed, before each call: select the contender's eager mode (contenders are interleaved)."""
    if c.eager_mode is not None:
        torch.tpu.set_eager_mode(c.eager_mode)


def synchronize(c: Contender) -> None:
    if c.is_tpu:
        torch.tpu.synchronize()


@contextlib.contextmanager
def device_peak(c: Contender) -> Iterator[dict[str, int | str]]:
    """Device peak bytes over the block above what was allocated when it began (other contenders'
    models stay resident on the device): filled in as {"bytes": n} or {"reason": why not}."""
    result: dict[str, int | str] = {}
    if not (
        hasattr(torch.tpu, "reset_peak_memory_stats") and hasattr(torch.tpu, "max_memory_allocated")
    ):
        result["reason"] = "torch.tpu.reset_peak_memory_stats/max_memory_allocated missing"
        yield result
        return
    torch.tpu.synchronize()
    torch.tpu.reset_peak_memory_stats()
    start = torch.tpu.memory_allocated()
    yield result
    torch.tpu.synchronize()
    result["bytes"] = int(torch.tpu.max_memory_allocated() - start)
