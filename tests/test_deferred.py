"""Pending buffers (docs/ARCHITECTURE.md, "Buffers") end to end: in fused mode a tensor an op makes
is created without memory, viewed, given memory when something reads it, and never allocated when
it dies unread. The op that writes it waits in the stream's open graph until then."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

MiB = 1 << 20


@pytest.fixture(autouse=True)
def fused() -> Iterator[None]:
    torch.tpu.synchronize()
    with torch.tpu.eager_mode("fused"):
        yield
    torch.tpu.synchronize()


def test_pending_buffer_is_created_without_memory() -> None:
    before = torch.tpu.memory_stats()
    x = torch.full([1024, 256], 3.0, device="tpu")  # 1 MiB
    after = torch.tpu.memory_stats()
    assert x.device.type == "tpu" and x.shape == (1024, 256) and x.dtype == torch.float32
    assert not torch.tpu.is_materialized(x)
    assert after["allocated_bytes.all.current"] == before["allocated_bytes.all.current"]
    ptr = x.untyped_storage().data_ptr()
    assert ptr != 0 and ptr % 64 == 0  # a stable identity before any memory exists


def test_views_share_the_pending_buffer_and_a_read_materializes_it() -> None:
    x = torch.full([64, 64], 1.5, device="tpu")
    ptr = x.untyped_storage().data_ptr()
    view = x[10:20].t()
    assert view.untyped_storage().data_ptr() == ptr
    assert not torch.tpu.is_materialized(x)
    before = torch.tpu.memory_allocated()
    assert torch.equal(view.cpu(), torch.full((64, 10), 1.5))  # the read runs the graph
    assert torch.tpu.is_materialized(x)
    assert torch.tpu.memory_allocated() == before + 64 * 64 * 4
    assert x.untyped_storage().data_ptr() == ptr  # identity unchanged by materialization
    x.add_(1)  # usable like any tensor afterwards
    assert x[0, 0].item() == 2.5


def test_pending_buffer_that_dies_unread_is_never_allocated() -> None:
    base = torch.ones(4 * MiB, device="tpu")
    torch.tpu.synchronize()
    stats = torch.tpu.memory_stats()
    adds = torch.tpu.op_stats()["native"].get("add", 0)
    for _ in range(10):
        x = base + 1  # 16 MiB each, dead before any cut
        del x
    torch.tpu.synchronize()
    after = torch.tpu.memory_stats()
    assert after["allocation.all.allocated"] == stats["allocation.all.allocated"]
    assert after["allocated_bytes.all.peak"] == stats["allocated_bytes.all.peak"]
    assert torch.tpu.op_stats()["native"]["add"] == adds + 10  # recorded and counted, never run


def test_native_op_consuming_a_pending_buffer() -> None:
    x = torch.full([8], 4.0, device="tpu")
    y = torch.empty(8, device="tpu")
    y.copy_(x)
    assert torch.equal(y.cpu(), torch.full((8,), 4.0))
