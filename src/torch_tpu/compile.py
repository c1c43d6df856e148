"""torch.compile on tpu: the Dynamo backend ``"tpu"`` and the default compiler's route to it.

``torch.compile(model, backend="tpu")``: Dynamo captures the Python code as FX graphs (guards and
recompiles are Dynamo's), AOTAutograd splits each into a forward and a backward ATen graph (the
min-cut partitioner recomputes cheap results in backward instead of saving them), and each ATen
graph runs as one graph of fused mode: its ops are recorded, never launched one by one, and the
graph is cut when the call ends, planned (elementwise chains fused, memory planned), looked up in
the compile cache by its structure and queued on the stream as one work item. A second call with
the same shapes hits the cache: nothing is planned again. The first call's op calls are captured,
and later calls whose inputs are laid out alike replay them with their own buffers, without the
graph's Python code and the dispatcher (TORCH_TPU_COMPILE_REPLAY=0 turns that off). An op without
a native kernel becomes a fallback island (counted in ``torch.tpu.fallback_stats()``, warned
once): the graph is cut around it and the op runs on the CPU. On the PJRT driver each cut graph is
one StableHLO module.
AOTAutograd's bundled cache keeps the traced graphs on disk for later processes.

``torch.compile(model)`` with Inductor, PyTorch's default, would hand tpu graphs to Inductor's
Pallas code generator (which needs JAX); a graph that touches a tpu tensor is routed to the
``"tpu"`` backend instead, and other graphs still go to Inductor.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import operator
import pathlib
from collections.abc import Callable, Sequence
from typing import Any

import torch

# torch.compile's modes: Inductor's tuning and CUDA graphs have no meaning here, so every mode
# runs the same plan.
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")

# The share of the min-cut partitioner's saved activations that a training graph may keep
# (AOTAutograd's activation_memory_budget): below 1 it recomputes more of the forward in backward,
# the cheapest first. Chosen with bench's GPTs: it keeps their compiled step's peak under fused
# eager mode's.
ACTIVATION_MEMORY_BUDGET = 0.6

# Calls of compiled graphs: "recorded" (through the graph's Python code), "captured" (recorded
# calls whose op calls later calls replay), "replayed", and "refused: <why>" per graph whose first
# call could not be captured. Read with replay_stats().
replay_counts: collections.Counter[str] = collections.Counter()


def replay_stats() -> dict[str, int]:
    """How the calls of compiled tpu graphs ran since the last reset_replay_stats()."""
    return dict(replay_counts)


def reset_replay_stats() -> None:
    replay_counts.clear()


def _tpu_device(value: Any) -> torch.device | None:
    """The tpu device of a tensor (or of the first tpu tensor in a tuple or list), else None."""
    if isinstance(value, torch.Tensor):
        return value.device if value.device.type == "tpu" else None
    if isinstance(value, (tuple, list)):
        for v in value:
            found = _tpu_device(v)
            if found is not None:
                return found
    return None


def _graph_device(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> torch.device | None:
    """The tpu device a Dynamo graph works on: an input's, else a value made inside the graph."""
    found = _tpu_device(list(example_inputs))
    if found is not None:
        return found
    for node in gm.graph.nodes:
        found = _tpu_device(node.meta.get("example_value", node.meta.get("val")))
        if found is not None:
            return found
    return None


# Python's arithmetic on symbolic sizes in a graph with dynamic shapes: pure functions of numbers.
_SIZE_ARITHMETIC = frozenset(
    {
        operator.add,
        operator.sub,
        operator.mul,
        operator.floordiv,
        operator.truediv,
        operator.mod,
        operator.pow,
        operator.neg,
        operator.eq,
        operator.ne,
        operator.lt,
        operator.le,
        operator.gt,
        operator.ge,
        operator.getitem,
        torch.sym_max,
        torch.sym_min,
        torch.sym_float,
        torch.sym_int,
        torch.sym_not,
    }
)


