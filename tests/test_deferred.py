"""Pending buffers (docs/ARCHITECTURE.md, "Buffers"), exercised end to end through a test-only
deferred op: created without memory, viewed, materialized by a read, and never allocated when they
die unread. Fused mode builds on the same mechanism."""

from __future__ import annotations

import torch

import torch_tpu

MiB = 1 << 20


def deferred_full(shape: list[int], value: float) -> torch.Tensor:
    return torch_tpu._C._deferred_full(shape, value, torch.float32)


def test_pending_buffer_is_created_without_memory() -> None:
    torch.tpu.synchronize()
    before = torch.tpu.memory_stats()
    x = deferred_full([1024, 256], 3.0)  # 1 MiB
    after = torch.tpu.memory_stats()
    assert x.device.type == "tpu" and x.shape == (1024, 256) and x.dtype == torch.float32
    assert not torch_tpu._C._is_materialized(x)
    assert after["allocated_bytes.all.current"] == before["allocated_bytes.all.current"]
    ptr = x.untyped_storage().data_ptr()
    assert ptr != 0 and ptr % 64 == 0  # a stable identity before any memory exists


def test_views_share_the_pending_buffer_and_a_read_materializes_it() -> None:
    x = deferred_full([64, 64], 1.5)
    ptr = x.untyped_storage().data_ptr()
    view = x[10:20].t()
    assert view.untyped_storage().data_ptr() == ptr
    assert not torch_tpu._C._is_materialized(x)
    before = torch.tpu.memory_allocated()
    assert torch.equal(view.cpu(), torch.full((64, 10), 1.5))  # the read runs the deferred op
    assert torch_tpu._C._is_materialized(x)
    assert torch.tpu.memory_allocated() == before + 64 * 64 * 4
    assert x.untyped_storage().data_ptr() == ptr  # identity unchanged by materialization
    x.add_(1)  # usable like any tensor afterwards
    assert x[0, 0].item() == 2.5


def test_pending_buffer_that_dies_unread_is_never_allocated() -> None:
    torch.tpu.synchronize()
    stats = torch.tpu.memory_stats()
    fills = torch.tpu.op_stats()["native"].get("fill", 0)
    for _ in range(10):
        x = deferred_full([4 * MiB], 0.0)  # 16 MiB each
        del x
    after = torch.tpu.memory_stats()
    assert after["allocation.all.allocated"] == stats["allocation.all.allocated"]
    assert after["allocated_bytes.all.peak"] == stats["allocated_bytes.all.peak"]
    assert torch.tpu.op_stats()["native"]["fill"] == fills + 10  # deferred, counted, never run


def test_native_op_consuming_a_pending_buffer() -> None:
    x = deferred_full([8], 4.0)
    y = torch.empty(8, device="tpu")
    y.copy_(x)  # a device-side consumer materializes its input first
    assert torch.equal(y.cpu(), torch.full((8,), 4.0))
