"""torch.compile on tpu: backend "tpu" and the default compiler route compiled models, steps and
functions to fused graphs whose results match PyTorch CPU eager, in every eager mode around them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import test_models
import torch
import torch._dynamo
import torch.nn.functional as F
from test_models import CASES
from torch import nn

import torch_tpu.compile


@pytest.fixture(autouse=True)
def fresh_dynamo() -> Iterator[None]:
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def close(actual: torch.Tensor, expected: torch.Tensor, **tol: float) -> None:
    assert actual.device.type == "tpu"
    torch.testing.assert_close(actual.cpu(), expected, **tol)
    assert actual.stride() == expected.stride()


def train(
    name: str, device: str, compiled: dict[str, object] | None, steps: int = 3
) -> tuple[list[float], list[torch.Tensor]]:
    """SGD steps of a test model, compiled with torch.compile(**compiled) when given."""
    return test_models.train(name, device, "sgd", steps, compiled)


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_models_train_as_cpu(eager_mode: str, name: str) -> None:
    cpu_losses, cpu_params = train(name, "cpu", None)
    torch.tpu.reset_fused_stats()
    torch.tpu.reset_op_stats()
    torch_tpu.compile.reset_replay_stats()
    # Dynamo leaves frames with an nn.LSTM to eager unless told otherwise, as on CUDA.
    with torch._dynamo.config.patch(allow_rnn=True):
        losses, params = train(name, "tpu", {"backend": "tpu"})
    torch.testing.assert_close(losses, cpu_losses, rtol=1e-4, atol=1e-5)
    for a, b in zip(params, cpu_params, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    # Forward and backward each ran as a compiled fused graph; nothing fell back to the CPU.
    assert torch.tpu.fused_stats()["flushes"].get("compiled", 0) >= 2 * 3
    assert torch.tpu.fallback_stats() == {}
    # The first step recorded and captured each graph; the later ones replayed them.
    assert torch_tpu.compile.replay_stats() == {"recorded": 2, "captured": 2, "replayed": 4}


def test_default_compiler_runs_tpu_graphs_on_backend_tpu() -> None:
    """torch.compile(fn) would give a tpu graph to Inductor's Pallas generator (JAX)."""
    cpu_losses, _ = train("mlp", "cpu", None, steps=2)
    torch.tpu.reset_fused_stats()
    losses, _ = train("mlp", "tpu", {}, steps=2)
    torch.testing.assert_close(losses, cpu_losses, rtol=1e-4, atol=1e-5)
    assert torch.tpu.fused_stats()["flushes"]["compiled"] >= 4
    # Every mode of torch.compile runs the same way.
    fn = torch.compile(lambda t: torch.tanh(t) * 2, mode="max-autotune")
    x = torch.randn(5, 3)
    close(fn(x.to("tpu")), torch.tanh(x) * 2)


def test_a_graph_that_makes_tpu_tensors_goes_to_backend_tpu() -> None:
    def make() -> torch.Tensor:
        return torch.arange(6, device="tpu", dtype=torch.float32).reshape(2, 3) * 2

    close(torch.compile(make)(), torch.arange(6, dtype=torch.float32).reshape(2, 3) * 2)


def test_backend_is_listed_and_bad_options_raise() -> None:
    assert "tpu" in torch._dynamo.list_backends()
    x = torch.randn(3, device="tpu")
    with pytest.raises(Exception, match="mode must be one of"):
        torch.compile(torch.sin, backend="tpu", mode="fastest")(x)
    with pytest.raises(Exception, match="takes only the option"):
        torch.compile(torch.sin, backend="tpu", options={"unroll": True})(x)
    with pytest.raises(Exception, match=r"must be a number in \(0, 1\]"):
        torch.compile(torch.sin, backend="tpu", options={"activation_memory_budget": 2})(x)
    close(torch.compile(torch.sin, backend="tpu")(x), torch.sin(x.cpu()))