def _replayable(gm: torch.fx.GraphModule) -> bool:
    """Whether every call of the graph is an ATen or prims op or arithmetic on sizes: the capture
    of a call sees what such ops do on the device, not what other calls may do on the host (a
    stream or event call, a Python function)."""
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        target = node.target
        if node.op != "call_function" or not (
            target in _SIZE_ARITHMETIC
            or (isinstance(target, torch._ops.OpOverload) and target.namespace in ("aten", "prims"))
        ):
            return False
    return True


def _runner(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
    """AOTAutograd's compiler for one ATen graph (forward or backward): a CompiledGraph that runs
    it as one fused graph on the device of its tpu inputs. The graph takes AOTAutograd's boxed
    calling convention (one list, cleared once read), so that an input the graph reads for the
    last time (a saved activation in backward) dies while the graph is recorded and its memory
    returns at its last reader."""
    from torch.fx.graph import _BoxedCodeGen

    from ._compiled_graph import CompiledGraph

    device = _graph_device(gm, example_inputs)
    gm.graph.set_codegen(_BoxedCodeGen())
    gm.recompile()
    return CompiledGraph(
        gm=gm,
        device_index=None if device is None else device.index,
        replayable=_replayable(gm),
    )


# Attention costs as much to compute again as its backward saves: its results are always kept.
_NEVER_RECOMPUTED = frozenset(
    {torch.ops.aten._scaled_dot_product_fused_attention_overrideable.default}
)


def _partition(joint: torch.fx.GraphModule, joint_inputs: Any, **kwargs: Any) -> Any:
    """The min-cut partitioner, except that two kinds of results are never computed again in
    backward: a functionalized mutation (batch norm's running statistics), which reads inputs that
    the runtime overwrites with its results once forward returns, and attention (the budget below 1
    would otherwise choose to recompute it)."""
    from torch._functorch.partitioners import min_cut_rematerialization_partition
    from torch.utils.checkpoint import CheckpointPolicy

    for node in joint.graph.nodes:
        target = node.target
        if isinstance(target, torch._ops.OpOverload) and (
            target._schema.name.endswith("_functional") or target in _NEVER_RECOMPUTED
        ):
            node.meta["recompute"] = CheckpointPolicy.MUST_SAVE
    return min_cut_rematerialization_partition(joint, joint_inputs, **kwargs)


@functools.cache
def _build_id() -> str:
    """A digest of the installed package (its Python files and the binding): cache entries
    written by another build of torch_tpu never load in this one."""
    digest = hashlib.sha256()
    root = pathlib.Path(__file__).parent
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".so", ".pyd") and path.is_file():
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@functools.cache
def _aot_backend() -> Callable[..., Any]:
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch._aot_autograd.schemas import SerializableAOTDispatchCompiler

    from ._compiled_graph import CompiledGraph

    compiler = SerializableAOTDispatchCompiler(CompiledGraph, _runner)
    return aot_autograd(
        fw_compiler=compiler,
        bw_compiler=compiler,
        inference_compiler=compiler,
        partition_fn=_partition,
    )


def backend(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    mode: str | None = None,
    options: dict[str, Any] | None = None,
) -> Callable[..., Any]:
    """The Dynamo backend ``"tpu"`` (``torch.compile(fn, backend="tpu")``). ``mode`` may be any of
    torch.compile's modes (all run the same plan); ``options`` may hold
    ``activation_memory_budget``, a number in (0, 1] (default ACTIVATION_MEMORY_BUDGET)."""
    if mode is not None and mode not in MODES:
        raise ValueError(f"torch.compile mode must be one of {MODES} for 'tpu', got {mode!r}")
    options = dict(options or {})
    budget = options.pop("activation_memory_budget", ACTIVATION_MEMORY_BUDGET)
    if options:
        raise ValueError(
            f"backend 'tpu' takes only the option 'activation_memory_budget', got {sorted(options)}"
        )
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not 0 < budget <= 1:
        raise ValueError(f"activation_memory_budget must be a number in (0, 1], got {budget!r}")
    register_device_interface()
    from torch._functorch import config

    # AOTAutograd's bundled cache keeps the traced and partitioned graphs on disk (under
    # TORCHINDUCTOR_CACHE_DIR), so another process skips that work; the backward graph is
    # partitioned now rather than at the first backward, so that it is saved with the forward.
    # The key of a cache entry also names this build of torch_tpu (cache_key_tag, beside the user's
    # own tag), as an entry holds our graph objects.
    from torch.compiler import config as compiler_config

    tag = f"{compiler_config.cache_key_tag}+torch_tpu-{_build_id()}"
    with (
        config.patch(
            activation_memory_budget=float(budget),
            enable_autograd_cache=True,
            bundled_autograd_cache=True,
            force_non_lazy_backward_lowering=True,
        ),
        compiler_config.patch(cache_key_tag=tag),
    ):
        return _aot_backend()(gm, example_inputs)


