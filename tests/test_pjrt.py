"""The PJRT driver on XLA's CPU plugin (make pytest-pjrt runs this file and a subset of the suite
with TORCH_TPU_DRIVER=pjrt); the missing-plugin cases run under any driver, in subprocesses."""

from __future__ import annotations

import ast
import io
import os
import subprocess
import sys
import warnings

import pytest
import torch
import torch.nn.functional as F

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
    # igamma has no lowering: it runs on the host driver's kernel, counted; the ops around it on
    # the device.
    gen = torch.Generator().manual_seed(0)
    a, x = torch.rand(64, generator=gen) * 4 + 0.1, torch.rand(64, generator=gen) * 4
    dev_a, dev_x = a.to("tpu"), x.to("tpu")
    torch.tpu.synchronize()
    torch.tpu.reset_op_stats()
    got = torch.special.gammainc(dev_a, dev_x) * 2
    torch.tpu.synchronize()
    stats = torch.tpu.op_stats()
    assert stats["driver_fallback"] == {"igamma": 1}, stats  # says so
    assert stats["fallback"] == {}
    torch.testing.assert_close(got.cpu(), torch.special.gammainc(a, x) * 2)


@pytest.mark.parametrize(
    ("dims", "groups", "stride", "padding", "dilation"),
    [(2, 2, 1, 0, 1), (2, 4, 2, 1, 1), (1, 4, 1, 2, 2), (3, 2, 1, 1, 1)],
)
def test_grouped_convolution_gradients_stay_on_the_device(
    dims: int, groups: int, stride: int, padding: int, dilation: int, eager_mode: str
) -> None:
    """Depthwise and grouped convolutions (convnext, wav2vec2): forward, input and weight
    gradients against CPU's, with no call through either fallback."""
    gen = torch.Generator().manual_seed(dims * 10 + groups)
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[dims]
    x = torch.randn(2, 4, *([6] * dims), generator=gen, dtype=torch.float64)
    w = torch.randn(8, 4 // groups, *([3] * dims), generator=gen, dtype=torch.float64)
    cpu_x, cpu_w = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
    y = conv(cpu_x, cpu_w, None, stride, padding, dilation, groups)
    dy = torch.randn(y.shape, generator=gen, dtype=torch.float64)
    y.backward(dy)
    dev_x, dev_w = x.to("tpu").requires_grad_(True), w.to("tpu").requires_grad_(True)
    torch.tpu.synchronize()
    torch.tpu.reset_op_stats()
    got = conv(dev_x, dev_w, None, stride, padding, dilation, groups)
    got.backward(dy.to("tpu"))
    torch.tpu.synchronize()
    stats = torch.tpu.op_stats()
    assert (stats["fallback"], stats["driver_fallback"]) == ({}, {}), stats
    torch.testing.assert_close(got.detach().cpu(), y.detach())
    torch.testing.assert_close(dev_x.grad.cpu(), cpu_x.grad)
    torch.testing.assert_close(dev_w.grad.cpu(), cpu_w.grad)


POOL_FORMS = {
    "max": lambda t: F.max_pool2d(t, 2, return_indices=True),
    "max, padded, dilated, ceil mode": lambda t: F.max_pool2d(
        t, 3, 2, 1, dilation=2, ceil_mode=True, return_indices=True
    ),
    "average counting the padding": lambda t: F.avg_pool2d(t, 3, 2, 1),
    "average, ceil mode, padding not counted": lambda t: F.avg_pool2d(
        t, 3, 2, 1, ceil_mode=True, count_include_pad=False
    ),
    "average, divisor override": lambda t: F.avg_pool2d(t, 2, divisor_override=3),
    "adaptive average, windows of varying size": lambda t: F.adaptive_avg_pool2d(t, (4, 3)),
    "adaptive max": lambda t: F.adaptive_max_pool2d(t, (4, 3), return_indices=True),
}


@pjrt_only
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("form", POOL_FORMS)
def test_pooling_runs_on_the_device(form: str, dtype: torch.dtype, eager_mode: str) -> None:
    # Values, indices (the first of tied maxima, the last NaN of a window) and the input's
    # gradient equal CPU's in float32, rounded (CPU's bfloat16 backward rounds at every add),
    # with no call left to the host.
    x = torch.randn(2, 3, 9, 8, generator=torch.Generator().manual_seed(0)).to(dtype)
    x[0, 1, 2, :] = 0.5  # a row of ties
    x[1, 0, 3, 3] = x[1, 0, 3, 5] = float("nan")
    grad = torch.randn(2, 3, 9, 8, generator=torch.Generator().manual_seed(1)).to(dtype)
    cpu, dev = x.float().clone().requires_grad_(True), x.to("tpu").requires_grad_(True)
    torch.tpu.reset_op_stats()
    want, got = POOL_FORMS[form](cpu), POOL_FORMS[form](dev)
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    for w, g in zip(want, got, strict=True):
        torch.testing.assert_close(g.cpu(), w.to(g.dtype), equal_nan=True)
    dy = grad[tuple(slice(n) for n in want[0].shape)]  # as many as the output has
    want[0].backward(dy.float())
    got[0].backward(dy.to("tpu"))
    torch.testing.assert_close(dev.grad.cpu(), cpu.grad.to(dtype))
    assert torch.tpu.op_stats()["driver_fallback"] == {}


@pjrt_only
@pytest.mark.parametrize("dtype", [torch.int8, torch.int32, torch.int64, torch.uint8], ids=str)
def test_integer_division_runs_on_the_device(dtype: torch.dtype, eager_mode: str) -> None:
    # Every sign combination, divisors of -1 and exact quotients, as CPU computes them.
    info = torch.iinfo(dtype)
    g = torch.Generator().manual_seed(3)
    a = torch.randint(info.min, info.max, (96,), generator=g, dtype=torch.int64)
    b = torch.randint(-9 if info.min < 0 else 1, 10, (96,), generator=g, dtype=torch.int64)
    b[b == 0] = 3
    a[:8] = torch.tensor([7, -7, 7, -7, 6, -6, 0, 5])
    b[:8] = torch.tensor([2, 2, -2, -2, 3, -3, 4, -1 if info.min < 0 else 5])
    a, b = a.to(dtype), b.to(dtype)
    forms = {
        "div_trunc": lambda x, y: torch.div(x, y, rounding_mode="trunc"),
        "div_floor": lambda x, y: torch.div(x, y, rounding_mode="floor"),
        "remainder": torch.remainder,
        "fmod": torch.fmod,
    }
    dev_a, dev_b = a.to("tpu"), b.to("tpu")
    torch.tpu.synchronize()
    torch.tpu.reset_op_stats()
    for name, fn in forms.items():
        assert torch.equal(fn(dev_a, dev_b).cpu(), fn(a, b)), name
        assert torch.equal(fn(dev_a, 3).cpu(), fn(a, 3)), name  # a scalar divisor
    if info.min < 0:  # the smallest value over -1 wraps, as on the host driver (CPU traps)
        low = torch.full((2,), info.min, dtype=dtype, device="tpu")
        minus_one = torch.full((2,), -1, dtype=dtype, device="tpu")
        assert forms["div_trunc"](low, minus_one).cpu().tolist() == [info.min] * 2
        assert forms["fmod"](low, minus_one).cpu().tolist() == [0, 0]
    assert torch.tpu.op_stats()["driver_fallback"] == {}


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


@pjrt_only
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_advanced_indexing_gathers_on_the_device(dtype: torch.dtype, eager_mode: str) -> None:
    # Negative, int32 and broadcast indices, non-adjacent index tensors (moved to the front) and
    # restrided selves: each x[indices] is one gather over self read whole.
    x = (torch.arange(120).reshape(4, 5, 6) % 7 - 3).to(dtype)
    rows, cols = torch.tensor([[0], [-1], [2]]), torch.tensor([4, -5, 1, 1])
    forms = [
        lambda t, d: t[torch.tensor([2, 0, -1, 2], device=d)],
        lambda t, d: t[rows.to(d), cols.to(d)],  # broadcast together to [3, 4]
        lambda t, d: t[:, torch.tensor([3, 0], dtype=torch.int32, device=d)],
        lambda t, d: t[torch.tensor([1, 0], device=d), :, torch.tensor([5, -6], device=d)],
        lambda t, d: t.transpose(0, 2)[::2, torch.tensor([1, 4], device=d)],
        lambda t, d: torch.ops.aten.index(t[1:], [None, torch.tensor(-2, device=d)]),  # 0-d
    ]
    dev = x.to("tpu")
    torch.tpu.reset_op_stats()
    for form in forms:
        assert torch.equal(form(dev, "tpu").cpu(), form(x, "cpu"))
    assert torch.tpu.op_stats()["native"].get("index", 0) == len(forms)
    assert torch.tpu.op_stats()["driver_fallback"] == {}


@pjrt_only
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32, torch.bool])
def test_index_put_scatters_on_the_device(dtype: torch.dtype, eager_mode: str) -> None:
    x = (torch.arange(30).reshape(5, 6) % 4).to(dtype)
    v = (torch.arange(24).reshape(4, 6) % 3 + 1).to(dtype)
    idx = torch.tensor([4, -1, 0, 2])  # 4 and -1 name one row twice
    dev = x.to("tpu")
    torch.tpu.reset_op_stats()
    # Accumulated: duplicates add (bool: or); the values are small integers, exact in any order.
    got = dev.clone().index_put_((idx.to("tpu"),), v.to("tpu"), accumulate=True)
    assert torch.equal(got.cpu(), x.clone().index_put_((idx,), v, accumulate=True))
    # Assigned: PyTorch leaves duplicates undefined; the driver's contract is the last one wins,
    # as on the host driver.
    got = dev.clone().index_put_((idx.to("tpu"),), v.to("tpu"))
    want = x.clone()
    for i, row in enumerate(idx.tolist()):
        want[row] = v[i]
    assert torch.equal(got.cpu(), want)
    # Two broadcast index tensors and one value; columns (B before I); a transposed self.
    rows, cols = torch.tensor([[0], [3]]), torch.tensor([1, -2, 5])
    got, want = dev.clone(), x.clone()
    got[rows.to("tpu"), cols.to("tpu")] = torch.tensor(1, dtype=dtype, device="tpu")
    want[rows, cols] = torch.tensor(1, dtype=dtype)
    assert torch.equal(got.cpu(), want)
    vals = (torch.arange(15).reshape(3, 5) % 4).to(dtype).t()  # [5, 3], transposed
    got = torch.ops.aten.index_put_(dev.clone(), [None, cols.to("tpu")], vals.to("tpu"), True)
    want = torch.ops.aten.index_put_(x.clone(), [None, cols], vals, True)
    assert torch.equal(got.cpu(), want)
    got, want = dev.clone(), x.clone()
    got.t()[torch.tensor([5, 0], device="tpu")] = v[:2, :5].to("tpu")
    want.t()[torch.tensor([5, 0])] = v[:2, :5]
    assert torch.equal(got.cpu(), want)
    assert torch.tpu.op_stats()["native"].get("index_put", 0) == 5
    assert torch.tpu.op_stats()["driver_fallback"] == {}


