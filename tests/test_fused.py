"""Fused eager mode (DeferAndFuse): the mode API, cut reasons, the compile cache on a repeated
training step, memory never given to dead intermediates, and fused == strict on bench's GPT."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
import torch

from bench.models import MODELS, build_model
from tests._subprocess_helpers import run_python

DEV = "tpu"


@pytest.fixture
def fused() -> Iterator[None]:
    torch.tpu.synchronize()
    with torch.tpu.eager_mode("fused"):
        torch.tpu.reset_fused_stats()
        yield
        torch.tpu.synchronize()


def cuts() -> dict[str, int]:
    return torch.tpu.fused_stats()["flushes"]


def test_mode_api_nesting_restores() -> None:
    assert torch.tpu.get_eager_mode() == "strict"
    with torch.tpu.eager_mode("fused"):
        assert torch.tpu.get_eager_mode() == "fused"
        with torch.tpu.eager_mode("debug"):
            assert torch.tpu.get_eager_mode() == "debug"
            assert torch_tpu_launch_blocking()
        assert torch.tpu.get_eager_mode() == "fused"
        assert not torch_tpu_launch_blocking()
    assert torch.tpu.get_eager_mode() == "strict"
    with pytest.raises(ValueError, match="eager mode"):
        torch.tpu.set_eager_mode("lazy")
    with pytest.raises(ValueError, match="eager mode"), torch.tpu.eager_mode("eager"):
        pass


def torch_tpu_launch_blocking() -> bool:
    import torch_tpu

    return torch_tpu._C._launch_blocking()


def test_mode_is_thread_local() -> None:
    seen: list[str] = []
    with torch.tpu.eager_mode("fused"):
        t = threading.Thread(target=lambda: seen.append(torch.tpu.get_eager_mode()))
        t.start()
        t.join()
        assert torch.tpu.get_eager_mode() == "fused"
    assert seen == ["strict"]


def test_debug_mode_is_thread_local() -> None:
    # A thread in debug mode on its own stream blocks; this thread's launches stay asynchronous.
    inside, leave = threading.Event(), threading.Event()
    seen: list[bool] = []

    def debug_thread() -> None:
        with torch.tpu.stream(torch.tpu.Stream()), torch.tpu.eager_mode("debug"):
            seen.append(torch_tpu_launch_blocking())
            inside.set()
            leave.wait()

    t = threading.Thread(target=debug_thread)
    t.start()
    try:
        assert inside.wait(60)
        assert not torch_tpu_launch_blocking()
        y = torch.ones(2, device=DEV)[torch.tensor([5], device=DEV)]  # out of range
        with pytest.raises(RuntimeError, match="asynchronous error occurred in tpu op .index."):
            torch.tpu.synchronize()  # strict: the error surfaces here, not at the op
    finally:
        leave.set()
        t.join()
    assert seen == [True]
    del y


def test_backward_keeps_debug_mode_on_autograd_thread() -> None:
    x = torch.zeros(3, device=DEV, requires_grad=True)
    with torch.tpu.eager_mode("debug"), torch.tpu.debug_nan_check():
        y = x.sqrt().sum()  # sqrt(0) is finite; its gradient is not
        with pytest.raises(RuntimeError, match="produced inf"):
            y.backward()  # checked at the op on autograd's device thread, so raised here


def test_set_eager_mode_is_process_wide() -> None:
    torch.tpu.set_eager_mode("fused")
    try:
        seen: list[str] = []
        t = threading.Thread(target=lambda: seen.append(torch.tpu.get_eager_mode()))
        t.start()
        t.join()
        assert seen == ["fused"]
    finally:
        torch.tpu.set_eager_mode("strict")


@pytest.mark.parametrize(
    ("env", "mode"),
    [
        ({"TORCH_TPU_EAGER_MODE": "fused"}, "fused"),
        ({"TORCH_TPU_EAGER_MODE": "debug"}, "debug"),
        ({"TORCH_TPU_DEFER_AND_FUSE": "1"}, "fused"),
        ({"TORCH_TPU_LAUNCH_BLOCKING": "1"}, "debug"),
        ({"TORCH_TPU_EAGER_MODE": "strict", "TORCH_TPU_LAUNCH_BLOCKING": "1"}, "strict"),
    ],
)
def test_mode_from_environment(env: dict[str, str], mode: str) -> None:
    code = """
        import torch
        x = torch.ones(8, device="tpu") * 2
        print(torch.tpu.get_eager_mode(), torch.tpu.is_materialized(x), x.sum().item())
    """
    proc = run_python(code, env=env)
    assert proc.returncode == 0, proc.stderr
    deferred = mode == "fused"
    assert proc.stdout.split() == [mode, str(not deferred), "16.0"]


def test_ops_are_deferred_until_a_host_read(fused: None) -> None:
    x = torch.arange(6, dtype=torch.float32, device=DEV)
    torch.tpu.synchronize()
    torch.tpu.reset_fused_stats()
    y = (x * 2 + 1).relu()
    assert not torch.tpu.is_materialized(y)
    text = torch.tpu.dump_pending_graph()
    assert "mul" in text and "add" in text
    assert torch.tpu.dump_pending_graph(dot=True).startswith("digraph")
    assert y.cpu().tolist() == [1.0, 3.0, 5.0, 7.0, 9.0, 11.0]
    assert torch.tpu.is_materialized(y)
    assert cuts() == {"host_read": 1}
    assert torch.tpu.dump_pending_graph() == ""


@pytest.mark.parametrize(
    ("trigger", "reason"),
    [
        (lambda y: torch.tpu.synchronize(), "sync"),
        (lambda y: torch.tpu.current_stream().synchronize(), "sync"),
        (lambda y: y.item(), "host_read"),
        (lambda y: torch.tpu.current_stream().query(), "query"),
        (lambda y: torch.tpu.current_stream().record_event(), "event"),
        (lambda y: torch.tpu.set_eager_mode("fused"), "mode_switch"),
        (lambda y: torch.linalg.matrix_exp(y.reshape(1, 1)), "fallback"),
    ],
)
def test_cut_reasons(fused: None, trigger: Callable[[torch.Tensor], object], reason: str) -> None:
    x = torch.ones(1, device=DEV)
    torch.tpu.synchronize()
    torch.tpu.reset_fused_stats()
    y = x * 3
    try:
        trigger(y)
    finally:
        torch.tpu.set_eager_mode("strict")
    assert cuts().get(reason, 0) == 1
    assert y.item() == 3.0


def test_ops_with_absent_operands_are_deferred(fused: None) -> None:
    x = torch.randn(4, 8)
    dev = x.to(DEV)
    torch.tpu.synchronize()
    torch.tpu.reset_fused_stats()
    y = torch.nn.functional.layer_norm(dev * 2, [8])  # no weight, no bias: absent operands
    assert not torch.tpu.is_materialized(y)
    torch.testing.assert_close(y.cpu(), torch.nn.functional.layer_norm(x * 2, [8]))
    assert cuts() == {"host_read": 1}


def test_backward_cuts_where_it_starts_and_ends(fused: None) -> None:
    w = torch.ones(8, device=DEV, requires_grad=True)
    torch.tpu.synchronize()
    torch.tpu.reset_fused_stats()
    for _ in range(3):
        (w * 2).sum().backward()
    # Each forward graph is cut when its backward starts, each backward graph when it ends.
    assert cuts() == {"backward_start": 3, "backward": 3}
    # The optimizer-style update after the last backward is the open graph, still deferred.
    with torch.no_grad():
        w -= w.grad
    assert torch.tpu.dump_pending_graph() != ""
    assert w.tolist() == [-5.0] * 8


def test_materializing_a_pending_buffer_elsewhere_cuts_the_graph(fused: None) -> None:
    x = torch.ones(4, device=DEV)
    torch.tpu.synchronize()
    side = torch.tpu.Stream()
    torch.tpu.reset_fused_stats()
    y = x + 1
    with torch.tpu.stream(side):
        z = y * 2  # another stream's graph needs y live: y's graph is cut and queued
    assert cuts() == {"materialize": 1}
    # As on CUDA, reading y on another stream needs an order: here y's stream finishes before the
    # side stream's graph is queued.
    torch.tpu.current_stream().synchronize()
    side.synchronize()
    assert z.tolist() == [4.0] * 4


def test_record_stream_materializes_a_pending_buffer(fused: None) -> None:
    x = torch.ones(4, device=DEV)
    torch.tpu.synchronize()
    torch.tpu.reset_fused_stats()
    side = torch.tpu.Stream()
    y = x + 1
    y.record_stream(side)  # recorded on its memory, which it needs now
    assert torch.tpu.is_materialized(y)
    assert cuts() == {"materialize": 1}
    assert y.tolist() == [2.0] * 4


def test_graph_size_cap(fused: None) -> None:
    x = torch.zeros(4, device=DEV)
    torch.tpu.synchronize()
    torch.tpu.reset_fused_stats()
    for _ in range(2100):
        x = x + 1
    assert cuts() == {"graph_cap": 2}
    assert x.tolist() == [2100.0] * 4


def test_errors_surface_at_the_sync_naming_the_op(fused: None) -> None:
    x = torch.arange(4.0, device=DEV)
    idx = torch.tensor([0, 7], device=DEV)
    y = x.index_select(0, idx) + 1
    with pytest.raises(RuntimeError, match="index_select"):
        torch.tpu.synchronize()
    with pytest.raises(RuntimeError, match="index_select"):
        y.cpu()
    assert (x + 1).tolist() == [1.0, 2.0, 3.0, 4.0]


def test_dead_intermediates_never_get_memory(fused: None) -> None:
    n = 1 << 20
    x = torch.ones(n, device=DEV)
    torch.tpu.synchronize()
    torch.tpu.reset_peak_memory_stats()
    base = torch.tpu.memory_allocated()
    y = x
    for _ in range(8):
        y = y * 1.5 + 1  # two dead intermediates per step
    total = y.sum()
    del y
    value = 1.0
    for _ in range(8):
        value = value * 1.5 + 1
    assert total.item() == pytest.approx(n * value, rel=1e-6)
    # Only x, the result and at most a few tiles beyond it ever had memory.
    assert torch.tpu.max_memory_allocated() - base < 2 * 4 * n


def test_graphs_differing_in_an_attribute_get_their_own_plan(fused: None) -> None:
    # Equal structure but for a scalar that selects what an op computes (sum vs mean, the
    # log_softmax dimension of cross-entropy's backward): a cached plan must not serve both.
    x = torch.ones(1000, device=DEV)
    torch.tpu.synchronize()
    for _ in range(2):
        assert (x * x).sum().item() == 1000.0
        assert (x * x).mean().item() == 1.0
    logits_cpu = torch.randn(6, 5)
    target = torch.tensor([0, 1, 2, 3, 4, 0])
    for dim in (1, 0, 1):
        grads = []
        for device in ("cpu", DEV):
            logits = logits_cpu.to(device).detach().requires_grad_()
            loss = torch.nn.functional.nll_loss(
                torch.log_softmax(logits, dim), target.to(device), reduction="sum"
            )
            loss.backward()
            grads.append(logits.grad.cpu())
        torch.testing.assert_close(grads[1], grads[0])


def test_repeated_training_step_hits_the_cache() -> None:
    torch.manual_seed(0)
    model = build_model("gpt-tiny", 0).to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(0)
    batches = [tuple(t.to(DEV) for t in MODELS["gpt-tiny"].batch(gen)) for _ in range(3)]
    torch.tpu.synchronize()
    with torch.tpu.eager_mode("fused"):
        stats = []
        for idx, targets in batches:
            torch.tpu.reset_compile_cache_stats()
            opt.zero_grad(set_to_none=True)
            loss = model(idx, targets)
            loss.backward()
            opt.step()
            loss.item()
            stats.append(torch.tpu.compile_cache_stats())
    assert stats[2]["hits"] > 0
    assert stats[2]["compiles"] == 0


def gpt_losses(mode: str, steps: int = 3) -> list[float]:
    model = build_model("gpt-tiny", 0).to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(1)
    losses = []
    with torch.tpu.eager_mode(mode):
        for _ in range(steps):
            idx, targets = (t.to(DEV) for t in MODELS["gpt-tiny"].batch(gen))
            opt.zero_grad(set_to_none=True)
            loss = model(idx, targets)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses


def test_fused_matches_strict_on_gpt_training() -> None:
    strict = gpt_losses("strict")
    fused = gpt_losses("fused")
    assert fused == pytest.approx(strict, rel=1e-5, abs=1e-6)


def assert_fused_is_strict_and_near_cpu(
    cpu: list[torch.Tensor],
    strict: list[torch.Tensor],
    fused: list[torch.Tensor],
    rtol: float,
    atol: float,
) -> None:
    """Fused mode gives strict mode's bits, and both are close to PyTorch on CPU."""
    for c, s, f in zip(cpu, strict, fused, strict=True):
        assert torch.equal(f, s)
        torch.testing.assert_close(f, c, rtol=rtol, atol=atol)


