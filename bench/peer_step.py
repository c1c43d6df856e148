"""One GPT-style training step on a peer stack, run inside that peer's own virtual environment by
bench/peers.py: `python bench/peer_step.py BACKEND MODEL WARMUP STEPS`. Prints one JSON line.

Standalone on purpose: it loads bench/models.py by path (never the bench package, whose import
brings in this checkout's torch_tpu), so each venv needs only torch (and its peer)."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0]).resolve() == HERE:
    sys.path.pop(0)  # bench/ holds stats.py, memory.py, ...: never let them shadow real modules

import torch  # noqa: E402

LR, WEIGHT_DECAY, SEED = 1e-3, 0.01, 0  # as bench/steps.py


def load_models() -> Any:
    spec = importlib.util.spec_from_file_location("bench_models", HERE / "models.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_models"] = mod
    spec.loader.exec_module(mod)
    return mod


def data(models: Any, name: str, count: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(SEED + 1)
    return [models.MODELS[name].batch(gen) for _ in range(count)]


def torch_cpu(models: Any, name: str, batches: list) -> tuple[list[float], list[float]]:
    """The reference: PyTorch CPU eager with AdamW(foreach=True), as bench.steps runs it."""
    torch.set_float32_matmul_precision("highest")
    model = models.build_model(name, SEED)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY, foreach=True)
    losses, times = [], []
    for x, y in batches:
        t0 = time.perf_counter()
        loss = model(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        v = loss.item()
        times.append(time.perf_counter() - t0)
        losses.append(v)
    return losses, times


def shim_removed_overloads() -> None:
    """torchax 0.0.13 lists named-tensor overloads (aten.prod.dim_Dimname, ...) that torch 2.13
    removed; it only uses them as table keys, so a placeholder lets it import."""
    orig = torch._ops.OpOverloadPacket.__getattr__

    def getattr_(self: Any, key: str) -> Any:
        try:
            return orig(self, key)
        except AttributeError:
            if "name" in key.lower() and not key.startswith("__"):
                return ("removed-overload", str(self), key)
            raise

    torch._ops.OpOverloadPacket.__getattr__ = getattr_


def torchax_jit(models: Any, name: str, batches: list) -> tuple[list[float], list[float]]:
    """torchax's documented training path: value_and_grad of the torch module on JAX, optax.adamw
    (same formula and hyperparameters as torch's AdamW), the whole step under jax.jit."""
    shim_removed_overloads()
    import jax
    import optax
    import torchax
    from torchax import interop
    from torchax.train import make_train_step

    env = torchax.default_env()
    model = models.build_model(name, SEED)
    with env:
        weights = {k: v.detach().to("jax") for k, v in model.named_parameters()}
        buffers = {k: v.detach().to("jax") for k, v in model.named_buffers()}
        batches = [(x.to("jax"), y.to("jax")) for x, y in batches]

    def model_fn(w: dict, b: dict, args: Any) -> Any:
        return torch.func.functional_call(model, {**w, **b}, args)

    optimizer = optax.adamw(LR, weight_decay=WEIGHT_DECAY)
    step = interop.jax_jit(make_train_step(model_fn, lambda res, label: res, optimizer))
    opt_state = interop.call_jax(optimizer.init, weights)
    losses, times = [], []
    for x, y in batches:
        t0 = time.perf_counter()
        loss, weights, opt_state = step(weights, buffers, opt_state, (x, y), None)
        v = float(jax.block_until_ready(interop.jax_view(loss)))
        times.append(time.perf_counter() - t0)
        losses.append(v)
    return losses, times


def google_torch_tpu(models: Any, name: str, batches: list) -> tuple[list[float], list[float]]:
    """Google's torch_tpu on its own "tpu" device (only reached when it registered one)."""
    import torch_tpu  # noqa: F401

    model = models.build_model(name, SEED).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    losses, times = [], []
    for x, y in batches:
        x, y = x.to("tpu"), y.to("tpu")
        t0 = time.perf_counter()
        loss = model(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        v = loss.item()
        times.append(time.perf_counter() - t0)
        losses.append(v)
    return losses, times


def main(argv: list[str]) -> None:
    backend, name, warmup, steps = argv[0], argv[1], int(argv[2]), int(argv[3])
    torch.manual_seed(SEED)
    models = load_models()
    batches = data(models, name, warmup + steps)
    fn = {"torch-cpu": torch_cpu, "torchax": torchax_jit, "google-torch-tpu": google_torch_tpu}[
        backend
    ]
    losses, times = fn(models, name, batches)
    out = {
        "backend": backend,
        "model": name,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "first_s": times[0],
        "times": times[warmup:],
        "losses": losses,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
