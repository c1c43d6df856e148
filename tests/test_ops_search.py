"""Scans, order statistics, searches and histograms on tpu against PyTorch CPU: cumprod, cummax,
cummin and logcumsumexp (the core's SCAN), kthvalue, median and nanmedian (picks from its stable
SORT), mode, unique and unique_consecutive (runs of the sorted values), searchsorted and
bucketize (SEARCH), histc and bincount (HISTC), aminmax and equal; in the dtypes CPU takes (histc
also the integers, as CUDA), with NaN, infinities and ties, empty, 0-d and non-contiguous inputs
and out=; errors as CPU raises them; gradients; and that each runs natively, with no call through
the CPU fallback or the driver's fallback."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from _reduce_checks import (
    DEV,
    FLOAT_DTYPES,
    PJRT,
    REAL_DTYPES,
    distinct,
    make,
    move,
    raises_like_cpu,
    tensors,
    tied,
)

INT_DTYPES = [d for d in REAL_DTYPES if not d.is_floating_point and d != torch.bool]
SORTABLE = [d for d in REAL_DTYPES if d != torch.bool]


def on_device(fn: Callable[..., Any], *args: Any, empty_input: tuple[str, ...] = ()) -> Any:
    """fn on tpu copies of args, checking that everything ran natively, but for the ops named in
    empty_input on the PJRT driver: it hands a call with an empty input and a nonempty output to
    its host fallback (drivers/pjrt/tpu_pjrt_lower.c: a module has no empty view to slice)."""
    torch.tpu.reset_op_stats()
    got = fn(*move(args, DEV))
    torch.tpu.synchronize()
    stats = torch.tpu.op_stats()
    assert stats["fallback"] == {}, stats["fallback"]
    allowed = set(empty_input) if PJRT else set()
    assert set(stats["driver_fallback"]) <= allowed, stats["driver_fallback"]
    return got


def check(
    fn: Callable[..., Any],
    *args: Any,
    rtol: float = 0,
    atol: float = 0,
    strides: bool = True,
    empty_input: tuple[str, ...] = (),
) -> Any:
    """fn on CPU and natively on tpu: the same dtypes, shapes, strides and values (NaN equal)."""
    want = fn(*args)
    got = on_device(fn, *args, empty_input=empty_input)
    for r, w in zip(tensors(got), tensors(want), strict=True):
        assert r.device.type == DEV
        assert (r.dtype, r.shape) == (w.dtype, w.shape), (r.dtype, r.shape, w.dtype, w.shape)
        if strides:
            assert r.stride() == w.stride(), (r.stride(), w.stride())
        torch.testing.assert_close(r.cpu(), w, rtol=rtol, atol=atol, equal_nan=True)
    if isinstance(want, bool):
        assert got == want
    return got


def tolerance(dtype: torch.dtype) -> dict[str, float]:
    """Rounding of a running float computation that the drivers may order differently."""
    if dtype in (torch.float16, torch.bfloat16):
        return {"rtol": 2e-2, "atol": 2e-2}
    return {"rtol": 1e-5, "atol": 1e-6}


# ---- scans ----


@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=str)
@pytest.mark.parametrize("dim", [0, -1])
def test_cumprod(dtype: torch.dtype, dim: int, eager_mode: str) -> None:
    x = make((5, 12), dtype) if not dtype.is_floating_point else torch.rand(5, 12).to(dtype) + 0.5
    check(lambda t: torch.cumprod(t, dim), x, **tolerance(dtype))
    check(lambda t: torch.cumprod(t, dim, dtype=torch.float64), x, rtol=1e-6)


def test_cumprod_out_inplace_and_edges(eager_mode: str) -> None:
    x = make((4, 6), torch.float32).t()  # non-contiguous
    check(lambda t: torch.cumprod(t, 0, out=torch.empty(6, 4, device=t.device)), x, rtol=1e-6)
    check(lambda t: t.clone().cumprod_(1), x, rtol=1e-6)
    check(lambda t: torch.cumprod(t, 0), torch.tensor(2.5))
    check(lambda t: torch.cumprod(t, 1), torch.empty(3, 0))
    check(lambda t: torch.cumprod(t, 1), tied((3, 20), torch.float32), rtol=1e-6)


@pytest.mark.parametrize("op", [torch.cummax, torch.cummin], ids=["cummax", "cummin"])
@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=str)
def test_cummax_cummin(op: Callable[..., Any], dtype: torch.dtype, eager_mode: str) -> None:
    x = tied((6, 40), dtype)
    check(lambda t: tuple(op(t, 1)), x)
    check(lambda t: tuple(op(t, 0)), x)
    check(lambda t: tuple(op(t.t(), 1)), x)
    check(lambda t: tuple(op(t, 0)), tied((), dtype))
    check(lambda t: tuple(op(t, 1)), torch.empty(2, 0, dtype=dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_logcumsumexp(dtype: torch.dtype, eager_mode: str) -> None:
    x = (torch.randn(4, 50) * 10).to(dtype)
    check(lambda t: torch.logcumsumexp(t, 1), x, **tolerance(dtype))
    check(lambda t: torch.logcumsumexp(t, 0), x.t(), **tolerance(dtype))
    check(lambda t: torch.logcumsumexp(t, 1), tied((3, 30), dtype), **tolerance(dtype))
    check(lambda t: torch.logcumsumexp(t, 0), torch.tensor(1.5, dtype=dtype))


# ---- order statistics ----


@pytest.mark.parametrize("dtype", SORTABLE, ids=str)
def test_kthvalue(dtype: torch.dtype, eager_mode: str) -> None:
    x = distinct((5, 40), dtype)
    for k, dim, keepdim in [(1, 1, False), (17, 1, True), (40, -1, False), (3, 0, False)]:
        check(lambda t, k=k, d=dim, kd=keepdim: tuple(torch.kthvalue(t, k, d, kd)), x)
    check(lambda t: tuple(torch.kthvalue(t, 2, 0)), x.t())
    check(lambda t: tuple(torch.kthvalue(t, 1)), torch.tensor(3, dtype=dtype))


@pytest.mark.parametrize("dtype", SORTABLE, ids=str)
@pytest.mark.parametrize("op", [torch.median, torch.nanmedian], ids=["median", "nanmedian"])
def test_median(op: Callable[..., Any], dtype: torch.dtype, eager_mode: str) -> None:
    x = tied((7, 31), dtype)
    if dtype.is_floating_point:
        x[2] = float("nan")  # a row of NaN only
        x[3] = x[3].nan_to_num(0.5)  # and one without
    # nanmedian's index in a row of NaN only is whichever NaN CPU's nth_element leaves there:
    # compared by value only.
    nan_row = op is torch.nanmedian and dtype.is_floating_point
    rows = torch.cat([x[:2], x[3:]]) if nan_row else x
    for dim, keepdim in [(1, False), (0, True), (-1, True)]:
        check(lambda t, d=dim, kd=keepdim: tuple(op(t, d, kd)), rows)
        check(lambda t, d=dim, kd=keepdim: op(t, d, kd).values, x)
    check(lambda t: tuple(op(t, 1)), rows[:, :30])  # an even count
    check(lambda t: op(t), x)
    check(lambda t: op(t), x[3])
    check(lambda t: tuple(op(t, 0)), torch.tensor(2, dtype=dtype))
    check(lambda t: op(t), torch.tensor(2, dtype=dtype))


def test_median_out() -> None:
    x = tied((4, 9), torch.float32)

    def run(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        values = torch.empty(0, device=t.device)
        indices = torch.empty(0, dtype=torch.long, device=t.device)
        torch.median(t, 1, out=(values, indices))
        return values, indices

    check(run, x)


@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=str)
def test_mode(dtype: torch.dtype, eager_mode: str) -> None:
    """Values as CPU's; the index is one of the mode's positions (CPU's is whichever its unstable
    std::sort leaves last among them, as CUDA's is its own)."""
    x = make((6, 25), dtype)  # small integers: many equal counts
    for source, dim, keepdim in [(x, 1, False), (x, 0, True), (x.t(), -1, False)]:
        want = torch.mode(source, dim, keepdim)
        got = on_device(lambda t, d=dim, kd=keepdim: torch.mode(t, d, kd), source)
        for r, w in zip(got, want, strict=True):
            assert (r.dtype, r.shape, r.stride()) == (w.dtype, w.shape, w.stride())
        torch.testing.assert_close(got.values.cpu(), want.values)
        index = got.indices.cpu() if keepdim else got.indices.cpu().unsqueeze(dim)
        picked = source.gather(dim, index)
        torch.testing.assert_close(picked if keepdim else picked.squeeze(dim), want.values)
    check(lambda t: tuple(torch.mode(t)), torch.tensor(1, dtype=dtype))


@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=str)
def test_unique(dtype: torch.dtype, eager_mode: str) -> None:
    """Without NaN and -0.0: which of 0.0 and -0.0 stands for both, and the inverse indices of
    NaNs (each unique), are whatever CPU's unstable sort leaves, as CUDA's are its own."""
    x = tied((5, 9), dtype)
    if dtype.is_floating_point:
        x = x.masked_fill(x.isnan(), 7) + 0.0  # -0.0 + 0.0 is 0.0
    for inverse in (False, True):
        for counts in (False, True):
            check(lambda t, i=inverse, c=counts: torch.unique(t, True, i, c), x)
            check(lambda t, i=inverse, c=counts: torch.unique_consecutive(t, i, c), x)
    check(lambda t: torch.unique(t, return_inverse=True), x.t())
    check(lambda t: torch.unique(t, return_counts=True), torch.empty(0, dtype=dtype))
    check(lambda t: torch.unique_consecutive(t, return_counts=True), x.sort().values)