@pjrt_only
def test_an_index_out_of_range_is_an_index_error(eager_mode: str) -> None:
    # Checked on the device: the module's flag fails the call (in debug mode an IndexError at the
    # call; otherwise the next synchronization raises, naming the op).
    from _index_checks import expect_index_error

    x = torch.zeros(3, 4, device="tpu")
    torch.tpu.synchronize()
    torch.tpu.reset_op_stats()
    expect_index_error(eager_mode, lambda: x[torch.tensor([1, 3], device="tpu")], "index")
    expect_index_error(eager_mode, lambda: x[:, torch.tensor([0, -5], device="tpu")], "index")
    put = torch.ones(2, 4, device="tpu")
    expect_index_error(
        eager_mode,
        lambda: x.index_put_((torch.tensor([0, 3], device="tpu"),), put, accumulate=True),
        "index_put",
    )
    assert torch.tpu.op_stats()["driver_fallback"] == {}


@pjrt_only
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32, torch.bool])
def test_nonzero_and_masked_ops_run_on_the_device(dtype: torch.dtype, eager_mode: str) -> None:
    # NaN is nonzero and -0.0 is not; outputs are sized by the count nonzero_count read first.
    row = [0.0, -0.0, float("nan"), 2.0, 0.0, 1.0]
    x = torch.tensor([row, row[::-1], [0.0] * 6, [-3.0, 0.0] * 3]).to(dtype)
    mask = x != 0
    dev, dmask = x.to("tpu"), mask.to("tpu")
    src = torch.arange(1, 31).to(dtype)
    same = dict(rtol=0, atol=0, equal_nan=True)
    torch.tpu.reset_op_stats()
    assert torch.equal(torch.nonzero(dev).cpu(), torch.nonzero(x))
    assert torch.equal(torch.nonzero(dev.t()).cpu(), torch.nonzero(x.t()))
    torch.testing.assert_close(torch.masked_select(dev, dmask).cpu(), x[mask], **same)
    torch.testing.assert_close(
        torch.masked_select(dev.t(), dmask.t()).cpu(), torch.masked_select(x.t(), mask.t()), **same
    )
    got = dev.clone().masked_scatter_(dmask, src.to("tpu"))
    torch.testing.assert_close(got.cpu(), x.clone().masked_scatter_(mask, src), **same)
    exact = src[: int(mask.sum())]  # a source of exactly as many elements as the mask sets
    got = dev.t().clone().masked_scatter_(dmask.t(), exact.to("tpu"))
    torch.testing.assert_close(got.cpu(), x.t().clone().masked_scatter_(mask.t(), exact), **same)
    # An empty mask selects nothing (no call) and scatters nothing.
    none = torch.zeros_like(dmask)
    assert torch.masked_select(dev, none).numel() == 0
    torch.testing.assert_close(dev.clone().masked_scatter_(none, src.to("tpu")).cpu(), x, **same)
    assert torch.tpu.op_stats()["native"].get("masked_scatter", 0) == 3
    assert torch.tpu.op_stats()["driver_fallback"] == {}


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