def adamw_params(mode: str, device: str) -> tuple[list[torch.Tensor], dict[str, object]]:
    """Two foreach AdamW steps on parameters of distinct sizes (the optimizer records its ops
    interleaved across them); the parameters after, and the fused stats of the second step."""
    gen = torch.Generator().manual_seed(3)
    shapes = [(7, 5), (33,), (4, 6, 3), (129,), (2, 50)]
    params = [torch.nn.Parameter(torch.randn(s, generator=gen).to(device)) for s in shapes]
    grads = [[torch.randn(s, generator=gen).to(device) for s in shapes] for _ in range(2)]
    opt = torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1, foreach=True)
    with torch.tpu.eager_mode(mode):
        for step in range(2):
            for p, g in zip(params, grads[step], strict=True):
                p.grad = g
            torch.tpu.synchronize()
            torch.tpu.reset_fused_stats()
            opt.step()
            torch.tpu.synchronize()
        return [p.detach().cpu() for p in params], torch.tpu.fused_stats()


def test_foreach_adamw_step_fuses_per_parameter_and_matches() -> None:
    cpu, _ = adamw_params("strict", "cpu")
    strict, _ = adamw_params("strict", DEV)
    fused, stats = adamw_params("fused", DEV)
    # The host kernels and ATen's vectorized CPU kernels may round an element differently.
    assert_fused_is_strict_and_near_cpu(cpu, strict, fused, rtol=1e-6, atol=1e-8)
    # Eight updates per parameter (decay, both moments, the denominator, the parameter): as
    # recorded no two neighbours have the same size; reordered, each parameter's chain is one step.
    assert stats["fused_nodes"] == 8 * len(cpu)
    assert stats["fused_steps"] == stats["steps"] == len(cpu)


