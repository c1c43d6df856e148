"""The index family on tpu, against PyTorch CPU in both eager modes: gather, scatter (src,
value, reduce, scatter_add), index_add, index_copy, index_fill_, index_select, advanced indexing
(x[idx], x[mask], CPU index tensors, int32/int64, negative and broadcast indices), index_put_
(accumulate, duplicates, broadcast values), nonzero, masked_select and masked_scatter_; values,
dtypes, sizes, strides, meta layouts, native execution, index errors in both modes, gradients."""

from __future__ import annotations

import pytest
import torch
from _index_checks import (
    ALL,
    COMPLEX,
    DEV,
    FLOATS,
    INTS,
    assert_same,
    check_op,
    expect_index_error,
    make,
    native_only,
    to_dev,
)

# ---------------------------------------------------------------------------------------------
# gather


@pytest.mark.parametrize("dtype", ALL)
def test_gather_dtypes(eager_mode: str, dtype: torch.dtype) -> None:
    x = make((5, 5), dtype)
    idx = torch.tensor([[0, 4, 4], [1, 2, 0], [3, 3, 3]])
    check_op(torch.gather, x, 1, idx)
    check_op(torch.gather, x, 0, idx)


def test_gather_layouts(eager_mode: str) -> None:
    x = make((5, 6, 3), torch.float32)
    idx = torch.randint(0, 6, (4, 2, 3))
    check_op(lambda a, i: torch.gather(a.transpose(0, 2), -2, i.transpose(0, 2)), x, idx)
    check_op(lambda a, i: torch.gather(a[:, ::2], 1, i), x, idx[:, :1] // 2)
    check_op(torch.gather, torch.tensor(3.5), 0, torch.tensor(0))  # 0-d
    check_op(torch.gather, x, 1, torch.empty(5, 0, 3, dtype=torch.long))  # empty index


def test_gather_out(eager_mode: str) -> None:
    x, idx = make((3, 4), torch.float64), torch.tensor([[1], [0], [3]])
    out = torch.empty(0, device=DEV, dtype=torch.float64)
    with native_only():
        torch.gather(x.to(DEV), 1, idx.to(DEV), out=out)
    assert_same(out, torch.gather(x, 1, idx))


def test_gather_out_of_range(eager_mode: str) -> None:
    x = torch.zeros(3, 2, device=DEV)
    idx = torch.tensor([[0, 1], [2, 3]], device=DEV)
    expect_index_error(eager_mode, lambda: torch.gather(x, 1, idx), "gather")
    neg = torch.tensor([[-1, 0]], device=DEV)
    expect_index_error(eager_mode, lambda: torch.gather(x, 1, neg), "gather")


def test_gather_int32_index_and_device_errors(eager_mode: str) -> None:
    x = make((3, 2), torch.float32)
    check_op(torch.gather, x, 1, torch.tensor([[1], [0], [1]], dtype=torch.int32))
    with pytest.raises(RuntimeError, match="same device"):
        torch.gather(x.to(DEV), 1, torch.tensor([[0]]))


# ---------------------------------------------------------------------------------------------
# scatter, scatter_add


@pytest.mark.parametrize("dtype", ALL)
def test_scatter_dtypes(eager_mode: str, dtype: torch.dtype) -> None:
    x, src = make((4, 5), dtype), make((3, 5), dtype, seed=1)
    idx = torch.tensor([[0, 1, 2, 3, 0], [3, 2, 1, 0, 1], [1, 1, 1, 1, 1]])
    check_op(lambda a, i, s: a.scatter(1, i[:, :3], s), x, idx, src)
    check_op(lambda a, i, s: a.scatter(0, i, s), x, idx, src)
    check_op(lambda a, i: a.scatter(1, i, 1), x, idx)
    if dtype not in (torch.bool,):
        check_op(lambda a, i, s: a.scatter_add(0, i, s), x, idx, src)


@pytest.mark.parametrize("reduce", ["add", "multiply"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.float32, torch.bfloat16, torch.complex64])
def test_scatter_reduce_variants(eager_mode: str, reduce: str, dtype: torch.dtype) -> None:
    x, src = make((4, 3), dtype), make((6, 3), dtype, seed=2)
    idx = torch.tensor([[0, 1, 2], [0, 0, 0], [3, 3, 1], [0, 2, 2], [1, 1, 1], [3, 0, 2]])
    check_op(lambda a, i, s: a.scatter(0, i, s, reduce=reduce), x, idx, src)
    check_op(lambda a, i: a.scatter(0, i, 2, reduce=reduce), x, idx)


def test_scatter_add_duplicates_are_deterministic(eager_mode: str) -> None:
    # many float duplicates: CPU's in-order sum, bit for bit, whatever the thread count
    g = torch.Generator().manual_seed(0)
    src = torch.randn(20000, 4, generator=g)
    idx = torch.randint(0, 3, (20000, 4), generator=g)
    expected = torch.zeros(3, 4).scatter_add_(0, idx, src)
    for threads in (1, 2, 3):
        old = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            got = torch.zeros(3, 4, device=DEV).scatter_add_(0, idx.to(DEV), src.to(DEV))
            assert torch.equal(got.cpu(), expected)
        finally:
            torch.set_num_threads(old)


def test_scatter_inplace_and_out(eager_mode: str) -> None:
    x, src = make((3, 4), torch.float32), make((3, 4), torch.float32, seed=3)
    idx = torch.tensor([[3, 2, 1, 0], [0, 0, 1, 1], [2, 2, 2, 2]])
    expected = x.clone().scatter_(1, idx, src)
    got = x.to(DEV)
    with native_only():
        got.scatter_(1, idx.to(DEV), src.to(DEV))
    assert_same(got, expected)
    out = torch.empty(3, 4, device=DEV)
    with native_only():
        torch.scatter_add(x.to(DEV), 1, idx.to(DEV), src.to(DEV), out=out)
    assert_same(out, torch.scatter_add(x, 1, idx, src))
    # a strided destination
    base = torch.zeros(4, 8)
    dev = base.to(DEV)
    base[:, ::2].scatter_(1, idx[:, :2].repeat(2, 1)[:4], 5.0)
    with native_only():
        dev[:, ::2].scatter_(1, idx[:, :2].repeat(2, 1)[:4].to(DEV), 5.0)
    assert_same(dev, base)


def test_scatter_out_of_range(eager_mode: str) -> None:
    x = torch.zeros(2, 3, device=DEV)
    idx = torch.tensor([[0, 5, 1]], device=DEV)
    src = torch.ones(1, 3, device=DEV)
    expect_index_error(eager_mode, lambda: x.scatter_add_(1, idx, src), "scatter")
    y = torch.zeros(2, 3, device=DEV)
    neg = torch.tensor([[0, -1, 1]], device=DEV)
    expect_index_error(eager_mode, lambda: y.scatter_(0, neg, 1.0), "scatter")


# ---------------------------------------------------------------------------------------------
# index_add, index_copy, index_fill_, index_select


@pytest.mark.parametrize("dtype", [torch.bool, *INTS, *FLOATS, *COMPLEX])
def test_index_add_copy_fill_dtypes(eager_mode: str, dtype: torch.dtype) -> None:
    x, src = make((5, 3), dtype), make((4, 3), dtype, seed=4)
    idx = torch.tensor([4, 0, 4, 2])
    check_op(lambda a, i, s: a.index_add(0, i, s), x, idx, src)
    check_op(lambda a, i, s: a.index_copy(0, i[1:], s[:3]), x, idx, src)
    check_op(lambda a, i: a.index_fill(1, i, 1), x, torch.tensor([2, 0]))


@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
def test_index_add_alpha_dims_and_index_dtypes(eager_mode: str, index_dtype: torch.dtype) -> None:
    x, src = make((3, 4, 2), torch.float32), make((3, 6, 2), torch.float32, seed=5)
    idx = torch.tensor([3, 0, 3, 1, 3, 2], dtype=index_dtype)
    check_op(lambda a, i, s: a.index_add(1, i, s, alpha=0.5), x, idx, src, exact=False)
    check_op(lambda a, i, s: a.index_add(-2, i, s, alpha=2), x, idx, src)
    ints = make((4,), torch.int64)
    check_op(lambda a, i, s: a.index_add(0, i, s, alpha=3), ints, idx[:3], ints[:3])
    zero = torch.tensor([0], dtype=index_dtype)
    check_op(lambda a, i, s: a.index_add(0, i, s), torch.tensor(1.0), zero, torch.tensor(2.0))


def test_index_add_inplace_out_and_backward(eager_mode: str) -> None:
    x, src = make((5, 2), torch.float64), make((3, 2), torch.float64, seed=6)
    idx = torch.tensor([1, 1, 4])
    dev = x.to(DEV)
    with native_only():
        dev.index_add_(0, idx.to(DEV), src.to(DEV))
    assert_same(dev, x.clone().index_add_(0, idx, src))
    out = torch.empty(0, dtype=torch.float64, device=DEV)
    torch.index_add(x.to(DEV), 0, idx.to(DEV), src.to(DEV), out=out)
    assert_same(out, torch.index_add(x, 0, idx, src))
    # index_select's backward is an index_add of the gradient
    w = make((6, 3), torch.float32).requires_grad_()
    wd = w.detach().to(DEV).requires_grad_()
    sel = torch.tensor([5, 0, 5, 5])
    w.index_select(0, sel).pow(2).sum().backward()
    with native_only(
        "aten::pow.Tensor_Scalar",
        "aten::sum",
        "aten::mul.Tensor",
        "aten::pow.Tensor_Scalar_out",
        "aten::mul.out",
        "aten::sum.IntList_out",
    ):
        wd.index_select(0, sel.to(DEV)).pow(2).sum().backward()
    assert_same(wd.grad, w.grad)


def test_index_fill_tensor_value_and_errors(eager_mode: str) -> None:
    x = make((3, 4), torch.float32)
    check_op(
        lambda a: a.index_fill(1, torch.tensor([0, 3], device=a.device), torch.tensor(-2.0)),
        x,
        meta=False,
    )
    dev = x.to(DEV)
    with pytest.raises(IndexError, match="int64"):
        dev.index_fill_(0, torch.tensor([0], dtype=torch.int32, device=DEV), 1.0)
    expect_index_error(
        eager_mode, lambda: dev.index_fill_(0, torch.tensor([3], device=DEV), 1.0), "index_fill"
    )
    expect_index_error(
        eager_mode,
        lambda: dev.index_add_(0, torch.tensor([7], device=DEV), torch.ones(1, 4, device=DEV)),
        "index_add",
    )


# ---------------------------------------------------------------------------------------------
# Advanced indexing: x[indices]


INDEXERS = {
    "rows": lambda x, d: x[torch.tensor([2, 0, -1, 2], device=d)],
    "cpu_index": lambda x, d: x[torch.tensor([[1, 0], [3, 3]])],
    "int32": lambda x, d: x[:, torch.tensor([3, 0], dtype=torch.int32, device=d)],
    "two_tensors": lambda x, d: x[torch.tensor([0, 2], device=d), torch.tensor([1, -1], device=d)],
    "broadcast": lambda x, d: x[
        torch.tensor([[0], [3]], device=d), torch.tensor([1, 2, 0], device=d)
    ],
    "non_adjacent": lambda x, d: x[
        torch.tensor([1, 0], device=d), :, torch.tensor([2, 2], device=d)
    ],
    "mask": lambda x, d: x[(torch.arange(60).view(4, 5, 3) % 7 > 2).to(d)],
    "cpu_mask": lambda x, d: x[torch.tensor([True, False, True, True])],
    "mask_and_slice": lambda x, d: x[1:, torch.tensor([True, False, False, True, True], device=d)],
    "empty": lambda x, d: x[torch.tensor([], dtype=torch.long, device=d)],
    "ellipsis": lambda x, d: x[..., torch.tensor([0, 0, 1], device=d)],
    "none_and_int": lambda x, d: x[None, 2, torch.tensor([4, 1], device=d)],
}


@pytest.mark.parametrize("name", list(INDEXERS))
def test_index(eager_mode: str, name: str) -> None:
    fn = INDEXERS[name]
    x = make((4, 5, 3), torch.float32)
    if name == "cpu_mask":
        x = x[:, 0]
    check_op(lambda a: fn(a, a.device.type), x, meta=name not in ("mask", "mask_and_slice"))


@pytest.mark.parametrize("dtype", ALL + [torch.uint16, torch.float8_e4m3fn])
def test_index_dtypes(eager_mode: str, dtype: torch.dtype) -> None:
    x = make((4, 3), torch.float32).to(dtype)
    check_op(lambda a: a[torch.tensor([3, 1, 3], device=a.device), 1:], x, meta=False)


def test_index_strided_self_and_out(eager_mode: str) -> None:
    x = make((6, 8), torch.int64)
    check_op(lambda a: a.t()[::2][torch.tensor([0, 3], device=a.device)], x)
    out = torch.empty(0, dtype=torch.int64, device=DEV)
    idx = torch.tensor([5, 1])
    with native_only():
        torch.ops.aten.index.Tensor_out(x.to(DEV), [idx.to(DEV)], out=out)
    assert_same(out, x[idx])


def test_index_out_of_range(eager_mode: str) -> None:
    x = torch.zeros(3, 4, device=DEV)
    expect_index_error(eager_mode, lambda: x[torch.tensor([1, 3], device=DEV)], "index")
    expect_index_error(eager_mode, lambda: x[:, torch.tensor([-5], device=DEV)], "index")
    with pytest.raises(IndexError, match="too many indices"):
        x[torch.tensor([0]), torch.tensor([0]), torch.tensor([0])]
    with pytest.raises(IndexError, match="shape of the mask"):
        x[torch.tensor([True, False], device=DEV)]


def test_index_backward(eager_mode: str) -> None:
    x = make((5, 3), torch.float32).requires_grad_()
    xd = x.detach().to(DEV).requires_grad_()
    idx = torch.tensor([[4, 0], [4, 4]])
    g = make((2, 2, 3), torch.float32, seed=9)
    x[idx].backward(g)
    with native_only():
        xd[idx.to(DEV)].backward(g.to(DEV))
    assert_same(xd.grad, x.grad)


# ---------------------------------------------------------------------------------------------
# index_put_


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("dtype", ALL)
def test_index_put_dtypes(eager_mode: str, dtype: torch.dtype, accumulate: bool) -> None:
    x, v = make((5, 3), dtype), make((4, 3), dtype, seed=7)
    idx = torch.tensor([4, 1, 4, 0]) if accumulate else torch.tensor([4, 1, 2, 0])
    check_op(lambda a, i, s: a.index_put((i,), s, accumulate=accumulate), x, idx, v, meta=False)


def test_index_put_duplicates_accumulate_deterministically(eager_mode: str) -> None:
    g = torch.Generator().manual_seed(1)
    v = torch.randn(30000, 2, generator=g)
    idx = torch.randint(-4, 4, (30000,), generator=g)
    expected = torch.zeros(4, 2).index_put_((idx,), v, accumulate=True)
    for threads in (1, 3):
        old = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            got = torch.zeros(4, 2, device=DEV)
            with native_only():
                got.index_put_((idx.to(DEV),), v.to(DEV), accumulate=True)
            # PyTorch CPU adds duplicates with atomics in parallel: its own order varies
            torch.testing.assert_close(got.cpu(), expected, rtol=1e-4, atol=2e-3)
            again = torch.zeros(4, 2, device=DEV).index_put_((idx.to(DEV),), v.to(DEV), True)
            assert torch.equal(again.cpu(), got.cpu())
        finally:
            torch.set_num_threads(old)


def test_index_put_broadcast_and_forms(eager_mode: str) -> None:
    x = make((4, 5), torch.float32)
    rows, cols = torch.tensor([[0], [3]]), torch.tensor([1, 4, 1])
    check_op(lambda a, r, c: a.index_put((r, c), torch.tensor(7.0)), x, rows, cols, meta=False)
    check_op(
        lambda a, r: a.index_put((r.flatten(),), torch.arange(5.0, device=a.device), True),
        x,
        rows,
        meta=False,
    )
    check_op(
        lambda a, c: torch.ops.aten.index_put(
            a, [None, c], torch.ones(4, 1, device=a.device), True
        ),
        x,
        cols,
        meta=False,
    )
    # Python's setitem forms, CPU index tensors included
    expected = x.clone()
    expected[rows, cols] = -1.0
    expected[torch.tensor([2])] += 3
    dev = x.to(DEV)
    with native_only("aten::add.Tensor", "aten::add.out"):
        dev[rows, cols] = -1.0
        dev[torch.tensor([2])] += 3
    assert_same(dev, expected)


def test_index_put_mask_value_goes_through_masked_fill(eager_mode: str) -> None:
    x = make((3, 4), torch.float32)
    expected = x.clone()
    expected[expected > 0] = 0.5
    dev = x.to(DEV)
    with native_only("aten::masked_fill_.Scalar", "aten::gt.Scalar", "aten::gt.Scalar_out"):
        dev[dev > 0] = 0.5
    assert_same(dev, expected)
    # a tensor of values through a mask: nonzero, then the scatter
    v = torch.arange(12.0)[: int((x < 0).sum())]
    expected[x < 0] = v
    with native_only("aten::lt.Scalar", "aten::lt.Scalar_out"):
        dev[(x < 0).to(DEV)] = v.to(DEV)
    assert_same(dev, expected)


def test_index_put_errors(eager_mode: str) -> None:
    x = torch.zeros(3, 2, device=DEV)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        x[torch.tensor([0, 1], device=DEV)] = torch.ones(3, 2, device=DEV)
    with pytest.raises(RuntimeError, match="dtypes match"):
        x.index_put_(
            (torch.tensor([0], device=DEV),), torch.ones(1, 2, dtype=torch.float64, device=DEV)
        )
    expect_index_error(
        eager_mode,
        lambda: x.index_put_(
            (torch.tensor([0, 3], device=DEV),), torch.ones(2, 2, device=DEV), True
        ),
        "index_put",
    )


# ---------------------------------------------------------------------------------------------
# nonzero, masked_select, masked_scatter_


@pytest.mark.parametrize("dtype", ALL)
def test_nonzero_dtypes(eager_mode: str, dtype: torch.dtype) -> None:
    x = make((3, 5), dtype)
    check_op(torch.nonzero, x, meta=False)
    check_op(lambda a: torch.nonzero(a.t()), x, meta=False)


def test_nonzero_shapes(eager_mode: str) -> None:
    check_op(torch.nonzero, torch.tensor([0.0, -0.0, float("nan"), 2.0]), meta=False)
    check_op(torch.nonzero, torch.tensor(3), meta=False)
    check_op(torch.nonzero, torch.tensor(0), meta=False)
    check_op(torch.nonzero, torch.zeros(2, 0, 3), meta=False)
    check_op(lambda a: torch.nonzero(a, as_tuple=True), make((2, 3, 4), torch.int8), meta=False)
    check_op(torch.argwhere, make((4, 4), torch.float32), meta=False)
    big = torch.rand(300, 700) < 0.1
    check_op(torch.nonzero, big, meta=False)
    out = torch.empty(0, dtype=torch.long, device=DEV)
    torch.nonzero(big.to(DEV), out=out)
    assert_same(out, torch.nonzero(big))


@pytest.mark.parametrize("dtype", [torch.bool, torch.int16, torch.float32, torch.complex128])
def test_masked_select(eager_mode: str, dtype: torch.dtype) -> None:
    x = make((4, 6), dtype)
    mask = make((4, 6), torch.bool, seed=3)
    check_op(torch.masked_select, x, mask, meta=False)
    check_op(torch.masked_select, x, mask[0], meta=False)  # broadcast mask
    check_op(torch.masked_select, x[:1], mask, meta=False)  # broadcast self
    check_op(torch.masked_select, x.t(), mask.t(), meta=False)


def test_masked_select_backward_and_scatter(eager_mode: str) -> None:
    x = make((3, 4), torch.float32).requires_grad_()
    xd = x.detach().to(DEV).requires_grad_()
    mask = make((3, 4), torch.bool, seed=5)
    g = torch.arange(float(mask.sum()))
    torch.masked_select(x, mask).backward(g)
    with native_only():
        torch.masked_select(xd, mask.to(DEV)).backward(g.to(DEV))
    assert_same(xd.grad, x.grad)
    src = torch.arange(20.0)
    check_op(lambda a, m, s: a.masked_scatter(m, s), x.detach(), mask, src, meta=False)
    check_op(
        lambda a, m, s: a.masked_scatter(m, s.view(4, 5)), x.detach(), mask[1], src, meta=False
    )


def test_masked_scatter_too_few_source_elements(eager_mode: str) -> None:
    x = torch.zeros(4, device=DEV)
    mask = torch.ones(4, dtype=torch.bool, device=DEV)
    if eager_mode == "debug":
        with pytest.raises(RuntimeError, match="at least as many elements"):
            x.masked_scatter_(mask, torch.ones(3, device=DEV))
    else:
        x.masked_scatter_(mask, torch.ones(3, device=DEV))
        with pytest.raises(RuntimeError, match="masked_scatter"):
            torch.tpu.synchronize()
    torch.tpu.synchronize()


def test_index_select_cpu_and_device_index(eager_mode: str) -> None:
    x = make((4, 3), torch.float32)
    check_op(lambda a: a.index_select(0, torch.tensor([3, 3, 0], device=a.device)), x)
    check_op(lambda a: a.index_select(1, torch.tensor([2], dtype=torch.int32, device=a.device)), x)
    assert_same(
        to_dev(x).index_select(0, torch.tensor([1, 1], device=DEV)),
        x.index_select(0, torch.tensor([1, 1])),
    )
