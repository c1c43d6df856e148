"""var/std (correction, var_mean/std_mean), vector norms (linalg.vector_norm, torch.norm, every
kind of p) and logsumexp on tpu against PyTorch CPU: dtypes, dimension lists, keepdim, empty and
non-contiguous inputs, dtype= and out=, errors, gradients, native runs with meta-equal metadata."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
from _reduce_checks import COMPLEX_DTYPES, DEV, FLOAT_DTYPES, check, grads, make, raises_like_cpu

HALF = (torch.float16, torch.bfloat16)


def tol(dtype: torch.dtype) -> float | None:
    return 2e-2 if dtype in HALF else None


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("dims", [None, 0, -1, (0, 2), ()], ids=str)
def test_var_std(dtype: torch.dtype, dims: int | tuple[int, ...] | None, eager_mode: str) -> None:
    x = make((4, 5, 6), dtype) + 3  # an offset the mean must remove
    for correction in (0, 1, 2.5):
        for keepdim in (False, True):
            check(
                lambda t, c=correction, k=keepdim: (
                    torch.var(t, dims, correction=c, keepdim=k),
                    torch.std(t, dims, correction=c, keepdim=k),
                    *torch.var_mean(t, dims, correction=c, keepdim=k),
                    *torch.std_mean(t, dims, correction=c, keepdim=k),
                ),
                x,
                rtol=tol(dtype),
                atol=tol(dtype),
            )


def test_var_edge_cases(eager_mode: str) -> None:
    x = make((3, 1, 4), torch.float32)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        check(lambda t: (t.var(1), t.std(1, correction=0), t.var(2, correction=4)), x)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        check(lambda t: (t.var(), t.std(0)), torch.ones(0, 3))
    check(lambda t: t.var(unbiased=False), torch.full((1000,), 1e4) + make((1000,), torch.float32))
    check(lambda t: t.transpose(0, 2).var(1), make((6, 5, 7), torch.float32))
    raises_like_cpu(lambda t: t.var(), make((3,), torch.int64))
    check(lambda t: torch.var(t, 2, out=torch.empty(0, device=t.device)), x)


def test_complex_var_is_native(eager_mode: str) -> None:
    x = make((3, 4), torch.complex64)
    torch.tpu.reset_op_stats()
    check(lambda t: (t.var(1), t.std(0, correction=0), t.var()), x)
    assert torch.tpu.fallback_stats() == {}


ORDERS = [2, 1, math.inf, -math.inf, 0, 3, 0.5, -1]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + COMPLEX_DTYPES, ids=str)
@pytest.mark.parametrize("ord", ORDERS, ids=str)
def test_vector_norm(dtype: torch.dtype, ord: float, eager_mode: str) -> None:
    x = make((4, 5, 6), dtype)
    x.view(-1)[::7] = 0
    for dims in (None, 1, (0, 2)):
        for keepdim in (False, True):
            check(
                lambda t, d=dims, k=keepdim: torch.linalg.vector_norm(t, ord, d, k),
                x,
                rtol=tol(dtype),
                atol=tol(dtype),
            )


def test_norm_variants(eager_mode: str) -> None:
    x = make((4, 5, 6), torch.float32)
    check(lambda t: (t.norm(), t.norm(1, 0), t.norm(float("inf"), (1, 2), True)), x)
    check(lambda t: torch.norm(t, 2, 1, dtype=torch.float64), x)
    check(lambda t: torch.linalg.vector_norm(t, 2, dtype=torch.float64), x.bfloat16())
    check(lambda t: torch.linalg.vector_norm(t, 3, -1), x.transpose(0, 2))
    check(lambda t: t.norm(2, -1), make((4, 5), torch.complex128))
    check(lambda t: t.norm(dim=0), torch.ones(0, 3))
    # Squares that overflow float32 where the norm does not: CPU's vectorized path gives inf,
    # its double-accumulating path and tpu's scaled recompute the norm.
    big = torch.tensor([[1e30, 1e30], [3e38, 1.0]])
    want = torch.tensor([1e30 * math.sqrt(2), 3e38])
    for t in (big.to("tpu"), big.t().to("tpu").t()):
        torch.testing.assert_close(t.norm(dim=1).cpu(), want)
        torch.testing.assert_close(
            torch.linalg.vector_norm(t, 3, 1).cpu(), torch.tensor([1e30 * 2 ** (1 / 3), 3e38])
        )
    assert torch.linalg.vector_norm(torch.tensor([3e38, 3e38], device="tpu")).item() == math.inf
    check(lambda t: torch.linalg.vector_norm(t, 2, 1, out=torch.empty(0, device=t.device)), x)
    raises_like_cpu(lambda t: torch.linalg.vector_norm(t, math.inf, 0), torch.ones(0, 3))
    raises_like_cpu(lambda t: torch.linalg.vector_norm(t), make((3,), torch.int64))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.int32, torch.bool], ids=str)
def test_logsumexp(dtype: torch.dtype, eager_mode: str) -> None:
    x = make((4, 5, 6), dtype)
    for dims in (0, -1, (0, 2)):
        for keepdim in (False, True):
            check(
                lambda t, d=dims, k=keepdim: torch.logsumexp(t, d, k),
                x,
                rtol=tol(dtype),
                atol=tol(dtype),
            )
    check(lambda t: torch.logsumexp(t, (), keepdim=True), x, rtol=tol(dtype), atol=tol(dtype))


def test_logsumexp_infinities_and_errors(eager_mode: str) -> None:
    inf = float("inf")
    x = torch.tensor([[-inf, -inf], [inf, 1.0], [-inf, 2.0], [float("nan"), 0.0]])
    check(lambda t: torch.logsumexp(t, 1), x)
    check(lambda t: torch.logsumexp(t, 0), torch.ones(0, 3))
    check(lambda t: torch.logsumexp(t, 1), make((3, 100000), torch.float32) * 50)
    raises_like_cpu(lambda t: torch.logsumexp(t, ()), make((2, 3), torch.float32))
    raises_like_cpu(
        lambda t: torch.logsumexp(t, 0, out=torch.empty(0, dtype=torch.int64, device=t.device)),
        make((3,), torch.float32),
    )
    check(
        lambda t: torch.logsumexp(t, 1, out=torch.empty(0, dtype=torch.float64, device=t.device)),
        make((3, 4), torch.float32),
    )


def test_complex_logsumexp_runs_on_the_host() -> None:
    x = make((3, 4), torch.complex64).to(DEV)
    torch.tpu.reset_op_stats()
    got = torch.logsumexp(x, 1)
    assert torch.tpu.fallback_stats() == {"aten::logsumexp.out": 1}
    torch.testing.assert_close(got.cpu(), torch.logsumexp(x.cpu(), 1))


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.var(1),
        lambda x: x.std((0, 2), keepdim=True),
        lambda x: torch.var_mean(x, 1)[0] + torch.var_mean(x, 1)[1],
        lambda x: x.norm(dim=1),
        lambda x: torch.linalg.vector_norm(x, 3, -1),
        lambda x: torch.linalg.vector_norm(x, math.inf, 0),
        lambda x: torch.logsumexp(x, 2),
    ],
)
def test_gradients(fn: Callable[[torch.Tensor], torch.Tensor], eager_mode: str) -> None:
    grads(fn, make((3, 4, 5), torch.float64))
