"""torch.linalg on tpu against PyTorch CPU: Cholesky (and its _ex info, cholesky_solve and
cholesky_inverse), triangular solves, LU factor and solve, solve, inv, det, slogdet and eigh, in
float32 and float64, single and batched (with broadcast batches), non-contiguous and empty
inputs; CPU's strides (column-major results); the _ex variants' info and the others' errors with
PyTorch's messages; gradients through the backward formulas (composites of these ops); and that
each runs natively, with no call through the CPU fallback (the PJRT driver still runs LU_FACTOR,
LU_SOLVE and EIGH through its driver fallback: StableHLO has no such op)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import torch
from _reduce_checks import DEV, PJRT, move, raises_like_cpu, tensors

DTYPES = [torch.float32, torch.float64]
# Core ops the PJRT driver lowers; the others run there through its driver fallback.
PJRT_REFUSED = {"lu_factor", "lu_solve", "eigh"}


def tol(dtype: torch.dtype) -> dict[str, float]:
    """Tolerances for well-conditioned factorizations of small matrices (n <= 16): a few ulps
    times n of growth, on another LAPACK call order (PJRT: XLA's own algorithms)."""
    return {"rtol": 1e-4, "atol": 1e-4} if dtype == torch.float32 else {"rtol": 1e-9, "atol": 1e-9}


def native(fn: Callable[..., Any], *args: Any) -> Any:
    """fn on tpu copies of args; nothing fell back to the CPU, nor to the driver's fallback
    (beyond the ops PJRT refuses)."""
    torch.tpu.reset_op_stats()
    got = fn(*move(args, DEV))
    torch.tpu.synchronize()
    stats = torch.tpu.op_stats()
    assert stats["fallback"] == {}, stats["fallback"]
    allowed = PJRT_REFUSED if PJRT else set()
    assert set(stats["driver_fallback"]) <= allowed, stats["driver_fallback"]
    return got


def check(fn: Callable[..., Any], *args: Any, strides: bool = True, **close: float) -> Any:
    """fn on CPU and natively on tpu: equal dtypes, shapes and strides, values close."""
    want = fn(*args)
    got = native(fn, *args)
    for r, w in zip(tensors(got), tensors(want), strict=True):
        assert r.device.type == DEV
        assert (r.dtype, r.shape) == (w.dtype, w.shape), (r.dtype, r.shape, w.dtype, w.shape)
        if strides and r.numel() > 1:
            assert r.stride() == w.stride(), (r.stride(), w.stride())
        if r.dtype.is_floating_point:
            torch.testing.assert_close(r.cpu(), w, equal_nan=True, **(close or tol(w.dtype)))
        else:
            assert torch.equal(r.cpu(), w)
    return got


def spd(*shape: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Symmetric positive-definite matrices X X^T + n I of sizes `shape` (..., n, n)."""
    x = torch.randn(*shape, dtype=torch.float64)
    n = shape[-1]
    return (x @ x.mT + n * torch.eye(n, dtype=torch.float64)).to(dtype)


def general(*shape: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Well-conditioned general matrices: random plus n on the diagonal."""
    x = torch.randn(*shape, dtype=torch.float64)
    n = min(shape[-2:])
    eye = torch.eye(shape[-2], shape[-1], dtype=torch.float64)
    return (x + n * eye).to(dtype)


def grads(fn: Callable[..., torch.Tensor], *args: torch.Tensor, **close: float) -> None:
    """Gradients of fn with respect to every argument, on CPU and natively on tpu, are close."""

    def run(device: str) -> list[torch.Tensor]:
        leaves = [a.detach().to(device).requires_grad_() for a in args]
        out = fn(*leaves)
        g = torch.randn(out.shape, generator=torch.Generator().manual_seed(7), dtype=out.dtype)
        return [t.cpu() for t in torch.autograd.grad(out, leaves, g.to(device))]

    want = run("cpu")
    got = native(lambda: run(DEV))
    for c, t in zip(want, got, strict=True):
        torch.testing.assert_close(t, c, **(close or tol(c.dtype)))


# ---- Cholesky ----


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(dtype: torch.dtype, upper: bool, eager_mode: str) -> None:
    for a in (spd(5, 5, dtype=dtype), spd(3, 2, 7, 7, dtype=dtype), spd(8, 8, dtype=dtype).mT):
        check(lambda t: torch.linalg.cholesky(t, upper=upper), a)
        check(lambda t: tuple(torch.linalg.cholesky_ex(t, upper=upper)), a)
        check(lambda t: torch.cholesky(t, upper=upper), a)


def test_cholesky_reads_one_triangle(eager_mode: str) -> None:
    a = spd(6, 6)
    lower_only, upper_only = a.tril() + 50 * a.triu(1), a.triu() + 50 * a.tril(-1)
    check(lambda t: torch.linalg.cholesky(t), lower_only)
    check(lambda t: torch.linalg.cholesky(t, upper=True), upper_only)


def test_cholesky_empty(eager_mode: str) -> None:
    for shape in [(0, 0), (3, 0, 0), (0, 4, 4)]:
        check(lambda t: tuple(torch.linalg.cholesky_ex(t)), torch.zeros(shape))


def test_cholesky_info_and_errors(eager_mode: str) -> None:
    a = spd(4, 5, 5)
    a[1, 2, 2] = -100.0  # the leading minor of order 3 of matrix 1 is not positive-definite
    info = native(lambda t: torch.linalg.cholesky_ex(t).info, a)
    assert info.cpu().tolist() == torch.linalg.cholesky_ex(a).info.tolist() == [0, 3, 0, 0]
    single = a[1]
    message = (
        "linalg.cholesky: The factorization could not be completed because the input is not "
        "positive-definite (the leading minor of order 3 is not positive-definite)."
    )
    with pytest.raises(torch.linalg.LinAlgError, match=re.escape(message)):
        torch.linalg.cholesky(single.to(DEV))
    with pytest.raises(torch.linalg.LinAlgError, match=r"\(Batch element 1\)"):
        torch.linalg.cholesky(a.to(DEV))
    with pytest.raises(torch.linalg.LinAlgError, match="linalg.cholesky_ex"):
        torch.linalg.cholesky_ex(a.to(DEV), check_errors=True)
    raises_like_cpu(lambda t: torch.linalg.cholesky(t), torch.randn(3, 4))
    raises_like_cpu(lambda t: torch.linalg.cholesky(t), torch.randn(3))
    raises_like_cpu(lambda t: torch.linalg.cholesky(t), torch.ones(3, 3, dtype=torch.int64))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse(dtype: torch.dtype, upper: bool, eager_mode: str) -> None:
    factor = torch.linalg.cholesky(spd(2, 6, 6, dtype=dtype), upper=upper)
    b = torch.randn(3, 1, 6, 4, dtype=dtype)  # broadcast against the factor's batch
    check(lambda b_, f: torch.cholesky_solve(b_, f, upper=upper), b, factor)
    check(lambda f: torch.cholesky_inverse(f, upper=upper), factor)
    check(lambda f: torch.cholesky_inverse(f[0], upper=upper), factor)
    grads(lambda b_, f: torch.cholesky_solve(b_, f, upper=upper), b, factor)


# ---- triangular solves ----


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(
    dtype: torch.dtype, upper: bool, left: bool, unit: bool, eager_mode: str
) -> None:
    a = general(2, 6, 6, dtype=dtype)
    b = torch.randn(3, 1, 6, 4, dtype=dtype) if left else torch.randn(1, 4, 6, dtype=dtype)
    fn = lambda a_, b_: torch.linalg.solve_triangular(  # noqa: E731
        a_, b_, upper=upper, left=left, unitriangular=unit
    )
    check(fn, a, b)
    check(fn, a.mT, b[..., ::2] if left else b[..., ::2, :])
    grads(fn, a, b)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("transpose", [False, True])
def test_triangular_solve(
    dtype: torch.dtype, upper: bool, transpose: bool, eager_mode: str
) -> None:
    a, b = general(2, 5, 5, dtype=dtype), torch.randn(2, 5, 3, dtype=dtype)

    def fn(b_: torch.Tensor, a_: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(torch.triangular_solve(b_, a_, upper=upper, transpose=transpose))

    check(fn, b, a)
    check(fn, b[0], a[:1])  # broadcast batches
    grads(lambda b_, a_: fn(b_, a_)[0], b, a)


def test_solve_triangular_out_and_errors(eager_mode: str) -> None:
    a, b = general(4, 4), torch.randn(4, 2, dtype=torch.float64)
    out = torch.empty(0, dtype=torch.float64, device=DEV)
    torch.linalg.solve_triangular(a.to(DEV), b.to(DEV), upper=True, out=out)
    want = torch.linalg.solve_triangular(a, b, upper=True)
    assert out.stride() == want.stride()
    torch.testing.assert_close(out.cpu(), want)
    raises_like_cpu(lambda x, y: torch.linalg.solve_triangular(x, y, upper=True), a, b.mT)
    raises_like_cpu(lambda x, y: torch.linalg.solve_triangular(x, y, upper=True), a[:3], b)
    check(lambda x, y: torch.linalg.solve_triangular(x, y, upper=False), a, b[:, :0])


# ---- LU, solve, inv, det ----


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_lu_factor(dtype: torch.dtype, eager_mode: str) -> None:
    for a in (general(6, 6, dtype=dtype), general(3, 5, 5, dtype=dtype).mT):
        check(lambda t: tuple(torch.linalg.lu_factor(t)), a)
        check(lambda t: tuple(torch.linalg.lu_factor_ex(t)), a)
        check(lambda t: tuple(torch.linalg.lu(t)), a)
        check(lambda t: tuple(torch.lu_unpack(*torch.linalg.lu_factor(t))), a)
    for shape in [(4, 7), (7, 4), (2, 0, 3)]:
        check(lambda t: tuple(torch.linalg.lu_factor_ex(t)), general(*shape, dtype=dtype))
        check(lambda t: tuple(torch.linalg.lu(t)), general(*shape, dtype=dtype))
    grads(lambda t: torch.linalg.lu_factor(t).LU, general(2, 5, 5, dtype=dtype))
    grads(lambda t: torch.linalg.lu(t).U, general(5, 3, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve(dtype: torch.dtype, left: bool, adjoint: bool, eager_mode: str) -> None:
    lu, piv = torch.linalg.lu_factor(general(2, 5, 5, dtype=dtype))
    b = torch.randn(3, 1, 5, 2, dtype=dtype)

    def fn(lu_: torch.Tensor, p: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        return torch.linalg.lu_solve(lu_, p, r, left=left, adjoint=adjoint)

    check(fn, lu, piv, b if left else b.mT)
    check(lambda lu_, p, r: torch.lu_solve(r, lu_, p), lu, piv, b)
    grads(lambda lu_, r: fn(lu_, piv.to(lu_.device), r), lu, b if left else b.mT)


def test_lu_factor_singular(eager_mode: str) -> None:
    a = general(3, 4, 4)
    a[1, :, 2] = 0.0  # singular: U[2, 2] or a later pivot is exactly zero
    check(lambda t: tuple(torch.linalg.lu_factor_ex(t)), a)
    with pytest.raises(RuntimeError, match="U\\[3,3\\] is zero"):  # as CPU: not LinAlgError
        torch.linalg.lu_factor(a.to(DEV))
    with pytest.raises(RuntimeError, match="LU without pivoting is not implemented on the CPU"):
        torch.linalg.lu_factor(a.to(DEV), pivot=False)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_solve_inv(dtype: torch.dtype, eager_mode: str) -> None:
    a, b = general(2, 6, 6, dtype=dtype), torch.randn(2, 6, 3, dtype=dtype)
    check(lambda x, y: torch.linalg.solve(x, y), a, b)
    check(lambda x, y: torch.linalg.solve(x, y, left=False), a, b.mT)
    check(lambda x, y: tuple(torch.linalg.solve_ex(x, y)), a, b)
    check(lambda x, y: torch.linalg.solve(x, y), a, b[..., 0])  # vector right-hand side
    check(lambda x, y: torch.linalg.solve(x, y), a.mT, b)
    check(torch.linalg.inv, a)
    check(lambda x: tuple(torch.linalg.inv_ex(x)), a.mT)
    check(torch.inverse, a[0])
    check(lambda x: torch.linalg.tensorinv(x, ind=1), general(6, 6, dtype=dtype).reshape(6, 2, 3))


def test_solve_inv_grads(eager_mode: str) -> None:
    a, b = general(2, 6, 6), torch.randn(2, 6, 3, dtype=torch.float64)
    grads(lambda x, y: torch.linalg.solve(x, y), a, b)
    grads(torch.linalg.inv, a)


def test_solve_singular_errors(eager_mode: str) -> None:
    a = general(2, 4, 4)
    a[1, 3] = 0.0
    with pytest.raises(torch.linalg.LinAlgError, match="linalg.solve"):
        torch.linalg.solve(a.to(DEV), torch.randn(2, 4, 1).to(torch.float64).to(DEV))
    with pytest.raises(torch.linalg.LinAlgError, match="linalg.inv"):
        torch.linalg.inv(a.to(DEV))
    info = native(lambda t: torch.linalg.inv_ex(t).info, a)
    assert info.cpu().tolist() == torch.linalg.inv_ex(a).info.tolist()
    raises_like_cpu(lambda x: torch.linalg.inv(x), torch.randn(3, 4))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_det_slogdet(dtype: torch.dtype, eager_mode: str) -> None:
    a = torch.randn(3, 5, 5, dtype=dtype)  # random signs of the determinant
    check(torch.linalg.det, a)
    check(torch.det, a.mT)
    check(lambda x: tuple(torch.linalg.slogdet(x)), a)
    check(torch.logdet, spd(2, 4, 4, dtype=dtype))
    singular = a.clone()
    singular[0, 2] = 0.0
    check(torch.linalg.det, singular)
    grads(torch.linalg.det, general(2, 4, 4, dtype=dtype))
    grads(lambda x: torch.linalg.slogdet(x)[1], general(2, 4, 4, dtype=dtype))


# ---- eigh ----


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eigh(dtype: torch.dtype, eager_mode: str) -> None:
    a = spd(2, 6, 6, dtype=dtype) - 6 * torch.eye(6, dtype=dtype)
    check(torch.linalg.eigvalsh, a)
    check(lambda x: torch.linalg.eigvalsh(x, UPLO="U"), a.mT)
    values, vectors = native(torch.linalg.eigh, a)
    want_values, want_vectors = torch.linalg.eigh(a)
    assert vectors.stride() == want_vectors.stride()
    torch.testing.assert_close(values.cpu(), want_values, **tol(dtype))
    # Eigenvectors are defined up to sign: compare |v^T w|, and reconstruct A.
    overlap = (vectors.cpu().mT @ want_vectors).diagonal(0, -2, -1).abs()
    torch.testing.assert_close(overlap, torch.ones_like(overlap), **tol(dtype))
    v = vectors.cpu()
    torch.testing.assert_close(v @ torch.diag_embed(values.cpu()) @ v.mT, a, **tol(dtype))
    grads(torch.linalg.eigvalsh, a)
