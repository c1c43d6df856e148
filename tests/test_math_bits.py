"""Conjugate and negative views (PyTorch's lazy math bits) on tpu, in every eager mode: read by
native and fallback ops, written in place (through PyTorch's Conjugate and Negative fallbacks,
whose write-back is a copy_ into the view), copied between devices and dtypes, and given as the
output of the matmuls PyTorch lets through with the bit set. Every result equals CPU's, bits
included; nothing crashes (issue 38: an in-place op on a conjugate view killed the process)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from _edge_helpers import quiet, sample

DEV = "tpu"


def complex_sample(
    *shape: int, seed: int = 0, dtype: torch.dtype = torch.complex64
) -> torch.Tensor:
    return sample(*shape, seed=seed, dtype=dtype)


def real_sample(*shape: int, seed: int = 0) -> torch.Tensor:
    return sample(*shape, seed=seed)


def assert_same(
    actual: torch.Tensor, expected: torch.Tensor, atol: float = 0.0, rtol: float = 0.0
) -> None:
    """Values (as the bits make them), math bits, dtype, shape and strides."""
    assert actual.device.type == "tpu"
    assert (actual.is_conj(), actual.is_neg()) == (expected.is_conj(), expected.is_neg())
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    assert actual.stride() == expected.stride()
    got = actual.cpu().resolve_conj().resolve_neg()
    torch.testing.assert_close(got, expected.resolve_conj().resolve_neg(), rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------------------------
# In-place ops on math views: the Conjugate/Negative fallback clones the view, runs the op on the
# clone and copy_s the result back into the view.

INPLACE: dict[str, Callable[[torch.Tensor, torch.Tensor], object]] = {
    "fill_": lambda v, o: v.fill_(1.5),
    "zero_": lambda v, o: v.zero_(),
    "add_": lambda v, o: v.add_(o),
    "mul_scalar_": lambda v, o: v.mul_(2),
    "copy_": lambda v, o: v.copy_(o),
    "copy_conj": lambda v, o: v.copy_(o.conj()),
    "neg_": lambda v, o: v.neg_(),
    "exp_": lambda v, o: v.exp_(),
    "conj_physical_": lambda v, o: v.conj_physical_(),
    "index_fill_": lambda v, o: v.index_fill_(0, torch.tensor([1], device=v.device), 2.0),
}
# exp's vectorized kernel is within 3 ulp of libm (README "Native ops"); the others are exact.
INPLACE_RTOL = {"exp_": 4 * torch.finfo(torch.float32).eps}


@pytest.mark.parametrize("op", INPLACE)
def test_inplace_on_conjugate_view(eager_mode: str, op: str) -> None:
    base, other = complex_sample(3, 4), complex_sample(3, 4, seed=1)
    results = []
    for dev in ("cpu", DEV):
        b = base.clone().to(dev)
        view = b.conj()
        quiet(lambda: INPLACE[op](view, other.to(dev)))  # noqa: B023 (called at once)
        results.append((b, view))
    (cb, cv), (tb, tv) = results
    assert_same(tv, cv, rtol=INPLACE_RTOL.get(op, 0.0))
    assert_same(tb, cb, rtol=INPLACE_RTOL.get(op, 0.0))


@pytest.mark.parametrize("op", INPLACE)
@pytest.mark.parametrize("kind", ["real", "complex"])
def test_inplace_on_negative_view(eager_mode: str, op: str, kind: str) -> None:
    if op in ("copy_conj", "conj_physical_") and kind == "real":
        pytest.skip("conjugation of a real tensor is the identity")
    sample = real_sample if kind == "real" else complex_sample
    base, other = sample(3, 4), sample(3, 4, seed=1)
    results = []
    for dev in ("cpu", DEV):
        b = base.clone().to(dev)
        view = b._neg_view()
        quiet(lambda: INPLACE[op](view, other.to(dev)))  # noqa: B023
        results.append((b, view))
    (cb, cv), (tb, tv) = results
    assert_same(tv, cv, rtol=INPLACE_RTOL.get(op, 0.0))
    assert_same(tb, cb, rtol=INPLACE_RTOL.get(op, 0.0))


def test_inplace_on_imaginary_part_of_conjugate(eager_mode: str) -> None:
    """x.conj().imag is a real view with the negative bit: writing it writes x's imaginary
    parts negated."""
    base = complex_sample(4, 3)
    results = []
    for dev in ("cpu", DEV):
        b = base.clone().to(dev)
        imag = b.conj().imag
        assert imag.is_neg()
        imag.add_(1.0).mul_(3)
        results.append((b, imag))
    (cb, ci), (tb, ti) = results
    assert_same(ti, ci)
    assert_same(tb, cb)


def test_inplace_on_conjugate_view_of_a_slice(eager_mode: str) -> None:
    """The write-back lands in the view's elements only, through its strides."""
    base = complex_sample(4, 6)
    results = []
    for dev in ("cpu", DEV):
        b = base.clone().to(dev)
        b[1:, ::2].conj().mul_(complex(0.5, 2.0))
        b.t()[::3].conj().fill_(complex(1.0, -1.0))
        results.append(b)
    assert_same(results[1], results[0])


