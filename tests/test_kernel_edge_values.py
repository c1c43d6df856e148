"""Kernel results at the edges of a dtype's range, against PyTorch CPU or the exact result, in
every eager mode: variance and layer_norm of values near the largest (the fast sums overflow where
CPU's Welford in double does not), products whose partial products overflow before a zero,
complex accumulation of infinite parts (alpha 1 adds, it does not multiply), and bfloat16
matmuls of subnormal values (AVX512-BF16 dot products read them as zero)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

inf, nan = math.inf, math.nan

LOWP_AND_FLOAT = [torch.float32, torch.float16, torch.bfloat16, torch.float64]


def _check(cpu: torch.Tensor, tpu: torch.Tensor, rtol: float = 2e-2) -> None:
    assert tpu.device.type == "tpu"
    assert tpu.dtype == cpu.dtype
    torch.testing.assert_close(tpu.cpu(), cpu, rtol=rtol, atol=1e-5, equal_nan=True)


def _big_rows(dtype: torch.dtype) -> torch.Tensor:
    """Rows whose sums or squares overflow the dtype while their spread is small or moderate."""
    big = torch.finfo(dtype).max
    rows = [
        [big, big, big],
        [big, big * 0.5, big * 0.75],
        [-big, -1.0, -big * 0.5],
        [big / 4, big / 4, big / 4],
        [math.sqrt(big) * 4, 1.0, 2.0],
    ]
    return torch.tensor(rows, dtype=torch.float64).to(dtype)


STATS = {
    "var": lambda x: torch.var(x, -1),
    "std": lambda x: torch.std(x, -1, correction=0),
    "var_dim0": lambda x: torch.var(x.t(), 0),
    "var_mean": lambda x: torch.stack(torch.var_mean(x, -1)),
    "std_mean": lambda x: torch.stack(torch.std_mean(x, -1)),
    "std_mean_all": lambda x: torch.stack(torch.std_mean(x[1])),
}


@pytest.mark.parametrize("dtype", LOWP_AND_FLOAT)
@pytest.mark.parametrize("op", sorted(STATS))
def test_var_std_near_largest(eager_mode: str, dtype: torch.dtype, op: str) -> None:
    x = _big_rows(dtype)
    cpu = STATS[op](x)
    assert torch.isfinite(cpu).any()  # float64's spread rows overflow on CPU too
    _check(cpu, STATS[op](x.to("tpu")))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_var_all_near_largest(eager_mode: str, dtype: torch.dtype) -> None:
    # CPU's float32 var of everything takes a float32 mean that overflows; its float64 result is
    # the exact one, which tpu gives.
    x = _big_rows(dtype)[1]
    want = torch.var(x.double()).to(dtype)
    _check(want, torch.var(x.to("tpu")))
    _check(torch.std(x.double()).to(dtype), torch.std(x.to("tpu")))


def test_var_float64_all_keeps_cpu_overflow(eager_mode: str) -> None:
    # float64 down to one value: CPU's plain mean overflows to inf, and so does tpu's.
    x = torch.tensor([1.7e308, 1.7e308], dtype=torch.float64)
    _check(torch.var(x), torch.var(x.to("tpu")))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_var_complex_near_largest(eager_mode: str, dtype: torch.dtype) -> None:
    real = _big_rows(dtype.to_real())
    x = torch.complex(real, real.flip(-1) * 0.5)
    for f in (lambda t: torch.var(t, -1), lambda t: torch.std(t.t(), 0)):
        cpu = f(x)
        assert torch.isfinite(cpu).any()
        _check(cpu, f(x.to("tpu")))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_layer_norm_near_largest(eager_mode: str, dtype: torch.dtype) -> None:
    x = _big_rows(dtype)
    w = torch.full((3,), 0.5, dtype=dtype)
    b = torch.full((3,), 0.25, dtype=dtype)
    # CPU's float kernel overflows in float; its float64 result is the exact one.
    want = F.layer_norm(x.double(), (3,), w.double(), b.double()).to(dtype)
    got = F.layer_norm(x.to("tpu"), (3,), w.to("tpu"), b.to("tpu"))
    _check(want, got, rtol=3e-2)
    assert torch.isfinite(got.cpu()).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_layer_norm_spread_near_largest(eager_mode: str, dtype: torch.dtype) -> None:
    """x - mean overflows float where the row holds both signs of the largest values."""
    big = torch.finfo(dtype).max
    x = torch.tensor([[0.0, big, 1.0, -1.0, 0.0, big, -big], [1.0, 0.0, -big, 0.0, 1.0, 0.0, 2.0]])
    x = x.to(dtype)
    want = F.layer_norm(x.double(), (7,)).to(dtype)
    got = F.layer_norm(x.to("tpu"), (7,))
    _check(want, got, rtol=3e-2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_prod_zero_after_overflow(eager_mode: str, dtype: torch.dtype) -> None:
    """Partial products that overflow before a zero comes: the product is still the exact ±0
    (CPU's and the fast pass's orders may give NaN), ±inf without a zero, NaN with one."""
    many = 2000 if dtype == torch.float64 else 200
    rows = torch.stack(
        [
            torch.cat([torch.full((many,), 3.0), torch.tensor([-0.0])]),
            torch.cat([torch.tensor([-0.0]), torch.full((many,), -3.0)]),
            torch.cat([torch.full((many,), -3.0), torch.tensor([1.0])]),
            torch.cat([torch.full((many - 1,), 3.0), torch.tensor([-math.inf, 0.0])]),
        ]
    ).to(dtype)
    neg_zero = -1.0 if many % 2 == 0 else 1.0
    want = torch.tensor([-0.0, 0.0 * neg_zero, -math.inf if many % 2 else math.inf, nan])
    for t in (rows.to("tpu"), rows.t().contiguous().to("tpu").t()):
        got = torch.prod(t, 1).cpu()
        torch.testing.assert_close(got, want.to(dtype), equal_nan=True)
        assert torch.equal(torch.signbit(got[:2]), torch.signbit(want[:2]))
    assert torch.prod(rows[0].to("tpu")).item() == 0.0


def test_layer_norm_ordinary_rows_unchanged(eager_mode: str) -> None:
    x = torch.randn(4, 37, generator=torch.Generator().manual_seed(0))
    _check(F.layer_norm(x, (37,)), F.layer_norm(x.to("tpu"), (37,)), rtol=1e-5)


COMPLEX = [torch.complex64, torch.complex128]


def _src(dtype: torch.dtype) -> torch.Tensor:
    return torch.tensor([complex(0.75, -inf), complex(3.5, nan), complex(inf, 2.0)], dtype=dtype)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_complex_accumulate_infinite_parts(eager_mode: str, dtype: torch.dtype) -> None:
    src, idx = _src(dtype), torch.tensor([0, 1, 1])
    ops = {
        "index_put": lambda z, i, s: z.index_put_((i,), s, accumulate=True),
        "scatter_add": lambda z, i, s: z.scatter_add_(0, i, s),
        "scatter_add_fn": lambda z, i, s: torch.scatter_add(z, 0, i, s),
        "index_add_2d": lambda z, i, s: z.view(2, 1).index_add_(0, i, s.view(3, 1)),
        "index_add_2d_alpha": lambda z, i, s: z.view(2, 1).index_add_(0, i, s.view(3, 1), alpha=2),
        "index_add_2d_alpha_j": lambda z, i, s: z.view(2, 1).index_add_(
            0, i, s.view(3, 1), alpha=1j
        ),
        # CPU multiplies by alpha even when it is 1 for a 1-d self.
        "index_add_1d": lambda z, i, s: z.index_add_(0, i, s),
    }
    for name, f in ops.items():
        cpu = f(torch.zeros(2, dtype=dtype), idx, src)
        tpu = f(torch.zeros(2, dtype=dtype, device="tpu"), idx.to("tpu"), src.to("tpu"))
        _check(cpu, tpu)
        assert torch.equal(torch.isnan(tpu.cpu()), torch.isnan(cpu)), name


@pytest.mark.parametrize(
    "op",
    ["mm", "matmul", "bmm", "mv", "addmv", "dot", "addmm", "linear", "big"],
)
def test_bf16_matmul_subnormal_inputs(eager_mode: str, op: str) -> None:
    bf = torch.bfloat16
    a = torch.tensor([[3.39e38, 1.0]], dtype=bf)
    b = torch.tensor([[2.9e-39], [0.0]], dtype=bf)  # 2.9e-39 is subnormal in bfloat16
    assert b[0, 0].item() != 0
    calls = {
        "mm": lambda a, b: torch.mm(a, b),
        "matmul": lambda a, b: a @ b,
        "bmm": lambda a, b: torch.bmm(a[None], b[None]),
        "mv": lambda a, b: torch.mv(a, b[:, 0]),
        "addmv": lambda a, b: torch.addmv(b[:1, 0], a, b[:, 0]),
        "dot": lambda a, b: torch.dot(a[0], b[:, 0]),
        "addmm": lambda a, b: torch.addmm(b[:1], a, b),
        "linear": lambda a, b: F.linear(a, b.t()),
        # Large enough for the packed kernel's blocked path.
        "big": lambda a, b: (a.expand(64, 2).repeat(1, 40)) @ (b.repeat(40, 64)),
    }
    # CPU's own bf16 GEMM (oneDNN) flushes subnormals too at larger sizes; CUDA does not: the
    # reference is the float32 product, rounded once, which CPU gives for small sizes.
    cpu = calls[op](a.float(), b.float()).to(torch.bfloat16)
    assert cpu.abs().max() > 0.5
    _check(cpu, calls[op](a.to("tpu"), b.to("tpu")))


@pytest.mark.parametrize("transposed", ["a", "b", "both"])
def test_bf16_matmul_subnormal_in_transposed_operand(eager_mode: str, transposed: str) -> None:
    # The subnormal scan reads a transposed operand in memory order: the lone subnormal sits in
    # the last element, at the far end of either order.
    bf = torch.bfloat16
    a = torch.zeros(64, 80, dtype=bf)
    b = torch.zeros(80, 72, dtype=bf)
    a[-1, -1], b[-1, -1] = 3.39e38, 2.9e-39
    cpu = (a.float() @ b.float()).to(bf)
    assert cpu[-1, -1] > 0.5
    ta, tb = a.to("tpu"), b.to("tpu")
    if transposed in ("a", "both"):
        ta = ta.t().contiguous().t()
    if transposed in ("b", "both"):
        tb = tb.t().contiguous().t()
    _check(cpu, ta @ tb)


def test_bf16_matmul_without_subnormals_unchanged(eager_mode: str) -> None:
    g = torch.Generator().manual_seed(1)
    a = torch.randn(70, 90, generator=g).bfloat16()
    b = torch.randn(90, 50, generator=g).bfloat16()
    _check(a.float() @ b.float(), (a.to("tpu") @ b.to("tpu")).float(), rtol=2e-2)
