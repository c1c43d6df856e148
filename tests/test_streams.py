"""Streams, events and the hazards of asynchronous execution (docs/ARCHITECTURE.md, "Streams")."""

from __future__ import annotations

import os
import sys
import time

import pytest
import torch

import torch_tpu

MiB = 1 << 20


def stall(ms: float) -> None:
    """Holds the current stream's later work back for `ms` milliseconds."""
    torch_tpu._C._stall_stream(torch.tpu.current_device(), ms)


def test_ops_are_asynchronous_in_strict_mode() -> None:
    stream = torch.tpu.current_stream()
    stall(100)
    x = torch.ones(1000, device="tpu")
    assert not stream.query()  # the fill waits behind the stall; Python already returned
    assert torch.equal(x.cpu(), torch.ones(1000))  # reading synchronizes
    assert stream.query()


def test_debug_mode_is_synchronous() -> None:
    torch.tpu.set_eager_mode("debug")
    try:
        assert torch.tpu.get_eager_mode() == "debug"
        stall(20)
        assert torch.tpu.current_stream().query()
    finally:
        torch.tpu.set_eager_mode("strict")


def test_fallback_after_queued_writers(eager_mode: str) -> None:
    x = torch.zeros(1 << 16, device="tpu")
    stall(50)
    x.fill_(2.0)
    x[::2].fill_(3.0)
    y = torch.cumsum(x, 0)  # a CPU fallback: it must read after both queued fills
    expected = torch.cumsum(torch.tensor([3.0, 2.0]).repeat(1 << 15), 0)
    torch.testing.assert_close(y.cpu(), expected)
    x.add_(1)  # fallback write-back is ordered before later queued work
    x.mul_(torch.tensor(2.0))
    assert torch.equal(x[:4].cpu(), torch.tensor([8.0, 6.0, 8.0, 6.0]))


def test_free_while_a_kernel_still_reads() -> None:
    x = torch.arange(4 * MiB, dtype=torch.float32, device="tpu")
    torch.tpu.synchronize()
    ptr = x.data_ptr()
    stall(100)
    y = x.clone()  # queued behind the stall, reads x later
    del x  # the block goes back to the stream's pool now
    z = torch.empty(4 * MiB, dtype=torch.float32, device="tpu").fill_(-1.0)
    assert z.data_ptr() == ptr  # reused at once, ordered after the clone
    assert torch.equal(y[-3:].cpu(), torch.arange(4 * MiB - 3, 4 * MiB, dtype=torch.float32))
    assert z[0].item() == -1.0


def test_pinned_block_not_reused_before_its_copy_ran() -> None:
    host = torch.full((MiB,), 5.0).pin_memory()
    host_ptr = host.data_ptr()
    stall(100)
    dev = host.to("tpu", non_blocking=True)
    del host
    other = torch.empty(MiB).pin_memory()
    assert other.data_ptr() != host_ptr  # still in use by the queued copy
    other.fill_(-7.0)
    assert dev[0].item() == 5.0 and dev[-1].item() == 5.0
    torch.tpu.synchronize()
    reused = torch.empty(MiB).pin_memory()
    assert reused.data_ptr() == host_ptr  # free once the copy ran


def test_pageable_non_blocking_copy_is_staged() -> None:
    stall(50)
    host = torch.full((1000,), 4.0)
    dev = host.to("tpu", non_blocking=True)
    host.fill_(0.0)  # the staged bytes are already taken
    assert torch.equal(dev.cpu(), torch.full((1000,), 4.0))


def test_async_error_surfaces_at_synchronize_and_process_stays_usable() -> None:
    src = torch.arange(5.0, device="tpu")
    index = torch.tensor([1, 7], device="tpu")
    out = torch.index_select(src, 0, index)  # returns before the kernel runs
    with pytest.raises(RuntimeError, match="index_select.*out of bounds"):
        torch.tpu.synchronize()
    torch.tpu.synchronize()  # reported once
    with pytest.raises(RuntimeError, match="index_select"):
        out.cpu()  # the failed op's output stays poisoned
    ok = torch.index_select(src, 0, torch.tensor([4, 0], device="tpu"))
    assert ok.tolist() == [4.0, 0.0]


