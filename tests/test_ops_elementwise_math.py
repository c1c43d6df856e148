"""The elementwise math ops on tpu against PyTorch CPU: acosh, asinh, atanh, sinc, angle, sgn,
signbit, logaddexp(2), fmax, fmin, hypot, nextafter, heaviside, xlogy, xlog1py, entr, lgamma,
digamma, polygamma, mvlgamma, zeta, the i0 family, ndtri, log_ndtr, erfcx, igamma and igammac, in
the dtypes CPU takes, with NaN, infinities, signed zeros, poles, empty and non-contiguous inputs,
in-place and out=; CPU's errors; gradients (composites of these ops); and that each runs natively,
with no call through the CPU fallback or the driver's fallback.

Tolerances: the special functions compute float32 and narrower in double and round once, where
CPU computes float in float, so float32 results differ by a few units in the last place; float64
by the rounding of different (equally accurate) expansions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from _reduce_checks import DEV, PJRT, move, raises_like_cpu, tensors

FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
NO_HALF = [torch.float32, torch.float64]
INTS = [torch.uint8, torch.int32, torch.int64, torch.bool]

SPECIALS = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5]


def tol(dtype: torch.dtype) -> dict[str, float]:
    return {
        torch.float64: {"rtol": 1e-9, "atol": 1e-12},
        torch.float32: {"rtol": 2e-5, "atol": 1e-6},
        torch.bfloat16: {"rtol": 1.6e-2, "atol": 1e-3},
        torch.float16: {"rtol": 2e-3, "atol": 1e-4},
    }.get(dtype, {"rtol": 0.0, "atol": 0.0})


def values(
    shape: tuple[int, ...], dtype: torch.dtype, scale: float = 3.0, seed: int = 0
) -> torch.Tensor:
    """Signed values with the special ones mixed in (floats), small integers otherwise."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(*shape, generator=g) > 0.5
    if not dtype.is_floating_point:
        lo = 0 if dtype == torch.uint8 else -5
        return torch.randint(lo, 6, shape, generator=g).to(dtype)
    x = torch.randn(*shape, generator=g, dtype=torch.float64) * scale
    flat = x.view(-1)
    n = min(len(SPECIALS), flat.numel() // 3)
    flat[:n] = torch.tensor(SPECIALS[:n], dtype=torch.float64)
    return x.to(dtype)


def on_device(fn: Callable[..., Any], *args: Any, driver_fallback: bool = False) -> Any:
    torch.tpu.reset_op_stats()
    got = fn(*move(args, DEV))
    torch.tpu.synchronize()
    stats = torch.tpu.op_stats()
    assert stats["fallback"] == {}, stats["fallback"]
    if not driver_fallback:
        assert stats["driver_fallback"] == {}, stats["driver_fallback"]
    return got


def check(
    fn: Callable[..., Any],
    *args: Any,
    rtol: float | None = None,
    atol: float | None = None,
    driver_fallback: bool = False,
) -> None:
    want = fn(*args)
    got = on_device(fn, *args, driver_fallback=driver_fallback)
    for r, w in zip(tensors(got), tensors(want), strict=True):
        assert r.device.type == DEV
        assert (r.dtype, r.shape, r.stride()) == (w.dtype, w.shape, w.stride())
        kw = tol(w.dtype) if rtol is None else {"rtol": rtol, "atol": atol}
        torch.testing.assert_close(r.cpu(), w, equal_nan=True, **kw)


UNARY: dict[str, tuple[Callable[..., Any], list[torch.dtype]]] = {
    "acosh": (torch.acosh, FLOATS + INTS),
    "asinh": (torch.asinh, FLOATS + INTS),
    "atanh": (torch.atanh, FLOATS + INTS),
    "sinc": (torch.sinc, FLOATS + INTS),
    "angle": (torch.angle, FLOATS + INTS),
    "sgn": (torch.sgn, FLOATS + INTS),
    "signbit": (torch.signbit, FLOATS + INTS),
    "lgamma": (torch.lgamma, FLOATS + INTS),
    "digamma": (torch.digamma, FLOATS + INTS),
    "trigamma": (lambda x: torch.polygamma(1, x), FLOATS),
    "polygamma3": (lambda x: torch.polygamma(3, x), FLOATS),
    "i0": (torch.i0, FLOATS + INTS),
    "i0e": (torch.special.i0e, FLOATS),
    "i1": (torch.special.i1, FLOATS),
    "i1e": (torch.special.i1e, FLOATS + INTS),
    "entr": (torch.special.entr, FLOATS + INTS),
    "ndtri": (torch.special.ndtri, NO_HALF),
    "log_ndtr": (torch.special.log_ndtr, NO_HALF),
    "erfcx": (torch.special.erfcx, NO_HALF + [torch.int32]),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(eager_mode: str, name: str) -> None:
    fn, dtypes = UNARY[name]
    for dtype in dtypes:
        scale = 0.4 if name == "ndtri" else 3.0
        x = values((7, 11), dtype, scale=scale)
        if name == "ndtri" and dtype.is_floating_point:
            x = x.abs()
        if name.startswith("trigamma") or name.startswith("polygamma"):
            x = torch.where(x.double().frac() == 0, x + 0.25, x)  # CPU's float poles are noise
        # CPU's float polygamma loses digits near the poles that the kernel keeps.
        kw = {"rtol": 1e-4, "atol": 1e-5} if "gamma" in name and dtype == torch.float32 else {}
        check(fn, x, **kw)
        check(fn, x.t(), **kw)  # non-contiguous
        check(fn, x[:, ::2], **kw)
        check(fn, x[:0])  # empty


def test_special_ranges(eager_mode: str) -> None:
    """The asymptotic ranges of the Bessel functions and erfcx, and ndtri's tails."""
    big = torch.linspace(-720, 720, 301, dtype=torch.float64)
    for fn in (torch.i0, torch.special.i0e, torch.special.i1, torch.special.i1e):
        check(fn, big)
        # CPU's float i0 and i1 overflow in exp(|x|) past 88 where the result still fits (the
        # kernel gives the float64 result rounded there): compared below that.
        check(fn, big[big.abs() < 88].float())
    check(torch.special.erfcx, torch.linspace(-30, 1e5, 301, dtype=torch.float64))
    check(torch.special.log_ndtr, torch.linspace(-200, 40, 301, dtype=torch.float64))
    p = torch.logspace(-300, -1, 200, dtype=torch.float64)
    check(torch.special.ndtri, torch.cat([p, 1 - p, torch.tensor([0.0, 1.0, 0.5, -1, 2])]))
    x = torch.cat([torch.arange(-4, 1, dtype=torch.float64), torch.linspace(0.01, 50, 97)])
    check(torch.digamma, x)
    check(torch.lgamma, x)
    for n in range(5):
        check(lambda t, n=n: torch.polygamma(n, t), torch.linspace(-3.75, 40, 160))


BINARY: dict[str, tuple[Callable[..., Any], list[torch.dtype]]] = {
    "logaddexp": (torch.logaddexp, FLOATS),
    "logaddexp2": (torch.logaddexp2, FLOATS),
    "fmax": (torch.fmax, FLOATS + INTS),
    "fmin": (torch.fmin, FLOATS + INTS),
    "hypot": (torch.hypot, FLOATS),
    "nextafter": (torch.nextafter, FLOATS),
    "heaviside": (torch.heaviside, FLOATS + INTS),
    "xlogy": (torch.xlogy, FLOATS + INTS),
    "xlog1py": (torch.special.xlog1py, FLOATS + INTS),
    "zeta": (torch.special.zeta, NO_HALF),
    "igamma": (torch.igamma, FLOATS),
    "igammac": (torch.igammac, FLOATS),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(eager_mode: str, name: str) -> None:
    fn, dtypes = BINARY[name]
    lowered = not (PJRT and name.startswith("igamma"))
    for dtype in dtypes:
        a, b = values((6, 9), dtype, seed=1), values((6, 9), dtype, seed=2)
        if name in ("zeta", "igamma", "igammac") and dtype.is_floating_point:
            a, b = a.abs() + (1 if name == "zeta" else 0), b.abs()
        if name == "heaviside" and dtype.is_floating_point:
            a[0, :3] = 0
        check(fn, a, b, driver_fallback=not lowered)
        check(fn, a.t(), b.t().contiguous(), driver_fallback=not lowered)
        check(fn, a, b[:1], driver_fallback=not lowered)  # broadcast
        check(fn, a[:0], b[:0], driver_fallback=not lowered)
        if dtype.is_floating_point:
            scalar = b[0, 0] if name == "heaviside" else torch.tensor(2.5, dtype=dtype)
            check(fn, a, scalar, driver_fallback=not lowered)  # a 0-d operand


def test_in_place_and_out(eager_mode: str) -> None:
    a, b = values((5, 8), torch.float32, seed=3), values((5, 8), torch.float32, seed=4)
    check(lambda x, y: x.clone().hypot_(y), a, b)
    check(lambda x, y: x.clone().nextafter_(y), a, b)
    check(lambda x, y: x.clone().xlogy_(y), a, b)
    check(lambda x: x.clone().lgamma_(), a)
    check(lambda x: x.clone().digamma_(), a)
    check(lambda x: x.clone().polygamma_(2), a.abs() + 0.5)
    check(lambda x: x.clone().sinc_(), a)
    check(lambda x: x.clone().i0_(), a)
    check(lambda x, y: torch.logaddexp(x, y, out=torch.empty(0, device=x.device)), a, b)
    check(lambda x: torch.special.erfcx(x, out=torch.empty(0, device=x.device)), a)
    check(lambda x: torch.angle(x, out=torch.empty(0, device=x.device)), a)
    check(lambda x: torch.polygamma(1, x, out=torch.empty(0, device=x.device)), a.abs() + 0.5)
    check(lambda x: torch.signbit(x, out=torch.empty(0, dtype=torch.bool, device=x.device)), a)
    check(lambda x: torch.mvlgamma(x, 3, out=torch.empty(0, device=x.device)), a.abs() + 2)


def test_mvlgamma_and_kl_div(eager_mode: str) -> None:
    x = values((4, 6), torch.float32).abs() + 2.5
    for p in (1, 3, 5):
        check(lambda t, p=p: torch.mvlgamma(t, p), x)
    inp = torch.log_softmax(values((4, 6), torch.float32, seed=5).nan_to_num(0), -1)
    target = torch.softmax(values((4, 6), torch.float32, seed=6).nan_to_num(0), -1)
    target[0, 0] = 0
    for reduction in ("batchmean", "sum", "none"):
        check(lambda i, t, r=reduction: torch.nn.functional.kl_div(i, t, reduction=r), inp, target)


def grads(
    fn: Callable[..., torch.Tensor], *args: torch.Tensor, rtol: float = 1e-4, atol: float = 1e-5
) -> None:
    """Gradients on CPU and natively on tpu are close."""

    def run(device: str) -> list[torch.Tensor]:
        leaves = [a.detach().to(device).requires_grad_(True) for a in args]
        out = fn(*leaves)
        g = torch.randn(out.shape, generator=torch.Generator().manual_seed(7)).to(device)
        return [t.cpu() for t in torch.autograd.grad(out, leaves, g)]

    want = run("cpu")
    torch.tpu.reset_op_stats()
    got = run(DEV)
    torch.tpu.synchronize()
    assert torch.tpu.op_stats()["fallback"] == {}, torch.tpu.op_stats()["fallback"]
    for c, t in zip(want, got, strict=True):
        torch.testing.assert_close(t, c, rtol=rtol, atol=atol, equal_nan=True)


def test_gradients(eager_mode: str) -> None:
    x = torch.rand(5, 7) * 3 + 1.2
    y = torch.rand(5, 7) * 3 + 0.1
    for fn in (
        torch.lgamma,
        torch.digamma,
        torch.acosh,
        torch.asinh,
        torch.sinc,
        torch.i0,
        torch.special.i0e,
        torch.special.i1,
        torch.special.i1e,
        torch.special.ndtri,
        torch.special.log_ndtr,
        torch.special.erfcx,
        torch.special.entr,
        lambda t: torch.polygamma(2, t),
        lambda t: torch.mvlgamma(t, 3),
    ):
        grads(fn, x if fn is not torch.special.ndtri else x / 5)
    grads(torch.atanh, x / 5)
    for fn in (
        torch.logaddexp,
        torch.logaddexp2,
        torch.hypot,
        torch.xlogy,
        torch.special.xlog1py,
        torch.fmax,
        torch.fmin,
    ):
        grads(fn, x, y)


def test_errors() -> None:
    x = torch.ones(4)
    raises_like_cpu(lambda t: torch.special.ndtri(t), x.bfloat16())
    raises_like_cpu(lambda t: torch.special.zeta(t, t), x.half())
    raises_like_cpu(lambda t: torch.hypot(t, t), x.int())
    raises_like_cpu(lambda t: torch.logaddexp(t, t), x.long())
    raises_like_cpu(lambda t: torch.nextafter(t, t), x.int())
    raises_like_cpu(lambda t: torch.igamma(t, t), x.int())
    raises_like_cpu(lambda t: torch.heaviside(t, t.double()), x)
    raises_like_cpu(lambda t: torch.polygamma(-1, t), x)
    raises_like_cpu(lambda t: torch.signbit(t, out=torch.empty(4, device=t.device)), x)
    with pytest.raises(NotImplementedError, match="\"ndtri_cpu\" not implemented for 'BFloat16'"):
        torch.special.ndtri(x.bfloat16().to(DEV))
