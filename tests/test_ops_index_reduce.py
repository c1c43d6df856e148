"""Reductions into indices and other composite ops on tpu against PyTorch CPU: scatter_reduce
(sum, prod, mean, amax, amin) and index_reduce (prod, mean, amax, amin) with and without self,
take, put_, nonzero_static, nansum and nanmean, trace, renorm, linalg.cross, linspace and
logspace; in the dtypes CPU takes, with NaN, duplicates, empty and non-contiguous inputs, out=,
CPU's errors and gradients, each running natively (no CPU fallback, no driver fallback).

Sums and means of duplicates may add in another order than CPU's (XLA's on the PJRT driver):
float results compare within the dtype's default tolerance; integers, maxima and minima are
exact."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from _index_checks import expect_index_error
from _reduce_checks import DEV, grads, make, move, raises_like_cpu, tensors

SCATTER_DTYPES = [torch.float32, torch.bfloat16, torch.float64, torch.int64, torch.int16]
SCATTER_DTYPES += [torch.uint8]
REDUCTIONS = ["sum", "prod", "mean", "amax", "amin"]


def native(fn: Callable[..., Any], *args: Any) -> Any:
    """fn on tpu copies of args; nothing may run through either fallback."""
    torch.tpu.reset_op_stats()
    got = fn(*move(args, DEV))
    torch.tpu.synchronize()
    stats = torch.tpu.op_stats()
    assert stats["fallback"] == {}, stats["fallback"]
    assert stats["driver_fallback"] == {}, stats["driver_fallback"]
    return got


def check(
    fn: Callable[..., Any], *args: Any, rtol: float | None = None, atol: float | None = None
) -> Any:
    """fn on CPU and natively on tpu: the same dtypes, shapes, strides and values."""
    want = fn(*args)
    got = native(fn, *args)
    for r, w in zip(tensors(got), tensors(want), strict=True):
        assert r.device.type == DEV
        assert (r.dtype, r.shape, r.stride()) == (w.dtype, w.shape, w.stride())
        torch.testing.assert_close(r.cpu(), w, rtol=rtol, atol=atol, equal_nan=True)
    return got


def indices(shape: tuple[int, ...], high: int, seed: int = 5) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, high, shape, generator=g)


def with_nan(x: torch.Tensor) -> torch.Tensor:
    """x with a NaN in every fifth element (floating dtypes only)."""
    if not x.is_floating_point():
        return x
    x = x.clone()
    x.view(-1)[::5] = float("nan")
    return x


# ---- scatter_reduce ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", SCATTER_DTYPES, ids=str)
@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(
    dtype: torch.dtype, reduce: str, include_self: bool, eager_mode: str
) -> None:
    self, src = make((5, 6), dtype, 1), make((9, 6), dtype, 2)
    index = indices((7, 6), 4)  # row 4 of self is never hit; index smaller than src
    check(
        lambda s, i, x: s.scatter_reduce(0, i, x, reduce, include_self=include_self),
        self,
        index,
        src,
    )


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_scatter_reduce_strided_in_place_and_out(reduce: str, eager_mode: str) -> None:
    self, src = make((6, 5), torch.float32, 1).t(), make((5, 8), torch.float32, 2)
    index = indices((5, 8), 6)

    def inplace(s: torch.Tensor, i: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return s.clone().t().contiguous().t().scatter_reduce_(1, i, x, reduce, include_self=False)

    check(inplace, self, index, src)

    def out(s: torch.Tensor, i: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        o = torch.empty_like(s)
        return torch.scatter_reduce(s, -1, i, x, reduce, out=o)

    check(out, self, index, src)


@pytest.mark.parametrize("reduce", ["amax", "amin", "sum", "mean"])
def test_scatter_reduce_nan(reduce: str, eager_mode: str) -> None:
    self, src = with_nan(make((4, 7), torch.float32, 1)), with_nan(make((6, 7), torch.float32, 3))
    check(lambda s, i, x: s.scatter_reduce(0, i, x, reduce), self, indices((6, 7), 4), src)


@pytest.mark.parametrize("reduce", ["sum", "prod", "amax", "amin"])
def test_scatter_reduce_bool(reduce: str, eager_mode: str) -> None:
    self, src = make((4, 5), torch.bool, 1), make((6, 5), torch.bool, 2)
    include_self = reduce in ("amax", "amin")  # CPU has no bool amax/amin without self
    check(
        lambda s, i, x: s.scatter_reduce(0, i, x, reduce, include_self=include_self),
        self,
        indices((6, 5), 3),
        src,
    )


def test_scatter_reduce_empty_and_0d(eager_mode: str) -> None:
    self = make((3, 4), torch.float32, 1)
    empty = torch.empty(0, 4, dtype=torch.long)
    check(lambda s, i: s.scatter_reduce(0, i, s, "mean", include_self=False), self, empty)
    scalar, index = torch.tensor(2.5), torch.tensor(0)
    check(
        lambda s, i: s.scatter_reduce(0, i, torch.tensor(4.0, device=s.device), "amax"),
        scalar,
        index,
    )


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_grad(reduce: str, include_self: bool) -> None:
    self, src = make((4, 5), torch.float64, 1), make((6, 5), torch.float64, 2)
    index = indices((6, 5), 4)
    grads(
        lambda s, x: s.scatter_reduce(0, index.to(s.device), x, reduce, include_self=include_self),
        self,
        src,
    )


def test_scatter_reduce_errors() -> None:
    self, src, index = make((3, 4), torch.float32), make((3, 4), torch.float32), indices((3, 4), 3)
    raises_like_cpu(lambda s, i, x: s.scatter_reduce(0, i, x, "maximum"), self, index, src)
    check(lambda s, i, x: s.scatter_reduce(0, i, x, "sum"), self, index.int(), src)  # accepted
    raises_like_cpu(lambda s, i, x: s.scatter_reduce(0, i, x, "sum"), self, index, src.double())
    c = make((3, 4), torch.complex64)
    raises_like_cpu(lambda s, i: s.scatter_reduce(0, i, s, "amax"), c, index)
    b = make((3, 4), torch.bool)
    raises_like_cpu(lambda s, i: s.scatter_reduce(0, i, s, "mean"), b, index)


# ---- index_reduce -----------------------------------------------------------------------

INDEX_REDUCE_DTYPES = [torch.float32, torch.bfloat16, torch.float64, torch.int32, torch.uint8]


@pytest.mark.parametrize("dtype", INDEX_REDUCE_DTYPES, ids=str)
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1])
def test_index_reduce(
    dtype: torch.dtype, reduce: str, include_self: bool, dim: int, eager_mode: str
) -> None:
    self = make((5, 6), dtype, 1)
    source = make((8, 6) if dim == 0 else (5, 8), dtype, 2)
    index = indices((8,), self.shape[dim] - 1)
    check(
        lambda s, i, x: s.index_reduce(dim, i, x, reduce, include_self=include_self),
        self,
        index,
        source,
    )


def test_index_reduce_forms(eager_mode: str) -> None:
    self, source = make((6, 4), torch.float32, 1).t(), make((4, 5), torch.float32, 2)
    index = torch.tensor([0, 5, 0, 2, 5], dtype=torch.int32)

    def inplace(s: torch.Tensor, i: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return s.clone().index_reduce_(1, i, x, "amax", include_self=False)

    check(inplace, self, index, source)

    def out(s: torch.Tensor, i: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.index_reduce(s, -1, i, x, "mean", out=torch.empty_like(s))

    check(out, self, index, source)
    nan_self = with_nan(make((5, 3), torch.float32, 4))
    check(
        lambda s, i, x: s.index_reduce(0, i, x, "amin"),
        nan_self,
        torch.tensor([1, 1, 3]),
        with_nan(make((3, 3), torch.float32, 6)),
    )
    check(
        lambda s, i, x: s.index_reduce(0, i, x, "prod"),
        torch.tensor(3.0),
        torch.tensor(0),
        torch.tensor(2.0),
    )


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_grad(reduce: str, include_self: bool) -> None:
    self, source = make((4, 5), torch.float64, 1), make((6, 5), torch.float64, 2)
    index = torch.tensor([0, 2, 0, 3, 2, 2])
    grads(
        lambda s, x: s.index_reduce(0, index.to(s.device), x, reduce, include_self=include_self),
        self,
        source,
    )


def test_index_reduce_errors() -> None:
    self, source = make((3, 4), torch.float32), make((2, 4), torch.float32)
    index = torch.tensor([0, 2])
    raises_like_cpu(lambda s, i, x: s.index_reduce(0, i, x, "sum"), self, index, source)
    b = make((3, 4), torch.bool)
    for reduce in ("amax", "amin", "prod"):  # bool into self: CPU takes these
        check(lambda s, i, r=reduce: s.index_reduce(0, i, s[:2], r), b, index)
    raises_like_cpu(lambda s, i: s.index_reduce(0, i, s[:2], "mean"), b, index)
    raises_like_cpu(lambda s, i: s.index_reduce(0, i, s[:2], "amax", include_self=False), b, index)


# ---- take, put_, nonzero_static ---------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool, torch.bfloat16], ids=str)
def test_take(dtype: torch.dtype, eager_mode: str) -> None:
    x = make((5, 7), dtype, 1).t()  # non-contiguous: taken in its row-major order
    index = torch.tensor([[0, -1, 34], [-35, 7, 7]])
    check(torch.take, x, index)
    check(torch.take, x, torch.tensor(3))
    check(torch.take, x, torch.empty(0, 2, dtype=torch.long))
    check(
        lambda s, i: torch.take(s, i, out=torch.empty(1, dtype=s.dtype, device=s.device)), x, index
    )


@pytest.mark.parametrize("accumulate", [False, True])
def test_put(accumulate: bool, eager_mode: str) -> None:
    x = make((4, 6), torch.float32, 1)
    index = torch.tensor([[3, -1], [0, 23]]) if not accumulate else torch.tensor([[3, -1], [3, 3]])
    source = make((2, 2), torch.float32, 2)
    check(lambda s, i, v: s.clone().put_(i, v, accumulate), x, index, source)
    check(lambda s, i, v: s.clone().t().put_(i, v, accumulate), x, index, source)
    check(lambda s, i, v: s.put(i, v, accumulate), x.int(), index, source.int())


def test_take_put_grad() -> None:
    x, v = make((3, 4), torch.float64, 1), make((2, 2), torch.float64, 2)
    index = torch.tensor([[0, -1], [5, 0]])
    grads(lambda s: torch.take(s, index.to(s.device)), x)
    unique = torch.tensor([[0, -1], [5, 2]])
    grads(lambda s, w: s.put(unique.to(s.device), w), x, v)
    grads(lambda s, w: s.put(index.to(s.device), w, accumulate=True), x, v)


def test_take_put_errors() -> None:
    x = make((2, 3), torch.float32)
    raises_like_cpu(torch.take, x, torch.tensor([0], dtype=torch.int32))
    raises_like_cpu(torch.take, torch.empty(0), torch.tensor([0]))
    raises_like_cpu(lambda s, i, v: s.put_(i, v), x, torch.tensor([0, 1]), torch.ones(1))
    raises_like_cpu(lambda s, i, v: s.put_(i, v), x, torch.tensor([0]), torch.ones(1).double())


@pytest.mark.parametrize(
    "fn",
    [
        lambda s, i: s.index_reduce(0, i + 2, s[:2], "amax"),
        lambda s, i: s.index_reduce(0, i + 2, s[:2], "amin", include_self=False),
        lambda s, i: torch.take(s, i + 11),
        lambda s, i: s.put_(i - 14, s[0, :2].clone()),
    ],
)
def test_out_of_range_indices(fn: Callable[..., Any], eager_mode: str) -> None:
    """CPU raises IndexError at the call; on tpu as on CUDA the kernel finds the bad index."""
    x, index = make((3, 4), torch.float32).to(DEV), torch.tensor([0, 2], device=DEV)
    with pytest.raises(IndexError, match="out of (bounds|range)"):
        fn(x.cpu(), index.cpu())
    expect_index_error(eager_mode, lambda: fn(x, index), "out of bounds")


@pytest.mark.parametrize("size", [0, 3, 9, 40])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bool, torch.int8], ids=str)
def test_nonzero_static(size: int, dtype: torch.dtype, eager_mode: str) -> None:
    x = make((3, 4, 2), dtype, 1)
    if dtype == torch.float32:
        x = torch.where(x > 0, x, torch.zeros(()))
        x[0, 0, 0] = float("nan")  # NaN is nonzero
    check(lambda t: torch.nonzero_static(t, size=size), x)
    check(lambda t: torch.nonzero_static(t.transpose(0, 2), size=size, fill_value=-5), x)


def test_nonzero_static_edges(eager_mode: str) -> None:
    check(lambda t: torch.nonzero_static(t, size=3), torch.tensor(2.0))
    check(lambda t: torch.nonzero_static(t, size=3), torch.zeros(0, 4))
    check(lambda t: torch.nonzero_static(t, size=4), torch.zeros(5))
    raises_like_cpu(lambda t: torch.nonzero_static(t, size=-1), torch.ones(3))


# ---- nansum, nanmean, trace -------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
def test_nansum_nanmean(dtype: torch.dtype, eager_mode: str) -> None:
    x = with_nan(make((4, 5, 6), dtype, 1))
    x[1] = float("nan")
    check(torch.nansum, x)
    check(lambda t: torch.nansum(t, dim=(0, 2), keepdim=True), x)
    check(lambda t: torch.nansum(t, 1, dtype=torch.float64), x)
    check(lambda t: torch.nanmean(t, dim=-1), x.transpose(0, 2))
    check(torch.nanmean, x)


def test_nansum_integers_and_out(eager_mode: str) -> None:
    check(torch.nansum, make((4, 5), torch.int16, 1))
    check(lambda t: torch.nansum(t, 0), make((4, 5), torch.bool, 1))
    out = torch.empty(5)
    check(lambda t: torch.nansum(t, 0, out=out.to(t.device)), with_nan(make((4, 5), torch.float32)))
    raises_like_cpu(torch.nansum, make((3,), torch.complex64))


def test_nansum_nanmean_grad() -> None:
    x = with_nan(make((4, 5), torch.float64, 1))
    grads(lambda t: torch.nansum(t, 1), x)
    grads(lambda t: torch.nanmean(t, 0), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int8, torch.int64], ids=str)
def test_trace(dtype: torch.dtype, eager_mode: str) -> None:
    check(torch.trace, make((5, 7), dtype, 1))
    check(torch.trace, make((6, 3), dtype, 2).t())
    check(torch.trace, make((0, 3), dtype, 2))


def test_trace_grad_and_errors() -> None:
    grads(torch.trace, make((4, 6), torch.float64, 1))
    raises_like_cpu(torch.trace, make((3,), torch.float32))
    raises_like_cpu(torch.trace, make((3, 3), torch.bool))


# ---- renorm, cross ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
@pytest.mark.parametrize("p", [1.0, 2.0, 3.5, float("inf")])
def test_renorm(dtype: torch.dtype, p: float, eager_mode: str) -> None:
    x = make((4, 3, 5), dtype, 1)
    check(lambda t: torch.renorm(t, p, 1, 4.0), x)
    check(lambda t: torch.renorm(t, p, -1, 2.5), x.transpose(0, 2))
    check(lambda t: t.clone().renorm_(p, 0, 3.0), x)
    check(lambda t: torch.renorm(t, p, 0, 1.0, out=torch.empty_like(t)), x)


def test_renorm_grad_and_errors() -> None:
    grads(lambda t: torch.renorm(t, 2, 0, 2.0), make((4, 5), torch.float64, 1))
    raises_like_cpu(lambda t: torch.renorm(t, -1, 0, 1.0), make((3, 3), torch.float32))
    raises_like_cpu(lambda t: torch.renorm(t, 2, 0, -1.0), make((3, 3), torch.float32))
    raises_like_cpu(lambda t: torch.renorm(t, 2, 0, 1.0), make((3, 3), torch.int32))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64], ids=str)
def test_cross(dtype: torch.dtype, eager_mode: str) -> None:
    a, b = make((1, 4, 3), dtype, 1), make((2, 1, 3), dtype, 2)  # broadcast
    check(torch.linalg.cross, a, b)
    check(
        lambda x, y: torch.linalg.cross(x, y, dim=0),
        make((3, 5), dtype, 3).t().t(),
        make((3, 5), dtype, 4),
    )
    check(
        lambda x, y: torch.cross(x, y, dim=1),
        make((5, 3, 2), dtype, 5),
        make((5, 3, 2), dtype, 6).transpose(0, 2).transpose(0, 2),
    )
    check(
        lambda x, y: torch.linalg.cross(x, y, out=torch.empty(0, dtype=x.dtype, device=x.device)),
        a,
        b,
    )


def test_cross_grad_and_errors() -> None:
    grads(torch.linalg.cross, make((4, 3), torch.float64, 1), make((4, 3), torch.float64, 2))
    raises_like_cpu(torch.linalg.cross, make((4, 2), torch.float32), make((4, 2), torch.float32))
    raises_like_cpu(torch.linalg.cross, make((4, 3), torch.float32), make((4, 3), torch.int32))


# ---- linspace, logspace -----------------------------------------------------------------

RANGE_DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.int8]


@pytest.mark.parametrize("dtype", RANGE_DTYPES, ids=str)
@pytest.mark.parametrize("steps", [0, 1, 2, 7, 100])
def test_linspace_logspace(dtype: torch.dtype, steps: int, eager_mode: str) -> None:
    def made(fn: Callable[..., torch.Tensor], *args: Any, **kw: Any) -> Any:
        return lambda dev: fn(*args, steps, dtype=dtype, device=dev, **kw)

    for start, end in [(-5, 10), (3.5, -2.25)]:
        # CPU rounds each bfloat16 operation of start + step * i, the kernel once: a few ulps of
        # the range apart.
        kw = {"rtol": 2**-6, "atol": 2**-6 * max(abs(start), abs(end))}
        kw = kw if dtype == torch.bfloat16 else {}
        want = made(torch.linspace, start, end)("cpu")
        got = native(made(torch.linspace, start, end), DEV)
        torch.testing.assert_close(got.cpu(), want, **kw)
        want = made(torch.logspace, start / 4, end / 4, base=2.0)("cpu")
        got = native(made(torch.logspace, start / 4, end / 4, base=2.0), DEV)
        torch.testing.assert_close(got.cpu(), want, **kw)


def test_linspace_tensor_overloads_and_errors(eager_mode: str) -> None:
    start, end = torch.tensor(-1.5), torch.tensor(4.0)
    check(lambda s, e: torch.linspace(s, e, 9, device=s.device), start, end)
    check(lambda s: torch.linspace(s, 2.0, 5, device=s.device), start)
    check(lambda e: torch.logspace(0.5, e, 6, base=3.0, device=e.device), end)
    out = torch.empty(3, 4)[:, 0]  # resized from a non-contiguous view
    check(lambda o: torch.linspace(0, 1, 5, out=o), out)
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        torch.linspace(0, 1, -1, device=DEV)