@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=str)
def test_aminmax(dtype: torch.dtype, eager_mode: str) -> None:
    x = tied((5, 7), dtype)
    check(lambda t: tuple(torch.aminmax(t)), x)
    check(lambda t: tuple(torch.aminmax(t, dim=1)), x)
    check(lambda t: tuple(torch.aminmax(t, dim=0, keepdim=True)), x.t())


def test_equal(eager_mode: str) -> None:
    x = make((3, 4), torch.float32)
    for other in [x.clone(), x + 1, x[:2], x.double(), torch.full((3, 4), float("nan"))]:
        check(lambda a, b: torch.equal(a, b), x, other)
    check(lambda a, b: torch.equal(a, b), torch.empty(0), torch.empty(0), empty_input=("all",))


# ---- searches ----


@pytest.mark.parametrize("dtype", SORTABLE, ids=str)
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted(dtype: torch.dtype, right: bool, eager_mode: str) -> None:
    rows = torch.sort(make((3, 12), dtype), dim=1).values
    values = make((3, 7), dtype, seed=1)
    check(lambda s, v: torch.searchsorted(s, v, right=right), rows, values)
    check(lambda s, v: torch.searchsorted(s, v, right=right, out_int32=True), rows[0], values)
    check(lambda s, v: torch.searchsorted(s, v, side="right" if right else "left"), rows, values)
    check(lambda s, v: torch.bucketize(v, s, right=right), rows[1], values.t())


