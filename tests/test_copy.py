"""Copies between CPU and tpu and within tpu: dtypes, strides, broadcasting, lazy bits, pinned
memory and non_blocking, in both eager modes."""

from __future__ import annotations

import warnings

import pytest
import torch
from _dtypes import COMPUTABLE_DTYPES as DTYPES
from _dtypes import STORAGE_ONLY_DTYPES as STORAGE_ONLY


def sample(dtype: torch.dtype, shape: tuple[int, ...] = (3, 5)) -> torch.Tensor:
    gen = torch.Generator().manual_seed(0)
    base = torch.randn(shape, generator=gen, dtype=torch.float64) * 50
    if dtype.is_complex:
        return torch.complex(base, -base).to(dtype)
    if dtype == torch.bool:
        return base > 0
    if not dtype.is_floating_point and dtype.is_signed is False:
        return base.abs().to(dtype)
    return base.to(dtype)


def assert_same(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    assert actual.stride() == expected.stride()
    torch.testing.assert_close(actual.cpu(), expected, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES + STORAGE_ONLY, ids=str)
def test_round_trip(eager_mode: str, dtype: torch.dtype) -> None:
    host = sample(torch.float64).abs().to(dtype) if dtype in STORAGE_ONLY else sample(dtype)
    device = host.to("tpu")
    assert device.device.type == "tpu" and device.dtype == dtype
    back = device.cpu()
    assert back.view(torch.uint8).equal(host.view(torch.uint8))


@pytest.mark.parametrize("src", DTYPES, ids=str)
@pytest.mark.parametrize("dst", DTYPES, ids=str)
def test_dtype_conversion_on_device(src: torch.dtype, dst: torch.dtype) -> None:
    host = sample(src)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Casting complex values to real")
        expected = host.to(dst)
        got = host.to("tpu").to(dst)
    assert_same(got, expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bfloat16], ids=str)
def test_conversion_during_transfer(eager_mode: str, dtype: torch.dtype) -> None:
    host = sample(torch.float32)
    assert_same(host.to("tpu", dtype), host.to(dtype))
    dev = host.to("tpu")
    assert_same(dev.to("cpu", dtype), host.to(dtype))


def test_storage_only_dtype_conversion() -> None:
    host = torch.arange(10).to(torch.uint32)
    assert torch.equal(host.to("tpu").to(torch.int64).cpu(), host.to(torch.int64))
    assert torch.equal(host.to(torch.int64).to("tpu").to(torch.uint32).cpu(), host)


def test_non_contiguous_copies(eager_mode: str) -> None:
    host = torch.arange(60.0).reshape(3, 4, 5)
    dev = host.to("tpu")
    for view in (lambda t: t.transpose(0, 2), lambda t: t[:, ::2, 1:], lambda t: t.flip(0)[1]):
        expected = view(host)
        got = view(dev)
        assert got.stride() == expected.stride()
        assert torch.equal(got.cpu(), expected)
        assert_same(got.contiguous(), expected.contiguous())
        assert_same(got.clone(), expected.clone())
    # Writing into a strided device view from a strided host view.
    dst = torch.zeros(5, 4, 3, device="tpu")
    dst.copy_(host.permute(2, 1, 0))
    assert torch.equal(dst.cpu(), host.permute(2, 1, 0))


def test_broadcasting_copy(eager_mode: str) -> None:
    dst = torch.zeros(4, 3, device="tpu")
    dst.copy_(torch.tensor([1.0, 2.0, 3.0]))
    assert torch.equal(dst.cpu(), torch.tensor([1.0, 2.0, 3.0]).expand(4, 3))
    dst.copy_(torch.tensor([[5.0], [6.0], [7.0], [8.0]], device="tpu"))
    assert torch.equal(dst.cpu(), torch.tensor([[5.0], [6.0], [7.0], [8.0]]).expand(4, 3))
    dst.copy_(torch.tensor(9, dtype=torch.int32, device="tpu"))
    assert torch.equal(dst.cpu(), torch.full((4, 3), 9.0))
    with pytest.raises(RuntimeError):
        dst.copy_(torch.ones(2, 3, device="tpu"))


def test_copy_from_conj_and_neg_views(eager_mode: str) -> None:
    host = torch.tensor([1 + 2j, -3 - 4j], dtype=torch.complex64)
    dev = host.to("tpu")
    conj = dev.conj()
    assert conj.is_conj()
    assert torch.equal(conj.cpu(), host.conj())
    out = torch.empty(2, dtype=torch.complex64, device="tpu")
    out.copy_(conj)
    assert torch.equal(out.cpu(), host.conj().resolve_conj())
    neg = torch.ones(3, device="tpu")._neg_view()
    assert neg.is_neg()
    assert torch.equal(neg.cpu(), -torch.ones(3))
    assert torch.equal(conj.to("cpu").resolve_conj(), host.conj().resolve_conj())


def test_overlapping_copy_raises() -> None:
    x = torch.arange(10.0, device="tpu")
    with pytest.raises(RuntimeError, match="memory location"):
        x[1:].copy_(x[:-1])
    x.copy_(x)  # the same tensor is a no-op
    assert torch.equal(x.cpu(), torch.arange(10.0))


def test_large_copies_take_the_synchronous_path(eager_mode: str) -> None:
    host = torch.randn(1 << 19)  # 2 MiB, above the staging limit
    original = host.clone()
    dev = host.to("tpu")
    host.zero_()  # the source may be reused at once
    assert torch.equal(dev.cpu(), original)


def test_staged_copy_source_reusable_at_once() -> None:
    host = torch.arange(1000.0)
    dev = host.to("tpu")
    host.fill_(-1)  # must not change what was copied
    assert torch.equal(dev.cpu(), torch.arange(1000.0))


def test_pinned_memory_non_blocking_round_trip() -> None:
    host = torch.randn(256, 256).pin_memory()
    assert host.is_pinned()
    assert torch.tpu.host_memory_stats()["allocations"] >= 1
    dev = host.to("tpu", non_blocking=True)
    back = torch.empty_like(host).pin_memory()
    back.copy_(dev * 1, non_blocking=True)
    torch.tpu.synchronize()
    assert torch.equal(back, host)


def test_pageable_non_blocking_is_safe() -> None:
    host = torch.arange(100.0)
    dev = host.to("tpu", non_blocking=True)
    host.zero_()
    assert torch.equal(dev.cpu(), torch.arange(100.0))
    back = torch.empty(100)
    back.copy_(dev, non_blocking=True)  # pageable: completes before returning
    assert torch.equal(back, torch.arange(100.0))


def test_item_and_tolist(eager_mode: str) -> None:
    for dtype in DTYPES:
        host = sample(dtype, (4,))
        dev = host.to("tpu")
        assert dev[2].item() == host[2].item()
        assert dev.tolist() == host.tolist()
    with pytest.raises(RuntimeError):
        torch.ones(2, device="tpu").item()


def test_dataloader_pins_from_its_thread() -> None:
    data = torch.utils.data.TensorDataset(torch.arange(32.0).reshape(16, 2))
    # One worker process, so batches are pinned by the pin-memory thread of the main process.
    loader = torch.utils.data.DataLoader(data, batch_size=4, pin_memory=True, num_workers=1)
    seen = []
    for (batch,) in loader:
        assert batch.is_pinned()
        seen.append(batch.to("tpu", non_blocking=True))
    torch.tpu.synchronize()
    assert torch.equal(torch.cat([b.cpu() for b in seen]), torch.arange(32.0).reshape(16, 2))
