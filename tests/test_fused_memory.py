"""Fused mode's memory plan: an output takes the memory of an input read for the last time where
the kernel allows it (elementwise groups, softmax rows), and cross-entropy's backward runs as one
row kernel without the mostly-zero gradient of the log-probabilities. Values match PyTorch on CPU;
peaks are read from the device allocator, which counts every byte."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator

import pytest
import torch
import torch.nn.functional as F

DEV = "tpu"
MiB = 1 << 20


@pytest.fixture
def fresh_peak() -> Iterator[None]:
    torch.tpu.synchronize()
    torch.tpu.reset_peak_memory_stats()
    yield
    torch.tpu.synchronize()


def peak_of(mode: str, fn: Callable[[], torch.Tensor]) -> tuple[torch.Tensor, int]:
    """fn's result on the host and the device's peak above what was allocated before it."""
    gc.collect()  # tensors of earlier tests freed inside fn would lower the peak below the base
    torch.tpu.synchronize()
    torch.tpu.reset_peak_memory_stats()
    base = torch.tpu.memory_allocated()
    with torch.tpu.eager_mode(mode):
        out = fn().cpu()
    return out, torch.tpu.max_memory_allocated() - base


def test_group_writes_into_an_input_it_read_last(fresh_peak: None) -> None:
    src = torch.randn(1 << 18)
    base = src.to(DEV)

    def chain() -> torch.Tensor:
        x = base * 3  # a buffer of the graph, dead after the group below
        a = x + 1
        b = a * x  # reads x after a is written: a must not take x's memory, b may
        del x
        return torch.stack([a.sum(), b.sum()])

    fused, peak_fused = peak_of("fused", chain)
    strict, peak_strict = peak_of("strict", chain)
    x = src * 3
    a = x + 1
    expected = torch.stack([a.sum(), (a * x).sum()])
    torch.testing.assert_close(fused, expected)
    torch.testing.assert_close(strict, expected)
    size = src.numel() * 4
    # strict holds x, a and b at once; fused writes b over x.
    assert peak_strict >= 3 * size
    assert peak_fused < 2.5 * size


@pytest.mark.parametrize("log", [True, False])
def test_softmax_writes_over_its_dead_input(log: bool) -> None:
    src = torch.randn(512, 1000)
    fn = torch.log_softmax if log else torch.softmax
    base = src.to(DEV)

    def rows() -> torch.Tensor:
        return fn(base * 2, dim=1)

    fused, peak_fused = peak_of("fused", rows)
    _, peak_strict = peak_of("strict", rows)
    torch.testing.assert_close(fused, fn(src * 2, dim=1))
    size = src.numel() * 4
    assert peak_strict >= 2 * size
    assert peak_fused < 1.5 * size


@pytest.mark.parametrize(
    ("reduction", "weighted", "ignore", "dtype"),
    [
        ("mean", False, -100, torch.float32),
        ("sum", True, 3, torch.float32),
        ("none", True, 0, torch.float32),
        ("mean", True, 5, torch.float64),
    ],
)
def test_cross_entropy_backward_as_one_kernel(
    reduction: str, weighted: bool, ignore: int, dtype: torch.dtype
) -> None:
    gen = torch.Generator().manual_seed(0)
    n, c = 256, 1024
    logits = torch.randn(n, c, generator=gen, dtype=dtype)
    target = torch.randint(c, (n,), generator=gen)
    target[::7] = ignore
    weight = torch.rand(c, generator=gen, dtype=dtype) if weighted else None

    def grad(device: str) -> torch.Tensor:
        x = logits.detach().to(device).requires_grad_()
        w = weight.to(device) if weight is not None else None
        loss = F.cross_entropy(x, target.to(device), w, ignore_index=ignore, reduction=reduction)
        loss.sum().backward()
        assert x.grad is not None
        return x.grad

    expected = grad("cpu")
    for mode in ("fused", "strict"):
        got, _ = peak_of(mode, lambda: grad(DEV))
        torch.testing.assert_close(got, expected)


def test_cross_entropy_backward_peak() -> None:
    gen = torch.Generator().manual_seed(0)
    n, c = 512, 2048
    logits = torch.randn(n, c, generator=gen).to(DEV)
    target = torch.randint(c, (n,), generator=gen).to(DEV)

    def step() -> torch.Tensor:
        x = (logits * 1).requires_grad_()
        F.cross_entropy(x * 1, target).backward()
        assert x.grad is not None
        return x.grad.sum()

    fused, peak_fused = peak_of("fused", step)
    strict, peak_strict = peak_of("strict", step)
    torch.testing.assert_close(fused, strict)
    size = n * c * 4
    # strict: log-probabilities, their gradient and the logits' gradient at once; fused: only
    # the log-probabilities, overwritten by the logits' gradient.
    assert peak_strict >= 3 * size
    assert peak_fused <= 2 * size + MiB


def test_cross_entropy_pair_with_a_bad_target_raises_and_recovers() -> None:
    logits = torch.randn(4, 10, device=DEV, requires_grad=True)
    target = torch.tensor([1, 2, 30, 4], device=DEV)
    with torch.tpu.eager_mode("fused"):
        with pytest.raises((IndexError, RuntimeError), match="out of bounds"):
            F.cross_entropy(logits, target).backward()
            torch.tpu.synchronize()
    torch.tpu.synchronize()
    assert torch.ones(2, device=DEV).sum().item() == 2.0


def test_reordering_keeps_per_step_temporaries_short_lived() -> None:
    # An accumulation over results of unfusable ops (as a recurrent backward sums a weight's
    # gradient over timesteps): fusing the adds at the end would hold every temporary until then.
    gen = torch.Generator().manual_seed(0)
    steps, n = 16, 256
    xs = [torch.randn(n, n, generator=gen) for _ in range(steps)]
    dev_xs = [x.to(DEV) for x in xs]
    eye = torch.eye(n).to(DEV)

    def accumulate() -> torch.Tensor:
        acc = torch.zeros(n, n, device=DEV)
        for x in dev_xs:
            acc = acc + torch.mm(x, eye) * 0.5
        return acc

    fused, peak_fused = peak_of("fused", accumulate)
    _, peak_strict = peak_of("strict", accumulate)
    torch.testing.assert_close(fused, sum(xs) * 0.5)
    assert peak_fused <= peak_strict + n * n * 4


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_sum_of_a_chain_is_reduced_tile_by_tile(dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(0)
    n = (1 << 20) + 3
    a, b = torch.randn(n, generator=gen, dtype=dtype), torch.randn(n, generator=gen, dtype=dtype)
    ta, tb = a.to(DEV), b.to(DEV)

    def losses() -> torch.Tensor:
        mse = ((ta - tb) ** 2).mean()
        dot = (ta * tb).sum()
        kept = ta * 2  # also needed by the caller: stored, and its sum read from the same tiles
        return torch.stack([mse, dot, kept.sum(), kept[-1]])

    torch.tpu.reset_fused_stats()
    got, peak = peak_of("fused", losses)
    stats = torch.tpu.fused_stats()
    expected = torch.stack([((a - b) ** 2).mean(), (a * b).sum(), (a * 2).sum(), a[-1] * 2])
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-3)
    # Three groups ending in their sums; only `kept` and the scalars ever had memory.
    assert stats["fused_steps"] >= 3
    assert peak < n * a.element_size() + MiB


def test_partial_sums_are_not_fused() -> None:
    x = torch.randn(64, 128, generator=torch.Generator().manual_seed(5))
    t = x.to(DEV)
    got, _ = peak_of("fused", lambda: (t * 3).sum(dim=0))
    torch.testing.assert_close(got, (x * 3).sum(dim=0))
    # 8192 float32 terms summed in another order than CPU's: a few ulps of the largest partials.
    got, _ = peak_of("fused", lambda: (t.t() * 3).sum())
    torch.testing.assert_close(got, (x.t() * 3).sum(), rtol=1e-5, atol=1e-3)
