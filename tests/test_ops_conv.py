"""Convolutions on tpu against PyTorch CPU in both eager modes: conv1d/2d/3d with strides,
padding, dilation, groups (depthwise too), asymmetric kernels, bias on and off, contiguous and
channels-last layouts, transposed convolutions with output_padding; values, dtypes, sizes and
strides of the output and of the gradients w.r.t. input, weight and bias; double backward; native
execution; errors; and the host fallback that integer dtypes still take."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from _index_checks import DEV, FLOATS, assert_same, native_only

CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}
CL = {2: torch.channels_last, 3: torch.channels_last_3d}

# Tolerances against CPU (whose float32 runs through oneDNN, summing in another order). float16
# is compared with the float64 convolution of the same values (run_reference): one rounding to
# float16, and float32 sums of up to 200 terms below 40 (200 * 40 * 1.2e-7 = 1e-3).
TOL = {
    torch.float32: {"rtol": 1e-4, "atol": 1e-4},
    torch.float64: {"rtol": 1e-10, "atol": 1e-10},
    torch.bfloat16: {"rtol": 2e-2, "atol": 5e-2},
    torch.float16: {"rtol": torch.finfo(torch.float16).eps, "atol": 1e-3},
}

# (spatial dims, batch, in channels, out channels, size, kernel, stride, padding, dilation, groups)
CASES = {
    "2d-asym-groups": (2, 2, 4, 6, (7, 6), (3, 2), (2, 1), (1, 0), (1, 2), 2),
    "2d-3x3": (2, 2, 3, 4, (8, 8), 3, 1, 1, 1, 1),
    "2d-depthwise": (2, 2, 4, 4, (6, 6), 3, 1, 1, 1, 4),
    "2d-depthwise-x2": (2, 2, 4, 8, (6, 6), 3, 2, 1, 1, 4),
    "2d-1x1-stride2": (2, 2, 3, 5, (6, 6), 1, 2, 0, 1, 1),
    "1d": (1, 3, 3, 4, (10,), 3, 2, 2, 1, 1),
    "1d-dilated-groups": (1, 2, 4, 4, (12,), 3, 1, 2, 2, 2),
    "3d": (3, 2, 2, 3, (4, 5, 3), (2, 3, 2), 1, 1, 1, 1),
}


def randn(*shape: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)


def run_cpu(fn, tensors: list[torch.Tensor], grad_seed: int = 9):
    """fn on CPU leaves, forward and backward of a fixed random gradient: (output, grads)."""
    cpu = [t.clone().requires_grad_() for t in tensors]
    out = fn(*cpu)
    out.backward(randn(*out.shape, dtype=out.dtype, seed=grad_seed))
    return out.detach(), [c.grad for c in cpu]


def run_reference(fn, tensors: list[torch.Tensor], grad_seed: int = 9):
    """run_cpu, except for float16: CPU's float16 backward adds partial sums in float16, up to
    1.7 ulps of a gradient's largest element off (the 3-d input gradient's 0.012 on a value of
    0.34 failed the old tolerance one seed in a hundred); the reference is then the float64
    convolution of the same values and gradient, rounded to float16."""
    if tensors[0].dtype != torch.float16:
        return run_cpu(fn, tensors, grad_seed)
    wide = [t.double().requires_grad_() for t in tensors]
    out = fn(*wide)
    out.backward(randn(*out.shape, dtype=torch.float16, seed=grad_seed).double())
    return out.detach().half(), [w.grad.half() for w in wide]


def run_both(fn, tensors: list[torch.Tensor], grad_seed: int = 9):
    """fn on CPU leaves (run_reference) and on their tpu copies (natively), forward and
    backward; returns the (output, grads) pairs."""
    out, grads = run_reference(fn, tensors, grad_seed)
    dev = [t.to(DEV).requires_grad_() for t in tensors]
    with native_only():
        out_d = fn(*dev)
        out_d.backward(randn(*out.shape, dtype=out.dtype, seed=grad_seed).to(DEV))
    return (out_d, out), [(d.grad, c) for d, c in zip(dev, grads, strict=True)]


def same_layout(got: torch.Tensor, want: torch.Tensor) -> None:
    """Equal strides, except along size-1 dims, whose stride is arbitrary (CPU's depthwise
    float64 weight gradient is [K, 1, kh, kw] with either stride for dim 1)."""
    for size, a, b in zip(want.shape, got.stride(), want.stride(), strict=True):
        assert size == 1 or a == b, (got.stride(), want.stride())


def check(pairs, dtype: torch.dtype, strides: bool = True, **tol: float) -> None:
    out, grads = pairs
    for got, want in (out, *grads):
        assert_same(got, want, exact=False, strides=False, **(tol or TOL[dtype]))
        if strides:
            same_layout(got, want)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("bias", [True, False])
def test_conv_forward_backward(eager_mode: str, case: str, dtype: torch.dtype, bias: bool) -> None:
    nd, n, cin, cout, size, k, s, p, d, g = CASES[case]
    ks = (k,) * nd if isinstance(k, int) else k
    x = randn(n, cin, *size, dtype=dtype, seed=1)
    w = randn(cout, cin // g, *ks, dtype=dtype, seed=2)
    b = randn(cout, dtype=dtype, seed=3)
    tensors = [x, w, b] if bias else [x, w]

    def fn(x, w, b=None):
        return CONV[nd](x, w, b, stride=s, padding=p, dilation=d, groups=g)

    check(run_both(fn, tensors), dtype)


@pytest.mark.parametrize("case", [c for c in CASES if CASES[c][0] >= 2])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("which", ["input", "weight", "both"])
def test_conv_channels_last(eager_mode: str, case: str, dtype: torch.dtype, which: str) -> None:
    """A channels-last input or weight gives channels-last outputs and gradients, as on CPU."""
    nd, n, cin, cout, size, k, s, p, d, g = CASES[case]
    ks = (k,) * nd if isinstance(k, int) else k
    x = randn(n, cin, *size, dtype=dtype, seed=1)
    w = randn(cout, cin // g, *ks, dtype=dtype, seed=2)
    if which in ("input", "both"):
        x = x.contiguous(memory_format=CL[nd])
    if which in ("weight", "both"):
        w = w.contiguous(memory_format=CL[nd])
    b = randn(cout, dtype=dtype, seed=3)

    def fn(x, w, b):
        return CONV[nd](x, w, b, stride=s, padding=p, dilation=d, groups=g)

    # CPU's 3-d convolutions on its slow path ignore the layout (float64 always, bfloat16 where
    # oneDNN has no bf16 kernel for the CPU, i.e. without AVX-512); ours follow float32's.
    slow = dtype == torch.float64 or (
        dtype == torch.bfloat16 and not torch.ops.mkldnn._is_mkldnn_bf16_supported()
    )
    (out, want), grads = run_both(fn, [x, w, b])
    # Values against the same convolution of contiguous inputs: PyTorch CPU's channels-last
    # weight gradient of a strided 1x1 convolution is sometimes wrong (a float64 einsum shows it;
    # it changes between runs of the same inputs), and the layout does not change the values.
    ref_out, ref_grads = run_cpu(fn, [x.contiguous(), w.contiguous(), b])
    pairs = [(out, ref_out)] + [(g, r) for (g, _), r in zip(grads, ref_grads, strict=True)]
    check((pairs[0], pairs[1:]), dtype, strides=False)
    if not (nd == 3 and slow):
        for got, layout in [(out, want), *grads]:
            same_layout(got, layout)
    if nd == 2 and which == "input":
        with native_only():
            y = fn(x.to(DEV), w.to(DEV), b.to(DEV))
        assert y.is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("groups", [1, 2])
def test_conv_transpose(eager_mode: str, nd: int, dtype: torch.dtype, groups: int) -> None:
    size = {1: (7,), 2: (5, 4), 3: (3, 4, 3)}[nd]
    x = randn(2, 4, *size, dtype=dtype, seed=1)
    w = randn(4, 6 // groups, *(3,) * nd, dtype=dtype, seed=2)
    b = randn(6, dtype=dtype, seed=3)

    def fn(x, w, b):
        return CONV_T[nd](x, w, b, stride=2, padding=1, output_padding=1, groups=groups)

    check(run_both(fn, [x, w, b]), dtype)


def test_conv_transpose_dilated_output_padding(eager_mode: str) -> None:
    """output_padding below the dilation (not the stride): output rows no window reaches."""
    x = randn(1, 2, 5, 5, dtype=torch.float64, seed=1)
    w = randn(2, 3, 3, 3, dtype=torch.float64, seed=2)

    def fn(x, w):
        return F.conv_transpose2d(x, w, stride=1, padding=1, output_padding=1, dilation=2)

    check(run_both(fn, [x, w]), torch.float64)


def test_conv_padding_same_and_strided_views(eager_mode: str) -> None:
    x = randn(2, 3, 9, 8, dtype=torch.float32, seed=1)[:, :, ::2, 1:]  # non-contiguous view
    w = randn(4, 3, 3, 3, dtype=torch.float32, seed=2).transpose(2, 3)

    def fn(x, w):
        return F.conv2d(x, w, padding="same")

    check(run_both(fn, [x, w]), torch.float32)


def test_conv_bench_shape(eager_mode: str) -> None:
    """bench's middle conv2d shape: several pixel tiles per image, the BLAS path."""
    x = randn(4, 64, 32, 32, dtype=torch.float32, seed=1)
    w = randn(64, 64, 3, 3, dtype=torch.float32, seed=2)
    # The weight gradient sums 4096 products per element: an absolute tolerance at that scale.
    check(
        run_both(lambda x, w: F.conv2d(x, w, padding=1), [x, w]),
        torch.float32,
        rtol=1e-4,
        atol=2e-3,
    )