def test_searchsorted_forms(eager_mode: str) -> None:
    x = torch.randn(2, 10)
    order = torch.argsort(x, dim=1)
    v = torch.tensor([[float("nan"), -0.1, 0.0, 5.0], [float("inf"), -float("inf"), 0.3, 1.0]])
    check(lambda s, o, w: torch.searchsorted(s, w, sorter=o), x, order, v)
    check(lambda s: torch.searchsorted(s, 0.25), torch.sort(x[0]).values)
    check(lambda s: torch.bucketize(0.25, s, right=True), torch.sort(x[0]).values)
    check(lambda s, w: torch.searchsorted(s, w), torch.sort(x[0]).values, v.double())
    check(lambda s, w: torch.searchsorted(s, w), torch.arange(5), torch.tensor([0.5, 3.0]))
    check(lambda s, w: torch.searchsorted(s, w), torch.sort(x[0]).values, torch.empty(0))
    check(
        lambda s, w: torch.searchsorted(
            s, w, out=torch.empty(0, dtype=torch.long, device=w.device)
        ),
        torch.sort(x).values,
        v,
    )


# ---- histograms ----


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES, ids=str)
def test_histc(dtype: torch.dtype, eager_mode: str) -> None:
    x = tied((40, 30), dtype) if dtype.is_floating_point else make((40, 30), dtype)

    def counts(t: torch.Tensor, bins: int, lo: float, hi: float) -> torch.Tensor:
        if t.device.type == "cpu" and not dtype.is_floating_point:  # CPU has no integer histc
            return torch.histc(t.double(), bins, lo, hi).to(dtype)
        return torch.histc(t, bins, lo, hi)

    # CUDA truncates an integer input's bounds to integers; the CPU reference needs them whole.
    check(lambda t: counts(t, 10, -2, 2.5 if dtype.is_floating_point else 3), x)
    check(lambda t: counts(t.t(), 7, -3, 9), x)
    # The data's range; under 256 elements, since CPU adds bfloat16 counts in bfloat16 (512 + 1
    # rounds to 512) where the kernel counts exactly and rounds once.
    check(lambda t: counts(t, 5, 0, 0), x[:8].nan_to_num(0, 0, 0))
    check(lambda t: counts(t, 3, 0, 0), torch.full((4,), 2).to(dtype))  # widened by one
    check(lambda t: counts(t, 4, 0, 1), torch.empty(0, dtype=dtype), empty_input=("histc",))


