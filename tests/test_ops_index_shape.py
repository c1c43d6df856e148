"""Shape and creation ops on tpu, against PyTorch CPU in both eager modes: cat (mixed dtypes,
empty inputs), stack, split/chunk, repeat, flip, roll, tril/triu, constant_pad_nd and pad,
narrow_copy, arange (every overload), the fill-based factories, and that rand/randn/randint
reach the native random kernels; values, dtypes, sizes, strides, meta layouts, gradients."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from _index_checks import ALL, DEV, FLOATS, INTS, assert_same, check_op, make, native_only

# ---------------------------------------------------------------------------------------------
# cat, stack, split, chunk


@pytest.mark.parametrize("dtype", ALL + [torch.uint32])
def test_cat_dtypes(eager_mode: str, dtype: torch.dtype) -> None:
    a, b = make((2, 3), torch.int64).to(dtype), make((4, 3), torch.int64, seed=1).to(dtype)
    check_op(lambda x, y: torch.cat([x, y]), a, b)
    check_op(lambda x, y: torch.cat([x.t(), y.t()], dim=-1), a, b)


def test_cat_mixed_dtypes_and_empty(eager_mode: str) -> None:
    a, b = make((2, 3), torch.int32), make((1, 3), torch.float16, seed=2)
    c = make((3, 3), torch.bool, seed=3)
    check_op(lambda x, y, z: torch.cat([x, y, z]), a, b, c)
    check_op(lambda x, y: torch.cat([x, y]), a, make((1, 3), torch.complex64))
    empty_1d, empty_2d = torch.empty(0, dtype=torch.float64), torch.empty(0, 3)
    check_op(lambda x, e, f: torch.cat([e, x, f]), a, empty_1d, empty_2d)  # legacy [0] skipped
    check_op(lambda e: torch.cat([e, e]), empty_2d)
    check_op(lambda x: torch.cat([x[:, :0], x[:, :0]], dim=1), a)


def test_cat_layouts_and_out(eager_mode: str) -> None:
    x = make((2, 3, 4, 5), torch.float32).contiguous(memory_format=torch.channels_last)
    y = make((2, 3, 4, 5), torch.float32, seed=4).contiguous(memory_format=torch.channels_last)
    check_op(lambda p, q: torch.cat([p, q], dim=1), x, y)
    check_op(lambda p, q: torch.cat([p[:, :, ::2], q[:, :, 1::2]], dim=0), x, y)
    out = torch.empty(0, device=DEV)
    with native_only():
        torch.cat([x.to(DEV), y.to(DEV)], dim=3, out=out)
    assert_same(out, torch.cat([x, y], dim=3))
    with pytest.raises(RuntimeError, match="same device"):
        torch.cat([x.to(DEV), y])


def test_stack_split_chunk(eager_mode: str) -> None:
    x, y = make((3, 4), torch.float32), make((3, 4), torch.float32, seed=5)
    for dim in (0, 1, 2, -1):
        check_op(lambda p, q, d=dim: torch.stack([p, q], dim=d), x, y)
    check_op(lambda p: [t.clone() for t in p.split(2, dim=1)], x)
    check_op(lambda p: [t.clone() for t in p.chunk(3)], x)
    check_op(lambda p: [t.clone() for t in torch.split(p, [1, 3], dim=1)], x)


def test_cat_backward(eager_mode: str) -> None:
    a = make((2, 3), torch.float32).requires_grad_()
    b = make((4, 3), torch.float32, seed=6).requires_grad_()
    ad, bd = (t.detach().to(DEV).requires_grad_() for t in (a, b))
    g = make((6, 3), torch.float32, seed=7)
    torch.cat([a, b]).backward(g)
    with native_only():
        torch.cat([ad, bd]).backward(g.to(DEV))
    assert_same(ad.grad, a.grad)
    assert_same(bd.grad, b.grad)


# ---------------------------------------------------------------------------------------------
# repeat, flip, roll, narrow_copy


@pytest.mark.parametrize("dtype", [torch.bool, torch.int8, torch.bfloat16, torch.complex128])
def test_repeat_flip_roll_dtypes(eager_mode: str, dtype: torch.dtype) -> None:
    x = make((3, 4), dtype)
    check_op(lambda a: a.repeat(2, 1, 3), x)
    check_op(lambda a: a.flip(0, 1), x)
    check_op(lambda a: a.roll(1, 0), x)


def test_flip_strided_views(eager_mode: str) -> None:
    x = make((4, 6, 5), torch.float32)
    check_op(lambda a: a.transpose(0, 2)[:, ::2].flip(0, 2), x)
    check_op(lambda a: a[1].flip(-1), x)
    check_op(lambda a: a.expand(2, 4, 6, 5).flip(0, 3), x)
    check_op(lambda a: a.contiguous(memory_format=torch.channels_last).flip(1), x[None])
    check_op(lambda a: a.flip(()), x)
    check_op(lambda a: a.flip(0), torch.tensor(2.5))
    with pytest.raises(RuntimeError, match="multiple times"):
        x.to(DEV).flip(0, 0)


def test_roll_forms(eager_mode: str) -> None:
    x = make((4, 5), torch.int64)
    check_op(lambda a: a.roll(3), x)
    check_op(lambda a: a.roll(-7, 1), x)
    check_op(lambda a: a.roll((1, -2), (0, 1)), x)
    check_op(lambda a: a.t().roll(2, 0), x)
    check_op(lambda a: a[:0].roll(2, 1), x)


def test_narrow_copy(eager_mode: str) -> None:
    x = make((5, 6), torch.float64)
    check_op(lambda a: a.narrow_copy(1, 2, 3), x)
    check_op(lambda a: a.t().narrow_copy(0, 1, 4), x)


def test_flip_roll_backward(eager_mode: str) -> None:
    x = make((3, 4), torch.float32).requires_grad_()
    xd = x.detach().to(DEV).requires_grad_()
    g = make((3, 4), torch.float32, seed=8)
    (x.flip(1).roll(1, 0) * 1).backward(g)
    with native_only("aten::mul.Tensor", "aten::mul.out"):
        (xd.flip(1).roll(1, 0) * 1).backward(g.to(DEV))
    assert_same(xd.grad, x.grad)


# ---------------------------------------------------------------------------------------------
# tril, triu


@pytest.mark.parametrize("dtype", ALL)
def test_tril_triu_dtypes(eager_mode: str, dtype: torch.dtype) -> None:
    x = make((4, 5), dtype)
    check_op(torch.tril, x)
    check_op(torch.triu, x)


@pytest.mark.parametrize("diagonal", [-6, -2, -1, 0, 1, 3, 7])
def test_tril_triu_diagonals(eager_mode: str, diagonal: int) -> None:
    x = make((2, 4, 5), torch.float32)
    check_op(lambda a: torch.tril(a, diagonal), x)
    check_op(lambda a: torch.triu(a.transpose(1, 2), diagonal), x)
    check_op(lambda a: torch.triu(a[:, ::2], diagonal), x)


def test_tril_triu_inplace_out_and_errors(eager_mode: str) -> None:
    x = make((3, 3), torch.float64)
    dev = x.to(DEV)
    with native_only():
        dev.tril_(-1)
    assert_same(dev, x.clone().tril_(-1))
    t = x.t().to(DEV)  # a non-contiguous tensor in place
    with native_only():
        t.t().triu_(1)
    assert_same(t, x.t().clone().t().triu_(1).t())
    out = torch.empty(0, dtype=torch.float64, device=DEV)
    torch.triu(x.to(DEV), 0, out=out)
    assert_same(out, torch.triu(x))
    check_op(torch.tril, torch.empty(0, 3))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        torch.tril(torch.ones(3, device=DEV))


def test_tril_backward(eager_mode: str) -> None:
    x = make((4, 4), torch.float32).requires_grad_()
    xd = x.detach().to(DEV).requires_grad_()
    g = make((4, 4), torch.float32, seed=9)
    x.tril(1).backward(g)
    with native_only():
        xd.tril(1).backward(g.to(DEV))
    assert_same(xd.grad, x.grad)


# ---------------------------------------------------------------------------------------------
# Padding


@pytest.mark.parametrize("dtype", [torch.bool, torch.int32, torch.float16, torch.float32])
def test_constant_pad(eager_mode: str, dtype: torch.dtype) -> None:
    x = make((2, 3, 4), dtype)
    value = True if dtype == torch.bool else 2
    check_op(lambda a: F.pad(a, (1, 2), value=value), x)
    check_op(lambda a: F.pad(a, (0, 1, 2, 0, 1, 1)), x)
    check_op(lambda a: F.pad(a, (-1, 2, 0, -1)), x)  # negative pads crop
    check_op(lambda a: torch.constant_pad_nd(a.transpose(0, 2), (1, 1), 0), x)


def test_constant_pad_backward(eager_mode: str) -> None:
    x = make((3, 4), torch.float32).requires_grad_()
    xd = x.detach().to(DEV).requires_grad_()
    g = make((4, 7), torch.float32, seed=10)
    F.pad(x, (1, 2, 0, 1), value=-1.0).backward(g)
    with native_only():
        F.pad(xd, (1, 2, 0, 1), value=-1.0).backward(g.to(DEV))
    assert_same(xd.grad, x.grad)


# ---------------------------------------------------------------------------------------------
# arange, fills


@pytest.mark.parametrize("dtype", [*INTS, *FLOATS])
def test_arange_dtypes(eager_mode: str, dtype: torch.dtype) -> None:
    expected = torch.arange(1, 30, 3, dtype=dtype)
    with native_only():
        got = torch.arange(1, 30, 3, dtype=dtype, device=DEV)
    assert_same(got, expected)


@pytest.mark.parametrize("dtype", [torch.bool, torch.complex64, torch.uint16])
def test_arange_unsupported_dtypes_as_on_cpu(dtype: torch.dtype) -> None:
    with pytest.raises(NotImplementedError, match="arange"):
        torch.arange(3, dtype=dtype)
    with pytest.raises(NotImplementedError, match="arange"):
        torch.arange(3, dtype=dtype, device=DEV)


def test_arange_overloads(eager_mode: str) -> None:
    cases = [
        lambda d: torch.arange(7, device=d),
        lambda d: torch.arange(7.0, device=d),
        lambda d: torch.arange(-3, 4, device=d),
        lambda d: torch.arange(10, 0, -3, device=d),
        lambda d: torch.arange(0, 1, 0.1, device=d),
        lambda d: torch.arange(-1.5, 2.2, 0.25, device=d, dtype=torch.float64),
        lambda d: torch.arange(0, 5, 0.5, device=d, dtype=torch.bfloat16),
        lambda d: torch.arange(2**40, 2**40 + 5, device=d),
        lambda d: torch.arange(0, device=d),
    ]
    for case in cases:
        expected = case("cpu")
        with native_only():
            got = case(DEV)
        assert_same(got, expected)


def test_arange_out(eager_mode: str) -> None:
    out = torch.empty(3, 2, device=DEV)
    with native_only():
        torch.arange(6, out=out)  # the same size: filled in row-major order
    assert_same(out, torch.arange(6, out=torch.empty(3, 2)))
    strided = torch.zeros(10, device=DEV)[::2]
    torch.arange(5.0, out=strided)
    assert strided.cpu().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    resized = torch.empty(2, device=DEV)
    with pytest.warns(UserWarning, match="does not match the computed number"):
        torch.arange(4, out=resized)
    assert resized.shape == (4,)
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        torch.arange(0, 3, 0, device=DEV)
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent"):
        torch.arange(5, 0, 1, device=DEV)


def test_fill_factories_are_native(eager_mode: str) -> None:
    x = make((2, 3), torch.float32)
    cases = [
        lambda d: torch.full((2, 3), 1.5, device=d),
        lambda d: torch.zeros(4, dtype=torch.int8, device=d),
        lambda d: torch.ones(2, 2, dtype=torch.bool, device=d),
        lambda d: torch.zeros_like(x.to(d)),
        lambda d: torch.ones_like(x.to(d), dtype=torch.float16),
        lambda d: torch.full_like(x.to(d), 7),
        lambda d: torch.eye(3, device=d),
        lambda d: torch.eye(2, 4, dtype=torch.complex64, device=d),
    ]
    for case in cases:
        expected = case("cpu")
        with native_only():
            got = case(DEV)
        assert_same(got, expected)
    with native_only():
        e = torch.empty_like(x.to(DEV))
    assert e.shape == x.shape and e.dtype == x.dtype


def test_random_factories_are_native(eager_mode: str) -> None:
    for fn, name in [
        (lambda: torch.rand(3, 4, device=DEV), "uniform"),
        (lambda: torch.randn(5, device=DEV, dtype=torch.float64), "normal"),
        (lambda: torch.randint(0, 10, (6,), device=DEV), "random"),
        (lambda: torch.randint(3, (2, 2), device=DEV, dtype=torch.int16), "random"),
        (lambda: torch.rand_like(torch.ones(3, device=DEV)), "uniform"),
        (lambda: torch.randn_like(torch.ones(3, device=DEV)), "normal"),
        (lambda: torch.randint_like(torch.ones(3, device=DEV), 5), "random"),
    ]:
        with native_only():
            fn()
        assert torch.tpu.op_stats()["native"].get(name, 0) >= 1
