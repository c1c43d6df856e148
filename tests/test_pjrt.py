"""The PJRT driver on XLA's CPU plugin (make pytest-pjrt runs this file and a subset of the suite
with TORCH_TPU_DRIVER=pjrt); the missing-plugin cases run under any driver, in subprocesses."""

from __future__ import annotations

import ast
import io
import os
import subprocess
import sys

import pytest
import torch

ON_PJRT = os.environ.get("TORCH_TPU_DRIVER") == "pjrt"
pjrt_only = pytest.mark.skipif(not ON_PJRT, reason="runs in make pytest-pjrt")


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_missing_plugin_is_a_clear_error_and_the_process_stays_usable() -> None:
    code = (
        "import torch\n"
        "try:\n"
        "    torch.ones(2, device='tpu')\n"
        "except RuntimeError as e:\n"
        "    print('ERR', e)\n"
        "print('CPU', torch.ones(2).sum().item())\n"
    )
    done = run_python(code, TORCH_TPU_DRIVER="pjrt", TORCH_TPU_PJRT_PLUGIN="/no/such/plugin.so")
    assert done.returncode == 0, done.stderr
    assert "ERR" in done.stdout and "/no/such/plugin.so" in done.stdout
    assert "CPU 2.0" in done.stdout


def test_a_library_without_the_pjrt_api_is_refused() -> None:
    libc = "/lib/x86_64-linux-gnu/libc.so.6"
    if not os.path.exists(libc):
        pytest.skip("no libc at the usual path")
    code = (
        "import torch\n"
        "try:\n"
        "    torch.ones(2, device='tpu')\n"
        "except RuntimeError as e:\n"
        "    print(e)\n"
    )
    done = run_python(code, TORCH_TPU_DRIVER="pjrt", TORCH_TPU_PJRT_PLUGIN=libc)
    assert "exports no GetPjrtApi" in done.stdout, done.stdout + done.stderr


@pjrt_only
def test_device_reports_the_plugin() -> None:
    assert torch.tpu.get_device_name().startswith("cpu (PJRT")


@pjrt_only
def test_views_in_place_writes_and_copies_round_trip() -> None:
    base = torch.arange(60, dtype=torch.float32).reshape(5, 12)
    dev = base.to("tpu")
    dev[:, 3:7] += 1  # a narrow view written in place
    base[:, 3:7] += 1
    dev.t()[2] = -1  # a transposed view's row
    base.t()[2] = -1
    dev[::2, ::3].mul_(2)  # step slices
    base[::2, ::3].mul_(2)
    torch.testing.assert_close(dev.cpu(), base, rtol=0, atol=0)
    torch.testing.assert_close(dev.t().contiguous().cpu(), base.t().contiguous())
    torch.testing.assert_close(dev[1:4, ::5].cpu(), base[1:4, ::5])
    row = torch.arange(5.0)
    expanded = row.to("tpu")[None, :].expand(3, 5)  # as many bytes as the storage, more elements
    torch.testing.assert_close(expanded.cpu(), row[None, :].expand(3, 5), rtol=0, atol=0)
    half = dev.to(torch.bfloat16)
    torch.testing.assert_close(half.cpu(), base.to(torch.bfloat16), rtol=0, atol=0)


@pjrt_only
def test_save_load_and_tied_weights() -> None:
    emb = torch.nn.Embedding(7, 4).to("tpu")
    head = torch.nn.Linear(4, 7, bias=False).to("tpu")
    head.weight = emb.weight  # tied
    with torch.no_grad():
        emb.weight[0].fill_(3.0)
    assert head.weight.data_ptr() == emb.weight.data_ptr()
    assert head.weight[0].sum().item() == 12.0
    buffer = io.BytesIO()
    torch.save({"emb": emb.state_dict()}, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, map_location="tpu")
    torch.testing.assert_close(loaded["emb"]["weight"].cpu(), emb.weight.cpu())


