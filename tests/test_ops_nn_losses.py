"""The nn family's activations and losses on tpu against PyTorch CPU, forward and backward:
logsigmoid, softshrink, hardshrink, glu, prelu, rrelu, channel_shuffle, the smooth L1, Huber, MSE,
binary cross-entropy (with logits too) and margin losses in every reduction, pdist and cdist for
several p, _batch_norm_with_update, and embedding_bag in each mode with its options; edge values,
non-contiguous inputs, CPU's errors, and that each runs natively (no call through the CPU
fallback or the driver's fallback).

Tolerances: composites of several tpu ops round at each step where CPU's fused kernels round
once, and tpu reductions sum in another order, so float32 compares at 1e-5 relative (bfloat16 at
its resolution, 1.6e-2)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F

DEV = "tpu"
TOL = {
    torch.float64: (1e-7, 1e-9),
    torch.float32: (1e-5, 1e-6),
    torch.bfloat16: (1.6e-2, 1e-2),
    torch.float16: (2e-3, 1e-3),
}
REDUCTIONS = ["none", "mean", "sum"]


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    return []


def _move(value: Any, device: str) -> Any:
    if isinstance(value, torch.Tensor):
        moved = value.detach().to(device)
        return moved.requires_grad_(value.requires_grad)
    if isinstance(value, (tuple, list)):
        return type(value)(_move(v, device) for v in value)
    return value


def _close(got: Any, want: Any, dtype: torch.dtype) -> None:
    rtol, atol = TOL[dtype]
    results, expected = _tensors(got), _tensors(want)
    assert len(results) == len(expected)
    for r, w in zip(results, expected, strict=True):
        assert r.device.type == DEV
        assert (r.dtype, r.shape) == (w.dtype, w.shape), (r.dtype, r.shape, w.dtype, w.shape)
        torch.testing.assert_close(
            r.detach().cpu(), w.detach(), rtol=rtol, atol=atol, equal_nan=True
        )


def _native(fn: Callable[[], Any]) -> Any:
    torch.tpu.reset_op_stats()
    result = fn()
    torch.tpu.synchronize()
    stats = torch.tpu.op_stats()
    assert stats["fallback"] == {}, stats["fallback"]
    assert stats["driver_fallback"] == {}, stats["driver_fallback"]
    return result


def check(
    fn: Callable[..., Any],
    *args: Any,
    dtype: torch.dtype = torch.float32,
    grad: bool = True,
) -> None:
    """fn on CPU and natively on tpu: equal outputs and, for the float arguments that require
    grad, equal gradients of the outputs' weighted sum."""
    cpu_args = [
        a.detach().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a
        for a in args
    ]
    want = fn(*cpu_args)
    dev_args = _move(cpu_args, DEV)
    got = _native(lambda: fn(*dev_args))
    _close(got, want, dtype)
    leaves = [a for a in cpu_args if isinstance(a, torch.Tensor) and a.requires_grad]
    if not grad or not leaves:
        return
    outs = [w for w in _tensors(want) if w.requires_grad]
    weights = [torch.randn(w.shape, dtype=torch.float64).to(w.dtype) for w in outs]
    torch.autograd.backward(outs, weights)
    dev_leaves = [a for a in dev_args if isinstance(a, torch.Tensor) and a.requires_grad]
    dev_outs = [g for g in _tensors(got) if g.requires_grad]
    _native(lambda: torch.autograd.backward(dev_outs, [w.to(DEV) for w in weights]))
    for d, c in zip(dev_leaves, leaves, strict=True):
        assert d.grad is not None
        _close(d.grad, c.grad, dtype)


def randn(*shape: int, dtype: torch.dtype = torch.float32, grad: bool = True) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.float64).to(dtype).requires_grad_(grad)


def raises_like_cpu(fn: Callable[..., Any], *args: Any) -> None:
    """fn raises on tpu (at the op or at the next synchronization) what it raises on CPU."""
    with pytest.raises(Exception) as cpu:
        fn(*args)
    dev_args = _move(list(args), DEV)
    out = None  # kept alive: fused mode never runs an op whose results all died
    with pytest.raises(type(cpu.value)):
        out = fn(*dev_args)
        torch.tpu.synchronize()
    del out


FLOATS = [torch.float32, torch.float64, torch.bfloat16]


