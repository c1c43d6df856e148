"""Quantized matmuls on tpu against PyTorch CPU: torch._int_mm (int8 or uint8 @ int8 -> int32)
in every eager mode, on both drivers (make pytest-pjrt runs this file on PJRT): exact values,
dtype, shape and strides, the whole int8 range, transposed and strided operands, sizes that
leave partial register tiles and K not a multiple of 4, out=, empty sizes, CPU's errors, and no
fallback."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

DEV = "tpu"


def int8(*shape: int, seed: int, dtype: torch.dtype = torch.int8) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    low, high = (0, 256) if dtype == torch.uint8 else (-128, 128)
    return torch.randint(low, high, shape, generator=g, dtype=dtype)


def native(fn: Callable[[], torch.Tensor]) -> torch.Tensor:
    torch.tpu.reset_op_stats()
    out = fn()
    torch.tpu.synchronize()
    stats = torch.tpu.op_stats()
    assert stats["fallback"] == {} and stats["driver_fallback"] == {}, stats
    assert stats["native"].get("int_mm", 0) == 1, stats
    return out


def same(tpu: torch.Tensor, cpu: torch.Tensor) -> None:
    assert tpu.device.type == DEV
    assert tpu.dtype == cpu.dtype == torch.int32 and tpu.shape == cpu.shape
    assert tpu.stride() == cpu.stride()
    assert torch.equal(tpu.cpu(), cpu)


LAYOUTS = {
    "dense": lambda t: t,
    "transposed": lambda t: t.t().contiguous().t(),
    "strided": lambda t: torch.repeat_interleave(t, 2, dim=1)[:, ::2],
}


@pytest.mark.parametrize("b_layout", list(LAYOUTS))
@pytest.mark.parametrize("a_layout", list(LAYOUTS))
def test_int_mm_layouts(a_layout: str, b_layout: str, eager_mode: str) -> None:
    # 37 rows and 45 columns leave partial 12 x 32 tiles; K = 70 is not a multiple of 4.
    a, b = int8(37, 70, seed=1), int8(70, 45, seed=2)
    ta, tb = LAYOUTS[a_layout](a.to(DEV)), LAYOUTS[b_layout](b.to(DEV))
    assert torch.equal(ta.cpu(), a) and torch.equal(tb.cpu(), b)
    same(native(lambda: torch._int_mm(ta, tb)), torch._int_mm(a, b))


@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (17, 3, 9), (256, 1024, 384), (64, 4100, 33)])
def test_int_mm_sizes(m: int, k: int, n: int, eager_mode: str) -> None:
    # Large ones split over the threads; all hold the extremes: a row of -128 times a column of
    # -128 sums K * 16384 exactly.
    a, b = int8(m, k, seed=3), int8(k, n, seed=4)
    a[0], b[:, 0] = -128, -128
    same(native(lambda: torch._int_mm(a.to(DEV), b.to(DEV))), torch._int_mm(a, b))


def test_int_mm_uint8_self(eager_mode: str) -> None:
    # CPU takes a uint8 self (read unsigned); CUDA takes int8 only.
    a, b = int8(20, 40, seed=5, dtype=torch.uint8), int8(40, 50, seed=6)
    same(native(lambda: torch._int_mm(a.to(DEV), b.to(DEV))), torch._int_mm(a, b))


def test_int_mm_out_and_empty(eager_mode: str) -> None:
    a, b = int8(9, 16, seed=7), int8(16, 11, seed=8)
    out = torch.full((9, 11), 7, dtype=torch.int32, device=DEV)
    got = native(lambda: torch._int_mm(a.to(DEV), b.to(DEV), out=out))
    assert got.data_ptr() == out.data_ptr()
    same(out, torch._int_mm(a, b))
    for m, k, n in [(0, 4, 3), (3, 0, 5), (4, 8, 0)]:
        a, b = int8(m, k, seed=9), int8(k, n, seed=10)
        same(torch._int_mm(a.to(DEV), b.to(DEV)), torch._int_mm(a, b))


def test_int_mm_errors() -> None:
    i8, u8 = torch.int8, torch.uint8
    cases: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]] = [
        (int8(3, 4, seed=0), int8(5, 5, seed=0), None),
        (int8(2, 3, 4, seed=0), int8(4, 5, seed=0), None),
        (int8(3, 4, seed=0), int8(4, seed=0), None),
        (int8(3, 4, seed=0).short(), int8(4, 5, seed=0), None),
        (int8(3, 4, seed=0), int8(4, 5, seed=0, dtype=u8), None),
        (int8(3, 4, seed=0), int8(4, 5, seed=0), torch.empty(3, 5, dtype=torch.int64)),
        (int8(3, 4, seed=0), int8(4, 5, seed=0), torch.empty(0, dtype=torch.int32)),
        (int8(3, 4, seed=0), int8(4, 5, seed=0), torch.empty(3, 6, dtype=torch.int32)),
        (int8(3, 4, seed=0), int8(4, 5, seed=0), torch.empty(5, 3, dtype=torch.int32).t()),
    ]
    for a, b, out in cases:
        assert a.dtype in (i8, u8, torch.int16)
        kw = {} if out is None else {"out": out}
        with pytest.raises(Exception) as cpu_err:
            torch._int_mm(a, b, **kw)
        kw = {} if out is None else {"out": out.to(DEV)}
        with pytest.raises(cpu_err.type) as tpu_err:
            torch._int_mm(a.to(DEV), b.to(DEV), **kw)
        assert str(tpu_err.value) == str(cpu_err.value)
    with pytest.raises(RuntimeError, match="same device"):
        torch._int_mm(int8(3, 4, seed=0).to(DEV), int8(4, 5, seed=0))
    # The process stays usable.
    a, b = int8(5, 8, seed=11), int8(8, 6, seed=12)
    same(torch._int_mm(a.to(DEV), b.to(DEV)), torch._int_mm(a, b))


def test_int_mm_compiled() -> None:
    a, b = int8(33, 64, seed=13), int8(64, 40, seed=14)
    fn = torch.compile(lambda x, y: torch._int_mm(x, y), backend="tpu")
    same(fn(a.to(DEV), b.to(DEV)), torch._int_mm(a, b))