@pjrt_only
def test_unlowered_ops_fall_back_counted_and_correct() -> None:
    a = torch.randn(2, 3, 8)
    torch.tpu.reset_op_stats()
    got = torch.nn.functional.max_pool1d(a.to("tpu"), 2).cpu()
    torch.testing.assert_close(got, torch.nn.functional.max_pool1d(a, 2))
    stats = torch.tpu.op_stats()
    assert stats["driver_fallback"] == {"pool": 1}, stats  # ran on the host, and says so
    assert stats["fallback"] == {}


RANDOM_SCRIPT = """
import torch, torch_tpu
torch.tpu.set_eager_mode({mode!r})
torch.manual_seed(7)
x = torch.rand(7, 5, device="tpu") * 4 - 2
draws = [torch.rand(1000, device="tpu"), torch.rand(3, 4, dtype=torch.float64, device="tpu")]
for dtype in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
    draws.append(torch.empty(6, 9, dtype=dtype, device="tpu").uniform_(-3.0, 5.5))
draws.append(torch.empty(10, 10, device="tpu").t().uniform_())  # a transposed view
draws.append(torch.empty(64, dtype=torch.int64, device="tpu").bernoulli_(0.3))
draws.append(torch.empty(50, dtype=torch.int32, device="tpu").random_(-5, 95))
draws.append(torch.empty(40, dtype=torch.int64, device="tpu").random_())  # 63-bit range, 2 words
draws.append(torch.empty(30, device="tpu").random_())  # float32 in [0, 2^24]
x.requires_grad_(True)
y = torch.nn.functional.dropout(x * 2, p=0.4, training=True)
y.sum().backward()
draws += [x, y, x.grad, torch.nn.functional.dropout(x.half(), p=0.5)]
normals = [torch.randn(1001, device="tpu"), torch.randn(3, 4, dtype=torch.float64, device="tpu")]
normals.append(torch.empty(6, 9, dtype=torch.bfloat16, device="tpu").normal_(1.5, 3.0))
torch.tpu.synchronize()
for d in draws:
    print(d.dtype, d.detach().cpu().double().flatten().tolist())
for d in normals:
    print("normal", d.dtype, d.cpu().double().flatten().tolist())
print(sorted(torch.tpu.op_stats()["driver_fallback"]))
"""


@pjrt_only
@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_random_numbers_equal_the_host_drivers(mode: str) -> None:
    code = RANDOM_SCRIPT.format(mode=mode)
    host = run_python(code, TORCH_TPU_DRIVER="host")
    pjrt = run_python(code)
    assert host.returncode == 0 and pjrt.returncode == 0, host.stderr + pjrt.stderr
    *lines, fallback = pjrt.stdout.splitlines()
    host_lines = host.stdout.splitlines()[:-1]
    exact = [line for line in lines if not line.startswith("normal")]
    assert exact == [line for line in host_lines if not line.startswith("normal")]  # bit for bit
    # Box-Muller's log, cos and sin are XLA's on the device and libm's on the host: a few ulps,
    # one unit of bfloat16 where that moves a rounding.
    normals = [line.split(" ", 2) for line in lines if line.startswith("normal")]
    host_normals = [line.split(" ", 2) for line in host_lines if line.startswith("normal")]
    assert len(normals) == len(host_normals) == 3
    for (_, dtype, got), (_, _, want) in zip(normals, host_normals, strict=True):
        rtol = 1e-2 if dtype == "torch.bfloat16" else 1e-5
        got_t, want_t = torch.tensor(ast.literal_eval(got)), torch.tensor(ast.literal_eval(want))
        torch.testing.assert_close(got_t, want_t, rtol=rtol, atol=rtol)
        assert got_t.std() > 0.5  # drawn, not zeros (the draws have std 1 or 3)
    assert fallback == "[]"  # every random op runs on the device


