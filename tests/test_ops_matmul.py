"""The matmul family on tpu against PyTorch CPU: mm, bmm, addmm, baddbmm, addbmm, addmv, mv, dot,
vdot, and matmul/linear/einsum through them, with their gradients. Values, dtypes, shapes and
strides; every dtype CPU supports; transposed and strided operands; out= and in-place forms;
addmm's beta == 0 ignoring NaN; errors; and the ops really running natively."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F

DEV = "tpu"
FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
COMPLEX = [torch.complex64, torch.complex128]
ALL = FLOATS + INTS + COMPLEX


def make(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, generator=g).to(dtype)
    low = 0 if dtype == torch.uint8 else -4
    return torch.randint(low, 5, shape, generator=g, dtype=dtype)


def tol(dtype: torch.dtype, k: int = 16) -> dict[str, float]:
    """Tolerances for two correct GEMMs that sum in different orders."""
    if dtype in (torch.bfloat16,):
        return {"rtol": 2e-2, "atol": 2e-2 * k**0.5}
    if dtype in (torch.float16,):
        return {"rtol": 2e-3, "atol": 2e-3 * k**0.5}
    if dtype in (torch.float32, torch.complex64):
        return {"rtol": 1e-5, "atol": 1e-5 * k**0.5}
    exact_ints = not (dtype.is_floating_point or dtype.is_complex)
    return {} if exact_ints else {"rtol": 1e-12, "atol": 1e-12 * k**0.5}


def same(tpu: torch.Tensor, cpu: torch.Tensor, k: int = 16) -> None:
    """Values, dtype, shape and strides equal CPU's (values within rounding for floats)."""
    torch.tpu.synchronize()
    assert tpu.device.type == DEV
    assert tpu.dtype == cpu.dtype and tpu.shape == cpu.shape
    if tpu.numel() > 1:
        assert tpu.stride() == cpu.stride()
    t = tol(cpu.dtype, k)
    if t:
        torch.testing.assert_close(tpu.cpu(), cpu, **t, equal_nan=True)
    else:
        assert torch.equal(tpu.cpu(), cpu)


def native(fn: Callable[[], object]) -> object:
    """Runs fn on tpu and asserts nothing fell back to the CPU."""
    torch.tpu.reset_op_stats()
    result = fn()
    torch.tpu.synchronize()
    assert torch.tpu.fallback_stats() == {}
    return result


def test_blas_is_loaded() -> None:
    # scipy-openblas32 is a dependency: fp32 runs through it, or through the AVX-512 kernel where
    # the CPU has AVX-512; bf16 through vdpbf16ps and int_mm through vpdpbusd where they exist.
    # x @ W^T with at most 16 rows runs the AVX2 few-row kernel where the CPU has AVX2.
    info = torch.ops.torch_tpu._blas_info()
    assert info.startswith("OpenBLAS"), info
    flags = open("/proc/cpuinfo").read().split()
    few_rows = ", avx2 for x @ W^T of <= 16 rows" if {"avx2", "fma"} <= set(flags) else ""
    fp32 = "avx512" if "avx512f" in flags else "blas"
    assert f"; fp32: {fp32}{few_rows};" in info, info
    if "avx512_bf16" in flags:
        assert "; bf16: avx512_bf16;" in info, info
    int8 = "avx512_vnni" if {"avx512_vnni", "avx512bw"} <= set(flags) else "portable"
    assert info.endswith(f"; int8: {int8}"), info


