"""The CPU fallback's host mirror (csrc/torch/ops/TpuHostMirror.h): the CPU kernel sees the
arguments as it would on the host, with their layouts (linalg.det chooses its factorization by
the input's layout, and its backward reads that layout again), their aliasing (a tensor passed
twice, an out= that overlaps an input: CPU's overlap checks refuse what they refuse on CPU) and
their math bits, in every eager mode (issue 38)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from _edge_helpers import quiet, sample

DEV = "tpu"


def strided(t: torch.Tensor, layout: str) -> torch.Tensor:
    """`t`'s values in another layout on its device: every other column of a wider tensor, the
    transpose of a contiguous one, or contiguous."""
    if layout == "step":
        wide = torch.zeros(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype, device=t.device)
        return wide[..., ::2].copy_(t)
    if layout == "transposed":
        return t.mT.contiguous().mT
    return t.contiguous()


DET_OPS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "det": torch.linalg.det,
    "slogdet": lambda a: torch.linalg.slogdet(a)[1],
    "logdet": lambda a: (
        a @ a.mT + torch.eye(a.shape[-1], dtype=a.dtype, device=a.device)
    ).logdet(),
}


@pytest.mark.parametrize("op", DET_OPS)
@pytest.mark.parametrize("layout", ["contiguous", "step", "transposed"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128], ids=str)
def test_determinants_and_gradients_in_every_layout(
    eager_mode: str, op: str, layout: str, dtype: torch.dtype
) -> None:
    a = sample(3, 5, 5, dtype=dtype)
    results = []
    for dev in ("cpu", DEV):
        x = strided(a.to(dev), layout).requires_grad_()
        y = quiet(lambda: DET_OPS[op](x))  # noqa: B023 (called at once)
        (grad,) = quiet(lambda: torch.autograd.grad(y.abs().sum(), x))  # noqa: B023
        results.append((y, grad))
    (cy, cg), (ty, tg) = results
    torch.testing.assert_close(ty.cpu(), cy.detach(), rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(tg.cpu(), cg, rtol=1e-9, atol=1e-9)


def test_outputs_keep_the_layout_the_cpu_kernel_gives(eager_mode: str) -> None:
    """An F-contiguous out= stays F-contiguous and is written in place."""
    a = sample(4, 4, dtype=torch.float64)
    for dev in ("cpu", DEV):
        lu = torch.empty(4, 4, dtype=a.dtype, device=dev).mT
        pivots = torch.empty(4, dtype=torch.int32, device=dev)
        ptr = lu.data_ptr()
        quiet(lambda: torch.linalg.lu_factor(a.to(dev), out=(lu, pivots)))  # noqa: B023
        assert lu.stride() == (1, 4) and lu.data_ptr() == ptr
        if dev == "cpu":
            expected = lu
    torch.testing.assert_close(lu.cpu(), expected)


OVERLAPPING_OUT: dict[str, Callable[[torch.Tensor], object]] = {
    "take": lambda x: torch.take(x, torch.tensor([0, 2, 4], device=x.device), out=x[:3]),
    "take_same": lambda x: torch.take(x, torch.tensor([0, 1, 2, 3, 4, 5], device=x.device), out=x),
    "kthvalue": lambda x: torch.kthvalue(
        x, 2, out=(x, torch.empty(0, dtype=torch.long, device=x.device))
    ),
    "cross": lambda x: torch.linalg.cross(x[:3], x[3:], out=x[:3]),
    "empty_take": lambda x: (lambda e: torch.take(e, e.long(), out=e))(x[:0]),
}


@pytest.mark.parametrize("op", OVERLAPPING_OUT)
def test_out_overlapping_an_input_is_refused_as_on_cpu(eager_mode: str, op: str) -> None:
    x = sample(6, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="unsupported operation"):
        OVERLAPPING_OUT[op](x.clone())
    t = x.to(DEV)
    with pytest.raises(RuntimeError, match="unsupported operation"):
        quiet(lambda: OVERLAPPING_OUT[op](t))
    torch.tpu.synchronize()
    assert torch.equal(t.cpu(), x)  # nothing written, the process usable


ALIASED: dict[str, Callable[[torch.Tensor], object]] = {
    "same_tensor_twice": lambda t: t.copy_(torch.linalg.lstsq(t, t).solution),
    "out_is_an_input": lambda t: torch.linalg.pinv(t, out=t),
    "out_is_a_row_of_the_input": lambda t: torch.linalg.svdvals(t, out=t[0]),
    "out_overlaps_a_transpose": lambda t: torch.linalg.pinv(t.t(), out=t),
}


@pytest.mark.parametrize("op", ALIASED)
def test_aliased_arguments_compute_or_raise_as_on_cpu(eager_mode: str, op: str) -> None:
    """Arguments sharing memory share it on the host too: CPU's kernel computes in place or
    refuses the overlap, exactly as it does on CPU."""
    x = sample(5, 5, dtype=torch.float64)
    results = []
    for dev in ("cpu", DEV):
        t = x.clone().to(dev)
        torch.tpu.reset_op_stats()
        try:
            quiet(lambda: ALIASED[op](t))  # noqa: B023 (called at once)
            results.append(t.cpu())
        except RuntimeError as e:
            results.append(str(e))
    assert torch.tpu.fallback_stats(), "the op ran natively: it does not test the fallback"
    if isinstance(results[0], str):
        assert results[1] == results[0]
        assert "unsupported operation" in results[0]
    else:
        torch.testing.assert_close(results[1], results[0], equal_nan=True)


def test_math_bits_reach_the_cpu_kernel(eager_mode: str) -> None:
    """Ops PyTorch lets through with the conjugate bit set (linalg.vector_norm) and with a
    conjugate out= see what they would on CPU."""
    z = sample(4, 3, dtype=torch.complex128)
    expected = torch.linalg.vector_norm(z.conj(), dim=0)
    got = quiet(lambda: torch.linalg.vector_norm(z.to(DEV).conj(), dim=0))
    torch.testing.assert_close(got.cpu(), expected)
    out_cpu = torch.zeros(4, 3, dtype=z.dtype).conj()
    torch.sgn(z, out=out_cpu)
    out = torch.zeros(4, 3, dtype=z.dtype, device=DEV).conj()
    quiet(lambda: torch.sgn(z.to(DEV), out=out))
    assert out.is_conj()
    torch.testing.assert_close(out.cpu().resolve_conj(), out_cpu.resolve_conj())


@pytest.mark.parametrize("shape", [(), (3,)])
def test_a_host_out_is_refused(eager_mode: str, shape: tuple[int, ...]) -> None:
    """A CPU tensor is never a destination of a tpu op, 0-d ones included (those are scalar
    operands only when read)."""
    x = sample(3, dtype=torch.float64).to(DEV)
    out = torch.zeros(shape, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="same device|Expected out tensor"):
        quiet(lambda: torch.special.erfcx(x, out=out))
    assert torch.equal(out, torch.zeros(shape, dtype=torch.float64))
    got = quiet(lambda: torch.special.erfcx(x, out=torch.empty(0, dtype=x.dtype, device=DEV)))
    torch.testing.assert_close(got.cpu(), torch.special.erfcx(x.cpu()))