@pjrt_only
def test_scalar_arguments_give_each_call_its_value() -> None:
    x = torch.randn(16, device="tpu")
    torch.tpu.synchronize()
    results = [(x * 1.0 + alpha).cpu() for alpha in (0.5, 1.5, 2.5)]
    for alpha, got in zip((0.5, 1.5, 2.5), results, strict=True):
        torch.testing.assert_close(got, x.cpu() + alpha)


@pjrt_only
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64])
def test_arange_runs_on_the_device(dtype: torch.dtype, eager_mode: str) -> None:
    torch.tpu.reset_op_stats()
    for args in ((7,), (2, 30, 3), (-1, 1, 0.25) if dtype.is_floating_point else (-5, 5, 2)):
        got = torch.arange(*args, dtype=dtype, device="tpu").cpu()
        torch.testing.assert_close(got, torch.arange(*args, dtype=dtype), rtol=0, atol=0)
    assert "arange" not in torch.tpu.op_stats()["driver_fallback"]


@pjrt_only
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32, torch.bool])
def test_nonzero_counts_on_the_device(dtype: torch.dtype, eager_mode: str) -> None:
    # NaN is nonzero and -0.0 is not; the count sizes nonzero's and masked_select's outputs.
    x = torch.tensor([[0.0, -0.0, float("nan"), 2.0], [1.0, 0.0, -3.0, 0.0]]).to(dtype)
    torch.tpu.reset_op_stats()
    assert torch.equal(torch.nonzero(x.to("tpu").t()).cpu(), torch.nonzero(x.t()))
    got = torch.masked_select(x.to("tpu"), x.to("tpu") != 0).cpu()
    torch.testing.assert_close(got, torch.masked_select(x, x != 0), equal_nan=True)
    assert torch.count_nonzero(x.to("tpu")).item() == torch.count_nonzero(x).item()
    assert torch.tpu.op_stats()["native"].get("nonzero_count", 0) >= 2
    assert "nonzero_count" not in torch.tpu.op_stats()["driver_fallback"]


CACHE_SCRIPT = (
    "import torch, torch_tpu\n"
    "x = torch.arange(12, dtype=torch.float32, device='tpu').reshape(3, 4)\n"
    "print('OUT', (torch.softmax(x, 1) * 3 + x).sum(0).cpu().tolist())\n"
    "s = torch.tpu.compile_cache_stats()\n"
    "print('STATS', s['executables_compiled'], s['executables_loaded'], s['executables_stored'])\n"
)


def run_cached(cache_dir: str, **env: str) -> tuple[str, list[int]]:
    done = run_python(CACHE_SCRIPT, TORCH_TPU_CACHE_DIR=cache_dir, **env)
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    return lines["OUT"], [int(n) for n in lines["STATS"].split()]


@pjrt_only
def test_a_second_process_loads_executables_from_the_disk_cache(tmp_path) -> None:
    out, (compiled, loaded, stored) = run_cached(str(tmp_path))
    assert compiled > 0 and loaded == 0 and stored == compiled
    again, (compiled2, loaded2, stored2) = run_cached(str(tmp_path))
    assert again == out
    assert (compiled2, loaded2, stored2) == (0, compiled, 0)  # nothing compiled the second time


@pjrt_only
def test_other_xla_flags_use_other_cache_files(tmp_path) -> None:
    out, (compiled, _, _) = run_cached(str(tmp_path))
    flags = "--xla_cpu_enable_fast_math=false"
    again, (compiled2, loaded2, _) = run_cached(str(tmp_path), XLA_FLAGS=flags)
    assert again == out
    assert (compiled2, loaded2) == (compiled, 0)  # compiled under the new flags, not loaded
    assert len(list(tmp_path.glob("pjrt-*"))) == 2


