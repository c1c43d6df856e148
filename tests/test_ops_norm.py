"""The norm family on tpu against PyTorch CPU: softmax and log_softmax (every dimension, float
dtypes, half_to_float, masked rows) with their backward ops, layer_norm (with and without affine
parameters, mixed bfloat16/float32) and rms_norm (through _fused_rms_norm, with its autograd),
forward and backward; native runs with meta-equal metadata."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from _reduce_checks import DEV, FLOAT_DTYPES, check, grads, make, raises_like_cpu

HALF = (torch.float16, torch.bfloat16)
Opt = torch.Tensor | None


def tol(dtype: torch.dtype) -> float | None:
    return 2e-2 if dtype in HALF else None


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("log", [False, True])
def test_softmax(dtype: torch.dtype, log: bool, eager_mode: str) -> None:
    fn = torch.log_softmax if log else torch.softmax
    x = make((4, 5, 33), dtype)
    for dim in (0, 1, -1):
        check(lambda t, d=dim: fn(t, d), x, rtol=tol(dtype), atol=tol(dtype))
    check(lambda t: fn(t.transpose(0, 2), 1), x, rtol=tol(dtype), atol=tol(dtype))
    check(lambda t: fn(t, 0), torch.tensor(2.5, dtype=dtype))
    check(lambda t: fn(t, 1), torch.ones(3, 0, dtype=dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_backward_data(dtype: torch.dtype, log: bool, eager_mode: str) -> None:
    op = torch.ops.aten._log_softmax_backward_data if log else torch.ops.aten._softmax_backward_data
    fwd = torch.log_softmax if log else torch.softmax
    x, g = make((4, 5, 33), dtype), make((4, 5, 33), dtype, seed=1)
    for dim in (0, -1):
        # Both sides get CPU's forward output: tpu's may differ from it by an ulp (test_softmax),
        # which the backward multiplies by exp(y) * sum(g) (0.06 past bfloat16's 2e-2 for these
        # sizes, one seed in four).
        y = fwd(x, dim)
        check(lambda u, out, d=dim: op(u, out, d, dtype), g, y, rtol=tol(dtype), atol=tol(dtype))


def test_softmax_half_to_float() -> None:
    # CUDA's fused path: a half input and a float32 result. CPU refuses it, so the reference is
    # the float32 softmax of the same values.
    x = make((3, 40), torch.float16)
    for op in (torch.ops.aten._softmax, torch.ops.aten._log_softmax):
        torch.tpu.reset_op_stats()
        got = op(x.to(DEV), -1, True)
        assert got.dtype == torch.float32 and torch.tpu.fallback_stats() == {}
        torch.testing.assert_close(got.cpu(), op(x.float(), -1, False))
        meta = op(x.to("meta"), -1, True)
        assert (meta.shape, meta.stride(), meta.dtype) == (got.shape, got.stride(), got.dtype)
    y = op(x.to(DEV), -1, True)
    g = make((3, 40), torch.float32)
    back = torch.ops.aten._log_softmax_backward_data(g.to(DEV), y, -1, torch.float16)
    want = torch.ops.aten._log_softmax_backward_data(g, y.cpu(), -1, torch.float32)
    assert back.dtype == torch.float16
    torch.testing.assert_close(back.cpu(), want.half())
    raises_like_cpu(lambda t: torch.ops.aten._softmax(t, 0, True), make((3,), torch.bfloat16))


def test_softmax_masks_and_extremes(eager_mode: str) -> None:
    inf = float("inf")
    x = torch.tensor(
        [
            [0.0, -inf, 1.0, -inf],
            [-inf, -inf, -inf, -inf],
            [inf, 0.0, 1.0, 2.0],
            [1e30, -1e30, 0.0, float("nan")],
        ]
    )
    check(lambda t: (torch.softmax(t, 1), torch.log_softmax(t, 1)), x)
    check(lambda t: torch.softmax(t, -1), make((2, 50000), torch.float32) * 30)


def test_softmax_out_and_errors(eager_mode: str) -> None:
    x = make((4, 7), torch.float32)
    check(
        lambda t: torch.ops.aten._softmax.out(t, 1, False, out=torch.empty(0, device=t.device)), x
    )
    check(
        lambda t: torch.ops.aten._log_softmax.out(t, 0, False, out=torch.empty(0, device=t.device)),
        x,
    )
    raises_like_cpu(lambda t: torch.softmax(t, 2), x)
    raises_like_cpu(lambda t: torch.ops.aten._softmax(t, 0, False), make((3,), torch.int64))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_gradients(dtype: torch.dtype, log: bool, eager_mode: str) -> None:
    fn = torch.log_softmax if log else torch.softmax
    x = make((3, 4, 17), dtype)
    for dim in (1, -1):
        grads(lambda t, d=dim: fn(t, d), x, rtol=tol(dtype), atol=tol(dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm(dtype: torch.dtype, affine: bool, eager_mode: str) -> None:
    x = make((4, 6, 40), dtype) + 2
    w, b = (make((40,), dtype, seed=2), make((40,), dtype, seed=3)) if affine else (None, None)
    check(lambda t, u, v: F.layer_norm(t, (40,), u, v), x, w, b, rtol=tol(dtype), atol=tol(dtype))
    w2 = make((6, 40), dtype, seed=4) if affine else None
    check(
        lambda t, u: F.layer_norm(t, (6, 40), u, None, 1e-3),
        x,
        w2,
        rtol=tol(dtype),
        atol=tol(dtype),
    )
    check(lambda t: F.layer_norm(t.transpose(0, 1), (40,)), x, rtol=tol(dtype), atol=tol(dtype))


def test_native_layer_norm_outputs_match_meta(eager_mode: str) -> None:
    # Statistics are float32 for float16 and bfloat16 inputs, as the meta function (and CUDA) say;
    # CPU keeps them in the input dtype, so values are compared in float.
    for dtype in FLOAT_DTYPES:
        x, w, b = make((3, 5, 8), dtype), make((8,), dtype, seed=1), make((8,), dtype, seed=2)
        got = torch.ops.aten.native_layer_norm(x.to(DEV), [8], w.to(DEV), b.to(DEV), 1e-5)
        meta = torch.ops.aten.native_layer_norm(x.to("meta"), [8], w.to("meta"), b.to("meta"), 1e-5)
        want = torch.ops.aten.native_layer_norm(x, [8], w, b, 1e-5)
        for g, m, c in zip(got, meta, want, strict=True):
            assert (g.shape, g.stride(), g.dtype) == (m.shape, m.stride(), m.dtype)
            torch.testing.assert_close(
                g.cpu().double(), c.double(), rtol=tol(dtype) or 1e-5, atol=tol(dtype) or 1e-5
            )


def test_layer_norm_mixed_dtypes_and_edges(eager_mode: str) -> None:
    x = make((4, 16), torch.bfloat16)
    w, b = make((16,), torch.float32, seed=1), make((16,), torch.float32, seed=2)
    check(lambda t, u, v: F.layer_norm(t, (16,), u, v), x, w, b, rtol=2e-2, atol=2e-2)
    check(lambda t: F.layer_norm(t, (16,)), torch.ones(0, 16))
    check(lambda t: F.layer_norm(t, (16,)), torch.full((3, 16), 7.0))  # zero variance
    raises_like_cpu(
        lambda t, u: F.layer_norm(t, (16,), u),
        make((4, 16), torch.float64),
        make((16,), torch.float32),
    )
    raises_like_cpu(lambda t: F.layer_norm(t, (8,)), make((4, 16), torch.float32))
    raises_like_cpu(
        lambda t, u: F.layer_norm(t, (16,), u),
        make((4, 16), torch.float32),
        make((8,), torch.float32),
    )


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_layer_norm_gradients(dtype: torch.dtype, eager_mode: str) -> None:
    x = make((5, 3, 24), dtype) + 1
    w, b = make((24,), dtype, seed=2), make((24,), dtype, seed=3)
    rtol = 5e-2 if dtype in HALF else None
    grads(lambda t, u, v: F.layer_norm(t, (24,), u, v), x, w, b, rtol=rtol, atol=rtol)
    grads(lambda t: F.layer_norm(t, (3, 24)), x, rtol=rtol, atol=rtol)
    grads(lambda t, u: F.layer_norm(t, (24,), u), x, w, rtol=rtol, atol=rtol)


def test_layer_norm_backward_output_mask() -> None:
    x, w, b = make((6, 10), torch.float32), make((10,), torch.float32), make((10,), torch.float32)
    g = make((6, 10), torch.float32, seed=5)
    _, mean, rstd = torch.ops.aten.native_layer_norm(x, [10], w, b, 1e-5)
    for mask in ([True, False, False], [False, True, True], [True, True, False]):
        check(
            lambda *a, m=mask: torch.ops.aten.native_layer_norm_backward(
                a[0], a[1], [10], a[2], a[3], a[4], a[5], m
            ),
            g,
            x,
            mean,
            rstd,
            w,
            b,
            meta=False,
        )


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("weight", [False, True])
def test_rms_norm(dtype: torch.dtype, weight: bool, eager_mode: str) -> None:
    x = make((4, 6, 32), dtype)
    w = make((32,), dtype, seed=1) if weight else None
    for eps in (None, 1e-6):
        check(
            lambda t, u, e=eps: F.rms_norm(t, (32,), u, e), x, w, rtol=tol(dtype), atol=tol(dtype)
        )
    w2 = make((6, 32), dtype, seed=2) if weight else None
    check(lambda t, u: F.rms_norm(t, (6, 32), u), x, w2, rtol=tol(dtype), atol=tol(dtype))
    check(
        lambda t, u: torch.ops.aten._fused_rms_norm(t, [32], u, 1e-5),
        x,
        w,
        rtol=tol(dtype),
        atol=tol(dtype),
    )


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_rms_norm_gradients(dtype: torch.dtype, eager_mode: str) -> None:
    x, w = make((5, 3, 24), dtype), make((24,), dtype, seed=2)
    rtol = 5e-2 if dtype in HALF else None
    grads(lambda t, u: F.rms_norm(t, (24,), u, 1e-5), x, w, rtol=rtol, atol=rtol)
    grads(lambda t: F.rms_norm(t, (3, 24)), x, rtol=rtol, atol=rtol)


def test_rms_norm_backward_is_native_and_double_backward_works() -> None:
    x, w = make((6, 16), torch.float64), make((16,), torch.float64, seed=1)
    xt, wt = x.to(DEV).requires_grad_(), w.to(DEV).requires_grad_()
    torch.tpu.reset_op_stats()
    F.rms_norm(xt, (16,), wt, 1e-5).sum().backward()
    stats = torch.tpu.op_stats()["native"]
    assert stats.get("rms_norm") == 1 and stats.get("rms_norm_backward") == 1

    # Second derivatives through the composite formula, against CPU.
    def second(device: str) -> list[torch.Tensor]:
        a, b = x.to(device).requires_grad_(), w.to(device).requires_grad_()
        y = F.rms_norm(a, (16,), b, 1e-5)
        (ga,) = torch.autograd.grad((y * y).sum(), a, create_graph=True)
        return [t.cpu() for t in torch.autograd.grad(ga.square().sum(), (a, b))]

    for c, t in zip(second("cpu"), second(DEV), strict=True):
        torch.testing.assert_close(t, c)


def test_fused_rms_norm_keeps_autograd_registration() -> None:
    name = "aten::_fused_rms_norm"
    assert torch._C._dispatch_has_kernel_for_dispatch_key(name, "PrivateUse1")
    assert torch._C._dispatch_has_kernel_for_dispatch_key(name, "AutogradPrivateUse1")
    for op in ("aten::_softmax", "aten::native_layer_norm", "aten::_log_softmax_backward_data"):
        assert torch._C._dispatch_has_kernel_for_dispatch_key(op, "Autograd")


def batch_norm_args(
    dtype: torch.dtype, shape: tuple[int, ...], affine: bool, stats: bool
) -> list[torch.Tensor | None]:
    c = shape[1]
    param = torch.float32 if dtype in HALF else dtype
    w = make((c,), param, seed=1) if affine else None
    b = make((c,), param, seed=2) if affine else None
    rm = make((c,), param, seed=3) if stats else None
    rv = (make((c,), param, seed=4).abs() + 0.5) if stats else None
    return [make(shape, dtype) * 2 + 1, rm, rv, w, b]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(4, 3, 5, 6), (8, 5), (2, 4, 7)], ids=str)
@pytest.mark.parametrize("affine", [False, True])
def test_batch_norm_training(
    dtype: torch.dtype, shape: tuple[int, ...], affine: bool, eager_mode: str
) -> None:
    args = batch_norm_args(dtype, shape, affine, stats=True)

    def fn(
        x: torch.Tensor, rm: torch.Tensor, rv: torch.Tensor, w: Opt, b: Opt
    ) -> tuple[torch.Tensor, ...]:
        rm, rv = rm.clone(), rv.clone()  # updated in place: the CPU run must not change the inputs
        y = F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.2, eps=1e-4)
        return y, rm, rv

    check(fn, *args, rtol=tol(dtype), atol=tol(dtype), meta=False)
    args[1] = args[2] = None  # no running statistics
    check(
        lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
        args[0],
        args[3],
        args[4],
        rtol=tol(dtype),
        atol=tol(dtype),
    )


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_batch_norm_evaluation_and_channels_last(dtype: torch.dtype, eager_mode: str) -> None:
    x, rm, rv, w, b = batch_norm_args(dtype, (4, 3, 5, 6), True, stats=True)
    check(
        lambda t, m, v, u, c: F.batch_norm(t, m, v, u, c, training=False),
        x,
        rm,
        rv,
        w,
        b,
        rtol=tol(dtype),
        atol=tol(dtype),
    )
    cl = x.to(memory_format=torch.channels_last)
    for training in (False, True):
        check(
            lambda t, m, v, u, c, tr=training: F.batch_norm(t, m.clone(), v.clone(), u, c, tr),
            cl,
            rm,
            rv,
            w,
            b,
            rtol=tol(dtype),
            atol=tol(dtype),
        )


def test_native_batch_norm_outputs_match_meta() -> None:
    # Saved statistics have C elements (float32 for half inputs) in evaluation too, as the meta
    # function and CUDA give; CPU returns empty ones there, so only the output is compared to it.
    for dtype in FLOAT_DTYPES:
        for training in (True, False):
            x, rm, rv, w, b = batch_norm_args(dtype, (2, 3, 4), True, stats=True)
            args = (x, w, b, rm, rv, training, 0.1, 1e-5)
            got = torch.ops.aten.native_batch_norm(
                *[a.to(DEV) if isinstance(a, torch.Tensor) else a for a in args]
            )
            meta = torch.ops.aten.native_batch_norm(
                *[a.to("meta") if isinstance(a, torch.Tensor) else a for a in args]
            )
            want = torch.ops.aten.native_batch_norm(*args)
            for g, m in zip(got, meta, strict=True):
                assert (g.shape, g.stride(), g.dtype) == (m.shape, m.stride(), m.dtype)
            torch.testing.assert_close(got[0].cpu(), want[0], rtol=tol(dtype), atol=tol(dtype))
            if training:
                torch.testing.assert_close(
                    got[1].cpu(), want[1].to(got[1].dtype), rtol=tol(dtype), atol=tol(dtype)
                )


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradients(dtype: torch.dtype, training: bool, eager_mode: str) -> None:
    x, rm, rv, w, b = batch_norm_args(dtype, (4, 3, 5, 2), True, stats=True)
    rtol = 5e-2 if dtype in HALF else 1e-4
    grads(
        lambda t, u, c: F.batch_norm(t, rm.to(t.device), rv.to(t.device), u, c, training),
        x,
        w,
        b,
        rtol=rtol,
        atol=rtol,
    )
    cl = x.to(memory_format=torch.channels_last)
    grads(lambda t: F.batch_norm(t, None, None, None, None, True), cl, rtol=rtol, atol=rtol)


@pytest.mark.parametrize(
    "norm, layout",
    [
        ("batch_norm", "expanded_input"),
        ("batch_norm", "expanded_grad"),
        ("batch_norm", "strided_weight"),
        ("instance_norm", "expanded_grad"),
        ("instance_norm", "strided_weight"),
    ],
)
def test_batch_norm_broadcast_layouts(norm: str, layout: str, eager_mode: str) -> None:
    """Issue 38: an input or gradient whose spatial dimensions are broadcast (stride 0, as the
    gradient of a sum is) and per-channel tensors that are strided views. (An instance of
    constant planes has no variance: instance_norm gets no expanded input.)"""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, 4, 2, generator=g)
    wide = torch.randn(5, 3, generator=g)
    results = []
    for dev in ("cpu", DEV):
        t = x.to(dev)
        if layout == "expanded_input":
            t = t[:, :, :1, :1].expand(3, 5, 4, 2)
        t = t.detach().requires_grad_()
        w = wide.to(dev)[:, 1] if layout == "strided_weight" else wide.to(dev)[:, 0].contiguous()
        w = w.detach().requires_grad_()
        stats = (torch.zeros(5, device=dev), torch.ones(5, device=dev))
        if norm == "batch_norm":
            y = F.batch_norm(t, *stats, w, w * 0.5, training=True)
        else:
            y = F.instance_norm(t, *stats, w, w * 0.5, use_input_stats=True)
        y.sum().backward() if layout == "expanded_grad" else (y * y).sum().backward()
        results.append([y, stats[0], stats[1], t.grad, w.grad])
    for got, want in zip(results[1], results[0], strict=True):
        torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=1e-4, atol=1e-4)


BN_EDGES = {
    # (input, running_mean, running_var, weight, bias, training): each hand-checked exact value
    "equal_huge_values": ([[[3.4e38, 3.4e38]]], None, None, None, None, True, [[[0.0, 0.0]]]),
    "constant_channel": (
        [[1.0, 1.0], [1.0, 1.0]],
        None,
        None,
        [2.68, 1.0],
        [-0.49, 0.0],
        True,
        [[-0.49, 0.0], [-0.49, 0.0]],
    ),
    "huge_weight": ([[3.0], [4.0]], None, None, [3e38], None, True, [[-2.99985e38], [2.99985e38]]),
    "huge_input_small_weight": ([[-3.4e38]], [1.0], [0.5], [-0.25], None, False, [[1.2021e38]]),
}


@pytest.mark.parametrize("case", BN_EDGES)
def test_batch_norm_keeps_finite_what_is_finite(case: str, eager_mode: str) -> None:
    """Y = (X - mean) * (invstd * W) + B: no cancellation of X * alpha against B - mean * alpha
    (CPU's contiguous form) and no overflow of (X - mean) * invstd before W (CUDA's)."""
    x, rm, rv, w, b, training, want = BN_EDGES[case]
    t = lambda v: None if v is None else torch.tensor(v, device=DEV)  # noqa: E731
    y = F.batch_norm(t(x), t(rm), t(rv), t(w), t(b), training=training, eps=1e-5)
    torch.testing.assert_close(y.cpu(), torch.tensor(want), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("case", ["float64_max_row", "bfloat16_huge_weight"])
def test_layer_norm_of_extreme_rows(case: str, eager_mode: str) -> None:
    """A row of DBL_MAX (its sum overflows, Welford's mean does not: y is 0), and a weight near
    bfloat16's largest whose product with xhat overflows float while y, after the bias, does
    not."""
    if case == "float64_max_row":
        big = torch.finfo(torch.float64).max
        x, w, b = torch.full((5,), big, dtype=torch.float64), None, None
    else:
        big = torch.finfo(torch.bfloat16).max
        x = torch.tensor([0.0, -3.0, -2.0, 3.0, -3.0], dtype=torch.bfloat16)
        w = torch.full((5,), -big, dtype=torch.bfloat16)
        b = torch.tensor([-1.0, 2.0, 4.0, big, -1.0], dtype=torch.bfloat16)
    dev = [None if t is None else t.to(DEV) for t in (w, b)]
    got = F.layer_norm(x.to(DEV), (5,), *dev).cpu()
    up = [None if t is None else t.double() for t in (w, b)]
    exact = F.layer_norm(x.double() / 4 if case == "float64_max_row" else x.double(), (5,), *up)
    assert bool(torch.isfinite(got).all())
    torch.testing.assert_close(got, exact.to(x.dtype))


def test_batch_norm_output_layout_as_cpu(eager_mode: str) -> None:
    """batch_norm_cpu's rule: the format the input is contiguous in when all is contiguous."""
    x = torch.randn(2, 1, 2, 2).permute(2, 1, 3, 0).permute(3, 2, 0, 1)  # channels-last (2,2,2,1)
    rm, rv = torch.zeros(2), torch.ones(2)
    want = F.batch_norm(x, rm, rv, training=False)
    got = F.batch_norm(x.to(DEV), rm.to(DEV), rv.to(DEV), training=False)
    assert got.is_contiguous(memory_format=torch.channels_last) == want.is_contiguous(
        memory_format=torch.channels_last
    )
    torch.testing.assert_close(got.cpu(), want)


def test_batch_norm_refuses_per_channel_tensors_of_other_ranks(eager_mode: str) -> None:
    """CUDA's kernels (and CPU's backward) read weights and statistics through 1-d accessors."""
    x = torch.randn(3, 5, 4, device=DEV)
    for w in (torch.ones(1, 5, device=DEV), torch.ones(5, 1, device=DEV)):
        with pytest.raises(RuntimeError, match="TensorAccessor expected 1 dims"):
            F.batch_norm(x, None, None, w, None, training=True)
        with pytest.raises(RuntimeError, match="TensorAccessor expected 1 dims"):
            F.batch_norm(x, w, w.abs(), None, None, training=False)


def test_batch_norm_errors() -> None:
    x, rm, rv, w, b = batch_norm_args(torch.float32, (4, 3, 5), True, stats=True)
    raises_like_cpu(lambda t, m, v: F.batch_norm(t, m, v, training=False), x, rm[:2], rv[:2])
    raises_like_cpu(lambda t, u: F.batch_norm(t, None, None, u, training=True), x, w[:2])


# ---------------------------------------------------------------------------------------------
# Differences from CPU that a differential fuzz run found (issue 20)


def test_norms_of_empty_rows(eager_mode: str) -> None:
    """Rows of no element (normalized_shape with a 0), from contiguous or transposed inputs: an
    empty output, and layer_norm's statistics of an empty row, mean 0 and rstd NaN, as on CPU."""
    for x in (torch.ones(0, 3).t(), torch.ones(2, 3, 0), torch.ones(2, 0, 3)):
        shape = list(x.shape[-1:]) if x.shape[-1] == 0 else list(x.shape[-2:])
        check(lambda t, s=shape: F.layer_norm(t, s), x)
        check(lambda t, s=shape: torch.ops.aten.native_layer_norm(t, s, None, None, 1e-5), x)
        w = torch.ones(shape)
        check(lambda t, u, s=shape: F.layer_norm(t, s, u, u), x, w)
        grads(lambda t, u, s=shape: F.layer_norm(t, s, u, u), x, w)
        # CPU's rms_norm is a composite whose output follows the input's strides; tpu's fused
        # kernel (the path CUDA takes) gives a contiguous one.
        check(lambda t, s=shape: F.rms_norm(t, s), x, strides=False, meta=False)
