"""The sort family on tpu against PyTorch CPU: torch.sort (stable and not, descending, any dim),
argsort, msort and topk (largest and smallest, sorted or not, k from 0 to the dimension's size),
in every dtype they take, with NaN, infinities, signed zeros and ties, empty and 0-d inputs,
non-contiguous inputs and out=; errors as CPU raises them; gradients; and that each runs natively,
with no call through the CPU fallback or the driver's fallback.

Ties: the core sorts stably in both directions, so its indices are those of CPU's stable sort,
also for an unstable sort and topk, where CPU leaves the order of ties unspecified."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from _reduce_checks import (
    DEV,
    FLOAT_DTYPES,
    REAL_DTYPES,
    distinct,
    move,
    raises_like_cpu,
    tensors,
    tied,
)

TOPK_DTYPES = [d for d in REAL_DTYPES if d != torch.bool]  # as CUDA's topk


def on_device(fn: Callable[..., Any], *args: Any) -> Any:
    """fn on tpu copies of args, checking that everything ran natively."""
    torch.tpu.reset_op_stats()
    got = fn(*move(args, DEV))
    torch.tpu.synchronize()
    stats = torch.tpu.op_stats()
    assert stats["fallback"] == {}, stats["fallback"]
    assert stats["driver_fallback"] == {}, stats["driver_fallback"]
    return got


def same(got: Any, want: Any, strides: bool = True) -> None:
    """Equal dtypes, shapes, strides (with `strides`) and values, bit for bit up to NaN payloads:
    a sorted -0.0 must be where CPU puts it."""
    for r, w in zip(tensors(got), tensors(want), strict=True):
        assert r.device.type == DEV
        assert (r.dtype, r.shape) == (w.dtype, w.shape), (r.dtype, r.shape, w.dtype, w.shape)
        if strides:
            assert r.stride() == w.stride(), (r.stride(), w.stride())
        r = r.cpu()
        torch.testing.assert_close(r, w, rtol=0, atol=0, equal_nan=True)
        if w.is_floating_point():
            assert torch.equal(torch.signbit(r), torch.signbit(w))


def check(fn: Callable[..., Any], *args: Any, strides: bool = True) -> Any:
    """fn on CPU and natively on tpu: the same results."""
    want = fn(*args)
    got = on_device(fn, *args)
    same(got, want, strides)
    return got


@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_stable_sort(dtype: torch.dtype, dim: int, descending: bool, eager_mode: str) -> None:
    x = tied((6, 7, 65), dtype)  # rows of 6 and 7 (insertion sort) and 65 (radix sort)
    check(lambda t: tuple(torch.sort(t, dim=dim, descending=descending, stable=True)), x)


@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=str)
@pytest.mark.parametrize("descending", [False, True])
def test_unstable_sort_orders_ties_stably(
    dtype: torch.dtype, descending: bool, eager_mode: str
) -> None:
    x = tied((5, 90), dtype)
    values, indices = on_device(lambda t: torch.sort(t, descending=descending), x)
    same((values, indices), torch.sort(x, descending=descending, stable=True))
    unstable = torch.sort(x, descending=descending).values
    torch.testing.assert_close(values.cpu(), unstable, rtol=0, atol=0, equal_nan=True)


def test_nan_infinities_and_zeros(eager_mode: str) -> None:
    nan, inf = float("nan"), float("inf")
    row = [1.0, nan, -0.0, 0.0, 2.0, nan, 1.0, -inf, inf, -0.0, -2.0, 0.0]
    for dtype in FLOAT_DTYPES:
        x = torch.tensor(row, dtype=dtype)
        long = torch.tensor(row * 10, dtype=dtype)  # the radix sort's keys
        for t in (x, long):
            for descending in (False, True):
                check(lambda u, d=descending: tuple(torch.sort(u, descending=d, stable=True)), t)
                top = on_device(lambda u, d=descending: torch.topk(u, 7, largest=d), t)
                stable = torch.sort(t, descending=descending, stable=True)
                same(tuple(top), tuple(s.narrow(0, 0, 7) for s in stable), strides=False)


def test_argsort_and_msort(eager_mode: str) -> None:
    x = tied((9, 70), torch.float32)
    check(lambda t: torch.argsort(t, dim=1, stable=True), x)
    check(lambda t: torch.argsort(t, dim=0, descending=True, stable=True), x)
    check(lambda t: torch.msort(t), x)
    check(lambda t: torch.argsort(t, 0), distinct((8, 5), torch.int32))


@pytest.mark.parametrize("dtype", TOPK_DTYPES, ids=str)
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dim", [0, -1])
def test_topk_without_ties(dtype: torch.dtype, largest: bool, dim: int, eager_mode: str) -> None:
    x = distinct((8, 30), dtype)  # within int8's and bfloat16's exact range
    n = x.size(dim)
    for k in (0, 1, 5, n):
        check(lambda t, k=k: tuple(torch.topk(t, k, dim=dim, largest=largest)), x)


@pytest.mark.parametrize("dtype", TOPK_DTYPES, ids=str)
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("sorted_", [True, False])
def test_topk_with_ties_is_the_stable_order(
    dtype: torch.dtype, largest: bool, sorted_: bool, eager_mode: str
) -> None:
    x = tied((7, 80), dtype)
    for k in (0, 3, 49, 80):
        got = on_device(lambda t, k=k: torch.topk(t, k, largest=largest, sorted=sorted_), x)
        want = torch.topk(x, k, largest=largest, sorted=sorted_)
        stable = torch.sort(x, descending=largest, stable=True)
        same(tuple(got), tuple(s.narrow(1, 0, k) for s in stable), strides=False)
        # CPU picks the same values, in its own order when unsorted.
        assert (got.values.stride(), got.indices.stride()) == (
            want.values.stride(),
            want.indices.stride(),
        )
        assert torch.equal(
            torch.sort(got.values.cpu()).values.nan_to_num(),
            torch.sort(want.values).values.nan_to_num(),
        )


def test_topk_of_a_long_row(eager_mode: str) -> None:
    """Sampling's topk over a vocabulary, in the model dtypes: a small k of a long row is selected
    in one pass (along rows and columns), a larger one sorted from the elements a count of key
    bytes leaves."""
    g = torch.Generator().manual_seed(0)
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        x = torch.randn(3, 50257, generator=g).to(dtype)
        for k, dim, largest in ((100, 1, True), (40, 1, True), (16, 1, False), (3, 0, True)):
            y = x if dim == 1 else x.t()  # columns: a strided row
            got = on_device(lambda t, k=k, d=dim, h=largest: torch.topk(t, k, d, h), y)
            stable = torch.sort(y, dim=dim, descending=largest, stable=True)
            same(tuple(got), tuple(s.narrow(dim, 0, k) for s in stable), strides=False)
    ascending = torch.arange(5000, dtype=torch.int32)  # every element enters the prefix
    check(lambda t: tuple(torch.topk(t, 64)), ascending)
    check(lambda t: tuple(torch.topk(t, 16, largest=False)), ascending.flip(0))


def test_large_sorts_split_over_threads(eager_mode: str) -> None:
    x = tied((300, 1000), torch.float32)
    check(lambda t: tuple(torch.sort(t, stable=True)), x)
    check(lambda t: tuple(torch.sort(t, dim=0, descending=True, stable=True)), x)
    check(lambda t: tuple(torch.sort(t.flatten(), stable=True)), x)
    check(lambda t: tuple(torch.sort(t.double().flatten(), stable=True)), x)


def test_empty_and_zero_dim(eager_mode: str) -> None:
    e = torch.randn(3, 0, 4)
    for dim in (0, 1, 2):
        check(lambda t, d=dim: tuple(torch.sort(t, d)), e)
    check(lambda t: tuple(torch.topk(t, 0, dim=1)), e)
    check(lambda t: tuple(torch.topk(t, 2, dim=0)), e)
    x = torch.randn(3, 5)
    check(lambda t: tuple(torch.topk(t, 0)), x)
    check(lambda t: tuple(torch.topk(t, 0, dim=0)), x)
    s = torch.tensor(2.5)
    check(lambda t: tuple(torch.sort(t)), s)
    check(lambda t: tuple(torch.sort(t, -1, descending=True)), s)
    check(lambda t: tuple(torch.topk(t, 1)), s)
    check(lambda t: tuple(torch.topk(t, 0)), s)
    check(lambda t: torch.argsort(t), s)


def test_noncontiguous_inputs(eager_mode: str) -> None:
    x = tied((8, 9, 66), torch.float32)
    check(lambda t: tuple(torch.sort(t.transpose(0, 2), dim=1, stable=True)), x)
    check(lambda t: tuple(torch.sort(t[:, ::3, 1::3], dim=-1, stable=True)), x)
    check(lambda t: tuple(torch.sort(t[:, :1].expand(8, 5, 66), dim=1, stable=True)), x)
    check(
        lambda t: tuple(torch.topk(t.permute(2, 0, 1), 4, dim=0)),
        distinct((8, 9, 66), torch.float32),
    )
    check(
        lambda t: tuple(torch.topk(t[::2, 3], 7, largest=False)), distinct((8, 9, 66), torch.int64)
    )


def test_out_variants(eager_mode: str) -> None:
    x = tied((6, 70), torch.float32)

    def outs(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.empty(0, device=t.device), torch.empty(0, dtype=torch.int64, device=t.device)

    check(lambda t: torch.sort(t, dim=1, stable=True, out=outs(t)), x)
    check(lambda t: torch.sort(t, dim=0, descending=True, stable=True, out=outs(t)), x)
    check(lambda t: torch.topk(t, 5, out=outs(t)), distinct((6, 70), torch.float32))

    def into_input(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        u = t.clone()
        torch.sort(u, dim=1, stable=True, out=(u, outs(u)[1]))
        return u, u.argmax(1)

    check(into_input, x)
    raises_like_cpu(
        lambda t: torch.sort(
            t, out=(torch.empty(0, device=t.device), torch.empty(0, device=t.device))
        ),
        x,
    )


def test_errors() -> None:
    x = torch.randn(4, 5)
    raises_like_cpu(lambda t: torch.topk(t, 6), x)
    raises_like_cpu(lambda t: torch.topk(t, -1), x)
    raises_like_cpu(lambda t: torch.topk(t, 1, dim=2), x)
    raises_like_cpu(lambda t: torch.sort(t, 2), x)
    raises_like_cpu(lambda t: torch.topk(t, 2), torch.tensor(1.0))
    raises_like_cpu(lambda t: torch.sort(t), torch.randn(3, dtype=torch.complex64))
    raises_like_cpu(lambda t: torch.topk(t, 1), torch.randn(3, dtype=torch.complex64))
    raises_like_cpu(lambda t: torch.topk(t, 1), torch.tensor([True, False]))


def test_storage_only_dtypes() -> None:
    """The unsigned dtypes the core only stores sort through the counted CPU fallback; topk
    refuses them, as CPU and CUDA do."""
    x = torch.randint(0, 60000, (4, 50)).to(torch.uint16)
    torch.tpu.reset_op_stats()
    got = torch.sort(x.to(DEV), dim=0, stable=True)
    assert torch.tpu.fallback_stats() == {"aten::sort.stable": 1}
    same(tuple(got), tuple(torch.sort(x, dim=0, stable=True)))
    raises_like_cpu(lambda t: torch.topk(t, 3), x)


def test_counts_as_native() -> None:
    on_device(lambda t: (torch.sort(t), torch.topk(t, 2)), torch.randn(3, 4))
    torch.tpu.reset_op_stats()
    torch.sort(torch.randn(3, 4, device=DEV))
    torch.tpu.synchronize()
    assert torch.tpu.op_stats()["native"].get("sort") == 1


def grad_check(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> None:
    """The gradient of fn(x) against g, on CPU and natively on tpu (backward too)."""
    g = torch.randn(fn(x).shape, dtype=x.dtype)
    leaf = x.clone().requires_grad_()
    (want,) = torch.autograd.grad(fn(leaf), leaf, g)

    def run(t: torch.Tensor, seed: torch.Tensor) -> torch.Tensor:
        t.requires_grad_()
        (grad,) = torch.autograd.grad(fn(t), t, seed)
        return grad

    got = on_device(run, x, g)
    same(got, want)


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: torch.sort(t, 1).values,
        lambda t: torch.sort(t, dim=0, descending=True, stable=True).values,
        lambda t: torch.topk(t, 5).values,
        lambda t: torch.topk(t, 3, dim=0, largest=False).values,
        lambda t: torch.msort(t),
    ],
    ids=["sort", "sort-descending", "topk", "topk-smallest", "msort"],
)
def test_gradients(fn: Callable[[torch.Tensor], torch.Tensor], eager_mode: str) -> None:
    grad_check(fn, distinct((6, 60), torch.float32))
    grad_check(fn, distinct((6, 60), torch.float64).transpose(0, 1).contiguous().t())