def test_activation_memory_budget_trades_saved_results_for_recomputation() -> None:
    def fn(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return (torch.tanh(torch.sigmoid(x @ w) * 3).exp() @ w.t()).sum()

    x, w = torch.randn(256, 256), torch.randn(256, 256)
    cx, cw = x.clone().requires_grad_(), w.clone().requires_grad_()
    fn(cx, cw).backward()
    kept = {}
    for budget in (1.0, 0.2):
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="tpu", options={"activation_memory_budget": budget})
        tx, tw = x.to("tpu").requires_grad_(), w.to("tpu").requires_grad_()
        torch.tpu.synchronize()
        before = torch.tpu.memory_allocated()
        out = compiled(tx, tw)
        torch.tpu.synchronize()
        kept[budget] = torch.tpu.memory_allocated() - before  # what forward keeps for backward
        out.backward()
        # Each gradient element sums 256 float32 products: the BLAS's order may differ by up to
        # 256 roundings of the largest element (CPU's differs by machine).
        for got, want in ((tx.grad, cx.grad), (tw.grad, cw.grad)):
            atol = 256 * torch.finfo(torch.float32).eps * float(want.abs().max())
            close(got, want, rtol=1e-4, atol=atol)
    assert kept[0.2] < kept[1.0], kept


def test_attention_is_never_recomputed_and_its_graphs_replay() -> None:
    """Even the smallest budget keeps attention's results for backward (recomputing it costs
    what it saves), and its Philox seed and offset live on the chip, so the graphs replay."""
    build, make_batch = CASES["gpt"]
    torch.manual_seed(0)
    model = build().to("tpu")
    compiled = torch.compile(model, backend="tpu", options={"activation_memory_budget": 0.05})
    x, y = make_batch(torch.Generator().manual_seed(1))
    torch_tpu.compile.reset_replay_stats()
    for step in range(2):
        torch.tpu.reset_op_stats()
        compiled(x.to("tpu"), y.to("tpu")).backward()
        native = torch.tpu.op_stats()["native"]
        assert native["scaled_dot_product_attention"] == len(model.blocks), step
        assert native["scaled_dot_product_attention_backward"] == len(model.blocks), step
    assert torch_tpu.compile.replay_stats() == {"recorded": 2, "captured": 2, "replayed": 2}


def test_device_interface_is_torch_tpu() -> None:
    from torch._dynamo.device_interface import get_interface_for_device

    torch.compile(torch.cos, backend="tpu")(torch.ones(2, device="tpu"))
    interface = get_interface_for_device("tpu")
    assert interface is torch_tpu.compile.device_interface()
    assert interface.device_count() == torch.tpu.device_count()
    assert interface.current_stream() == torch.tpu.current_stream()
    assert interface.get_device_properties().name == torch.tpu.get_device_name()
    event = interface.Event()
    event.record()
    interface.synchronize()
    assert event.query()


def test_streams_and_events_inside_a_compiled_function() -> None:
    side = torch.tpu.Stream()

    @torch.compile(backend="tpu")
    def fn(x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        side.wait_stream(torch.tpu.current_stream())
        with torch.tpu.stream(side):
            z = y + 1
        torch.tpu.current_stream().wait_stream(side)
        return z * 3

    x = torch.randn(8)
    close(fn(x.to("tpu")), (x * 2 + 1) * 3)


def test_graph_breaks_run_each_piece(eager_mode: str) -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(x) + 1
        if y.sum().item() > 0:  # a data-dependent branch: Dynamo breaks the graph here
            y = y * 2
        torch._dynamo.graph_break()
        return torch.softmax(y, dim=-1)

    x = torch.randn(4, 5)
    compiled = torch.compile(fn, backend="tpu")
    close(compiled(x.to("tpu")), fn(x))
    close(compiled(-x.abs().to("tpu") - 5), fn(-x.abs() - 5))


def test_in_place_ops_and_views(eager_mode: str) -> None:
    def fn(x: torch.Tensor, buf: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        buf.add_(1)  # a mutated input is written back
        t = x.t()
        t[0].mul_(3)  # through a view of the input
        x[:, 1:3] = buf[:2].unsqueeze(0)
        return x.view(-1)[::2], t.sum(0)

    x, buf = torch.randn(4, 5), torch.randn(3)
    bx, bbuf = x.to("tpu"), buf.to("tpu")
    expected = fn(x, buf)
    actual = torch.compile(fn, backend="tpu")(bx, bbuf)
    for a, e in zip(actual, expected, strict=True):
        close(a, e)
    close(bx, x)
    close(bbuf, buf)


def test_dropout_under_compile_keeps_its_mask_for_backward(eager_mode: str) -> None:
    p = 0.3

    @torch.compile(backend="tpu")
    def fn(x: torch.Tensor) -> torch.Tensor:
        return F.dropout(x, p=p, training=True) * 2

    x = torch.ones(64, 64, device="tpu", requires_grad=True)
    torch_tpu.compile.reset_replay_stats()
    torch.tpu.manual_seed(7)
    y = fn(x)
    y.sum().backward()
    kept = (y != 0).cpu()
    assert 0.6 < kept.float().mean().item() < 0.8
    close(y.detach(), kept.float() * 2 / (1 - p))
    close(x.grad, kept.float() * 2 / (1 - p))
    torch.tpu.manual_seed(7)
    close(fn(x).detach(), y.detach().cpu())  # the same seed draws the same mask
    # The second call replayed, drawing from the generator as a recorded call does: eager mode's
    # masks come in the same order.
    torch.tpu.manual_seed(7)
    masks = [fn(x).detach().cpu() != 0 for _ in range(3)]
    torch.tpu.manual_seed(7)
    eager = [F.dropout(x.detach(), p=p, training=True).cpu() != 0 for _ in range(3)]
    assert all(torch.equal(m, e) for m, e in zip(masks, eager, strict=True))
    assert not torch.equal(masks[0], masks[1])
    assert torch_tpu.compile.replay_stats()["replayed"] >= 4


def test_no_grad_and_inference_mode(eager_mode: str) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 2))
    compiled = torch.compile(model.to("tpu"), backend="tpu")
    x = torch.randn(3, 6)
    with torch.no_grad():
        expected = model.cpu()(x)
        model.to("tpu")
        out = compiled(x.to("tpu"))
        assert not out.requires_grad
        close(out, expected, rtol=1e-5, atol=1e-6)
    with torch.inference_mode():
        out = compiled(x.to("tpu"))
        assert out.is_inference()
        close(out, expected, rtol=1e-5, atol=1e-6)


