"""Checks shared by the index and nn families' tests: a run that must not fall back, and tpu
results compared with PyTorch CPU (values, dtype, sizes, strides) and with the meta device."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import torch

DEV = "tpu"

# Dtypes PyTorch CPU computes on, by kind.
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
COMPLEX = [torch.complex64, torch.complex128]
ALL = [torch.bool, *INTS, *FLOATS, *COMPLEX]


@contextmanager
def native_only(*allowed: str) -> Iterator[None]:
    """Fails unless every op inside ran natively (or is one of the `allowed` ATen names)."""
    torch.tpu.reset_op_stats()
    yield
    torch.tpu.synchronize()
    fell_back = {k: v for k, v in torch.tpu.fallback_stats().items() if k not in allowed}
    assert not fell_back, f"fell back to the CPU: {fell_back}"


def tree_map(fn: Callable[[torch.Tensor], Any], x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return fn(x)
    if isinstance(x, (list, tuple)):
        return type(x)(tree_map(fn, v) for v in x)
    if isinstance(x, dict):
        return {k: tree_map(fn, v) for k, v in x.items()}
    return x


def to_dev(x: Any) -> Any:
    return tree_map(lambda t: t.to(DEV), x)


def to_meta(x: Any) -> Any:
    return tree_map(lambda t: t.to("meta"), x)


def make(shape: tuple[int, ...], dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    """Values that are exact in every dtype: small integers (booleans for bool)."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    low = 0 if dtype == torch.uint8 else -8
    return torch.randint(low, 9, shape, generator=g).to(dtype)


def assert_same(
    got: Any, expected: Any, *, exact: bool = True, strides: bool = True, **tol: float
) -> None:
    """tpu result(s) equal the CPU one(s): device, dtype, sizes, strides and values."""
    if isinstance(expected, (list, tuple)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            assert_same(g, e, exact=exact, strides=strides, **tol)
        return
    assert isinstance(got, torch.Tensor) and got.device.type == "tpu"
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    if strides and got.numel() > 1:
        assert got.stride() == expected.stride(), (got.stride(), expected.stride())
    if exact:
        tol = {"rtol": 0.0, "atol": 0.0}
    torch.testing.assert_close(got.cpu(), expected, equal_nan=True, **tol)


def check_op(
    fn: Callable[..., Any],
    *args: Any,
    allowed: tuple[str, ...] = (),
    exact: bool = True,
    meta: bool = True,
    **tol: float,
) -> Any:
    """Runs fn on CPU tensors and on their tpu copies (natively) and compares; also checks the
    sizes, strides and dtype against the meta device's. Returns the tpu result."""
    expected = fn(*args)
    dev_args = to_dev(args)
    with native_only(*allowed):
        got = fn(*dev_args)
    assert_same(got, expected, exact=exact, **tol)
    if meta:
        try:
            on_meta = fn(*to_meta(args))
        except NotImplementedError:
            on_meta = None  # no meta kernel for this op
        if on_meta is not None:
            assert_same_layout(got, on_meta)
    return got


def assert_same_layout(got: Any, meta: Any) -> None:
    if isinstance(meta, (list, tuple)):
        for g, m in zip(got, meta, strict=True):
            assert_same_layout(g, m)
        return
    assert got.dtype == meta.dtype and got.shape == meta.shape
    if got.numel() > 1:
        assert got.stride() == meta.stride()


def expect_index_error(eager_mode: str, fn: Callable[[], Any], name: str) -> None:
    """An out-of-range index: IndexError at the op in debug mode; in strict mode the op returns
    and the next synchronization raises a RuntimeError naming it. The process stays usable."""
    if eager_mode == "debug":
        with pytest.raises(IndexError, match="out of bounds"):
            fn()
    else:
        out = fn()  # kept alive: fused mode never runs an op whose results all died
        with pytest.raises(RuntimeError, match=name):
            torch.tpu.synchronize()
        del out
    torch.tpu.synchronize()
