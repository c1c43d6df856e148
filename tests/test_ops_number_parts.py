"""Numbers from their parts and into them, on tpu against PyTorch CPU: torch.complex and
torch.polar (complex64 and complex128 from float32 and float64 parts, broadcast parts, out=
resized and non-contiguous, special values, gradients, CPU's errors) and torch.frexp (every
floating dtype, subnormals, zeros, infinities and NaN bit for bit, out=, gradients, errors). All
run natively, with no call through either fallback; polar's backward is complex arithmetic, which
still runs on the CPU fallback."""

from __future__ import annotations

import pytest
import torch
from _reduce_checks import DEV, FLOAT_DTYPES, check, grads, make, raises_like_cpu

PART_DTYPES = [torch.float32, torch.float64]
BUILDERS = [torch.complex, torch.polar]


@pytest.mark.parametrize("dtype", PART_DTYPES, ids=str)
@pytest.mark.parametrize("build", BUILDERS, ids=lambda f: f.__name__)
def test_matches_cpu(dtype: torch.dtype, build: object, eager_mode: str) -> None:
    a, b = make((4, 5), dtype, seed=1), make((4, 5), dtype, seed=2)
    check(build, a, b)
    check(build, a, make((5,), dtype, seed=3))  # the second part broadcasts
    check(build, make((3, 1), dtype, seed=4), b.t()[:, :1].t())  # both broadcast, one strided
    check(build, a.t(), b.t())  # transposed parts give a transposed result, as on CPU
    check(build, torch.tensor(1.5, dtype=dtype), torch.tensor(-2.0, dtype=dtype))


def test_special_values(eager_mode: str) -> None:
    nan, inf = float("nan"), float("inf")
    parts = torch.tensor([0.0, -0.0, 1.0, -1.0, inf, -inf, nan, 3.0])
    angles = torch.tensor([0.0, -0.0, inf, nan, 1.0, -2.0, 0.5, -0.0])
    check(torch.complex, parts, angles)
    check(torch.complex, angles, parts)
    check(torch.polar, parts.abs(), angles)


@pytest.mark.parametrize("build", BUILDERS, ids=lambda f: f.__name__)
def test_out(build: object, eager_mode: str) -> None:
    a, b = make((3, 4), torch.float32, seed=5), make((3, 4), torch.float32, seed=6)
    want = build(a, b)
    out = torch.empty(0, dtype=torch.complex64, device=DEV)
    assert build(a.to(DEV), b.to(DEV), out=out) is out
    torch.testing.assert_close(out.cpu(), want)
    wide = torch.zeros(4, 6, dtype=torch.complex64, device=DEV)
    build(a.t().to(DEV), b.t().to(DEV), out=wide[:, ::2])  # a non-contiguous out
    torch.testing.assert_close(wide[:, ::2].cpu(), want.t())
    assert bool((torch.view_as_real(wide[:, 1::2]) == 0).all().cpu())


@pytest.mark.parametrize("dtype", PART_DTYPES, ids=str)
def test_gradients(dtype: torch.dtype, eager_mode: str) -> None:
    a, b = make((3, 4), dtype, seed=7), make((4,), dtype, seed=8)
    grads(lambda x, y: torch.view_as_real(torch.complex(x, y)), a, b)
    grads(lambda x, y: torch.view_as_real(torch.polar(x, y)), a.abs(), b)


@pytest.mark.parametrize("build", BUILDERS, ids=lambda f: f.__name__)
def test_errors_like_cpu(build: object, eager_mode: str) -> None:
    f32, f64 = torch.ones(3), torch.ones(3, dtype=torch.float64)
    raises_like_cpu(build, f32, f64)  # parts of two dtypes
    raises_like_cpu(build, f32.int(), f32.int())  # integer parts
    raises_like_cpu(build, f32.bfloat16(), f32.bfloat16())
    raises_like_cpu(build, f32, torch.ones(4))  # shapes that do not broadcast
    raises_like_cpu(lambda x, y: build(x, y, out=torch.empty(3, dtype=torch.complex128)), f32, f32)
    with pytest.raises(RuntimeError, match="same device"):
        build(f32.to(DEV), f32)
    # The process stays usable after each error.
    check(build, f32, f32)


def frexp_edges(dtype: torch.dtype) -> torch.Tensor:
    """Zeros, infinities, NaN, the extremes, subnormals and exact powers of two of dtype."""
    fi = torch.finfo(dtype)
    edges = [0.0, -0.0, float("inf"), -float("inf"), float("nan"), fi.max, -fi.max, fi.tiny]
    edges += [fi.tiny / 2, -fi.tiny / 8, fi.tiny * 0.75, 1.0, 0.5, -0.75, 3.0, 2.0**-3]
    return torch.tensor(edges, dtype=torch.float64).to(dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_frexp_matches_cpu(dtype: torch.dtype, eager_mode: str) -> None:
    wide = (make((200,), torch.float64, seed=9) * 1e3).to(dtype)
    x = torch.cat([wide, frexp_edges(dtype)])
    mantissa, exponent = check(lambda t: tuple(torch.frexp(t)), x)
    numbers = ~x.isnan()  # a NaN's sign bit is not part of its value
    want = torch.frexp(x).mantissa
    assert torch.equal(torch.signbit(mantissa.cpu()[numbers]), torch.signbit(want[numbers]))
    check(lambda t: tuple(torch.frexp(t)), make((6, 5), dtype, seed=10).t())  # strided


def test_frexp_out_and_gradient(eager_mode: str) -> None:
    x = make((4, 3), torch.float32, seed=11)
    want = torch.frexp(x)
    mantissa = torch.empty(0, device=DEV)
    exponent = torch.empty(0, dtype=torch.int32, device=DEV)
    got = torch.frexp(x.to(DEV), out=(mantissa, exponent))
    assert got.mantissa is mantissa and got.exponent is exponent
    torch.testing.assert_close(mantissa.cpu(), want.mantissa, rtol=0, atol=0)
    torch.testing.assert_close(exponent.cpu(), want.exponent, rtol=0, atol=0)
    grads(lambda t: torch.frexp(t).mantissa, x)


def test_frexp_errors_like_cpu(eager_mode: str) -> None:
    x = torch.ones(3)
    raises_like_cpu(torch.frexp, x.int())
    raises_like_cpu(lambda t: torch.frexp(t, out=(torch.empty(3), torch.empty(3))), x)
    raises_like_cpu(
        lambda t: torch.frexp(t, out=(torch.empty(3).double(), torch.empty(3).int())), x
    )
    check(lambda t: tuple(torch.frexp(t)), x)  # the process stays usable