# ---- activations ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_elementwise_activations(dtype: torch.dtype, eager_mode: str) -> None:
    x = randn(7, 33, dtype=dtype)
    check(F.logsigmoid, x, dtype=dtype)
    check(lambda t: F.softshrink(t, 0.7), x, dtype=dtype)
    check(lambda t: F.hardshrink(t, 0.3), x, dtype=dtype)
    check(lambda t: F.softshrink(t.t(), 0.0), x, dtype=dtype)  # non-contiguous, lambda 0
    check(lambda t: F.hardshrink(t[:, ::2]), x, dtype=dtype)


def test_activations_of_special_values(eager_mode: str) -> None:
    nan, inf = float("nan"), float("inf")
    x = torch.tensor([nan, inf, -inf, -0.0, 0.0, 0.5, -0.5, 0.3, 100.0, -100.0, 1e-30])
    for fn in (F.logsigmoid, F.softshrink, F.hardshrink, lambda t: F.softshrink(t, 0.5)):
        check(fn, x.clone().requires_grad_())
    empty = randn(0, 4)
    for fn in (F.logsigmoid, F.softshrink, F.hardshrink):
        check(fn, empty)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_glu_and_prelu(dtype: torch.dtype, eager_mode: str) -> None:
    x = randn(4, 6, 10, dtype=dtype)
    check(F.glu, x, dtype=dtype)
    check(lambda t: F.glu(t, 1), x, dtype=dtype)
    check(lambda t: F.glu(t.transpose(0, 2), 0), x, dtype=dtype)
    check(F.prelu, x, randn(1, dtype=dtype), dtype=dtype)
    check(F.prelu, x, randn(6, dtype=dtype), dtype=dtype)


def test_rrelu_evaluation_matches_cpu(eager_mode: str) -> None:
    x = randn(5, 40)
    check(lambda t: F.rrelu(t, 0.1, 0.3, training=False), x)


def test_rrelu_training_draws_slopes_in_range(eager_mode: str) -> None:
    lower, upper = 0.1, 0.3
    x = torch.randn(200, 300).to(DEV).requires_grad_()
    y = _native(lambda: F.rrelu(x, lower, upper, training=True))
    xc, yc = x.detach().cpu(), y.detach().cpu()
    positive = xc > 0
    assert torch.equal(yc[positive], xc[positive])
    slope = yc[~positive] / xc[~positive]
    assert slope.min() >= lower and slope.max() <= upper
    # Uniform on [lower, upper]: mean and spread of 30000 draws.
    assert abs(slope.mean().item() - (lower + upper) / 2) < 0.005
    assert abs(slope.std().item() - (upper - lower) / 12**0.5) < 0.005
    g = torch.randn(200, 300)
    _native(lambda: y.backward(g.to(DEV)))
    expected = torch.where(positive, g, g * torch.where(positive, 1.0, yc / xc))
    torch.testing.assert_close(x.grad.cpu(), expected, rtol=1e-5, atol=1e-6)
    z = torch.randn(50).to(DEV)
    before = z.clone()
    _native(lambda: F.rrelu(z, lower, upper, training=True, inplace=True))
    zc, bc = z.cpu(), before.cpu()
    neg = bc <= 0
    assert torch.equal(zc[~neg], bc[~neg])
    assert ((zc[neg] / bc[neg]) >= lower).all() and ((zc[neg] / bc[neg]) <= upper).all()


def test_channel_shuffle(eager_mode: str) -> None:
    x = randn(2, 6, 4, 3)
    check(lambda t: F.channel_shuffle(t, 3), x, grad=False)
    check(lambda t: F.channel_shuffle(t, 2), randn(3, 8, 5), grad=False)
    check(lambda t: F.channel_shuffle(t, 2), randn(0, 8, 5), grad=False)


# ---- losses -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses(dtype: torch.dtype, reduction: str, eager_mode: str) -> None:
    x, y = randn(6, 17, dtype=dtype), randn(6, 17, dtype=dtype)
    check(lambda a, b: F.mse_loss(a, b, reduction=reduction), x, y, dtype=dtype)
    for beta in (0.0, 0.5, 1.0):
        check(
            lambda a, b, beta=beta: F.smooth_l1_loss(a, b, reduction=reduction, beta=beta),
            x,
            y,
            dtype=dtype,
        )
    for delta in (0.5, 1.0, 2.0):
        check(
            lambda a, b, delta=delta: F.huber_loss(a, b, reduction=reduction, delta=delta),
            x,
            y,
            dtype=dtype,
        )
    check(lambda a, b: F.smooth_l1_loss(a.t(), b.t(), reduction=reduction), x, y, dtype=dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(dtype: torch.dtype, reduction: str, eager_mode: str) -> None:
    p = torch.rand(5, 9, dtype=torch.float64).to(dtype).requires_grad_()
    t = torch.rand(5, 9, dtype=torch.float64).to(dtype)
    w = torch.rand(9, dtype=torch.float64).to(dtype)
    check(lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction), p, t, dtype=dtype)
    check(
        lambda a, b, c: F.binary_cross_entropy(a, b, c, reduction=reduction), p, t, w, dtype=dtype
    )
    logits = randn(5, 9, dtype=dtype)
    check(
        lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=reduction),
        logits,
        t,
        dtype=dtype,
    )
    check(
        lambda a, b, c: F.binary_cross_entropy_with_logits(a, b, pos_weight=c, reduction=reduction),
        logits,
        t,
        w,
        dtype=dtype,
    )
    labels = (torch.rand(5, 9) > 0.5).to(dtype)
    check(
        lambda a, b: F.multilabel_soft_margin_loss(a, b, reduction=reduction),
        logits,
        labels,
        dtype=dtype,
    )