@pytest.mark.parametrize("bias", [False, True], ids=["plain", "bias"])
@pytest.mark.parametrize("rows", [1, 3, 16, 17])
def test_linear_few_rows(rows: int, bias: bool, eager_mode: str) -> None:
    # A recurrent step's or a small batch's x @ W^T: up to 16 rows the few-row kernel where the CPU
    # has AVX2 (17 rows: the BLAS), with K not a whole number of vectors and W's rows not a whole
    # number of groups of three; with and without a bias, and the gradients.
    x, w, b = make(rows, 301), make(1000, 301, seed=1), make(1000, seed=2)
    xt, wt = x.to(DEV).requires_grad_(), w.to(DEV).requires_grad_()
    xc, wc = x.clone().requires_grad_(), w.clone().requires_grad_()
    bt = b.to(DEV) if bias else None
    out = native(lambda: F.linear(xt, wt, bt))
    ref = F.linear(xc, wc, b if bias else None)
    same(out, ref, k=301)
    grad = make(rows, 1000, seed=3)
    out.backward(grad.to(DEV))
    ref.backward(grad)
    same(xt.grad, xc.grad, k=1000)
    same(wt.grad, wc.grad, k=rows)


SHAPES = [(5, 7, 3), (1, 1, 1), (33, 65, 17), (0, 4, 3), (4, 0, 3), (4, 3, 0)]


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_mm_dtypes_and_shapes(dtype: torch.dtype, eager_mode: str) -> None:
    for m, k, n in SHAPES:
        a, b = make(m, k, dtype=dtype), make(k, n, dtype=dtype, seed=1)
        out = native(lambda a=a, b=b: torch.mm(a.to(DEV), b.to(DEV)))
        same(out, torch.mm(a, b), k)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
def test_transposed_and_strided_operands(dtype: torch.dtype, eager_mode: str) -> None:
    base_a, base_b = make(40, 60, dtype=dtype), make(60, 50, dtype=dtype, seed=1)
    views: list[Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]] = [
        lambda a, b: (a[:, :30], b[:30, :20]),  # row-major with a larger leading dimension
        lambda a, b: (a.t()[:25, :40], b.t()[:40, :35]),  # transposed (column-major)
        lambda a, b: (a[::2, ::3], b[::3, ::2]),  # neither: copied
        lambda a, b: (a[:7, :1], b[:1, :9]),  # outer product, size-1 dims
    ]
    for view in views:
        ca, cb = view(base_a, base_b)
        ta, tb = view(base_a.to(DEV), base_b.to(DEV))
        same(native(lambda ta=ta, tb=tb: torch.mm(ta, tb)), torch.mm(ca, cb), ca.shape[1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32], ids=str)
def test_out_forms(dtype: torch.dtype, eager_mode: str) -> None:
    a, b = make(6, 5, dtype=dtype), make(5, 4, dtype=dtype, seed=1)
    # A column-major out= keeps its strides (BLAS computes the transpose); a strided one too.
    for make_out in (
        lambda d: torch.empty(4, 6, dtype=dtype, device=d).t(),
        lambda d: torch.empty(6, 8, dtype=dtype, device=d)[:, ::2],
        lambda d: torch.empty(0, dtype=dtype, device=d),
    ):
        cpu_out, tpu_out = make_out("cpu"), make_out(DEV)
        torch.mm(a, b, out=cpu_out)
        result = native(lambda tpu_out=tpu_out: torch.mm(a.to(DEV), b.to(DEV), out=tpu_out))
        assert result is tpu_out
        same(tpu_out, cpu_out)
    with pytest.raises(RuntimeError):
        torch.mm(a.to(DEV), b.to(DEV), out=torch.empty(6, 4, dtype=torch.float64, device=DEV))


