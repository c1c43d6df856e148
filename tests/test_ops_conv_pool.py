"""Pooling on tpu against PyTorch CPU in both eager modes: max pooling 1d/2d/3d (padding,
dilation, ceil_mode, indices, ties, NaN, integer dtypes), average pooling 1d/2d/3d (ceil_mode,
count_include_pad, divisor_override, int64), adaptive average and max pooling 1d/2d/3d, channels
last and unbatched inputs, out= forms, gradients, native execution and errors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from _index_checks import DEV, FLOATS, INTS, assert_same, native_only

TOL = {
    torch.float32: {"rtol": 1e-6, "atol": 1e-6},
    torch.float64: {"rtol": 1e-12, "atol": 1e-12},
    torch.bfloat16: {"rtol": 1e-2, "atol": 1e-2},
    torch.float16: {"rtol": 1e-3, "atol": 1e-3},
}

CL = {4: torch.channels_last, 5: torch.channels_last_3d}


def randn(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)


def compare(fn, x: torch.Tensor, *, grad: bool = True, channels_last: bool = False) -> None:
    """fn(x) on CPU and on tpu (natively): every output, then the gradient w.r.t. x."""
    if channels_last:
        x = x.contiguous(memory_format=CL[x.dim()])
    floating = x.is_floating_point()
    xc = x.clone().requires_grad_(grad and floating)
    xd = x.to(DEV).requires_grad_(grad and floating)
    out = fn(xc)
    outs = out if isinstance(out, tuple) else (out,)
    with native_only():
        out_d = fn(xd)
    outs_d = out_d if isinstance(out_d, tuple) else (out_d,)
    tol = TOL.get(x.dtype, {"rtol": 0.0, "atol": 0.0})
    for got, want in zip(outs_d, outs, strict=True):
        assert_same(got, want.detach(), exact=False, **tol)
    if grad and floating:
        g = randn(*outs[0].shape, dtype=x.dtype, seed=5)
        outs[0].backward(g)
        with native_only():
            outs_d[0].backward(g.to(DEV))
        assert_same(xd.grad, xc.grad, exact=False, **tol)


MAX2D = {
    "k2": dict(kernel_size=2),
    "k3-s2-p1": dict(kernel_size=3, stride=2, padding=1),
    "asym-dilated": dict(kernel_size=(3, 2), stride=(1, 2), padding=(1, 0), dilation=(2, 1)),
    "ceil": dict(kernel_size=3, stride=2, ceil_mode=True),
    "ceil-pad": dict(kernel_size=2, stride=2, padding=1, ceil_mode=True),
}


@pytest.mark.parametrize("params", list(MAX2D))
@pytest.mark.parametrize("dtype", FLOATS)
def test_max_pool2d(eager_mode: str, params: str, dtype: torch.dtype) -> None:
    compare(
        lambda x: F.max_pool2d(x, **MAX2D[params], return_indices=True),
        randn(2, 3, 9, 8, dtype=dtype, seed=1),
    )


@pytest.mark.parametrize("params", ["k3-s2-p1", "ceil"])
def test_max_pool2d_channels_last_unbatched(eager_mode: str, params: str) -> None:
    compare(
        lambda x: F.max_pool2d(x, **MAX2D[params], return_indices=True),
        randn(2, 3, 9, 8, seed=1),
        channels_last=True,
    )
    compare(lambda x: F.max_pool2d(x, **MAX2D[params], return_indices=True), randn(3, 9, 8, seed=2))


def test_max_pool_ties_and_nan(eager_mode: str) -> None:
    x = torch.randint(0, 3, (2, 2, 6, 6)).float()
    compare(lambda x: F.max_pool2d(x, 3, stride=1, return_indices=True), x)
    x[0, 0, 1, 1] = float("nan")
    x[1, 1, 4, 2] = float("nan")
    x[1, 1, 4, 3] = float("nan")
    compare(lambda x: F.max_pool2d(x, 2, return_indices=True), x, grad=False)


@pytest.mark.parametrize("dtype", INTS)
def test_max_pool_integers(eager_mode: str, dtype: torch.dtype) -> None:
    x = torch.randint(-100 if dtype != torch.uint8 else 0, 100, (2, 3, 7, 7)).to(dtype)
    compare(lambda x: F.max_pool2d(x, 3, stride=2, padding=1, return_indices=True), x)
    compare(lambda x: F.max_pool3d(x, 2, return_indices=True), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_max_pool1d_3d(eager_mode: str, dtype: torch.dtype) -> None:
    compare(
        lambda x: F.max_pool1d(x, 3, stride=2, padding=1, return_indices=True),
        randn(2, 3, 11, dtype=dtype, seed=1),
    )
    compare(
        lambda x: F.max_pool3d(
            x,
            (2, 3, 2),
            stride=(1, 2, 2),
            padding=(1, 1, 0),
            dilation=(2, 1, 1),
            ceil_mode=True,
            return_indices=True,
        ),
        randn(2, 2, 5, 6, 5, dtype=dtype, seed=2),
    )
    compare(lambda x: F.max_pool3d(x, 2, return_indices=True), randn(2, 4, 4, 4, seed=3))


def test_max_pool3d_channels_last(eager_mode: str) -> None:
    compare(
        lambda x: F.max_pool3d(x, 2, return_indices=True),
        randn(2, 3, 4, 4, 4, seed=1),
        channels_last=True,
    )


AVG = {
    "k2": dict(kernel_size=2),
    "k3-s2-p1": dict(kernel_size=3, stride=2, padding=1),
    "no-count-pad": dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    "ceil": dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    "ceil-no-count": dict(
        kernel_size=2, stride=2, padding=1, ceil_mode=True, count_include_pad=False
    ),
    "divisor": dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), divisor_override=5),
}


@pytest.mark.parametrize("params", list(AVG))
@pytest.mark.parametrize("dtype", FLOATS)
def test_avg_pool2d(eager_mode: str, params: str, dtype: torch.dtype) -> None:
    compare(lambda x: F.avg_pool2d(x, **AVG[params]), randn(2, 3, 9, 8, dtype=dtype, seed=1))


def test_avg_pool_1d_3d_layouts(eager_mode: str) -> None:
    compare(lambda x: F.avg_pool1d(x, 3, stride=2, padding=1, ceil_mode=True), randn(2, 3, 10))
    compare(
        lambda x: F.avg_pool3d(x, 2, stride=(1, 2, 2), padding=1, count_include_pad=False),
        randn(2, 2, 4, 5, 6, seed=1),
    )
    compare(
        lambda x: F.avg_pool3d(x, 2, divisor_override=3),
        randn(1, 2, 4, 4, 4, seed=2),
        channels_last=True,
    )
    compare(
        lambda x: F.avg_pool2d(x, 3, stride=2, padding=1),
        randn(2, 3, 9, 8, seed=3),
        channels_last=True,
    )
    compare(lambda x: F.avg_pool2d(x, 2), randn(3, 6, 6, seed=4))


def test_avg_pool_int64(eager_mode: str) -> None:
    x = torch.randint(-50, 50, (2, 3, 7, 7))
    compare(lambda x: F.avg_pool2d(x, 3, stride=2, padding=1), x)
    compare(lambda x: F.avg_pool3d(x.unsqueeze(0), 2), x)


@pytest.mark.parametrize("dtype", FLOATS)
def test_adaptive_pooling(eager_mode: str, dtype: torch.dtype) -> None:
    x = randn(2, 3, 7, 9, dtype=dtype, seed=1)
    compare(lambda x: F.adaptive_avg_pool2d(x, (3, 4)), x)
    compare(lambda x: F.adaptive_avg_pool2d(x, (10, 5)), x)
    compare(lambda x: F.adaptive_max_pool2d(x, (3, 4), return_indices=True), x)
    compare(lambda x: F.adaptive_avg_pool1d(x, 4), randn(2, 3, 9, dtype=dtype, seed=2))
    compare(
        lambda x: F.adaptive_max_pool1d(x, 4, return_indices=True),
        randn(2, 3, 9, dtype=dtype, seed=3),
    )


def test_adaptive_pooling_3d_layouts(eager_mode: str) -> None:
    x = randn(2, 3, 5, 6, 7, seed=1)
    compare(lambda x: F.adaptive_avg_pool3d(x, (2, 3, 4)), x)
    compare(lambda x: F.adaptive_max_pool3d(x, (2, 3, 4), return_indices=True), x)
    compare(lambda x: F.adaptive_avg_pool3d(x, 2), x, channels_last=True)
    compare(
        lambda x: F.adaptive_max_pool2d(x, 3, return_indices=True),
        randn(2, 3, 8, 8),
        channels_last=True,
    )
    compare(lambda x: F.adaptive_avg_pool2d(x, 3), randn(3, 8, 8), channels_last=False)


def test_out_forms(eager_mode: str) -> None:
    x = randn(2, 3, 8, 8, seed=1)
    ops = torch.ops.aten
    want, want_i = ops.max_pool2d_with_indices(x, [2, 2], [2, 2], [0, 0], [1, 1], False)
    out, idx = torch.empty(0, device=DEV), torch.empty(0, device=DEV, dtype=torch.long)
    with native_only():
        ops.max_pool2d_with_indices.out(
            x.to(DEV), [2, 2], [2, 2], [0, 0], [1, 1], False, out=out, indices=idx
        )
    assert_same(out, want)
    assert_same(idx, want_i)
    g = randn(*want.shape, seed=2)
    grad_in = torch.empty(0, device=DEV)
    want_g = ops.max_pool2d_with_indices_backward(
        g, x, [2, 2], [2, 2], [0, 0], [1, 1], False, want_i
    )
    with native_only():
        ops.max_pool2d_with_indices_backward.grad_input(
            g.to(DEV), x.to(DEV), [2, 2], [2, 2], [0, 0], [1, 1], False, idx, grad_input=grad_in
        )
    assert_same(grad_in, want_g)
    out = torch.empty(0, device=DEV)
    with native_only():
        ops.avg_pool2d.out(x.to(DEV), [3, 3], [2, 2], [1, 1], False, True, None, out=out)
    assert_same(out, ops.avg_pool2d(x, [3, 3], [2, 2], [1, 1], False, True, None), exact=False)


def test_pool_ops_counted_and_global_average() -> None:
    """adaptive_avg_pool2d to 1x1 lowers to mean (another family's op); larger outputs run
    _adaptive_avg_pool2d natively."""
    torch.tpu.reset_op_stats()
    x = torch.randn(2, 3, 6, 6, device=DEV)
    F.max_pool2d(x, 2)
    F.adaptive_avg_pool2d(x, 2)
    torch.tpu.synchronize()
    assert torch.tpu.op_stats()["native"].get("pool", 0) == 2


def test_pool_errors() -> None:
    x = torch.randn(1, 2, 6, 6, device=DEV)
    with pytest.raises(RuntimeError, match="pad should be"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(RuntimeError):
        F.max_pool3d(x.unsqueeze(0), 2, padding=3)
    with pytest.raises(NotImplementedError):
        F.avg_pool2d(x.int(), 2)
    with pytest.raises(NotImplementedError):
        F.max_pool2d(x.bool(), 2)
    with pytest.raises(RuntimeError):
        F.adaptive_avg_pool2d(torch.randn(1, 2, 0, 4, device=DEV), 2)
