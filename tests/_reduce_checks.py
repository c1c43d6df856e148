"""Checks shared by the reduce and norm families' tests: run a function on CPU inputs and on their
tpu copies, and compare outputs (values, dtype, shape, strides) with CPU, their metadata with the
meta device, and that the tpu run never fell back to the CPU."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import torch
from _dtypes import COMPUTABLE_DTYPES

DEV = "tpu"
# make pytest-pjrt runs these tests on the PJRT driver.
PJRT = os.environ.get("TORCH_TPU_DRIVER") == "pjrt"

REAL_DTYPES = [d for d in COMPUTABLE_DTYPES if not d.is_complex]
FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
COMPLEX_DTYPES = [torch.complex64, torch.complex128]
ALL_DTYPES = REAL_DTYPES + COMPLEX_DTYPES


def make(shape: Sequence[int], dtype: torch.dtype, seed: int = 0, low: float = -3) -> torch.Tensor:
    """A CPU tensor of `dtype` with values that mean something for it: small integers (with zeros
    and repeats, so counts and ties occur), signed floats, 0/1 for bool."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(tuple(shape), generator=g) > 0.5
    if dtype.is_floating_point or dtype.is_complex:
        return (torch.randn(tuple(shape), generator=g, dtype=torch.float64) * 2).to(dtype)
    lo = 0 if dtype == torch.uint8 else int(low)
    return torch.randint(lo, 10, tuple(shape), generator=g).to(dtype)


def tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in tensors(v)]
    return []


def move(value: Any, device: str) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (tuple, list)):
        return type(value)(move(v, device) for v in value)
    return value


def check(
    fn: Callable[..., Any],
    *args: Any,
    rtol: float | None = None,
    atol: float | None = None,
    meta: bool = True,
    strides: bool = True,
) -> Any:
    """fn(*args) on CPU and on tpu copies of the tensor arguments: same dtypes, shapes, strides
    and values (NaN equal), nothing fell back, and (with `meta`) the meta device's metadata."""
    want = fn(*args)
    torch.tpu.reset_op_stats()
    got = fn(*move(args, DEV))
    torch.tpu.synchronize()
    assert torch.tpu.fallback_stats() == {}, torch.tpu.fallback_stats()
    expected, results = tensors(want), tensors(got)
    assert len(expected) == len(results)
    for w, r in zip(expected, results, strict=True):
        assert r.device.type == DEV
        assert r.dtype == w.dtype and r.shape == w.shape, (r.dtype, r.shape, w.dtype, w.shape)
        if strides:
            assert r.stride() == w.stride(), (r.stride(), w.stride())
        torch.testing.assert_close(r.cpu(), w, rtol=rtol, atol=atol, equal_nan=True)
    if meta:
        on_meta = tensors(fn(*move(args, "meta")))
        for m, r in zip(on_meta, results, strict=True):
            assert (r.shape, r.stride(), r.dtype) == (m.shape, m.stride(), m.dtype)
    return got


def raises_like_cpu(fn: Callable[..., Any], *args: Any) -> None:
    """fn raises on tpu the exception type it raises on CPU."""
    try:
        fn(*args)
    except Exception as e:
        cpu_type = type(e)
    else:
        raise AssertionError("expected the CPU call to raise")
    try:
        fn(*move(args, DEV))
        torch.tpu.synchronize()
    except Exception as e:
        assert isinstance(e, cpu_type), (type(e), cpu_type, e)
    else:
        raise AssertionError(f"tpu did not raise (CPU raises {cpu_type.__name__})")


def grads(
    fn: Callable[..., torch.Tensor],
    *args: torch.Tensor,
    rtol: float | None = None,
    atol: float | None = None,
) -> None:
    """Gradients of fn with respect to every floating argument, on CPU and tpu, are close."""

    def run(device: str) -> list[torch.Tensor]:
        leaves = [a.detach().to(device).requires_grad_(a.is_floating_point()) for a in args]
        out = fn(*leaves)
        seed = torch.Generator().manual_seed(7)
        g = torch.randn(out.shape, generator=seed, dtype=torch.float64).to(out.dtype)
        wrt = [x for x in leaves if x.requires_grad]
        return [t.cpu() for t in torch.autograd.grad(out, wrt, g.to(device))]

    for c, t in zip(run("cpu"), run(DEV), strict=True):
        assert c.dtype == t.dtype and c.shape == t.shape
        torch.testing.assert_close(t, c, rtol=rtol, atol=atol, equal_nan=True)


def tied(shape: tuple[int, ...], dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    """Values with many ties; floats also with NaN, infinities and both zeros."""
    x = make(shape, dtype, seed)
    if not dtype.is_floating_point:
        return x
    g = torch.Generator().manual_seed(seed + 1)
    x = x.double().round().to(dtype)
    specials = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 0.0], dtype=dtype)
    pick = torch.randint(0, 12, shape, generator=g)
    return torch.where(pick < 5, specials[pick.clamp(max=4)], x)


def distinct(shape: tuple[int, ...], dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    """Distinct integers around 0, exact in `dtype` (int8 and bfloat16: up to 240 elements)."""
    g = torch.Generator().manual_seed(seed)
    n = torch.Size(shape).numel()
    return (torch.randperm(n, generator=g) - n // 2).reshape(shape).to(dtype)