def register_device_interface() -> None:
    """Gives Dynamo torch.tpu's streams, events and device calls in place of its placeholder."""
    from torch._dynamo import device_interface as di

    di.get_registered_device_interfaces()  # registers the built-in ones first, which it would
    interface = device_interface()  # otherwise do over ours
    di.register_interface_for_device("tpu", interface)
    for i in range(torch.tpu.device_count()):
        di.register_interface_for_device(f"tpu:{i}", interface)


def _inductor_call(original: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps Inductor's entry for torch.compile: graphs on tpu go to backend "tpu"."""

    @functools.wraps(original)
    def call(self: Any, model_: torch.fx.GraphModule, inputs_: Sequence[Any], **kwargs: Any) -> Any:
        if _graph_device(model_, inputs_) is None:
            return original(self, model_, inputs_, **kwargs)
        return backend(model_, inputs_)

    return call


def route_default_compiler() -> None:
    """Makes torch.compile's default compiler (Inductor) hand graphs on tpu to backend "tpu"."""
    wrapper = torch._TorchCompileInductorWrapper
    if not hasattr(wrapper.__call__, "__wrapped__"):
        wrapper.__call__ = _inductor_call(wrapper.__call__)  # type: ignore[method-assign]


@functools.cache
def device_interface() -> type:
    """Dynamo's DeviceInterface for tpu (built on first use: importing Dynamo at ``import torch``
    time would slow every import)."""
    from torch._dynamo.device_interface import DeviceInterface

    class _TpuInterface(DeviceInterface):
        """torch.tpu for Dynamo: what it needs to trace streams, events and device calls."""

        device = torch.tpu.device
        Event = torch.tpu.Event
        Stream = torch.tpu.Stream

        class Worker:
            @staticmethod
            def set_device(device: int) -> None:
                torch.tpu.set_device(device)

            @staticmethod
            def current_device() -> int:
                return torch.tpu.current_device()

            @staticmethod
            def get_device_properties(device: Any = None) -> Any:
                return torch.tpu.get_device_properties(device)

        current_device = staticmethod(torch.tpu.current_device)
        set_device = staticmethod(torch.tpu.set_device)
        device_count = staticmethod(torch.tpu.device_count)
        is_available = staticmethod(torch.tpu.is_available)
        stream = staticmethod(torch.tpu.stream)
        current_stream = staticmethod(torch.tpu.current_stream)
        set_stream = staticmethod(torch.tpu.set_stream)
        synchronize = staticmethod(torch.tpu.synchronize)
        memory_allocated = staticmethod(torch.tpu.memory_allocated)
        get_device_properties = staticmethod(torch.tpu.get_device_properties)
        get_compute_capability = staticmethod(torch.tpu.get_device_capability)
        is_bf16_supported = staticmethod(torch.tpu.is_bf16_supported)

        @staticmethod
        def exchange_device(device: int) -> int:
            previous = torch.tpu.current_device()
            torch.tpu.set_device(device)
            return previous

        @staticmethod
        def maybe_exchange_device(device: int) -> int:
            return _TpuInterface.exchange_device(device)

        @staticmethod
        def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
            torch.tpu.set_stream(
                torch.tpu.Stream(
                    stream_id=stream_id, device_index=device_index, device_type=device_type
                )
            )

        @staticmethod
        def get_raw_stream(device_idx: int) -> int:
            return torch.tpu.current_stream(device_idx).stream_id

        @staticmethod
        def is_triton_capable(device: Any = None) -> bool:
            return False

    return _TpuInterface