def test_autocast_inside_a_compiled_function() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    x = torch.randn(8, 16)

    def fn(m: nn.Module, t: torch.Tensor, device: str) -> torch.Tensor:
        with torch.autocast(device, dtype=torch.bfloat16):
            return m(t)

    expected = fn(model, x, "cpu")
    compiled = torch.compile(fn, backend="tpu")
    out = compiled(model.to("tpu"), x.to("tpu"), "tpu")
    assert out.dtype == torch.bfloat16
    close(out, expected, rtol=2e-2, atol=2e-2)


def test_compiled_optimizer_step_matches_cpu(eager_mode: str) -> None:
    def run(device: str, compiled: bool) -> list[torch.Tensor]:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 2)).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)

        def step() -> None:
            opt.step()

        do_step = torch.compile(step, backend="tpu") if compiled else step
        gen = torch.Generator().manual_seed(1)
        for _ in range(3):
            x = torch.randn(4, 8, generator=gen).to(device)
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            do_step()
        return [p.detach().cpu() for p in model.parameters()]

    for a, b in zip(run("tpu", True), run("cpu", False), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_new_shapes_recompile_once_and_are_cached() -> None:
    graphs: list[int] = []

    def counting(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        graphs.append(len(gm.graph.nodes))
        return torch_tpu.compile.backend(gm, example_inputs)

    fn = torch.compile(lambda t: torch.sigmoid(t) * t, backend=counting, dynamic=False)
    for shape in [(4, 4), (4, 4), (2, 8), (2, 8), (4, 4)]:
        x = torch.randn(shape)
        close(fn(x.to("tpu")), torch.sigmoid(x) * x)
    assert len(graphs) == 2


def test_dynamic_shapes_run_one_graph_for_every_size(eager_mode: str) -> None:
    graphs: list[int] = []

    def counting(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        graphs.append(len(gm.graph.nodes))
        return torch_tpu.compile.backend(gm, example_inputs)

    def fn(t: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(t, t.shape[-1:]) * 3

    dynamic = torch.compile(fn, backend=counting, dynamic=True)
    marked = torch.compile(fn, backend=counting)
    torch_tpu.compile.reset_replay_stats()
    for n in (3, 5, 9, 3):
        x = torch.randn(n, 6)
        close(dynamic(x.to("tpu")), fn(x), rtol=1e-5, atol=1e-5)
        on_tpu = x.to("tpu")
        torch._dynamo.mark_dynamic(on_tpu, 0)
        close(marked(on_tpu), fn(x), rtol=1e-5, atol=1e-5)
    assert len(graphs) == 2  # one for each compiled function, whatever the size
    # The capture holds the first call's sizes: other sizes record, the first again replays.
    assert torch_tpu.compile.replay_stats() == {"recorded": 6, "captured": 2, "replayed": 2}


def test_an_op_without_a_native_kernel_becomes_a_fallback_island(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        return torch.linalg.matrix_exp(x * 2) + 1  # matrix_exp has no native kernel

    x = torch.randn(3, 3)
    torch.tpu.reset_op_stats()
    torch_tpu.compile.reset_replay_stats()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        close(torch.compile(fn, backend="tpu")(x.to("tpu")), fn(x), rtol=1e-5, atol=1e-6)
    assert any("matrix_exp" in op for op in torch.tpu.fallback_stats())
    assert torch_tpu.compile.replay_stats().get("refused: a host read") == 1
    # Complex numbers are not stored natively either: they run on the host, the same way.
    c = torch.randn(6, dtype=torch.complex64)
    close(torch.compile(lambda t: t * t.conj(), backend="tpu")(c.to("tpu")), c * c.conj())


def test_replay_writes_mutated_inputs_and_keeps_views_of_inputs(eager_mode: str) -> None:
    """Later calls replay the first call's op calls: an input the graph writes is written again
    and its version moves as in a recorded call; an output viewing an input views the new one."""

    def fn(x: torch.Tensor, buf: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        buf.add_(1)
        return x * buf.sum(), x.view(-1)[::2]

    compiled = torch.compile(fn, backend="tpu")
    torch_tpu.compile.reset_replay_stats()
    x, buf = torch.randn(4, 5), torch.randn(3)
    bx, bbuf = x.to("tpu"), buf.to("tpu")
    versions = []
    for _ in range(3):
        before = bbuf._version
        expected = fn(x, buf)
        actual = compiled(bx, bbuf)
        for a, e in zip(actual, expected, strict=True):
            close(a, e)
        assert actual[1].data_ptr() == bx.data_ptr()
        close(bbuf, buf)
        versions.append(bbuf._version - before)
    assert versions[0] > 0 and versions[1:] == versions[:1] * 2
    assert torch_tpu.compile.replay_stats() == {"recorded": 1, "captured": 1, "replayed": 2}


def test_replay_refuses_inputs_laid_out_otherwise_and_records_them() -> None:
    """Dynamo does not guard storage offsets: a view at another offset reaches the same graph,
    whose capture then does not fit, so that call records its ops as the first did."""
    compiled = torch.compile(lambda t: t * 2 + 1, backend="tpu")
    torch_tpu.compile.reset_replay_stats()
    base = torch.randn(3, 8)
    tbase = base.to("tpu")
    for row in (0, 1, 0, 2):
        close(compiled(tbase[row]), base[row] * 2 + 1)
    assert torch_tpu.compile.replay_stats() == {"recorded": 3, "captured": 1, "replayed": 1}


def test_replay_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCH_TPU_COMPILE_REPLAY", "0")
    compiled = torch.compile(lambda t: t.exp().sum(), backend="tpu")
    torch_tpu.compile.reset_replay_stats()
    x = torch.randn(5)
    for _ in range(3):
        close(compiled(x.to("tpu")), x.exp().sum())
    stats = torch_tpu.compile.replay_stats()
    assert stats == {"recorded": 3, "refused: TORCH_TPU_COMPILE_REPLAY=0": 1}


def test_a_compiled_graph_that_cannot_run_raises_and_the_process_goes_on() -> None:
    code = """
import torch
fn = torch.compile(lambda t: torch.linalg.matrix_exp(t) + 1, backend="tpu")
try:
    fn(torch.ones(3, 3, device="tpu"))
except NotImplementedError as e:
    assert "matrix_exp" in str(e), e
    print("raised")
ok = torch.compile(lambda t: t * 2, backend="tpu")(torch.ones(3, device="tpu"))
assert ok.cpu().tolist() == [2.0, 2.0, 2.0]
print("usable")
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "TORCH_TPU_CPU_FALLBACK": "0"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["raised", "usable"]


def test_torchtpu_eager_mode_names() -> None:
    try:
        torch.tpu.set_eager_mode(torch.tpu.EagerMode.DEFER_AND_FUSE)
        assert torch.tpu.get_eager_mode() == "fused" == torch.tpu.EagerMode.DEFER_AND_FUSE
        torch.tpu.set_eager_mode("DEFER_NEVER_AND_LAUNCH_BLOCKING")
        assert torch.tpu.get_eager_mode() == "debug"
        with torch.tpu.eager_mode(torch.tpu.EagerMode.DEFER_NEVER):
            assert torch.tpu.get_eager_mode() == "strict"
        with pytest.raises(ValueError, match="DEFER_AND_FUSE"):
            torch.tpu.set_eager_mode("DEFER_SOMETIMES")
    finally:
        torch.tpu.set_eager_mode("strict")


def test_gpt_with_dynamic_shapes_matches_cpu() -> None:
    """Attention's backend choice sees symbolic sizes when Dynamo makes a graph dynamic (a second
    model of the same class with other sizes, or dynamic=True)."""
    from bench.models import GPT

    torch.manual_seed(0)
    model = GPT(test_models.GPT_TEST)
    compiled = torch.compile(model.to("tpu"), backend="tpu", dynamic=True)
    for seq in (16, 24):
        idx = torch.randint(test_models.GPT_TEST.vocab, (2, seq + 1))
        loss = compiled(idx[:, :-1].to("tpu"), idx[:, 1:].to("tpu"))
        expected = model.cpu()(idx[:, :-1], idx[:, 1:])
        model.to("tpu")
        torch.testing.assert_close(loss.cpu(), expected, rtol=1e-4, atol=1e-5)


_CACHED_RUN = """
import json, sys, torch
sys.path.insert(0, {tests!r})
from test_models import CASES
{preamble}
torch._dynamo.config.caching_precompile = {precompile}
build, make_batch = CASES["gpt"]
torch.manual_seed(0)
model = build().to("tpu")
x, y = make_batch(torch.Generator().manual_seed(1))
loss = torch.compile(model, backend="tpu")(x.to("tpu"), y.to("tpu"))
loss.backward()
torch.compiler.save_cache_artifacts()
counters = torch._dynamo.utils.counters
print(json.dumps(dict(loss=loss.item(), grad=model.head.weight.grad.sum().item(),
                      hit=counters["aot_autograd"]["autograd_cache_hit"],
                      saved=counters["aot_autograd"]["autograd_cache_saved"],
                      traced=counters["stats"]["unique_graphs"],
                      dynamo_hit=counters["dynamo_cache"]["dynamo_cache_hit"],
                      compiled=torch.tpu.fused_stats()["flushes"].get("compiled", 0))))
"""


def cached_run(tmp_path: Path, precompile: bool, preamble: str = "") -> dict[str, float]:
    """A process that compiles and trains the test GPT with the cache directory in tmp_path."""
    code = _CACHED_RUN.format(
        tests=str(Path(__file__).parent), precompile=precompile, preamble=preamble
    )
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def cached_runs(tmp_path: Path, precompile: bool) -> tuple[dict[str, float], dict[str, float]]:
    """Two processes, one after the other, with one cache directory."""
    cold, warm = cached_run(tmp_path, precompile), cached_run(tmp_path, precompile)
    assert warm["compiled"] == cold["compiled"] == 2  # forward and backward, as fused graphs
    assert warm["loss"] == cold["loss"] and warm["grad"] == cold["grad"]
    return cold, warm


def test_a_second_process_loads_the_traced_graphs_from_the_cache(tmp_path: Path) -> None:
    """AOTAutograd's bundled cache: the forward and backward graphs of the first process are on
    disk, and the second process runs them (as fused graphs) without tracing them again."""
    cold, warm = cached_runs(tmp_path, precompile=False)
    assert cold["saved"] == 1 and cold["hit"] == 0
    assert warm["hit"] == 1 and warm["saved"] == 0
    assert warm["traced"] == cold["traced"] == 1  # Dynamo traces in each process
    # Another build of torch_tpu has another key: it compiles again and saves its own entry.
    other = "import torch_tpu.compile as c; c._build_id = lambda: 'another build'"
    rebuilt = cached_run(tmp_path, precompile=False, preamble=other)
    assert rebuilt["hit"] == 0 and rebuilt["saved"] == 1
    assert rebuilt["loss"] == cold["loss"] and rebuilt["grad"] == cold["grad"]


def test_with_caching_precompile_a_second_process_traces_nothing(tmp_path: Path) -> None:
    """Dynamo's caching precompile: the first process saves its guarded code with the compiled
    graphs, and the second one installs them: Dynamo traces nothing, AOTAutograd is not asked."""
    cold, warm = cached_runs(tmp_path, precompile=True)
    assert cold["traced"] == 1 and cold["dynamo_hit"] == 0
    assert warm["traced"] == 0 and warm["dynamo_hit"] == 1
    assert warm["hit"] == warm["saved"] == 0
