"""Random distributions on tpu: exponential_, cauchy_, log_normal_, geometric_ and normal with
tensor parameters draw from the tpu generator natively (no CPU or driver fallback). Their draws
are not CPU's, so they are tested statistically: a Kolmogorov-Smirnov distance to the exact CDF
(continuous ones) or each probability of the first values (geometric), with bounds that a correct
sampler exceeds with probability about 1e-4 per check; and for reproducibility under a seed, in
each eager mode, with CPU's parameter checks and messages."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
from _reduce_checks import DEV

N = 100_000
# KS bound at significance 1e-4: sqrt(-ln(1e-4 / 2) / (2 n)).
KS_BOUND = math.sqrt(-math.log(1e-4 / 2) / (2 * N))


def native(fn: Callable[[], torch.Tensor]) -> torch.Tensor:
    """fn() on tpu; nothing may run through either fallback."""
    torch.tpu.reset_op_stats()
    got = fn()
    torch.tpu.synchronize()
    stats = torch.tpu.op_stats()
    assert stats["fallback"] == {}, stats["fallback"]
    assert stats["driver_fallback"] == {}, stats["driver_fallback"]
    return got.cpu()


def ks_distance(samples: torch.Tensor, cdf: Callable[[torch.Tensor], torch.Tensor]) -> float:
    x = samples.double().flatten().sort().values
    n = x.numel()
    f = cdf(x)
    above = torch.arange(1, n + 1, dtype=torch.float64) / n - f
    below = f - torch.arange(0, n, dtype=torch.float64) / n
    return max(above.max().item(), below.max().item())


def normal_cdf(z: torch.Tensor) -> torch.Tensor:
    return 0.5 * (1 + torch.erf(z / math.sqrt(2)))


CONTINUOUS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], Callable]] = {
    "exponential": (
        lambda t: t.exponential_(1.7),
        lambda x: 1 - torch.exp(-1.7 * x),
    ),
    "cauchy": (
        lambda t: t.cauchy_(-0.5, 2.0),
        lambda x: 0.5 + torch.atan((x + 0.5) / 2.0) / math.pi,
    ),
    "log_normal": (
        lambda t: t.log_normal_(0.3, 0.8),
        lambda x: normal_cdf((torch.log(x) - 0.3) / 0.8),
    ),
}


@pytest.mark.parametrize("name", list(CONTINUOUS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_continuous_distribution(name: str, dtype: torch.dtype, eager_mode: str) -> None:
    draw, cdf = CONTINUOUS[name]
    x = native(lambda: draw(torch.empty(N, dtype=dtype, device=DEV)))
    assert x.dtype == dtype and torch.isfinite(x).all()
    assert ks_distance(x, cdf) < KS_BOUND


@pytest.mark.parametrize("name", list(CONTINUOUS))
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_half_precision_draws(name: str, dtype: torch.dtype, eager_mode: str) -> None:
    """float16 and bfloat16 draw in float and round once: the CDF holds up to the rounding, a
    relative 2^-8 (bfloat16) at most, which moves the CDF by less than 0.01 here."""
    draw, cdf = CONTINUOUS[name]
    x = native(lambda: draw(torch.empty(N, dtype=dtype, device=DEV)))
    assert x.dtype == dtype
    assert ks_distance(x[torch.isfinite(x)], cdf) < KS_BOUND + 0.01


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.int64, torch.int16, torch.bfloat16], ids=str
)
@pytest.mark.parametrize("p", [0.2, 0.75])
def test_geometric(dtype: torch.dtype, p: float, eager_mode: str) -> None:
    x = native(lambda: torch.empty(N, dtype=dtype, device=DEV).geometric_(p))
    assert x.dtype == dtype and (x >= 1).all()
    for k in range(1, 8):
        want = (1 - p) ** (k - 1) * p
        got = (x == k).double().mean().item()
        # 4.5 standard errors: about 7e-6 per value, 5e-5 for the seven
        assert abs(got - want) < 4.5 * math.sqrt(want * (1 - want) / N) + 1e-9, (k, got, want)


def test_normal_tensor_parameters(eager_mode: str) -> None:
    mean = torch.linspace(-3, 3, 1000).reshape(1000, 1)
    std = torch.linspace(0.5, 2, 100)
    x = native(lambda: torch.normal(mean.to(DEV), std.to(DEV)))
    assert x.shape == (1000, 100)
    assert ks_distance((x - mean) / std, normal_cdf) < KS_BOUND
    y = native(lambda: torch.normal(mean.to(DEV).flatten().repeat(100), 1.5))
    assert ks_distance((y - mean.flatten().repeat(100)) / 1.5, normal_cdf) < KS_BOUND
    z = native(lambda: torch.normal(2.0, std.to(DEV).repeat(1000)))
    assert ks_distance((z - 2.0) / std.repeat(1000), normal_cdf) < KS_BOUND
    out = torch.empty(0, device=DEV)
    w = native(lambda: torch.normal(mean.to(DEV), std.to(DEV), out=out))
    assert w.shape == (1000, 100) and out.shape == (1000, 100)


DRAWS: list[Callable[[torch.Tensor], torch.Tensor]] = [
    lambda t: t.exponential_(0.5),
    lambda t: t.cauchy_(1.0, 3.0),
    lambda t: t.log_normal_(0.0, 0.5),
    lambda t: t.geometric_(0.4),
    lambda t: torch.normal(t, torch.ones_like(t)),
]


@pytest.mark.parametrize("k", range(len(DRAWS)))
def test_seed_reproduces(k: int, eager_mode: str) -> None:
    def run(seed: int) -> torch.Tensor:
        torch.manual_seed(seed)
        base = torch.zeros(6, 9, device=DEV).t()  # non-contiguous
        return native(lambda: DRAWS[k](base))

    a, b, c = run(11), run(11), run(12)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


METHODS = [("exponential_", (0.5,)), ("cauchy_", (1.0, 3.0)), ("log_normal_", (0.0, 0.5))]
METHODS += [("geometric_", (0.4,))]


@pytest.mark.parametrize("name,args", METHODS)
def test_generator_reproduces(name: str, args: tuple[float, ...]) -> None:
    g = torch.Generator(device=DEV)
    first = getattr(torch.zeros(50, device=DEV), name)(*args, generator=g.manual_seed(3)).cpu()
    again = getattr(torch.zeros(50, device=DEV), name)(*args, generator=g.manual_seed(3)).cpu()
    other = getattr(torch.zeros(50, device=DEV), name)(*args, generator=g.manual_seed(4)).cpu()
    assert torch.equal(first, again) and not torch.equal(first, other)


def test_empty_draws(eager_mode: str) -> None:
    for draw in DRAWS:
        assert native(lambda d=draw: d(torch.empty(0, 3, device=DEV))).shape == (0, 3)


def same_error(fn: Callable[[torch.Tensor], object], dtype: torch.dtype = torch.float32) -> None:
    """fn raises on a tpu tensor what it raises, with the same message, on a CPU one."""
    with pytest.raises(Exception) as cpu:
        fn(torch.zeros(4, dtype=dtype))
    with pytest.raises(cpu.type) as tpu:
        fn(torch.zeros(4, dtype=dtype, device=DEV))
        torch.tpu.synchronize()
    assert str(tpu.value) == str(cpu.value)


def test_parameter_checks() -> None:
    same_error(lambda t: t.exponential_(0.0))
    same_error(lambda t: t.exponential_(-2.0))
    same_error(lambda t: t.exponential_(), torch.int64)
    same_error(lambda t: t.cauchy_(0.0, 0.0))
    same_error(lambda t: t.cauchy_(), torch.int32)
    same_error(lambda t: t.log_normal_(1.0, -1.0))
    same_error(lambda t: t.log_normal_(), torch.int64)
    same_error(lambda t: t.geometric_(0.0))
    same_error(lambda t: t.geometric_(1.0))
    same_error(lambda t: t.geometric_(0.5), torch.bool)
    same_error(lambda t: torch.normal(t, -1.0))
    same_error(lambda t: torch.normal(t, t - 1))
    same_error(lambda t: torch.normal(1.0, t - 1))