def mlp_step(mode: str, device: str) -> tuple[list[torch.Tensor], dict[str, object]]:
    """Forward and backward of two linears with a GELU and a residual add; the output, the
    gradients, and the fused stats of the step."""
    gen = torch.Generator().manual_seed(5)
    # Large enough for epilogues (FZ_EPILOGUE_MIN_WORK): 256 x 256 x 64 multiply-adds per GEMM.
    x = torch.randn(256, 64, generator=gen)
    fc1, fc2 = torch.nn.Linear(64, 256), torch.nn.Linear(256, 64)
    with torch.no_grad():
        for p in (*fc1.parameters(), *fc2.parameters()):
            p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
    fc1, fc2 = fc1.to(device), fc2.to(device)
    x = x.to(device).requires_grad_()
    with torch.tpu.eager_mode(mode):
        torch.tpu.synchronize()
        torch.tpu.reset_fused_stats()
        y = fc2(torch.nn.functional.gelu(fc1(x))) + x
        y.square().sum().backward()
        torch.tpu.synchronize()
        grads = [t.grad for t in (x, *fc1.parameters(), *fc2.parameters())]
        return [t.detach().cpu() for t in (y, *grads)], torch.tpu.fused_stats()


def test_gemm_epilogues_match_strict_bit_for_bit() -> None:
    cpu, _ = mlp_step("strict", "cpu")
    strict, _ = mlp_step("strict", DEV)
    fused, stats = mlp_step("fused", DEV)
    # MKL's GEMMs and OpenBLAS's sum in different orders.
    assert_fused_is_strict_and_near_cpu(cpu, strict, fused, rtol=1e-4, atol=1e-4)
    # Forward: fc1's GELU and fc2's residual add; backward: the GELU's backward after fc2's input
    # gradient (moved there past the weight gradient's GEMM).
    assert stats["gemm_epilogues"] == 3


def test_same_seed_same_random_stream_in_every_mode() -> None:
    draws = {}
    for mode in ("strict", "debug", "fused"):
        with torch.tpu.eager_mode(mode):
            torch.manual_seed(123)
            a = torch.rand(64, device=DEV)
            b = torch.nn.functional.dropout(torch.ones(64, device=DEV), 0.5)
            draws[mode] = torch.cat([a, b]).cpu()
    assert torch.equal(draws["strict"], draws["debug"])
    assert torch.equal(draws["strict"], draws["fused"])


def test_backward_runs_fused_on_autograd_thread() -> None:
    x = torch.ones(64, device=DEV, requires_grad=True)
    torch.tpu.synchronize()
    with torch.tpu.eager_mode("fused"):
        torch.tpu.reset_fused_stats()
        loss = (x * 3).relu().sum()
        loss.backward()  # on autograd's device thread, which has no thread override
        # The forward graph is cut where backward starts, the backward graph where it ends.
        assert cuts() == {"backward_start": 1, "backward": 1}
        assert torch.tpu.fused_stats()["nodes"] >= 4
        assert x.grad.tolist() == [3.0] * 64