def test_error_raised_at_the_op_in_debug_mode() -> None:
    torch.tpu.set_eager_mode("debug")
    try:
        src = torch.arange(5.0, device="tpu")
        with pytest.raises(IndexError, match="out of bounds"):
            torch.index_select(src, 0, torch.tensor([9], device="tpu"))
        torch.tpu.synchronize()
    finally:
        torch.tpu.set_eager_mode("strict")


def test_streams_events_and_timing() -> None:
    s1 = torch.tpu.Stream()
    s2 = torch.tpu.Stream(priority=-1)
    assert s1 != s2 and s1.device == torch.device("tpu", 0)
    assert torch.tpu.current_stream() == torch.tpu.default_stream()
    start = torch.tpu.Event(enable_timing=True)
    end = torch.tpu.Event(enable_timing=True)
    with torch.tpu.stream(s1):
        assert torch.tpu.current_stream() == s1
        start.record()
        stall(30)
        a = torch.ones(10, device="tpu")
        end.record()
    assert torch.tpu.current_stream() == torch.tpu.default_stream()
    assert not end.query()
    s2.wait_stream(s1)  # s2's work waits for s1's stall
    with torch.tpu.stream(s2):
        b = a * 1
    end.synchronize()
    assert end.query()
    assert start.elapsed_time(end) >= 25.0
    s2.synchronize()
    assert torch.equal(b.cpu(), torch.ones(10))
    with pytest.raises(ValueError, match="enable_timing"):  # torch.Event's own check
        torch.tpu.Event().elapsed_time(torch.tpu.Event())
    assert isinstance(start, torch.tpu.Event) and not isinstance(
        torch.Event("cpu"), torch.tpu.Event
    )


def test_event_wait_orders_streams() -> None:
    side = torch.tpu.Stream()
    x = torch.zeros(MiB, device="tpu")
    with torch.tpu.stream(side):
        stall(50)
        x.fill_(1.0)
        event = side.record_event()
    torch.tpu.current_stream().wait_event(event)
    y = x.clone()  # on the default stream, after the event
    x.record_stream(torch.tpu.current_stream())
    assert y[-1].item() == 1.0


def test_accelerator_and_generic_stream_api() -> None:
    stream = torch.accelerator.current_stream()
    assert stream.device_type == torch.tpu.current_stream().device_type
    new = torch.Stream(device="tpu")
    torch.accelerator.set_stream(new)
    try:
        assert torch.tpu.current_stream() == new
    finally:
        torch.accelerator.set_stream(torch.tpu.default_stream())
    event = torch.Event(device="tpu", enable_timing=True)
    event.record()
    event.synchronize()
    assert event.query()


def test_synchronize_waits() -> None:
    stall(60)
    begin = time.perf_counter()
    torch.tpu.synchronize()
    assert torch.tpu.current_stream().query()
    assert time.perf_counter() - begin > 0.0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread names from /proc")
def test_worker_threads_are_named() -> None:
    """Profilers and debuggers show which threads are torch-tpu's, not the name of the thread that
    happened to start them (autograd's, say)."""
    side = torch.tpu.Stream()
    with torch.tpu.stream(side):
        stall(1)  # queues the work behind it: the stream's worker thread runs it
        torch.ones(8, device="tpu").sum().item()
    x = torch.randn(512, 512, device="tpu")
    (x @ x).sum().item()  # big enough to split over the pool's threads
    names = {
        open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task")
    }
    assert "tpu0-stream0" in names
    assert f"tpu0-stream{side.stream_id}" in names
    if torch.get_num_threads() > 1:
        assert "tpu-pool1" in names