# Fills the process's memory mappings up to `spare` short of vm.max_map_count before the first
# compile (pages of alternating protection, which the kernel cannot merge), then frees them.
MAPS_SCRIPT = """
import mmap, torch, torch_tpu
limit = int(open('/proc/sys/vm/max_map_count').read())
used = open('/proc/self/maps').read().count('\\n')
rw = mmap.PROT_READ | mmap.PROT_WRITE
held = [mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ if i % 2 else rw)
        for i in range(limit - used - {spare})]
try:
    (torch.arange(5.0, device='tpu') * 3).cpu()
except torch.OutOfMemoryError as e:
    print('OOM', e)
for m in held:
    m.close()
print('OUT', (torch.arange(5.0, device='tpu') * 3).cpu().tolist())
"""


@pjrt_only
def test_a_compile_past_the_kernels_mapping_bound_is_an_oom_error_not_a_crash() -> None:
    done = run_python(MAPS_SCRIPT.format(spare=500), TORCH_TPU_DISK_CACHE="0")
    assert done.returncode == 0, done.stderr
    assert "OOM " in done.stdout, done.stdout
    assert "cannot compile another PJRT executable" in done.stdout
    assert "vm.max_map_count" in done.stdout
    assert "OUT [0.0, 3.0, 6.0, 9.0, 12.0]" in done.stdout  # usable once mappings are freed


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
def test_bench_models_run_with_no_driver_fallback(
    model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # gpt-small has gpt-tiny's ops at another size (bench's pjrt section reports its fallbacks).
    import bench.models
    from bench.contenders import Contender
    from bench.steps import StepRunner, batches

    # The LSTM's ops do not depend on the sequence's length, but each step's views compile
    # executables of their own (a view's offset is part of its key): 8 steps, not 64.
    monkeypatch.setattr(bench.models, "LSTM_SEQ", 8)

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


COMPLEX_DTYPES = [torch.complex64, torch.complex128]


@pjrt_only
@pytest.mark.parametrize("dtype", COMPLEX_DTYPES, ids=str)
def test_complex_copies_run_on_the_device(dtype: torch.dtype, eager_mode: str) -> None:
    # A complex storage holds its parts: copies between restrided complex views, to the other
    # complex dtype, to and from real dtypes and through view_as_real equal CPU's exactly, with no
    # call left to the host.
    z = torch.randn(6, 10, dtype=dtype, generator=torch.Generator().manual_seed(0))
    z[1, 2] = complex(float("nan"), -0.0)
    ints = torch.arange(-30, 30, dtype=torch.int32).reshape(6, 10)
    other = torch.complex128 if dtype == torch.complex64 else torch.complex64
    torch.tpu.reset_op_stats()
    dev = z.to("tpu")
    into, want_into = torch.zeros(6, 20, dtype=dtype, device="tpu"), torch.zeros(6, 20, dtype=dtype)
    into[:, 1::2].copy_(dev.t().t())
    want_into[:, 1::2].copy_(z)
    parts, want_parts = dev.clone(), z.clone()
    torch.view_as_real(parts)[..., 1].mul_(2)  # the imaginary parts, as a float view
    torch.view_as_real(want_parts)[..., 1].mul_(2)
    checks = {
        "round trip": (dev.cpu(), z),
        "transposed, step-sliced": (dev.t()[::2].cpu(), z.t()[::2]),
        "clone of a transposed view": (dev.t().clone().cpu(), z.t().clone()),
        "to the other complex dtype": (dev[:, 1::2].to(other).cpu(), z[:, 1::2].to(other)),
        "copy_ into a strided view": (into.cpu(), want_into),
        "view_as_real written": (parts.cpu(), want_parts),
        "view_as_real read": (torch.view_as_real(dev[1::2]).cpu(), torch.view_as_real(z[1::2])),
        "resolved conjugate": (dev.conj().resolve_conj().cpu(), z.conj().resolve_conj()),
        "to bool": (dev.to(torch.bool).cpu(), z.to(torch.bool)),
        "from int32, transposed": (ints.to("tpu").t().to(dtype).cpu(), ints.t().to(dtype)),
        "from float16": (z.real.half().to("tpu").to(dtype).cpu(), z.real.half().to(dtype)),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # complex to real discards imaginary parts
        checks["to float32, transposed"] = (dev.t().float().cpu(), z.t().float())
        checks["to int64"] = (dev.to(torch.int64).cpu(), z.to(torch.int64))
    for what, (got, want) in checks.items():
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True, msg=what)
    assert torch.tpu.op_stats()["driver_fallback"] == {}


COMPLEX_PRODUCTS = {
    "dot": lambda a, b, m, n: torch.dot(a, b),
    "vdot": lambda a, b, m, n: torch.vdot(a, b),
    "dot of strided vectors": lambda a, b, m, n: torch.dot(a[::2], b[1::2]),
    "vdot of strided vectors": lambda a, b, m, n: torch.vdot(a[1::3], b[::3]),
    "dot of a conjugate view": lambda a, b, m, n: torch.dot(a.conj(), b),
    "dot of two conjugate views": lambda a, b, m, n: torch.dot(a.conj(), b.conj()),
    "mm of a conjugate transpose": lambda a, b, m, n: torch.mm(m.mH, n),
}


@pjrt_only
@pytest.mark.parametrize("dtype", COMPLEX_DTYPES, ids=str)
@pytest.mark.parametrize("form", COMPLEX_PRODUCTS)
def test_complex_dot_and_vdot_run_on_the_device(
    form: str, dtype: torch.dtype, eager_mode: str
) -> None:
    # Four real products of the parts: CPU's within rounding (the sums run in another order).
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(96, dtype=dtype, generator=g), torch.randn(96, dtype=dtype, generator=g)
    m, n = torch.randn(5, 7, dtype=dtype, generator=g), torch.randn(5, 4, dtype=dtype, generator=g)
    dev = [t.to("tpu") for t in (a, b, m, n)]
    torch.tpu.reset_op_stats()
    got, want = COMPLEX_PRODUCTS[form](*dev), COMPLEX_PRODUCTS[form](a, b, m, n)
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == torch.complex64 else {}
    torch.testing.assert_close(got.cpu().resolve_conj(), want.resolve_conj(), **tol)
    assert torch.tpu.op_stats()["driver_fallback"] == {}


class TinyLlama(torch.nn.Module):
    """A Llama decoder of 2 layers (RMSNorm, rotary positions, SwiGLU, causal attention) with a
    cache of keys and values, as generation loops run it."""

    def __init__(self, vocab: int = 97, d: int = 32, heads: int = 4, layers: int = 2) -> None:
        super().__init__()
        self.heads, self.d = heads, d
        self.emb = torch.nn.Embedding(vocab, d)
        self.layers = torch.nn.ModuleList(
            torch.nn.ModuleDict(
                {
                    "qkv": torch.nn.Linear(d, 3 * d, bias=False),
                    "o": torch.nn.Linear(d, d, bias=False),
                    "gate_up": torch.nn.Linear(d, 4 * d, bias=False),
                    "down": torch.nn.Linear(2 * d, d, bias=False),
                }
            )
            for _ in range(layers)
        )
        self.head = torch.nn.Linear(d, vocab, bias=False)

    @staticmethod
    def rms(x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

    def rotate(self, x: torch.Tensor, start: int) -> torch.Tensor:
        half = x.shape[-1] // 2
        inv = 1.0 / 10000 ** (torch.arange(half, device=x.device, dtype=torch.float32) / half)
        pos = torch.arange(start, start + x.shape[-2], device=x.device, dtype=torch.float32)
        angles = torch.outer(pos, inv)
        cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)
        rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * cos + rotated * sin

    def forward(
        self, ids: torch.Tensor, cache: list[tuple[torch.Tensor, torch.Tensor]]
    ) -> torch.Tensor:
        b, t = ids.shape
        start = cache[0][0].shape[2] if cache else 0
        x = self.emb(ids)
        for i, layer in enumerate(self.layers):
            q, k, v = layer["qkv"](self.rms(x)).split(self.d, -1)
            q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
            q, k = self.rotate(q, start), self.rotate(k, start)
            if len(cache) > i:
                k, v = torch.cat([cache[i][0], k], 2), torch.cat([cache[i][1], v], 2)
                cache[i] = (k, v)
            else:
                cache.append((k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=start == 0)
            x = x + layer["o"](y.transpose(1, 2).reshape(b, t, self.d))
            gate, up = layer["gate_up"](self.rms(x)).chunk(2, -1)
            x = x + layer["down"](F.silu(gate) * up)
        return self.head(self.rms(x))


def greedy_generate(model: TinyLlama, prompt: torch.Tensor, new: int, eos: int) -> torch.Tensor:
    """Greedy decoding with the cache; stops early once every row has produced eos."""
    cache: list[tuple[torch.Tensor, torch.Tensor]] = []
    ids, step = prompt, prompt
    done = torch.zeros(prompt.shape[0], dtype=torch.bool, device=prompt.device)
    for _ in range(new):
        nxt = model(step, cache)[:, -1].argmax(-1)
        nxt = torch.where(done, torch.full_like(nxt, eos), nxt)
        ids, step = torch.cat([ids, nxt[:, None]], 1), nxt[:, None]
        done = done | (nxt == eos)
        if done.all().item():
            break
    return ids


def test_greedy_generation_runs_on_the_device(eager_mode: str) -> None:
    # Every token of a cached greedy decode is CPU's, with no call to either fallback (on the
    # host driver too).
    torch.manual_seed(0)
    model = TinyLlama().eval()
    prompt = torch.randint(0, 97, (2, 5), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = greedy_generate(model, prompt, 12, eos=3)
        dev_model = model.to("tpu")
        torch.tpu.synchronize()
        torch.tpu.reset_op_stats()
        got = greedy_generate(dev_model, prompt.to("tpu"), 12, eos=3).cpu()
    assert torch.equal(got, want)
    stats = torch.tpu.op_stats()
    assert stats["driver_fallback"] == {} and stats["fallback"] == {}, stats


def test_sampling_generation_runs_on_the_device(eager_mode: str) -> None:
    # Top-k sampling (topk, softmax, multinomial) every token: the same tokens again under the
    # same seed, each among the step's k most likely, with no call to either fallback.
    torch.manual_seed(0)
    model = TinyLlama().eval().to("tpu")
    prompt = torch.randint(0, 97, (2, 5), generator=torch.Generator().manual_seed(1)).to("tpu")

    def sample(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        torch.manual_seed(seed)
        cache: list[tuple[torch.Tensor, torch.Tensor]] = []
        step, tokens, allowed = prompt, [], []
        for _ in range(8):
            top = model(step, cache)[:, -1].topk(5)
            pick = torch.multinomial(top.values.softmax(-1), 1)
            step = top.indices.gather(1, pick)
            tokens.append(step)
            allowed.append(top.indices)
        return torch.cat(tokens, 1).cpu(), torch.stack(allowed, 1).cpu()

    with torch.no_grad():
        torch.tpu.synchronize()
        torch.tpu.reset_op_stats()
        first, allowed = sample(7)
        again, _ = sample(7)
    assert torch.equal(first, again)
    assert (first[..., None] == allowed).any(-1).all()
    stats = torch.tpu.op_stats()
    assert stats["driver_fallback"] == {} and stats["fallback"] == {}, stats


@pjrt_only
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool], ids=str)
def test_views_that_do_not_nest_run_on_the_device(dtype: torch.dtype, eager_mode: str) -> None:
    # Negative strides (flip), overlapping windows (unfold, an overlapping as_strided), diagonals
    # of a batch and steps that do not divide the row read and write through element positions
    # (gather and scatter), equal to CPU's exactly with no call left to the host.
    x = torch.randint(-50, 50, (6, 10), generator=torch.Generator().manual_seed(0)).to(dtype)
    dev = x.to("tpu")
    torch.tpu.reset_op_stats()
    into, want_into = torch.zeros(6, 10, dtype=dtype, device="tpu"), torch.zeros(6, 10, dtype=dtype)
    into[:, 1::3] = dev[:, :3].flip(0)
    want_into[:, 1::3] = x[:, :3].flip(0)
    diag, want_diag = (
        torch.zeros(2, 5, 5, dtype=dtype, device="tpu"),
        torch.zeros(2, 5, 5, dtype=dtype),
    )
    diag.diagonal(dim1=1, dim2=2).copy_(dev[:2, :5])
    want_diag.diagonal(dim1=1, dim2=2).copy_(x[:2, :5])
    checks = {
        "flip": (dev.flip(0, 1).cpu(), x.flip(0, 1)),
        "rot90": (torch.rot90(dev, 1, (0, 1)).cpu(), torch.rot90(x, 1, (0, 1))),
        "unfold": (dev.unfold(1, 4, 3).contiguous().cpu(), x.unfold(1, 4, 3).contiguous()),
        "overlapping as_strided": (
            dev.as_strided((5, 4), (3, 2), 1).clone().cpu(),
            x.as_strided((5, 4), (3, 2), 1).clone(),
        ),
        "step not dividing the row, read": (dev[:, 1::3].clone().cpu(), x[:, 1::3].clone()),
        "step not dividing the row, written": (into.cpu(), want_into),
        "diagonals of a batch, written": (diag.cpu(), want_diag),
        "diag_embed": (torch.diag_embed(dev[:3, :4]).cpu(), torch.diag_embed(x[:3, :4])),
    }
    for what, (got, want) in checks.items():
        torch.testing.assert_close(got, want, rtol=0, atol=0, msg=what)
    assert torch.tpu.op_stats()["driver_fallback"] == {}