def test_conv_double_backward(eager_mode: str) -> None:
    x = randn(2, 2, 5, 5, dtype=torch.float64, seed=1)
    w = randn(3, 2, 3, 3, dtype=torch.float64, seed=2)
    results = []
    for dev in ("cpu", DEV):
        xd = x.to(dev).clone().requires_grad_()
        wd = w.to(dev).clone().requires_grad_()
        y = F.conv2d(xd, wd, padding=1, stride=2)
        (gx,) = torch.autograd.grad(y.square().sum(), xd, create_graph=True)
        gx.sum().backward()
        results.append((gx.detach().cpu(), wd.grad.cpu()))
    for got, want in zip(results[1], results[0], strict=True):
        torch.testing.assert_close(got, want)


def test_conv_empty_batch(eager_mode: str) -> None:
    x = torch.zeros(0, 3, 6, 6)
    w = randn(4, 3, 3, 3, dtype=torch.float32, seed=2)
    wd = w.to(DEV).requires_grad_()
    with native_only():
        y = F.conv2d(x.to(DEV), wd, padding=1)
        y.backward(torch.empty(0, 4, 6, 6, device=DEV))
    assert y.shape == (0, 4, 6, 6)
    assert_same(wd.grad, torch.zeros_like(w))


def test_conv_errors() -> None:
    x = torch.randn(1, 2, 5, 5, device=DEV)
    w = torch.randn(2, 2, 3, 3, device=DEV)
    with pytest.raises(RuntimeError, match="expected scalar type"):
        F.conv2d(x, w.double())
    with pytest.raises(RuntimeError, match="bias type"):
        F.conv2d(x, w, torch.zeros(2, device=DEV, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="channels"):
        F.conv2d(x, torch.randn(2, 3, 3, 3, device=DEV))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater"):
        F.conv2d(torch.randn(1, 2, 2, 2, device=DEV), w)
    with pytest.raises(RuntimeError):
        F.conv2d(x, w.cpu())


def test_conv_integer_dtypes_fall_back(eager_mode: str) -> None:
    """Integer convolutions (no model trains in them) run on the host, counted as fallbacks."""
    x = torch.randint(-3, 4, (1, 2, 5, 5))
    w = torch.randint(-3, 4, (3, 2, 3, 3))
    torch.tpu.reset_op_stats()
    y = F.conv2d(x.to(DEV), w.to(DEV), padding=1)
    assert_same(y, F.conv2d(x, w, padding=1))
    assert torch.tpu.fallback_stats() == {"aten::convolution_overrideable": 1}


def test_conv_ops_counted() -> None:
    torch.tpu.reset_op_stats()
    x = torch.randn(1, 2, 5, 5, device=DEV, requires_grad=True)
    w = torch.randn(3, 2, 3, 3, device=DEV, requires_grad=True)
    b = torch.randn(3, device=DEV, requires_grad=True)
    F.conv2d(x, w, b).sum().backward()
    F.conv_transpose2d(x, w.transpose(0, 1)).sum()
    torch.tpu.synchronize()
    native = torch.tpu.op_stats()["native"]
    for op in ("conv", "conv_backward_input", "conv_backward_weight", "conv_backward_bias"):
        assert native.get(op, 0) >= 1, op