def test_binary_cross_entropy_edges(eager_mode: str) -> None:
    p = torch.tensor([0.0, 1.0, 0.5, 1e-30, 1 - 1e-7]).requires_grad_()
    t = torch.tensor([0.0, 1.0, 1.0, 0.0, 1.0])
    check(lambda a, b: F.binary_cross_entropy(a, b, reduction="none"), p, t)
    check(
        lambda a, b: F.binary_cross_entropy(a, b),
        torch.tensor([0.0, 1.0]),
        torch.tensor([1.0, 0.0]),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [1, 2])
def test_multi_margin_loss(reduction: str, p: int, eager_mode: str) -> None:
    x, target = randn(8, 5), torch.randint(0, 5, (8,))
    w = torch.rand(5) + 0.5
    check(lambda a, b: F.multi_margin_loss(a, b, p=p, reduction=reduction), x, target)
    check(
        lambda a, b, c: F.multi_margin_loss(a, b, p=p, margin=0.7, weight=c, reduction=reduction),
        x,
        target,
        w,
    )
    check(
        lambda a, b: F.multi_margin_loss(a, b, p=p, reduction=reduction),
        randn(5),
        torch.tensor([3]),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss(reduction: str, eager_mode: str) -> None:
    x = randn(4, 6)
    target = torch.tensor(
        [[3, 0, -1, 1, 2, 5], [0, 1, 2, 3, 4, 5], [-1, 2, 3, 0, 0, 0], [5, 5, -1, 0, 0, 0]]
    )
    check(lambda a, b: F.multilabel_margin_loss(a, b, reduction=reduction), x, target)
    check(
        lambda a, b: F.multilabel_margin_loss(a, b, reduction=reduction),
        randn(6),
        torch.tensor([1, 4, -1, 0, 0, 0]),
    )
    check(
        lambda a, b: torch.ops.aten.multilabel_margin_loss_forward(a, b, 1), x, target, grad=False
    )


def test_loss_errors(eager_mode: str) -> None:
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    raises_like_cpu(lambda a, b: F.huber_loss(a, b, delta=0.0), x, y)
    raises_like_cpu(lambda a, b: F.smooth_l1_loss(a, b, beta=-1.0), x, y)
    raises_like_cpu(lambda a: F.glu(a, 0), x)  # 3 is odd
    raises_like_cpu(lambda a: F.glu(a), torch.tensor(1.0))
    raises_like_cpu(lambda a: F.softshrink(a, -1.0), x)
    raises_like_cpu(lambda a: F.logsigmoid(a), torch.ones(3, dtype=torch.long))
    raises_like_cpu(lambda a, b: F.multi_margin_loss(a, b, p=3), x, torch.tensor([0, 1, 2]))
    raises_like_cpu(lambda a, b: F.multi_margin_loss(a, b), x, torch.tensor([0, 1]))
    raises_like_cpu(lambda a, b: F.multilabel_margin_loss(a, b), x, torch.tensor([[0, 1, -1]]))
    raises_like_cpu(lambda a: F.channel_shuffle(a, 4), torch.randn(2, 6, 3))
    raises_like_cpu(lambda a: F.pdist(a, -1.0), x)
    raises_like_cpu(lambda a, b: torch.cdist(a, b), x, torch.randn(3, 5))


# ---- distances and batch norm -----------------------------------------------------------------


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, 0.5, float("inf")])
def test_pdist_and_cdist(p: float, eager_mode: str) -> None:
    x = randn(7, 5, dtype=torch.float64)
    grad = p not in (0.0, 0.5)  # CPU's own gradients at p < 1 are not finite everywhere
    check(lambda a: F.pdist(a, p), x, dtype=torch.float64, grad=grad)
    a, b = randn(2, 6, 4, dtype=torch.float64), randn(2, 9, 4, dtype=torch.float64)
    check(lambda u, v: torch.cdist(u, v, p), a, b, dtype=torch.float64, grad=grad)