# ---------------------------------------------------------------------------------------------
# Copies: values keep their meaning whatever bits source and destination carry.


@pytest.mark.parametrize("src_bit", ["plain", "conj", "neg"])
@pytest.mark.parametrize("dst_bit", ["plain", "conj", "neg"])
@pytest.mark.parametrize("route", ["tpu->tpu", "cpu->tpu", "tpu->cpu", "tpu->tpu c128"])
def test_copy_between_math_views(eager_mode: str, src_bit: str, dst_bit: str, route: str) -> None:
    def bit(t: torch.Tensor, kind: str) -> torch.Tensor:
        return t.conj() if kind == "conj" else t._neg_view() if kind == "neg" else t

    src_dev, dst_dev = route.split()[0].split("->")
    dst_dtype = torch.complex128 if route.endswith("c128") else torch.complex64
    src_host, dst_host = complex_sample(3, 5), complex_sample(3, 5, seed=2, dtype=dst_dtype)
    expected_dst = dst_host.clone()
    bit(expected_dst, dst_bit).copy_(bit(src_host, src_bit))
    dst = dst_host.clone().to(dst_dev)
    bit(dst, dst_bit).copy_(bit(src_host.to(src_dev), src_bit))
    torch.tpu.synchronize()
    assert torch.equal(dst.cpu(), expected_dst)


def test_copy_of_negative_view_to_a_storage_only_dtype(eager_mode: str) -> None:
    """Conversions the chip cannot make go through the host: the bit is applied once."""
    base = real_sample(6).abs() * 10
    expected = base._neg_view().neg().to(torch.uint16)
    got = base.to(DEV)._neg_view().neg().to(torch.uint16)
    assert torch.equal(got.cpu(), expected)
    host = torch.empty(6, dtype=torch.uint16)
    host.copy_(base.to(DEV)._neg_view().neg())
    assert torch.equal(host, expected)


@pytest.mark.parametrize("dst", [torch.bfloat16, torch.float32, torch.int64, torch.bool], ids=str)
@pytest.mark.parametrize("bit", ["conj", "neg"])
def test_copy_of_math_view_into_real_dtypes(eager_mode: str, dst: torch.dtype, bit: str) -> None:
    """A conjugate's real part is the stored one; a negative view negates. CPU negates the
    destination after a raw copy, so it refuses a bool destination of a negative view."""
    src = torch.tensor([complex(0.5, -3.0), complex(-2.0, 1.0), complex(0.0, 0.0)])
    if bit == "neg":
        src = src.real.contiguous()
    results = []
    for dev in ("cpu", DEV):
        d = torch.zeros(3, dtype=dst, device=dev)
        s = src.to(dev)
        view = s.conj() if bit == "conj" else s._neg_view()
        try:
            d.copy_(view)
            results.append(d.cpu())
        except NotImplementedError as e:
            results.append(type(e))
    if isinstance(results[0], type):
        assert results[1] is results[0]
    else:
        assert torch.equal(results[1], results[0])


