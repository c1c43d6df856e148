"""Under a limit on the address space (`ulimit -v` on shared clusters, small containers) the
runtime's reservations (each chip's arena, its pending-buffer range, the pinned host range) shrink
to fit: ops run and a model trains in every eager mode, the capacity the device reports is one its
arena holds, and fused mode without room for its pending range runs as strict mode after one
warning."""

from __future__ import annotations

import pytest
from _subprocess_helpers import check_python

GiB = 1 << 30

# A tiny MLP trained for a few steps in each mode, on tpu and on CPU from the same start; the
# parameters must agree. Prints the device's capacity.
TRAIN = """
    import resource
    limit = {limit}
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
    import torch

    def train(device, mode):
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
        ).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x = torch.randn(64, 16).to(device)
        y = torch.randn(64, 4).to(device)
        for _ in range(3):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
        return [p.detach().cpu() for p in model.parameters()]

    want = train("cpu", None)
    for mode in ("debug", "strict", "fused"):
        torch.tpu.set_eager_mode(mode)
        got = train("tpu", mode)
        torch.tpu.synchronize()
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
        z = torch.arange(1000.0, device="tpu").reshape(10, 100)
        assert float((z * 2).sum(1).max().item()) == 2 * sum(range(900, 1000)), mode
    torch.tpu.set_eager_mode("strict")
    props = torch.tpu.get_device_properties(0)
    free, total = torch.tpu.mem_get_info(0)
    assert total == props.total_memory
    print(props.total_memory)
"""


@pytest.mark.parametrize(
    "limit",
    [
        pytest.param(16_000_000 * 1024, id="ulimit-v-16000000"),
        pytest.param(8 * GiB, id="8GiB"),
        pytest.param(0, id="unlimited"),
    ],
)
def test_ops_and_training_under_a_limit(limit: int) -> None:
    result = check_python(TRAIN.format(limit=limit), timeout=300)
    capacity = int(result.stdout.split()[-1])
    assert "fused mode is off" not in result.stderr
    if limit:
        # The arena (twice the capacity) and the pending range (once) fit in half the limit.
        assert 2 << 20 <= capacity <= limit // 2 // 3


def test_fused_mode_without_room_for_its_pending_range_runs_strict() -> None:
    code = """
        import resource
        import torch
        x = torch.arange(4096.0, device="tpu")  # strict: the arena is reserved now
        torch.tpu.synchronize()
        # Leave the process no room for a pending range.
        with open("/proc/self/statm") as f:
            mapped = int(f.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (mapped + (256 << 20), resource.RLIM_INFINITY))
        torch.tpu.set_eager_mode("fused")
        for _ in range(3):
            y = (x * 2 + 1).relu()
        assert float(y.sum().item()) == float((torch.arange(4096.0) * 2 + 1).sum())
        stats = torch.tpu.fused_stats()
        torch.tpu.set_eager_mode("strict")
        print(stats["nodes"])
    """
    result = check_python(code)
    assert result.stderr.count("fused mode is off") == 1, result.stderr
    assert int(result.stdout.split()[-1]) == 0  # nothing was recorded in a graph
