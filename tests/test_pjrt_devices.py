"""Every device of the PJRT plugin is a tpu device (make pytest-pjrt runs this file on XLA's CPU
plugin): tpu:0..N-1 are the plugin's devices, a copy between two of them stays on the device,
and a model trains on each as on CPU."""

from __future__ import annotations

import os

import pytest
import torch
from _subprocess_helpers import run_python

pjrt_only = pytest.mark.skipif(
    os.environ.get("TORCH_TPU_DRIVER") != "pjrt", reason="runs in make pytest-pjrt"
)
pytestmark = pjrt_only

COUNT = "import torch; print(torch.tpu.device_count())"


def test_the_plugins_devices_are_the_tpu_devices() -> None:
    # XLA's CPU plugin makes 4 devices unless told otherwise; TORCH_TPU_NUM_DEVICES tells it.
    assert torch.tpu.device_count() == 4
    for asked in ("1", "6"):
        done = run_python(COUNT, {"TORCH_TPU_NUM_DEVICES": asked})
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == [asked]


def device_copies() -> int:
    return torch.tpu.compile_cache_stats()["device_copies"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_a_copy_between_chips_stays_on_the_device(dtype: torch.dtype, eager_mode: str) -> None:
    x = (torch.randn(5, 7, generator=torch.Generator().manual_seed(0)) * 10).to(dtype)
    a = x.to("tpu:0")
    torch.tpu.synchronize()
    torch.tpu.reset_op_stats()
    before = device_copies()
    whole = a.to("tpu:1")
    transposed = a.t().to("tpu:1")
    into = torch.empty(7, 5, dtype=torch.float64, device="tpu:2").copy_(a.t())
    assert whole.device == torch.device("tpu:1") and into.device == torch.device("tpu:2")
    assert torch.equal(whole.cpu(), x)
    assert torch.equal(transposed.cpu(), x.t())
    assert torch.equal(into.cpu(), x.t().double())
    assert whole.stride() == x.stride() and transposed.stride() == x.t().clone().stride()
    assert device_copies() - before == 3  # each source reached the other chip without the host
    stats = torch.tpu.op_stats()
    assert stats["driver_fallback"] == {} and stats["fallback"] == {}, stats
    assert torch.equal(a.cpu(), x)  # the source is as it was


def test_a_model_trains_on_each_chip_as_on_cpu(eager_mode: str) -> None:
    torch.manual_seed(0)
    reference = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    g = torch.Generator().manual_seed(1)
    batches = [(torch.randn(6, 8, generator=g), torch.randn(6, 4, generator=g)) for _ in range(4)]

    def train(device: str) -> list[float]:
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
        model.load_state_dict(reference.state_dict())
        model = model.to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        losses = []
        for x, y in batches:
            loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
            assert loss.device == torch.device(device)
            losses.append(loss.item())
        return losses

    cpu = train("cpu")
    for device in ("tpu:0", "tpu:1", "tpu:3"):
        # float32 sums of 8 and 16 products each step, 4 steps: a few ulps of ~1 apart.
        assert train(device) == pytest.approx(cpu, rel=1e-5, abs=1e-6)


def test_mixing_chips_in_one_op_is_refused_and_the_process_stays_usable() -> None:
    a, b = torch.ones(3, device="tpu:0"), torch.ones(3, device="tpu:1")
    with pytest.raises(RuntimeError, match="same device"):
        torch.add(a, b)
    assert (a + a).cpu().tolist() == [2.0, 2.0, 2.0]