@pytest.mark.parametrize(
    "dtype",
    [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int64, torch.complex64],
    ids=str,
)
def test_addmm_alpha_beta(dtype: torch.dtype, eager_mode: str) -> None:
    a, b = make(7, 9, dtype=dtype), make(9, 5, dtype=dtype, seed=1)
    complex_ = dtype.is_complex
    for self_shape in [(7, 5), (5,), (1, 5), (7, 1), ()]:
        c = make(*self_shape, dtype=dtype, seed=2)
        for alpha, beta in [(1, 1), (2, 0.5), (-1, 3), (1, 0)]:
            if not (dtype.is_floating_point or complex_):
                beta = int(beta * 2)
            if complex_:
                alpha, beta = complex(alpha, 1), complex(beta, -0.5)
            expect = torch.addmm(c, a, b, beta=beta, alpha=alpha)
            got = native(
                lambda c=c, al=alpha, be=beta: torch.addmm(
                    c.to(DEV), a.to(DEV), b.to(DEV), beta=be, alpha=al
                )
            )
            same(got, expect, 9)
    # In place and out=.
    c = make(7, 5, dtype=dtype, seed=3)
    tc = c.to(DEV)
    native(lambda: tc.addmm_(a.to(DEV), b.to(DEV), beta=2))
    same(tc, c.clone().addmm_(a, b, beta=2), 9)
    out = torch.empty(0, dtype=dtype, device=DEV)
    torch.addmm(c.to(DEV), a.to(DEV), b.to(DEV), out=out)
    same(out, torch.addmm(c, a, b), 9)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
def test_beta_zero_ignores_nan(dtype: torch.dtype, eager_mode: str) -> None:
    a, b = make(6, 4, dtype=dtype), make(4, 3, dtype=dtype, seed=1)
    c = torch.full((6, 3), float("nan"), dtype=dtype)
    got = native(lambda: torch.addmm(c.to(DEV), a.to(DEV), b.to(DEV), beta=0))
    assert not got.cpu().isnan().any()
    same(got, torch.addmm(c, a, b, beta=0), 4)
    bc = torch.full((2, 6, 3), float("nan"), dtype=dtype)
    ba, bb = make(2, 6, 4, dtype=dtype), make(2, 4, 3, dtype=dtype, seed=1)
    got = native(lambda: torch.baddbmm(bc.to(DEV), ba.to(DEV), bb.to(DEV), beta=0, alpha=2))
    same(got, torch.baddbmm(bc, ba, bb, beta=0, alpha=2), 4)


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int16, torch.complex128], ids=str
)
def test_bmm_baddbmm_addbmm(dtype: torch.dtype, eager_mode: str) -> None:
    a, b = make(3, 6, 5, dtype=dtype), make(3, 5, 4, dtype=dtype, seed=1)
    ta, tb = a.to(DEV), b.to(DEV)
    same(native(lambda: torch.bmm(ta, tb)), torch.bmm(a, b), 5)
    same(
        native(lambda: torch.bmm(ta.transpose(1, 2).contiguous().transpose(1, 2), tb)),
        torch.bmm(a, b),
        5,
    )
    c = make(3, 6, 4, dtype=dtype, seed=2)
    same(native(lambda: torch.baddbmm(c.to(DEV), ta, tb)), torch.baddbmm(c, a, b), 5)
    same(
        native(lambda: torch.baddbmm(c[:1, :1].to(DEV), ta, tb)), torch.baddbmm(c[:1, :1], a, b), 5
    )
    tc = c.to(DEV)
    native(lambda: tc.baddbmm_(ta, tb, alpha=2))
    same(tc, c.clone().baddbmm_(a, b, alpha=2), 5)
    c2 = make(6, 4, dtype=dtype, seed=3)
    same(native(lambda: torch.addbmm(c2.to(DEV), ta, tb)), torch.addbmm(c2, a, b), 15)
    same(
        native(lambda: torch.addbmm(c2[0].to(DEV), ta, tb, beta=0)),
        torch.addbmm(c2[0], a, b, beta=0),
        15,
    )
    tc2 = c2.to(DEV)
    native(lambda: tc2.addbmm_(ta, tb, beta=2))
    same(tc2, c2.clone().addbmm_(a, b, beta=2), 15)
    # Empty batches and empty K.
    e = make(0, 6, 5, dtype=dtype), make(0, 5, 4, dtype=dtype)
    same(torch.bmm(e[0].to(DEV), e[1].to(DEV)), torch.bmm(*e))
    same(torch.addbmm(c2.to(DEV), e[0].to(DEV), e[1].to(DEV)), torch.addbmm(c2, *e))


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int32, torch.complex64], ids=str
)
def test_vector_products(dtype: torch.dtype, eager_mode: str) -> None:
    m, v, w = make(6, 5, dtype=dtype), make(5, dtype=dtype, seed=1), make(5, dtype=dtype, seed=2)
    c = make(6, dtype=dtype, seed=3)
    tm, tv, tw = m.to(DEV), v.to(DEV), w.to(DEV)
    same(native(lambda: torch.mv(tm, tv)), torch.mv(m, v), 5)
    same(native(lambda: torch.mv(tm.t().contiguous().t(), tv)), torch.mv(m, v), 5)
    same(native(lambda: torch.addmv(c.to(DEV), tm, tv, beta=2)), torch.addmv(c, m, v, beta=2), 5)
    tc = c.to(DEV)
    native(lambda: tc.addmv_(tm, tv))
    same(tc, c.clone().addmv_(m, v), 5)
    same(native(lambda: torch.dot(tv, tw)), torch.dot(v, w), 5)
    same(native(lambda: torch.vdot(tv, tw)), torch.vdot(v, w), 5)
    same(native(lambda: torch.dot(tm[:, 0], tm[:, 1])), torch.dot(m[:, 0], m[:, 1]), 6)
    if dtype.is_complex:
        # Conjugate views are read conjugated by the kernel, not materialized.
        same(native(lambda: torch.dot(tv.conj(), tw)), torch.dot(v.conj(), w), 5)
        same(
            native(lambda: torch.mm(tm.conj(), tv[:, None].conj())),
            torch.mm(m.conj(), v[:, None].conj()),
            5,
        )
        same(native(lambda: torch.mm(tm.t().conj(), tm)), torch.mm(m.t().conj(), m), 6)