def test_histc_large_and_out(eager_mode: str) -> None:
    x = torch.randn(300, 500)
    check(lambda t: torch.histc(t, 100, -3, 3), x)
    check(lambda t: torch.histc(t, 20, out=torch.empty(3, device=t.device)), x[:9])


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
def test_bincount(dtype: torch.dtype, eager_mode: str) -> None:
    x = make((60,), dtype).abs()
    w = torch.randn(60)
    check(lambda t: torch.bincount(t), x)
    check(lambda t: torch.bincount(t, minlength=30), x)
    check(lambda t, v: torch.bincount(t, v), x, w, rtol=1e-6, atol=1e-6)
    check(lambda t, v: torch.bincount(t, v), x, w.double())
    check(lambda t, v: torch.bincount(t, v), x, torch.arange(60))
    check(lambda t: torch.bincount(t, minlength=4), torch.empty(0, dtype=dtype))


# ---- errors and gradients ----


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: torch.kthvalue(x, 0),
        lambda x: torch.kthvalue(x, 9),
        lambda x: torch.median(x[:, :0], 1),
        lambda x: torch.median(x > 0),
        lambda x: torch.logcumsumexp(x.long(), 0),
        lambda x: torch.histc(x, 0),
        lambda x: torch.histc(x, 5, 2, 1),
        lambda x: torch.histc(x, 5, 0, float("inf")),
        lambda x: torch.bincount(x),
        lambda x: torch.bincount(x.long() - 5),
        lambda x: torch.bincount(x.long().abs(), minlength=-1),
        lambda x: torch.bincount(x.long().abs()),
        lambda x: torch.bincount(x[0].long().abs(), torch.ones(3, device=x.device)),
        lambda x: torch.bucketize(x, x),
        lambda x: torch.searchsorted(x, x[0]),
        lambda x: torch.searchsorted(x[0], x, side="middle"),
        lambda x: torch.searchsorted(x[0], x, right=True, side="left"),
        lambda x: torch.searchsorted(x[0], x, sorter=torch.zeros(8, device=x.device)),
        lambda x: torch.aminmax(x[:0]),
        lambda x: torch.cummax(x, 2),
    ],
)
def test_errors(fn: Callable[[torch.Tensor], Any]) -> None:
    raises_like_cpu(fn, torch.rand(3, 8) * 5)


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
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: torch.cumprod(t, 1),
        lambda t: torch.cummax(t, 1).values,
        lambda t: torch.cummin(t, 0).values,
        lambda t: torch.logcumsumexp(t, 1),
        lambda t: torch.kthvalue(t, 3, 1).values,
        lambda t: torch.median(t, 0).values,
        lambda t: torch.nanmedian(t),
        lambda t: torch.aminmax(t, dim=1).max,
    ],
    ids=["cumprod", "cummax", "cummin", "logcumsumexp", "kthvalue", "median", "nanmedian", "amax"],
)
def test_gradients(fn: Callable[[torch.Tensor], torch.Tensor], eager_mode: str) -> None:
    grad_check(fn, distinct((6, 20), torch.float64) / 16 + 0.1)