@pjrt_only
def test_corrupt_cache_files_are_compiled_again(tmp_path) -> None:
    out, (compiled, _, _) = run_cached(str(tmp_path))
    files = list(tmp_path.glob("pjrt-*/*.xla"))
    assert len(files) == compiled
    for i, f in enumerate(files):  # a truncated file, garbage, a file of another layout
        data = f.read_bytes()
        bad = [data[: len(data) // 2], b"x" * 64, b"TPUXLA99" + data[8:]]
        f.write_bytes(bad[i % 3])
    again, (compiled2, loaded2, stored2) = run_cached(str(tmp_path))
    assert again == out
    assert (compiled2, loaded2, stored2) == (compiled, 0, compiled)


@pjrt_only
def test_the_disk_cache_can_be_turned_off_and_an_unwritable_one_warns(tmp_path) -> None:
    out, (compiled, loaded, stored) = run_cached(str(tmp_path), TORCH_TPU_DISK_CACHE="0")
    assert (loaded, stored) == (0, 0) and compiled > 0
    assert not list(tmp_path.iterdir())
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    done = run_python(CACHE_SCRIPT, TORCH_TPU_CACHE_DIR=str(blocker / "cache"))
    assert done.returncode == 0, done.stderr
    assert "disk cache cannot make the directory" in done.stderr
    assert f"OUT {out}" in done.stdout


@pjrt_only
def test_a_fused_run_wider_than_one_module_is_cut(eager_mode: str) -> None:
    # 30 layer norms whose 90 outputs all stay referenced: more results than one module returns.
    xs = [torch.randn(3, 8) for _ in range(30)]
    dev = [x.to("tpu") for x in xs]
    torch.tpu.synchronize()
    torch.tpu.reset_op_stats()
    torch.tpu.reset_compile_cache_stats()
    outs = [torch.native_layer_norm(x, [8], None, None, 1e-5) for x in dev]
    torch.tpu.synchronize()
    runs = torch.tpu.compile_cache_stats()["executable_runs"]
    assert runs == (2 if eager_mode == "fused" else 30)  # fused: cut in two modules, not 30
    for x, got in zip(xs, outs, strict=True):
        want = torch.native_layer_norm(x, [8], None, None, 1e-5)
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g.cpu(), w)
    assert torch.tpu.op_stats()["driver_fallback"] == {}


@pjrt_only
@pytest.mark.parametrize("model", ["gpt-tiny", "cnn", "lstm"])
def test_bench_models_run_with_no_driver_fallback(model: str) -> None:
    # gpt-small has gpt-tiny's ops at another size (bench's pjrt section reports its fallbacks).
    from bench.contenders import Contender
    from bench.steps import StepRunner, batches

    torch.tpu.reset_op_stats()
    torch.tpu.reset_compile_cache_stats()
    for kind in ("train", "eval"):
        contender = Contender("tpu-strict", "strict", "", "tpu", "strict")
        runner = StepRunner(model, kind, contender, batches(model, 1))
        runner.run(0)
        runner.value()
    assert torch.tpu.op_stats()["driver_fallback"] == {}
    assert torch.tpu.compile_cache_stats()["modules_unkeyed"] == 0  # every structure keyed


TRAIN_SCRIPT = """
import torch, torch_tpu

def train(device: str, steps: int, reset_after: int) -> list[float]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32), torch.nn.Linear(32, 4)
    ).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 16).to(device), torch.randint(0, 4, (8,)).to(device)
    losses = []
    for step in range(steps):
        if device == "tpu" and step == reset_after:
            torch.tpu.synchronize()
            torch.tpu.reset_compile_cache_stats()
        for group in opt.param_groups:  # a new learning rate each step, as a scheduler sets it
            group["lr"] = 0.01 / (step + 1)
        loss = torch.nn.functional.cross_entropy(model(x * (1 + step / 10)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses
"""


def train_on_pjrt(steps: int, reset_after: int) -> tuple[list[float], list[float]]:
    scope: dict = {}
    exec(TRAIN_SCRIPT, scope)
    return scope["train"]("tpu", steps, reset_after), scope["train"]("cpu", steps, reset_after)


@pjrt_only
def test_a_structure_lowers_once_and_later_runs_bind_only(eager_mode: str) -> None:
    # Three steps compile every structure; the last three find each run's module without
    # lowering it, though the learning rate, the input scale and AdamW's step change each step.
    tpu, cpu = train_on_pjrt(6, reset_after=3)
    # XLA sums in its own order: six steps stay within ~100 float32 ulps of the loss.
    torch.testing.assert_close(tpu, cpu, rtol=1e-5, atol=1e-6)
    stats = torch.tpu.compile_cache_stats()
    assert stats["modules_lowered"] == 0 and stats["modules_unkeyed"] == 0
    assert stats["modules_reused"] >= stats["executable_runs"] > 0


@pjrt_only
@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_verification_finds_kept_modules_equal_to_fresh_ones(mode: str) -> None:
    code = (
        TRAIN_SCRIPT
        + f"torch.tpu.set_eager_mode('{mode}')\n"
        + "print(train('tpu', 4, reset_after=2))\n"
        + "print(torch.tpu.compile_cache_stats()['modules_reused'])\n"
        + "print(train('cpu', 4, reset_after=2))\n"
    )
    done = run_python(code, TORCH_TPU_PJRT_VERIFY_PROGRAMS="1")
    assert done.returncode == 0, done.stderr
    tpu, reused, cpu = done.stdout.splitlines()
    assert int(reused) > 0  # each of those runs was lowered again and compared
    torch.testing.assert_close(ast.literal_eval(tpu), ast.literal_eval(cpu), rtol=1e-5, atol=1e-6)


def clear_env(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Unsets `names` for the test and restores them after it, whatever the test sets them to
    (monkeypatch.delenv alone records nothing for a variable that was not set)."""
    for name in names:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


def fake_libtpu(root) -> str:
    """An installed-looking ``libtpu`` package under ``root``; its library's path."""
    package = root / "libtpu"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "libtpu.so").write_bytes(b"")
    return str(package / "libtpu.so")


@pytest.mark.parametrize("node", ["accel0", "vfio", None])
@pytest.mark.parametrize("driver", [None, "host"])
def test_a_tpu_host_selects_the_pjrt_driver_and_libtpu(
    tmp_path, monkeypatch, node: str | None, driver: str | None
) -> None:
    from torch_tpu import _pjrt_plugin

    library = fake_libtpu(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    devices = tmp_path / "dev"
    devices.mkdir()
    if node:
        (devices / node).mkdir()
    monkeypatch.setattr(_pjrt_plugin, "DEVICE_ROOT", devices)
    clear_env(monkeypatch, "TORCH_TPU_PJRT_PLUGIN", "TORCH_TPU_DRIVER")
    if driver:
        monkeypatch.setenv("TORCH_TPU_DRIVER", driver)
    _pjrt_plugin.hand_over()
    chosen = node is not None and driver is None  # a TPU, and nothing says otherwise
    assert os.environ.get("TORCH_TPU_DRIVER") == ("pjrt" if chosen else driver)
    assert os.environ.get("TORCH_TPU_PJRT_PLUGIN") == (library if chosen else None)


def test_without_libtpu_a_tpu_device_node_keeps_the_host_driver(tmp_path, monkeypatch) -> None:
    from torch_tpu import _pjrt_plugin

    (tmp_path / "accel0").mkdir()
    monkeypatch.setattr(_pjrt_plugin, "DEVICE_ROOT", tmp_path)
    monkeypatch.setattr(_pjrt_plugin, "plugin_in_package", lambda name: None)
    clear_env(monkeypatch, "TORCH_TPU_PJRT_PLUGIN", "TORCH_TPU_DRIVER")
    _pjrt_plugin.hand_over()
    assert "TORCH_TPU_DRIVER" not in os.environ
