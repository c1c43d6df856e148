"""The reduce family on tpu against PyTorch CPU: sum, mean, prod, amax/amin, max/min (with
indices, and whole), argmax/argmin, all/any, count_nonzero and cumsum, for every dtype CPU
supports, over dimension lists (negative, empty, none), keepdim, empty and non-contiguous inputs,
dtype= and out=; NaN propagation, first-index ties, integer promotion and wrapping, errors; their
gradients; and that they run natively with meta-equal metadata."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from _reduce_checks import (
    ALL_DTYPES,
    COMPLEX_DTYPES,
    DEV,
    FLOAT_DTYPES,
    REAL_DTYPES,
    check,
    grads,
    make,
    raises_like_cpu,
)

Dims = int | tuple[int, ...] | None
DIMS: list[Dims] = [None, 0, -1, (0, 2), (-1, -3), ()]


def reduce_fn(name: str, dims: Dims, keepdim: bool) -> Callable[[torch.Tensor], torch.Tensor]:
    def fn(x: torch.Tensor) -> torch.Tensor:
        op = getattr(torch, name)
        if dims is None:
            return op(x) if not keepdim else op(x, dim=tuple(range(x.dim())), keepdim=True)
        return op(x, dim=dims, keepdim=keepdim)

    return fn


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("dims", DIMS, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum(dtype: torch.dtype, dims: Dims, keepdim: bool, eager_mode: str) -> None:
    rtol = 2e-2 if dtype in (torch.float16, torch.bfloat16) else None
    check(reduce_fn("sum", dims, keepdim), make((3, 4, 5), dtype), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + COMPLEX_DTYPES, ids=str)
@pytest.mark.parametrize("dims", DIMS, ids=str)
def test_mean(dtype: torch.dtype, dims: Dims, eager_mode: str) -> None:
    rtol = 2e-2 if dtype in (torch.float16, torch.bfloat16) else None
    for keepdim in (False, True):
        check(reduce_fn("mean", dims, keepdim), make((3, 4, 5), dtype), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=str)
def test_prod(dtype: torch.dtype, eager_mode: str) -> None:
    x = make((3, 4, 5), dtype, low=-2)
    if dtype.is_floating_point:
        x = (x.double() / 4 + 1).to(dtype)  # products of ~1, away from overflow
    rtol = 2e-2 if dtype in (torch.float16, torch.bfloat16) else None
    check(torch.prod, x, rtol=rtol, atol=rtol)
    for dim in (0, -1, 1):
        for keepdim in (False, True):
            check(lambda t, d=dim, k=keepdim: t.prod(d, keepdim=k), x, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=str)
@pytest.mark.parametrize("name", ["amax", "amin"])
def test_amax_amin(name: str, dtype: torch.dtype, eager_mode: str) -> None:
    x = make((4, 3, 6), dtype)
    for dims in (0, -1, (0, 2), (), (-3, -2, -1)):
        for keepdim in (False, True):
            check(lambda t, d=dims, k=keepdim: getattr(torch, name)(t, d, k), x)


@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=str)
@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_with_indices(name: str, dtype: torch.dtype, eager_mode: str) -> None:
    x = make((4, 7, 5), dtype)  # small integers: many ties, first index wins
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            check(lambda t, d=dim, k=keepdim: tuple(getattr(torch, name)(t, d, k)), x)
    check(lambda t: getattr(torch, name)(t), x)  # the whole tensor
    check(lambda t: tuple(getattr(torch, name)(t, 0)), torch.tensor(3, dtype=dtype))


@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=str)
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin(name: str, dtype: torch.dtype, eager_mode: str) -> None:
    x = make((5, 6, 4), dtype)
    if dtype == torch.bool:
        raises_like_cpu(lambda t: getattr(torch, name)(t), x)
        return
    for dim in (None, 0, 1, -1):
        for keepdim in (False, True):
            check(lambda t, d=dim, k=keepdim: getattr(torch, name)(t, d, k), x)
    # Flattened argmax of a transposed view counts in the logical order.
    check(lambda t: getattr(torch, name)(t.transpose(0, 2)), x)


def test_nan_propagation_and_first_nan() -> None:
    x = torch.tensor([[1.0, float("nan"), 3.0, float("nan")], [2.0, 5.0, 5.0, -1.0]])
    check(lambda t: tuple(t.max(1)), x)
    check(lambda t: tuple(t.min(1)), x)
    check(lambda t: (t.amax(1), t.amin(0), t.max(), t.min()), x)
    check(lambda t: (t.argmax(1), t.argmin(1), t.argmax()), x)
    big = torch.randn(3, 5000)
    big[1, 4321] = float("nan")
    big[2, 17] = float("nan")
    check(lambda t: (t.amax(1), t.argmax(1), t.max(), t.argmin()), big)


def test_ties_take_the_first_index() -> None:
    x = torch.zeros(3, 300)
    x[0, 5] = x[0, 200] = 2
    x[1, 299] = x[1, 100] = -1
    check(lambda t: (t.argmax(1), t.argmin(1), t.max(1).indices, t.min(1).indices), x)
    check(lambda t: (t.argmax(0), t.argmax()), x)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_all_any(dtype: torch.dtype, eager_mode: str) -> None:
    x = make((4, 3, 5), dtype)
    x.view(-1)[::3] = 0
    check(lambda t: (t.all(), t.any()), x)
    for dim in (0, -1):
        for keepdim in (False, True):
            check(lambda t, d=dim, k=keepdim: (t.all(d, k), t.any(d, k)), x)
    for dims in ((0, 2), (), None):
        check(lambda t, d=dims: (torch.all(t, dim=d), torch.any(t, dim=d, keepdim=True)), x)
    check(lambda t: (t.all(), t.any()), torch.ones(0, 3, dtype=dtype))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_count_nonzero(dtype: torch.dtype) -> None:
    x = make((4, 3, 5), dtype)
    for dims in (None, 0, (0, 2), (), -1):
        check(lambda t, d=dims: torch.count_nonzero(t, d), x)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_cumsum(dtype: torch.dtype, eager_mode: str) -> None:
    x = make((4, 6, 5), dtype)
    rtol = 2e-2 if dtype in (torch.float16, torch.bfloat16) else None
    for dim in (0, 1, -1):
        check(lambda t, d=dim: torch.cumsum(t, d), x, rtol=rtol, atol=rtol)
    check(lambda t: torch.cumsum(t.transpose(0, 2), 1), x, rtol=rtol, atol=rtol)
    check(lambda t: torch.cumsum(t, 0), torch.tensor(5, dtype=dtype))


def test_cumsum_dtype_inplace_and_out(eager_mode: str) -> None:
    x = make((5, 300), torch.int32)
    check(lambda t: torch.cumsum(t, 1, dtype=torch.float64), x)
    check(lambda t: torch.cumsum(t, 0, dtype=torch.int8), x)  # cast first, then wrap
    check(lambda t: t.clone().cumsum_(1), x)
    check(lambda t: torch.cumsum(t, 1, out=torch.empty(0, dtype=torch.int64, device=t.device)), x)
    y = make((3, 4), torch.bfloat16)
    check(lambda t: torch.cumsum(t, 1, dtype=torch.float32), y)


def test_sum_dtype_argument_and_integer_promotion(eager_mode: str) -> None:
    x = torch.full((1000,), 100, dtype=torch.int8)
    check(lambda t: (t.sum(), t.sum(dtype=torch.int8), t.sum(0, dtype=torch.int16)), x)
    check(lambda t: t.sum(dtype=torch.float32), make((4, 5), torch.int32))
    check(lambda t: t.sum(dtype=torch.int64), torch.tensor([1.9, -1.9, 2.5]))  # cast first
    check(lambda t: (t.sum(), t.prod()), torch.tensor([True, True, False]))
    check(lambda t: t.sum(1, dtype=torch.float64), make((3, 7), torch.float32))
    check(lambda t: t.mean(dtype=torch.float32), make((4, 5), torch.int64))
    check(lambda t: t.prod(dtype=torch.int64), torch.full((70,), 3, dtype=torch.int32))
    big = torch.full((3,), 2**62, dtype=torch.int64)
    check(lambda t: (t.sum(), t.prod()), big)  # wraps, as CPU


def test_empty_reductions(eager_mode: str) -> None:
    e = torch.ones(0, 3)
    check(lambda t: (t.sum(), t.sum(0), t.prod(0), t.mean(0), t.sum(1)), e)
    check(lambda t: (t.amax(1), t.max(1).values, t.argmax(1), t.cumsum(0)), e)
    check(lambda t: (t.all(0), t.any(0), torch.count_nonzero(t, 0)), e)
    check(lambda t: t.sum((0, 1), keepdim=True), torch.ones(2, 0, 4))
    for fn in (
        lambda t: t.max(),
        lambda t: t.min(),
        lambda t: t.amax(0),
        lambda t: t.max(0),
        lambda t: t.argmax(),
        lambda t: t.argmin(0),
    ):
        raises_like_cpu(fn, e)


def test_noncontiguous_and_broadcast_inputs(eager_mode: str) -> None:
    x = make((6, 8, 10), torch.float32)
    check(lambda t: t.transpose(0, 2).sum(1), x)
    check(lambda t: t.permute(2, 0, 1).sum((0, 2)), x)
    check(lambda t: t[::2, 1::3, 1::2].sum(-1), x)
    check(lambda t: t[:, 0].expand(5, 6, 10).sum(0), x)
    check(lambda t: t[::2, :, 3].amax(0), x)
    check(lambda t: tuple(t.transpose(1, 2).max(1)), x)
    check(lambda t: t.transpose(0, 1).cumsum(1), x)
    check(lambda t: t.transpose(0, 2).mean((0, 1), keepdim=True), x)


@pytest.mark.parametrize("shape,dims", [((1 << 20,), None), ((3, 200000), 1), ((4096, 64), 0)])
def test_large_reductions_split_over_threads(shape: tuple[int, ...], dims: Dims) -> None:
    x = make(shape, torch.float32)
    check(lambda t: t.sum(dims), x, rtol=1e-5, atol=1e-3)
    check(lambda t: t.amax(dims if dims is not None else ()), x)
    check(lambda t: t.argmax(dims), x)
    check(lambda t: t.sum(dims), x.bfloat16(), rtol=2e-2, atol=1e-1)


def test_results_do_not_depend_on_timing() -> None:
    x = make((1 << 20,), torch.float32).to(DEV)
    first = x.sum().cpu()
    for _ in range(3):
        assert torch.equal(x.sum().cpu(), first)


def test_out_variants(eager_mode: str) -> None:
    x = make((4, 5, 6), torch.float32)

    def empty(t: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.empty(0, dtype=dtype, device=t.device)

    check(lambda t: torch.sum(t, 1, out=empty(t)), x)
    check(lambda t: torch.mean(t, (0, 2), keepdim=True, out=empty(t)), x)
    check(lambda t: torch.prod(t, 2, out=empty(t)), x)
    check(lambda t: torch.amax(t, 0, out=empty(t)), x)
    check(lambda t: torch.argmax(t, 1, out=empty(t, torch.int64)), x)
    check(lambda t: torch.max(t, 1, out=(empty(t), empty(t, torch.int64))), x)
    check(lambda t: torch.all(t, 1, out=empty(t, torch.bool)), x)
    check(lambda t: torch.any(t, out=empty(t, torch.bool)), x)
    check(lambda t: torch.sum(t, 0, out=torch.empty(5, 6, dtype=torch.float64, device=t.device)), x)
    check(lambda t: torch.sum(t, 1, out=empty(t, torch.int32)), x)  # computes in out's dtype
    raises_like_cpu(lambda t: torch.amax(t, 0, out=empty(t, torch.int64)), x)
    raises_like_cpu(lambda t: torch.argmax(t, 1, out=empty(t, torch.int32)), x)
    raises_like_cpu(
        lambda t: torch.max(t, 1, out=(empty(t, torch.float64), empty(t, torch.int64))), x
    )


def test_argument_errors() -> None:
    x = make((3, 4), torch.float32)
    raises_like_cpu(lambda t: t.sum(2), x)
    raises_like_cpu(lambda t: t.sum((0, 0)), x)
    raises_like_cpu(lambda t: t.mean(), make((3,), torch.int32))
    raises_like_cpu(lambda t: t.cumsum(3), x)
    raises_like_cpu(lambda t: t.amax(-3), x)


def test_complex_products_run_on_the_host() -> None:
    # The kernels have no complex product: it is computed on host copies and counted.
    x = make((3, 4), torch.complex64).to(DEV)
    torch.tpu.reset_op_stats()
    got = x.prod(1)
    assert torch.tpu.fallback_stats() == {"aten::prod.dim_int": 1}
    torch.testing.assert_close(got.cpu(), x.cpu().prod(1))


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.sum(1),
        lambda x: x.mean((0, 2), keepdim=True),
        lambda x: x.prod(1),
        lambda x: x.amax(1),
        lambda x: x.max(2).values,
        lambda x: x.min(),
        lambda x: x.cumsum(1),
        lambda x: x.transpose(0, 2).sum(0),
    ],
)
def test_gradients(fn: Callable[[torch.Tensor], torch.Tensor], eager_mode: str) -> None:
    x = make((3, 4, 5), torch.float64) / 4 + 1
    grads(fn, x)


def test_native_ops_keep_autograd() -> None:
    for name in ("aten::sum.dim_IntList", "aten::max.dim", "aten::cumsum", "aten::prod"):
        assert torch._C._dispatch_has_kernel_for_dispatch_key(name, "PrivateUse1")
        assert torch._C._dispatch_has_kernel_for_dispatch_key(name, "Autograd")


# ---------------------------------------------------------------------------------------------
# Differences from CPU that a differential fuzz run found (issue 20)


def test_dtype_of_the_other_kind_casts_the_input(eager_mode: str) -> None:
    """sum, mean and prod with a real dtype of a complex input (or a complex dtype of a real one)
    cast the input to that dtype first, the imaginary part dropped, as ATen's reductions do."""
    z, r = make((3, 4), torch.complex64), make((3, 4), torch.float64)

    def out(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return torch.empty(0, dtype=dtype, device=t.device)

    check(lambda t: t.sum(1, dtype=torch.float64), z)
    check(lambda t: t.sum(dtype=torch.float32), z)
    check(lambda t: t.sum(1, dtype=torch.int64), z)
    check(lambda t: torch.sum(t, 1, out=out(t, torch.float64)), z)
    check(lambda t: t.mean(1, dtype=torch.float64), z)
    check(lambda t: t.mean(dtype=torch.float64), z)
    check(lambda t: t.prod(1, dtype=torch.float64), z)
    check(lambda t: t.prod(dtype=torch.float64), z)
    check(lambda t: t.sum(0, dtype=torch.complex64), r)
    check(lambda t: torch.sum(t, (0, 1), out=out(t, torch.complex128)), r)


def test_cumsum_into_bool_is_refused(eager_mode: str) -> None:
    """CPU's and CUDA's cumsum kernels have no bool: refused, except where nothing is scanned (an
    empty input is zeroed, a 0-dim one copied)."""
    x = make((3, 4), torch.float32)
    raises_like_cpu(lambda t: torch.cumsum(t, 1, dtype=torch.bool), x)
    raises_like_cpu(
        lambda t: torch.cumsum(t, 0, out=torch.empty(0, dtype=torch.bool, device=t.device)), x
    )
    check(lambda t: torch.cumsum(t, 0, dtype=torch.bool), torch.ones(0, 3))
    check(lambda t: torch.cumsum(t, 0, dtype=torch.bool), torch.tensor(2.0))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_half_prod_accumulates_in_float(dtype: torch.dtype, eager_mode: str) -> None:
    """float16/bfloat16 products accumulate in float32 and round once, as CUDA's kernel does
    (PyTorch CPU rounds every step; README, Limitations): within one ulp of the exact product."""
    g = torch.Generator().manual_seed(0)
    x = (torch.rand(64, generator=g, dtype=torch.float64) * 0.5 + 0.75).to(dtype)
    exact = x.double().prod()
    got = x.to(DEV).prod().cpu().double()
    assert abs(got - exact) <= torch.finfo(dtype).eps * abs(exact)
    rows = x.reshape(8, 8)
    got_rows = rows.to(DEV).prod(1).cpu().double()
    torch.testing.assert_close(got_rows, rows.double().prod(1), rtol=torch.finfo(dtype).eps, atol=0)