def test_cdist_matrix_product_form(eager_mode: str) -> None:
    a, b = randn(30, 8), randn(40, 8)
    check(torch.cdist, a, b)
    check(
        lambda u, v: torch.cdist(u, v, compute_mode="use_mm_for_euclid_dist"),
        randn(5, 3),
        randn(4, 3),
    )
    check(lambda u, v: torch.cdist(u, v, compute_mode="donot_use_mm_for_euclid_dist"), a, b)


def test_batch_norm_with_update(eager_mode: str) -> None:
    x, w, b = randn(6, 4, 5), randn(4), randn(4)

    def bn(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
        mean, var = torch.zeros(4, device=x.device), torch.ones(4, device=x.device)
        out = torch.ops.aten._batch_norm_with_update(x, w, b, mean, var, 0.1, 1e-5)
        return (*out[:3], mean, var)

    check(bn, x, w, b)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm(dtype: torch.dtype, affine: bool, eager_mode: str) -> None:
    x = randn(3, 6, 4, 5, dtype=dtype)
    params = (randn(6, dtype=dtype), randn(6, dtype=dtype)) if affine else (None, None)
    check(lambda x, *p: F.group_norm(x, 3, *p), x, *params, dtype=dtype)
    check(lambda x: F.group_norm(x, 2), randn(0, 4, 3, dtype=dtype), dtype=dtype)
    raises_like_cpu(lambda x: F.group_norm(x, 4), randn(2, 6, 3))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("dim", [0, -1])
def test_weight_norm(dtype: torch.dtype, dim: int, eager_mode: str) -> None:
    # torch._weight_norm calls the fused _weight_norm_interface for the first or last dim.
    v, g = randn(5, 3, 4, dtype=dtype), randn(5, 3, 4, dtype=dtype)
    g = g.detach().norm(dim=(1, 2) if dim == 0 else (0, 1), keepdim=True).requires_grad_()
    check(lambda v, g: torch._weight_norm(v, g, dim), v, g, dtype=dtype)
    check(lambda v, g: torch._weight_norm_interface(v, g, dim % 3), v, g, dtype=dtype)
    raises_like_cpu(
        lambda v, g: torch._weight_norm_interface(v, g, 1), v, randn(1, 3, 1, dtype=dtype)
    )


# ---- embedding_bag ----------------------------------------------------------------------------


def _bags(n: int, rows: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    indices = torch.randint(0, rows, (n,), generator=g)
    offsets = torch.tensor([0, 3, 3, 7, 12, 12, 20])  # with empty bags
    return indices, offsets


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(dtype: torch.dtype, mode: str, eager_mode: str) -> None:
    weight = randn(15, 6, dtype=dtype)
    indices, offsets = _bags(25, 15, 0)
    check(
        lambda w, i, o: F.embedding_bag(i, w, o, mode=mode), weight, indices, offsets, dtype=dtype
    )
    check(
        lambda w, i, o: F.embedding_bag(i, w, o, mode=mode, padding_idx=4),
        weight,
        indices,
        offsets,
        dtype=dtype,
    )
    check(  # the last offset is the number of indices, as documented
        lambda w, i, o: F.embedding_bag(i, w, o, mode=mode, include_last_offset=True),
        weight,
        indices.int(),
        torch.cat([offsets, torch.tensor([25])]).int(),
        dtype=dtype,
    )
    check(lambda w, i: F.embedding_bag(i, w, mode=mode), weight, indices.reshape(5, 5), dtype=dtype)
    if mode != "max":  # max refuses to scale gradients by frequency
        scaled_by_frequency(weight, indices, offsets, mode, dtype)


def scaled_by_frequency(
    weight: torch.Tensor,
    indices: torch.Tensor,
    offsets: torch.Tensor,
    mode: str,
    dtype: torch.dtype,
) -> None:
    """scale_grad_by_freq: each row's gradient divided by its index's count, as CUDA gives it.
    CPU's embedding_bag backward divides some rows by another index's count (a row of index 6,
    taken twice, gets 2/3 of its gradient), so the reference is its unscaled gradient divided."""
    w = weight.detach().requires_grad_()
    F.embedding_bag(indices, w, offsets, mode=mode).sum().backward()
    counts = torch.bincount(indices, minlength=weight.shape[0]).clamp(min=1).unsqueeze(1)
    want = w.grad / counts.to(dtype)
    got = weight.detach().to(DEV).requires_grad_()
    bag = F.embedding_bag(indices.to(DEV), got, offsets.to(DEV), mode=mode, scale_grad_by_freq=True)
    _native(lambda: bag.sum().backward())
    _close(got.grad, want, dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_embedding_bag_per_sample_weights(dtype: torch.dtype, eager_mode: str) -> None:
    weight = randn(15, 6, dtype=dtype)
    indices, offsets = _bags(25, 15, 1)
    psw = randn(25, dtype=dtype)
    check(
        lambda w, i, o, s: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=s),
        weight,
        indices,
        offsets,
        psw,
        dtype=dtype,
    )
    check(
        lambda w, i, o, s: F.embedding_bag(
            i, w, o, mode="sum", per_sample_weights=s, padding_idx=2
        ),
        weight,
        indices,
        offsets,
        psw,
        dtype=dtype,
    )


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding_idx", [-1, 3])
def test_embedding_bag_auxiliary_outputs(mode: int, padding_idx: int, eager_mode: str) -> None:
    weight = randn(10, 4, grad=False)
    indices, offsets = _bags(22, 10, 2)
    for op in (torch.ops.aten._embedding_bag, torch.ops.aten._embedding_bag_forward_only):
        check(
            lambda w, i, o, op=op: op(w, i, o, False, mode, False, None, False, padding_idx),
            weight,
            indices,
            offsets,
            grad=False,
        )
        check(
            lambda w, i, o, op=op: op(w, i, o, False, mode, False, None, True, padding_idx),
            weight,
            indices.int(),
            torch.cat([offsets, torch.tensor([22])]).int(),  # ends at the number of indices
            grad=False,
        )


def test_embedding_bag_large_and_noncontiguous(eager_mode: str) -> None:
    weight = randn(300, 40)
    g = torch.Generator().manual_seed(3)
    indices = torch.randint(0, 300, (5000,), generator=g)
    offsets = torch.arange(0, 5000, 7)
    # Bags longer than the kernel reads at once; forward only, as a weight row's gradient sums
    # some 17 terms in another order than CPU's. Weights of ±2^k make each product exact, so
    # CPU's fused multiply-adds round as the kernel's multiplies and adds do.
    long_bags = torch.tensor([0, 600, 610, 4000])
    signs = torch.randint(0, 2, (5000,), generator=g) * 2 - 1
    powers_of_two = (signs * 2.0 ** torch.randint(-1, 2, (5000,), generator=g)).float()
    for mode in ("sum", "mean", "max"):
        check(lambda w, i, o, m=mode: F.embedding_bag(i, w, o, mode=m), weight, indices, offsets)
        check(
            lambda w, i, o, m=mode: F.embedding_bag(i, w, o, mode=m, padding_idx=5),
            weight,
            indices,
            long_bags,
            grad=False,
        )
    check(
        lambda w, i, o, s: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=s),
        weight,
        indices,
        long_bags,
        powers_of_two,
        grad=False,
    )
    check(
        lambda w, i, o: F.embedding_bag(i[::2], w.t().contiguous().t(), o[:300]),
        weight,
        indices,
        offsets,
    )
    check(
        lambda w, i, o: F.embedding_bag(i, w, o),
        weight,
        torch.tensor([], dtype=torch.long),
        torch.tensor([0, 0]),
    )


def test_embedding_bag_errors(eager_mode: str) -> None:
    w = torch.randn(10, 3)
    i = torch.tensor([1, 2, 3])
    raises_like_cpu(lambda a, b, c: F.embedding_bag(b, a, c), w, i, torch.tensor([1, 2]))
    raises_like_cpu(
        lambda a, b, c: F.embedding_bag(b, a, c), w, torch.tensor([1, 10]), torch.tensor([0, 1])
    )
    for mode in ("sum", "max"):  # -1 is out of range: padding_idx -1 reaches ATen as "none"
        raises_like_cpu(
            lambda a, b, c, m=mode: F.embedding_bag(b, a, c, mode=m),
            w,
            torch.tensor([1, -1, 2]),
            torch.tensor([0, 2]),
        )
    raises_like_cpu(
        lambda a, b, c: torch.ops.aten._embedding_bag(
            a, b, c, False, 1, False, torch.rand(3), False, -1
        ),
        w,
        i,
        torch.tensor([0, 1]),
    )
    raises_like_cpu(
        lambda a, b, c: torch.ops.aten._embedding_bag(a, b, c, False, 0, False, None, False, -1),
        w.long(),
        i,
        torch.tensor([0, 1]),
    )