MATMUL_SHAPES = [
    ((5,), (5,)),
    ((4, 5), (5,)),
    ((5,), (5, 3)),
    ((4, 5), (5, 3)),
    ((2, 4, 5), (5, 3)),
    ((2, 4, 5), (5,)),
    ((5,), (2, 5, 3)),
    ((2, 4, 5), (2, 5, 3)),
    ((3, 1, 4, 5), (2, 5, 3)),
    ((1, 4, 5), (3, 2, 5, 3)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_and_grad(shapes: tuple[tuple[int, ...], tuple[int, ...]], eager_mode: str) -> None:
    a, b = make(*shapes[0]), make(*shapes[1], seed=1)
    ta, tb = a.to(DEV).requires_grad_(), b.to(DEV).requires_grad_()
    ca, cb = a.clone().requires_grad_(), b.clone().requires_grad_()
    out = torch.matmul(ta, tb)
    expect = torch.matmul(ca, cb)
    same(out.detach(), expect.detach())
    g = make(*expect.shape, seed=2)
    out.backward(g.to(DEV))
    expect.backward(g)
    same(ta.grad, ca.grad)
    same(tb.grad, cb.grad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape", [(8,), (4, 8), (2, 3, 8)], ids=str)
def test_linear_and_grad(shape: tuple[int, ...], dtype: torch.dtype, eager_mode: str) -> None:
    x, w, bias = (
        make(*shape, dtype=dtype),
        make(5, 8, dtype=dtype, seed=1),
        make(5, dtype=dtype, seed=2),
    )
    for with_bias in (True, False):
        leaves = [t.clone().requires_grad_() for t in (x, w, bias)]
        tleaves = [t.to(DEV).requires_grad_() for t in (x, w, bias)]
        expect = F.linear(leaves[0], leaves[1], leaves[2] if with_bias else None)
        got = F.linear(tleaves[0], tleaves[1], tleaves[2] if with_bias else None)
        same(got.detach(), expect.detach(), 8)
        g = make(*expect.shape, dtype=dtype, seed=3)
        expect.backward(g)
        got.backward(g.to(DEV))
        for t, c in zip(tleaves[: 3 if with_bias else 2], leaves, strict=False):
            same(t.grad, c.grad, 8)


def test_linear_and_bmm_backward_are_native(eager_mode: str) -> None:
    x = make(4, 6).to(DEV).requires_grad_()
    w = make(3, 6, seed=1).to(DEV).requires_grad_()
    q, k = make(2, 4, 6).to(DEV).requires_grad_(), make(2, 6, 5).to(DEV).requires_grad_()
    y = F.linear(x, w)
    s = torch.bmm(q, k)
    torch.tpu.reset_op_stats()
    torch.autograd.backward([y, s], [torch.ones_like(y), torch.ones_like(s)])
    torch.tpu.synchronize()
    assert torch.tpu.fallback_stats() == {}
    native_counts = torch.tpu.op_stats()["native"]
    assert native_counts.get("mm", 0) == 2 and native_counts.get("bmm", 0) == 2


def test_einsum_tensordot_inner(eager_mode: str) -> None:
    a, b = make(2, 3, 4), make(2, 4, 5, seed=1)
    same(
        native(lambda: torch.einsum("bij,bjk->bik", a.to(DEV), b.to(DEV))),
        torch.einsum("bij,bjk->bik", a, b),
        4,
    )
    same(
        native(lambda: torch.tensordot(a.to(DEV), b.to(DEV), dims=([0, 2], [0, 1]))),
        torch.tensordot(a, b, dims=([0, 2], [0, 1])),
        8,
    )


def test_fp32_is_true_fp32_against_fp64(eager_mode: str) -> None:
    # Large enough to split over threads and go through the BLAS; "highest" precision (default)
    # must not take a bf16 or tf32 pass, which would give errors around 1e-3 relative.
    assert torch.get_float32_matmul_precision() == "highest"
    a, b = make(300, 512), make(512, 260, seed=1)
    ref = a.double() @ b.double()
    for ta, tb in [(a, b), (a.t().contiguous().t(), b.t().contiguous().t())]:
        got = native(lambda ta=ta, tb=tb: torch.mm(ta.to(DEV), tb.to(DEV))).cpu().double()
        err = ((got - ref).abs() / (a.double().abs() @ b.double().abs())).max().item()
        assert err < 1e-6


def test_f32_model_sizes(eager_mode: str) -> None:
    # Sizes that take the packed AVX-512 fp32 kernel where the CPU has one (at least 2^22
    # multiply-adds; K over two of its blocks, partial register tiles, operands without a BLAS
    # layout, C as a bias row or a matrix, summed batches, a column-major out=), against CPU.
    a, b = make(130, 1100), make(1100, 70, seed=1)
    bias, c = make(70, seed=2), make(130, 70, seed=3)
    cases: list[tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]] = [
        (torch.mm, (a, b)),
        (torch.mm, (a.t().contiguous().t(), b.t().contiguous().t())),
        (torch.mm, (make(520, 900)[::2, ::3], make(300, 200, seed=1)[:, ::2])),
        (lambda c, x, y: torch.addmm(c, x, y, beta=0.5, alpha=2.0), (bias, a, b)),
        (lambda c, x, y: torch.addmm(c, x, y, beta=-1.0), (c, a, b)),
        (torch.baddbmm, (make(3, 60, 70), make(3, 60, 400, seed=1), make(3, 400, 70, seed=2))),
        (torch.addbmm, (make(60, 70), make(3, 60, 400, seed=1), make(3, 400, 70, seed=2))),
    ]
    for fn, args in cases:
        got = native(lambda fn=fn, args=args: fn(*(t.to(DEV) for t in args)))
        same(got, fn(*args), 1100)
    out = torch.empty(70, 130, device=DEV).t()
    native(lambda: torch.mm(a.to(DEV), b.to(DEV), out=out))
    torch.testing.assert_close(out.cpu(), a @ b, **tol(torch.float32, 1100))


def test_bf16_large_against_reference(eager_mode: str) -> None:
    # Several K blocks, edge tiles, a transposed B and two threads: bf16 inputs are exact in fp32,
    # so the result is the rounded fp32 sum.
    a, b = make(130, 1100, dtype=torch.bfloat16), make(70, 1100, dtype=torch.bfloat16, seed=1)
    got = native(lambda: torch.mm(a.to(DEV), b.to(DEV).t()))
    ref = a.double() @ b.double().t()
    bound = (a.double().abs() @ b.double().abs().t()) * 2e-6 + ref.abs() * 2**-8
    assert ((got.cpu().double() - ref).abs() <= bound).all()
    same(got, torch.mm(a, b.t()), 1100)


def test_int8_wraps_like_cpu(eager_mode: str) -> None:
    a = torch.full((3, 300), 100, dtype=torch.int8)
    same(native(lambda: torch.mm(a.to(DEV), a.t().to(DEV))), torch.mm(a, a.t()))


def test_meta_strides_and_dtypes() -> None:
    for fn, args in [
        (torch.mm, [(3, 4), (4, 5)]),
        (torch.bmm, [(2, 3, 4), (2, 4, 5)]),
        (lambda c, a, b: torch.addmm(c, a, b), [(5,), (3, 4), (4, 5)]),
        (lambda c, a, b: torch.baddbmm(c, a, b), [(1, 3, 5), (2, 3, 4), (2, 4, 5)]),
        (lambda c, a, b: torch.addmv(c, a, b), [(3,), (3, 4), (4,)]),
    ]:
        meta = fn(*[torch.empty(s, device="meta") for s in args])
        got = fn(*[make(*s).to(DEV) for s in args])
        assert got.shape == meta.shape and got.stride() == meta.stride()
        assert got.dtype == meta.dtype


def raises_like_cpu(fn: Callable[..., object], *cpu_args: torch.Tensor) -> tuple[str, str]:
    with pytest.raises(Exception) as cpu_err:
        fn(*cpu_args)
    with pytest.raises(cpu_err.type) as tpu_err:
        fn(*[t.to(DEV) for t in cpu_args])
        torch.tpu.synchronize()
    return str(cpu_err.value), str(tpu_err.value)


def test_errors() -> None:
    f, d = make(2, 3), make(3, 2, dtype=torch.float64)
    cpu_msg, tpu_msg = raises_like_cpu(torch.mm, f, make(4, 2))
    assert cpu_msg == tpu_msg  # "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x2)"
    raises_like_cpu(torch.mm, f, d)
    raises_like_cpu(torch.mm, f, make(3))
    raises_like_cpu(torch.bmm, make(2, 2, 3), make(3, 3, 2))
    raises_like_cpu(torch.bmm, make(2, 2, 3), make(2, 4, 2))
    raises_like_cpu(torch.mm, make(2, 3).bool(), make(3, 2).bool())
    raises_like_cpu(lambda c, a, b: torch.addmm(c, a, b), make(4, 4), f, make(3, 2))
    raises_like_cpu(lambda c, a, b: torch.addbmm(c, a, b), make(2, 2), make(2, 2, 3), make(3, 3, 2))
    # Hand-written checks (ops without a structured meta): CPU's messages too.
    for fn, args in [
        (torch.dot, (make(3), make(4))),
        (torch.dot, (make(3), make(3, dtype=torch.float64))),
        (torch.dot, (make(3, 1), make(3))),
        (torch.addbmm, (make(2, 2), make(1, 2, 2, dtype=torch.float64), make(1, 2, 2))),
        (torch.addbmm, (make(2, 2), make(1, 2, 2, dtype=torch.float64), make(1, 2, 2).double())),
    ]:
        cpu_msg, tpu_msg = raises_like_cpu(fn, *args)
        assert cpu_msg == tpu_msg
    raises_like_cpu(torch.mv, make(3, 4), make(3))
    raises_like_cpu(torch.matmul, make(2, 3, 4), make(2, 5, 4))
    with pytest.raises(RuntimeError, match="same device"):
        torch.mm(f.to(DEV), make(3, 2))