# ---------------------------------------------------------------------------------------------
# Reading math views: native kernels and the CPU fallback see the values the bits give.

READS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "sum": lambda v: v.sum(0),
    "mul": lambda v: v * 2,
    "abs": torch.abs,
    "clone": torch.clone,
    "contiguous_t": lambda v: v.t().contiguous(),
    "resolve": lambda v: v.resolve_conj().resolve_neg(),
    "matmul": lambda v: v @ v.t(),
    "cumsum": lambda v: v.cumsum(1),
}


@pytest.mark.parametrize("op", READS)
@pytest.mark.parametrize("bit", ["conj", "neg", "conj_neg"])
def test_reading_math_views(eager_mode: str, op: str, bit: str) -> None:
    base = complex_sample(4, 4)

    def view(t: torch.Tensor) -> torch.Tensor:
        t = t.conj() if "conj" in bit else t
        return t._neg_view() if "neg" in bit else t

    expected = READS[op](view(base))
    got = quiet(lambda: READS[op](view(base.to(DEV))))
    assert_same(got, expected, atol=1e-5)


DOTS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "dot_conj_conj": lambda a, b: torch.dot(a.conj(), b.conj()),
    "dot_conj_plain": lambda a, b: torch.dot(a.conj(), b),
    "vdot_plain_conj": lambda a, b: torch.vdot(a, b.conj()),
    "vdot_conj_conj": lambda a, b: torch.vdot(a.conj(), b.conj()),
}


@pytest.mark.parametrize("op", DOTS)
def test_dot_of_conjugate_views_returns_cudas_bits(eager_mode: str, op: str) -> None:
    """Where both factors end up conjugated, dot and vdot return the conjugate view of the plain
    product, as CPU and CUDA do."""
    a, b = complex_sample(5), complex_sample(5, seed=1)
    assert_same(DOTS[op](a.to(DEV), b.to(DEV)), DOTS[op](a, b), atol=1e-5)


# ---------------------------------------------------------------------------------------------
# Matmuls into a conjugate out: PyTorch's Conjugate key lets mm, addmm, bmm and baddbmm through
# with the bit set (so kernels can read conjugated operands); the kernel writes stored values.

MATMUL_OUT: dict[str, Callable[[torch.Tensor, torch.Tensor, torch.Tensor], object]] = {
    "mm.out": lambda o, a, b: torch.mm(a[0], b[0], out=o[0]),
    "addmm.out": lambda o, a, b: torch.addmm(o[1], a[0], b[0], beta=0.5, alpha=2, out=o[0]),
    "addmm_": lambda o, a, b: o[0].addmm_(a[0], b[0], beta=0.5, alpha=2),
    "bmm.out": lambda o, a, b: torch.bmm(a, b, out=o),
    "baddbmm.out": lambda o, a, b: torch.baddbmm(o.clone(), a, b, alpha=2, out=o),
    "baddbmm_": lambda o, a, b: o.baddbmm_(a, b, beta=2, alpha=0.5),
    "baddbmm_k0": lambda o, a, b: o.baddbmm_(a[:, :, :0], b[:, :0], beta=2),
}


@pytest.mark.parametrize("op", MATMUL_OUT)
@pytest.mark.parametrize("conj_inputs", [False, True])
def test_matmul_into_conjugate_out(eager_mode: str, op: str, conj_inputs: bool) -> None:
    out, a, b = complex_sample(2, 3, 3), complex_sample(2, 3, 4, seed=1), complex_sample(2, 4, 3)
    results = []
    for dev in ("cpu", DEV):
        o = out.clone().to(dev).conj()
        x, y = a.to(dev), b.to(dev)
        if conj_inputs:
            x, y = x.conj(), y.conj()
        MATMUL_OUT[op](o, x, y)
        results.append(o)
    assert_same(results[1], results[0], atol=1e-5)
