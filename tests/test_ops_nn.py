"""The nn family on tpu, against PyTorch CPU in both eager modes: embedding and its backward
(padding_idx, scale_grad_by_freq), nll_loss / nll_loss2d (weights, ignore_index, reductions),
cross_entropy, and mse_loss's backward and out= form; with them, the random family's bernoulli_
and native_dropout (p = 0 and 1, eval mode, the same mask for the same seed in every eager mode,
mask statistics), whose binding sits beside embedding's; values, dtypes, sizes, strides, native
execution, target errors, gradients."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from _index_checks import DEV, FLOATS, assert_same, check_op, expect_index_error, make, native_only

# log_softmax belongs to another family; until it is native, cross_entropy falls back for it.
LOG_SOFTMAX = (
    "aten::_log_softmax",
    "aten::_log_softmax.out",
    "aten::_log_softmax_backward_data",
    "aten::_log_softmax_backward_data.out",
)

# ---------------------------------------------------------------------------------------------
# embedding


@pytest.mark.parametrize("dtype", FLOATS)
def test_embedding_forward_and_backward(eager_mode: str, dtype: torch.dtype) -> None:
    weight = make((10, 4), dtype).requires_grad_()
    wd = weight.detach().to(DEV).requires_grad_()
    idx = torch.tensor([[1, 2, 1], [9, 1, 0]])
    g = make((2, 3, 4), dtype, seed=1)
    out = F.embedding(idx, weight)
    out.backward(g)
    with native_only():
        out_d = F.embedding(idx.to(DEV), wd)
        out_d.backward(g.to(DEV))
    assert_same(out_d, out.detach())
    assert_same(wd.grad, weight.grad)


@pytest.mark.parametrize("padding_idx", [None, 0, 2, -1])
@pytest.mark.parametrize("scale", [False, True])
def test_embedding_backward_options(eager_mode: str, padding_idx: int | None, scale: bool) -> None:
    weight = make((5, 3), torch.float32).requires_grad_()
    wd = weight.detach().to(DEV).requires_grad_()
    idx = torch.tensor([0, 2, 2, 4, 2, 1, 4], dtype=torch.int32)
    g = make((7, 3), torch.float32, seed=2)
    F.embedding(idx, weight, padding_idx=padding_idx, scale_grad_by_freq=scale).backward(g)
    with native_only():
        F.embedding(idx.to(DEV), wd, padding_idx=padding_idx, scale_grad_by_freq=scale).backward(
            g.to(DEV)
        )
    assert_same(wd.grad, weight.grad, exact=False)


def test_embedding_dense_backward_direct_and_errors(eager_mode: str) -> None:
    g = make((4, 2), torch.float64)
    idx = torch.tensor([3, 3, 0, 1])
    check_op(lambda a, i: torch.ops.aten.embedding_dense_backward(a, i, 6, -1, False), g, idx)
    bad = torch.tensor([3, 9, 0, 1], device=DEV)
    expect_index_error(
        eager_mode,
        lambda: torch.ops.aten.embedding_dense_backward(g.to(DEV), bad, 6, -1, False),
        "embedding_backward",
    )
    with pytest.raises(RuntimeError, match="Long, Int"):
        torch.ops.aten.embedding_dense_backward(g.to(DEV), bad.float(), 6, -1, False)


# ---------------------------------------------------------------------------------------------
# bernoulli, dropout


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int64, *FLOATS])
def test_bernoulli_dtypes_and_stats(eager_mode: str, dtype: torch.dtype) -> None:
    torch.tpu.manual_seed(3)
    with native_only():
        x = torch.empty(200, 100, dtype=dtype, device=DEV).bernoulli_(0.25)
    values = x.cpu().double()
    assert set(values.unique().tolist()) <= {0.0, 1.0}
    assert abs(values.mean().item() - 0.25) < 0.01
    assert x.dtype == dtype


def test_bernoulli_tensor_p_and_functional(eager_mode: str) -> None:
    p = torch.tensor([0.0, 1.0, 0.5]).repeat(4000, 1)
    torch.tpu.manual_seed(4)
    with native_only():
        a = torch.bernoulli(p.to(DEV))
        b = torch.empty(4000, 3, device=DEV).bernoulli_(p.to(DEV))
        c = torch.zeros(4000, 3, dtype=torch.bool, device=DEV).bernoulli_(p[0])  # CPU p, broadcast
    for t in (a, b, c):
        col = t.cpu().double().mean(0)
        assert col[0] == 0 and col[1] == 1 and abs(col[2].item() - 0.5) < 0.03
    with pytest.raises(RuntimeError, match=r"\[0, 1\]"):
        torch.empty(3, device=DEV).bernoulli_(1.5)


def test_bernoulli_p_tensor_out_of_range(eager_mode: str) -> None:
    p = torch.tensor([0.5, 2.0], device=DEV)
    if eager_mode == "debug":
        with pytest.raises(RuntimeError, match=r"\[0, 1\]"):
            torch.bernoulli(p)
    else:
        out = torch.bernoulli(p)  # kept alive: fused mode never runs an op whose results died
        with pytest.raises(RuntimeError, match="bernoulli"):
            torch.tpu.synchronize()
        del out
    torch.tpu.synchronize()


@pytest.mark.parametrize("dtype", [*FLOATS, torch.complex64])
def test_dropout_values(eager_mode: str, dtype: torch.dtype) -> None:
    x = make((64, 33), dtype).to(DEV)
    torch.tpu.manual_seed(5)
    with native_only():
        out, mask = torch.ops.aten.native_dropout(x, 0.3, True)
    assert out.dtype == dtype and mask.dtype == torch.bool and out.shape == x.shape
    scale = 1 / 0.7
    expected = (x.cpu() * mask.cpu()) * scale
    assert_same(out, expected.to(dtype))
    assert out.stride() == x.stride()


def test_dropout_same_seed_same_mask_in_every_mode() -> None:
    x = torch.ones(1000, 7, device=DEV)
    masks = []
    for mode in ("strict", "debug", "strict"):
        torch.tpu.set_eager_mode(mode)
        try:
            torch.tpu.manual_seed(123)
            masks.append(F.dropout(x, 0.4, training=True).cpu())
        finally:
            torch.tpu.set_eager_mode("strict")
    assert torch.equal(masks[0], masks[1]) and torch.equal(masks[0], masks[2])
    torch.tpu.manual_seed(124)
    assert not torch.equal(F.dropout(x, 0.4, training=True).cpu(), masks[0])


def test_dropout_mask_statistics(eager_mode: str) -> None:
    torch.tpu.manual_seed(6)
    x = torch.ones(300, 1000, device=DEV)
    _, mask = torch.ops.aten.native_dropout(x, 0.2, True)
    m = mask.cpu().double()
    assert abs(m.mean().item() - 0.8) < 0.005
    # rows and columns are not correlated with the index pattern
    assert m.mean(1).std().item() < 0.05 and m.mean(0).std().item() < 0.05
    a = torch.ops.aten.native_dropout(x, 0.2, True)[1].cpu()
    assert not torch.equal(a, mask.cpu())  # the offset advanced


def test_dropout_edge_cases(eager_mode: str) -> None:
    x = make((4, 5), torch.float32)
    xd = x.to(DEV)
    with native_only("aten::mul.Tensor", "aten::mul.out"):
        assert_same(F.dropout(xd, 0.0, training=True), x)
        assert_same(F.dropout(xd, 0.5, training=False), x)
        assert_same(F.dropout(xd, 1.0, training=True), F.dropout(x, 1.0, training=True))
    with native_only():
        out, mask = torch.ops.aten.native_dropout(xd, 1.0, True)
        assert not mask.cpu().any() and torch.equal(out.cpu(), torch.zeros(4, 5))
        out, mask = torch.ops.aten.native_dropout(xd, 0.5, False)
        assert_same(out, x)
        assert mask.cpu().all() and mask.dtype == torch.bool
        empty = torch.empty(0, 3, device=DEV)
        out, mask = torch.ops.aten.native_dropout(empty, 0.5, True)
        assert out.shape == (0, 3) and mask.dtype == torch.float32


def test_dropout_backward(eager_mode: str) -> None:
    x = torch.rand(8, 6, device=DEV).add_(1).requires_grad_()
    torch.tpu.manual_seed(7)
    with native_only():
        out = F.dropout(x, 0.25, training=True)
        out.backward(torch.full_like(out, 3.0))
    kept = out.detach().cpu() != 0
    assert torch.equal(x.grad.cpu(), kept.float() * 3.0 * torch.tensor(1 / 0.75))
    g = make((3, 3), torch.bfloat16).to(DEV)
    mask = torch.tensor([[True, False, True]] * 3, device=DEV)
    with native_only():
        got = torch.ops.aten.native_dropout_backward(g, mask, 2.0)
    assert_same(got, torch.ops.aten.native_dropout_backward(g.cpu(), mask.cpu(), 2.0))


# ---------------------------------------------------------------------------------------------
# nll_loss, cross_entropy


def log_probs(shape: tuple[int, ...], dtype: torch.dtype = torch.float32) -> torch.Tensor:
    g = torch.Generator().manual_seed(11)
    return torch.randn(shape, generator=g, dtype=torch.float64).log_softmax(1).to(dtype)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss(eager_mode: str, reduction: str, weighted: bool) -> None:
    x = log_probs((7, 5))
    target = torch.tensor([0, 4, 2, -100, 1, 1, 3])
    w = torch.tensor([1.0, 0.5, 2.0, 0.0, 3.0]) if weighted else None
    check_op(
        lambda a, t, ww: F.nll_loss(a, t, weight=ww, reduction=reduction),
        x,
        target,
        w,
        exact=False,
    )
    target = torch.tensor([0, 4, 2, 1, 1, 1, 3])
    # The reductions sum 4 of the 7 rows, CPU's cascade in another order than tpu's: up to 4
    # roundings of the (positive) sum, and one more for the mean's division.
    roundings = 5 * torch.finfo(x.dtype).eps
    check_op(
        lambda a, t: F.nll_loss(a, t, reduction=reduction, ignore_index=1),
        x,
        target,
        exact=reduction == "none",
        rtol=roundings,
        atol=0.0,
    )


@pytest.mark.parametrize("dtype", FLOATS)
def test_nll_loss_dtypes_and_grads(eager_mode: str, dtype: torch.dtype) -> None:
    x = log_probs((6, 4), dtype).requires_grad_()
    xd = x.detach().to(DEV).requires_grad_()
    target = torch.tensor([3, 0, 0, 2, 1, 3])
    w = torch.tensor([0.5, 1.0, 2.0, 1.5], dtype=dtype)
    loss = F.nll_loss(
        x.float() if dtype != torch.float64 else x,
        target,
        weight=w.double() if dtype == torch.float64 else w.float(),
    )
    loss.backward()
    with native_only():
        loss_d = F.nll_loss(xd, target.to(DEV), weight=w.to(DEV))
        loss_d.backward()
    tol = {"rtol": 1e-2, "atol": 1e-2} if dtype in (torch.float16, torch.bfloat16) else {}
    assert loss_d.dtype == dtype
    torch.testing.assert_close(loss_d.cpu().to(loss.dtype), loss.detach(), **tol)
    torch.testing.assert_close(xd.grad.cpu().to(x.grad.dtype), x.grad, **tol)


def test_nll_loss_shapes(eager_mode: str) -> None:
    check_op(lambda a, t: F.nll_loss(a, t), log_probs((1, 5))[0], torch.tensor(3), exact=False)
    check_op(
        lambda a, t: F.nll_loss(a, t, reduction="none"),
        log_probs((1, 5))[0],
        torch.tensor(3),
        exact=False,
    )
    x4 = log_probs((2, 3, 4, 5))
    t4 = torch.randint(0, 3, (2, 4, 5))
    for reduction in ("none", "mean", "sum"):
        check_op(lambda a, t, r=reduction: F.nll_loss(a, t, reduction=r), x4, t4, exact=False)
    x3 = log_probs((2, 3, 5))
    check_op(lambda a, t: F.nll_loss(a, t, reduction="none"), x3, t4[:, 0], exact=False)
    check_op(
        lambda a, t: F.nll_loss(a, t, reduction="none"),
        x4.contiguous(memory_format=torch.channels_last),
        t4,
        exact=False,
    )
    empty = torch.empty(0, 5)
    check_op(lambda a, t: F.nll_loss(a, t), empty, torch.empty(0, dtype=torch.long), exact=False)
    check_op(
        lambda a, t: F.nll_loss(a, t, reduction="sum"),
        empty,
        torch.empty(0, dtype=torch.long),
        exact=False,
    )


def test_nll_loss2d_grads(eager_mode: str) -> None:
    x = log_probs((2, 4, 3, 3)).requires_grad_()
    xd = x.detach().to(DEV).requires_grad_()
    t = torch.randint(0, 4, (2, 3, 3))
    t[0, 1, 1] = -100
    w = torch.tensor([1.0, 2.0, 0.5, 1.0])
    F.nll_loss(x, t, weight=w).backward()
    with native_only():
        F.nll_loss(xd, t.to(DEV), weight=w.to(DEV)).backward()
    assert_same(xd.grad, x.grad, exact=False)


def test_nll_loss_target_errors(eager_mode: str) -> None:
    x = log_probs((3, 4)).to(DEV)
    bad = torch.tensor([0, 4, 1], device=DEV)
    expect_index_error(eager_mode, lambda: F.nll_loss(x, bad), "nll_loss")
    with pytest.raises(RuntimeError, match="Long"):
        F.nll_loss(x, bad.int())
    with pytest.raises(ValueError, match="batch_size"):
        F.nll_loss(x, torch.tensor([0, 1], device=DEV))
    with pytest.raises(RuntimeError, match="size mismatch"):
        torch.ops.aten.nll_loss_forward(x, torch.tensor([0, 1], device=DEV), None, 1, -100)


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_cross_entropy(eager_mode: str, label_smoothing: float) -> None:
    logits = make((6, 5), torch.float32).requires_grad_()
    ld = logits.detach().to(DEV).requires_grad_()
    target = torch.tensor([4, 0, 1, 1, -100, 2])
    F.cross_entropy(logits, target, label_smoothing=label_smoothing).backward()
    allowed = LOG_SOFTMAX if label_smoothing == 0 else ()
    with native_only(*allowed) if allowed else _anything():
        loss = F.cross_entropy(ld, target.to(DEV), label_smoothing=label_smoothing)
        loss.backward()
    torch.testing.assert_close(
        loss.cpu(), F.cross_entropy(logits.detach(), target, label_smoothing=label_smoothing)
    )
    torch.testing.assert_close(ld.grad.cpu(), logits.grad)
    if label_smoothing == 0:
        native = torch.tpu.op_stats()["native"]
        assert native.get("nll_loss", 0) >= 1 and native.get("nll_loss_backward", 0) >= 1


class _anything:
    """A no-op context: label smoothing also uses reductions owned by other families."""

    def __enter__(self) -> None:
        torch.tpu.reset_op_stats()

    def __exit__(self, *exc: object) -> None:
        torch.tpu.synchronize()


# ---------------------------------------------------------------------------------------------
# mse_loss


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_mse_loss_out_and_backward(eager_mode: str, dtype: torch.dtype, reduction: str) -> None:
    a, b = make((4, 5), dtype), make((4, 5), dtype, seed=1)
    expected = F.mse_loss(a, b, reduction=reduction)
    out = torch.empty(0, dtype=dtype, device=DEV)
    with native_only():
        torch.ops.aten.mse_loss.out(
            a.to(DEV), b.to(DEV), {"none": 0, "mean": 1, "sum": 2}[reduction], out=out
        )
    assert_same(
        out, expected, exact=dtype == torch.float64 or reduction == "none", rtol=1e-2, atol=1e-2
    )
    g = make(tuple(expected.shape), dtype, seed=2)
    r = {"none": 0, "mean": 1, "sum": 2}[reduction]
    check_op(
        lambda go, x, y: torch.ops.aten.mse_loss_backward(go, x, y, r),
        g,
        a,
        b,
    )


def test_mse_loss_broadcast_grads(eager_mode: str) -> None:
    a = make((3, 4), torch.float32).requires_grad_()
    b = make((4,), torch.float32, seed=3)
    ad = a.detach().to(DEV).requires_grad_()
    with pytest.warns(UserWarning, match="target size"):
        F.mse_loss(a, b.expand(3, 4)[0]).backward()
    ref = a.grad.clone()
    a.grad = None
    F.mse_loss(a, b.expand(3, 4)).backward()
    F.mse_loss(ad, b.to(DEV).expand(3, 4)).backward()
    assert_same(ad.grad, a.grad, exact=False)
    assert ref.shape == a.shape
