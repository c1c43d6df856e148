"""torch.save / torch.load of tpu tensors (weights_only=True, the default): values, dtypes, devices,
map_location, shared storages (views, tied weights), storage identity, and a model checkpoint with
an optimizer state that resumes exactly."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import torch
from _dtypes import STORED_DTYPES
from _subprocess_helpers import run_python
from torch import nn

DEV = "tpu"
TPU0 = torch.device("tpu", 0)


def round_trip(obj: Any, **load_kwargs: Any) -> Any:
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **load_kwargs)


def bits(t: torch.Tensor) -> torch.Tensor:
    """The raw bytes of a CPU tensor, so NaN and float8 compare exactly."""
    return t.contiguous().view(torch.uint8) if t.dim() > 0 else t.reshape(1).view(torch.uint8)


def sample(dtype: torch.dtype, n: int = 10) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    raw = torch.randint(0, 256, (n * dtype.itemsize,), dtype=torch.uint8, generator=g)
    if dtype == torch.bool:
        return raw[:n] % 2 == 1
    return raw.view(dtype)


def storage_ptr(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


@pytest.mark.parametrize("dtype", STORED_DTYPES, ids=str)
def test_tensor_round_trip(dtype: torch.dtype, eager_mode: str) -> None:
    cpu = sample(dtype).reshape(2, -1)
    x = cpu.to(DEV)
    y = round_trip(x)
    assert y.device == TPU0
    assert y.dtype == dtype and y.shape == x.shape and y.stride() == x.stride()
    assert torch.equal(bits(y.cpu()), bits(cpu))
    assert storage_ptr(y) != storage_ptr(x)  # a fresh storage, not the saved one


def test_special_shapes_round_trip(eager_mode: str) -> None:
    scalar = torch.tensor(3.5, device=DEV)
    empty = torch.empty(0, 4, device=DEV)
    nonc = torch.arange(12.0, device=DEV).reshape(3, 4).t()
    special = torch.tensor([float("nan"), float("inf"), -0.0], device=DEV)
    out = round_trip({"scalar": scalar, "empty": empty, "nonc": nonc, "special": special})
    assert out["scalar"].shape == () and out["scalar"].item() == 3.5
    assert out["empty"].shape == (0, 4) and out["empty"].device == TPU0
    assert out["nonc"].stride() == (1, 4)
    assert torch.equal(out["nonc"].cpu(), torch.arange(12.0).reshape(3, 4).t())
    assert torch.equal(bits(out["special"].cpu()), bits(special.cpu()))


def test_file_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "t.pt"
    x = torch.randn(5, 5).to(DEV)
    torch.save({"x": x, "meta": {"step": 3, "name": "w"}, "list": [x[0], 1.5]}, path)
    loaded = torch.load(path)
    assert loaded["meta"] == {"step": 3, "name": "w"}
    assert loaded["x"].device == TPU0
    assert torch.equal(loaded["x"].cpu(), x.cpu())
    assert torch.equal(loaded["list"][0].cpu(), x[0].cpu())
    assert storage_ptr(loaded["list"][0]) == storage_ptr(loaded["x"])


@pytest.mark.parametrize(
    "location, expected",
    [
        ("cpu", torch.device("cpu")),
        (torch.device("cpu"), torch.device("cpu")),
        ("tpu", TPU0),
        ("tpu:0", TPU0),
        (torch.device("tpu", 0), TPU0),
        ({"tpu:0": "cpu"}, torch.device("cpu")),
    ],
    ids=["str-cpu", "dev-cpu", "str-tpu", "str-tpu0", "dev-tpu0", "dict"],
)
def test_map_location_from_tpu(location: Any, expected: torch.device) -> None:
    x = torch.arange(6.0).reshape(2, 3)
    y = round_trip({"x": x.to(DEV)}, map_location=location)["x"]
    assert y.device == expected
    assert torch.equal(y.cpu(), x)


@pytest.mark.parametrize("location", ["tpu", "tpu:0", torch.device("tpu"), {"cpu": "tpu:0"}])
def test_cpu_checkpoint_onto_tpu(location: Any) -> None:
    model = nn.Linear(4, 3)
    sd = round_trip(model.state_dict(), map_location=location)
    for key, value in sd.items():
        assert value.device == TPU0, key
        assert torch.equal(value.cpu(), model.state_dict()[key])


def test_map_location_to_missing_device_raises() -> None:
    n = torch.tpu.device_count()
    with pytest.raises(RuntimeError, match="device_count"):
        round_trip(torch.ones(2, device=DEV), map_location=f"tpu:{n}")


def test_views_keep_sharing(eager_mode: str) -> None:
    base = torch.arange(20.0, device=DEV).reshape(4, 5)
    out = round_trip({"base": base, "row": base[2], "col": base[:, 1], "t": base.t()})
    b = out["base"]
    for key in ("row", "col", "t"):
        assert storage_ptr(out[key]) == storage_ptr(b), key
    assert out["row"].storage_offset() == 10
    assert out["col"].stride() == (5,)
    b.add_(100)
    assert torch.equal(out["row"].cpu(), torch.arange(10.0, 15.0) + 100)
    assert torch.equal(out["t"].cpu(), b.t().cpu())


def test_view_saved_alone_keeps_whole_storage() -> None:
    base = torch.arange(10.0, device=DEV)
    view = round_trip(base[3:5])
    assert view.storage_offset() == 3
    assert view.untyped_storage().nbytes() == base.untyped_storage().nbytes()
    assert torch.equal(view.cpu(), torch.tensor([3.0, 4.0]))


class Tied(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight


def test_tied_weights_stay_tied() -> None:
    torch.manual_seed(0)
    model = Tied().to(DEV)
    assert model.head.weight is model.embed.weight
    sd = round_trip(model.state_dict())
    assert storage_ptr(sd["embed.weight"]) == storage_ptr(sd["head.weight"])
    assert sd["embed.weight"].device == TPU0
    fresh = Tied().to(DEV)
    fresh.load_state_dict(sd)
    assert fresh.head.weight is fresh.embed.weight
    assert torch.equal(fresh.embed.weight.detach().cpu(), model.embed.weight.detach().cpu())
    # Weights that share a storage at different offsets stay shared too.
    flat = torch.randn(20).to(DEV)
    out = round_trip({"a": flat[:10].view(2, 5), "b": flat[10:].view(5, 2)})
    assert storage_ptr(out["a"]) == storage_ptr(out["b"])
    assert out["b"].storage_offset() == 10


def test_storage_identity() -> None:
    tensors = [torch.empty(n, device=DEV, dtype=torch.uint8) for n in (1, 3, 63, 64, 65, 4096)]
    tensors += [torch.empty(7, device=DEV, dtype=dt) for dt in (torch.float64, torch.bfloat16)]
    ptrs = [storage_ptr(t) for t in tensors]
    assert all(p != 0 for p in ptrs)
    assert all(p % 64 == 0 for p in ptrs)
    assert len(set(ptrs)) == len(ptrs)
    # Views report their base's storage; a clone gets its own.
    x = tensors[-2]
    assert storage_ptr(x[2:]) == storage_ptr(x)
    assert x[2:].data_ptr() == x.data_ptr() + 2 * x.element_size()
    assert storage_ptr(x.clone()) not in ptrs


def test_storage_identity_fixed_across_writes() -> None:
    x = torch.empty(100, device=DEV)
    ptr = storage_ptr(x)
    x.fill_(1.0)
    x.add_(1.0)
    x.copy_(torch.zeros(100))
    torch.tpu.synchronize()
    assert storage_ptr(x) == ptr


def _train(model: nn.Module, opt: torch.optim.Optimizer, steps: int, seed: int) -> list[float]:
    g = torch.Generator().manual_seed(seed)
    losses = []
    for _ in range(steps):
        x = torch.randn(8, 6, generator=g).to(DEV)
        y = torch.randn(8, 2, generator=g).to(DEV)
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2)).to(DEV)


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
@pytest.mark.parametrize("optim", ["adam", "sgd"])
def test_checkpoint_with_optimizer_resumes_exactly(optim: str, tmp_path: Path) -> None:
    def make_opt(model: nn.Module) -> torch.optim.Optimizer:
        if optim == "adam":
            return torch.optim.AdamW(model.parameters(), lr=1e-2)
        return torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)

    model = _model()
    opt = make_opt(model)
    _train(model, opt, 3, seed=1)
    path = tmp_path / "ckpt.pt"
    torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3}, path)
    reference = _train(model, opt, 3, seed=2)

    ckpt = torch.load(path, map_location="tpu")
    assert ckpt["epoch"] == 3
    for state in ckpt["optim"]["state"].values():
        for key, value in state.items():
            if isinstance(value, torch.Tensor) and key != "step":
                assert value.device == TPU0, key
    resumed = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2)).to(DEV)
    resumed.load_state_dict(ckpt["model"])
    opt2 = make_opt(resumed)
    opt2.load_state_dict(ckpt["optim"])
    assert _train(resumed, opt2, 3, seed=2) == reference
    for p, q in zip(model.parameters(), resumed.parameters(), strict=True):
        assert torch.equal(p.detach().cpu(), q.detach().cpu())


class NotAllowed:
    """A class the weights_only unpickler must refuse."""


def test_weights_only_rejects_arbitrary_objects() -> None:
    with pytest.raises(Exception, match="[Ww]eights only load failed"):
        round_trip({"x": torch.ones(1, device=DEV), "obj": NotAllowed()})


def test_load_in_fresh_process(tmp_path: Path) -> None:
    path = tmp_path / "fresh.pt"
    base = torch.arange(6.0, device=DEV)
    torch.save({"base": base, "view": base[2:4], "bf16": base.bfloat16()}, path)
    code = f"""
    import torch
    d = torch.load({str(path)!r})
    assert d["base"].device == torch.device("tpu", 0), d["base"].device
    assert d["view"].untyped_storage().data_ptr() == d["base"].untyped_storage().data_ptr()
    assert d["view"].cpu().tolist() == [2.0, 3.0]
    assert d["bf16"].dtype == torch.bfloat16
    print("ok", d["base"].cpu().tolist())
    """
    result = run_python(code)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]"
