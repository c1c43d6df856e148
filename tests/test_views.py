"""Views alias their base like on CUDA; resize_ and set_ keep PyTorch's semantics."""

from __future__ import annotations

import pytest
import torch


def test_views_alias_and_inplace_on_views(eager_mode: str) -> None:
    host = torch.arange(24.0).reshape(4, 6)
    dev = host.clone().to("tpu")
    for view_fn in (
        lambda t: t[1],
        lambda t: t[:, 2:5],
        lambda t: t.t(),
        lambda t: t.view(6, 4)[::2],
        lambda t: t.reshape(24)[3:9],
        lambda t: t.unfold(1, 2, 2),
        lambda t: t.as_strided((2, 2), (6, 1), 7),
        lambda t: t.diagonal(),
        lambda t: t.unsqueeze(0).expand(2, 4, 6)[1],
    ):
        hv, dv = view_fn(host), view_fn(dev)
        assert dv._base is dev or dv._base is dev._base or dv.data_ptr() >= dev.data_ptr()
        assert dv.untyped_storage().data_ptr() == dev.untyped_storage().data_ptr()
        assert dv.shape == hv.shape and dv.stride() == hv.stride()
        assert dv.storage_offset() == hv.storage_offset()
        assert torch.equal(dv.cpu(), hv)
    # Writes through views show in the base.
    dev[1].fill_(-1)
    host[1].fill_(-1)
    dev.t()[2].zero_()
    host.t()[2].zero_()
    dev[:, 4:].copy_(torch.ones(4, 2))
    host[:, 4:].copy_(torch.ones(4, 2))
    assert torch.equal(dev.cpu(), host)


def test_view_dtype_and_complex_views() -> None:
    x = torch.randn(4, 2, device="tpu")
    c = torch.view_as_complex(x)
    assert c.dtype == torch.complex64 and c.shape == (4,)
    r = torch.view_as_real(c)
    assert r.data_ptr() == x.data_ptr()
    assert torch.equal(r.cpu(), x.cpu())
    as_int = x.view(torch.int32)
    assert torch.equal(as_int.cpu(), x.cpu().view(torch.int32))
    c.imag.fill_(0)
    assert torch.equal(x[:, 1].cpu(), torch.zeros(4))


def test_empty_strided_and_memory_formats() -> None:
    x = torch.empty_strided((2, 3), (1, 2), device="tpu")
    assert x.stride() == (1, 2)
    y = torch.empty(2, 3, 4, 5, device="tpu", memory_format=torch.channels_last)
    assert y.stride() == torch.empty(2, 3, 4, 5, memory_format=torch.channels_last).stride()
    assert y.is_contiguous(memory_format=torch.channels_last)
    z = torch.randn(2, 3, 4, 5).to("tpu").contiguous(memory_format=torch.channels_last)
    assert z.stride() == y.stride()


def test_resize_zero_then_grow(eager_mode: str) -> None:
    x = torch.arange(6.0, device="tpu")
    ptr = x.untyped_storage().data_ptr()
    x.resize_(0)
    assert x.shape == (0,) and x.numel() == 0
    assert x.untyped_storage().data_ptr() == ptr  # shrinking keeps the storage
    x.resize_(3)
    assert torch.equal(x.cpu(), torch.arange(3.0))
    x.resize_(2, 5)
    assert x.shape == (2, 5)
    assert torch.equal(x.flatten()[:6].cpu(), torch.arange(6.0))  # grown storage keeps the data
    x.fill_(1)
    assert x.sum().item() == 10
    with pytest.raises(RuntimeError):
        x.resize_(-1)


def test_storage_resize_and_set(eager_mode: str) -> None:
    s = torch.arange(4.0, device="tpu").untyped_storage()
    s.resize_(8 * 4)
    assert s.nbytes() == 32
    t = torch.empty(0, device="tpu")
    t.set_(s, 0, (2, 2), (2, 1))
    assert torch.equal(t.cpu(), torch.tensor([[0.0, 1.0], [2.0, 3.0]]))
    u = torch.empty(0, device="tpu").set_(t)
    assert u.data_ptr() == t.data_ptr()
    v = torch.empty(0, device="tpu").set_(s)
    assert v.shape == (8,)
    w = torch.ones(3, device="tpu").set_()
    assert w.numel() == 0
    big = torch.empty(0, device="tpu").set_(s, 0, (100,), (1,))  # a resizable storage grows
    assert s.nbytes() == 400 and torch.equal(big[:4].cpu(), torch.arange(4.0))
    with pytest.raises(RuntimeError):
        torch.empty(0).set_(s)  # a tpu storage under a CPU tensor


def test_storage_identity() -> None:
    a = torch.empty(3, device="tpu")
    b = torch.empty(3, device="tpu")
    c = torch.empty(0, device="tpu")
    ptrs = [t.untyped_storage().data_ptr() for t in (a, b, c)]
    assert len(set(ptrs)) == 3 and all(p != 0 and p % 64 == 0 for p in ptrs)
    assert a[1:].data_ptr() == a.data_ptr() + 4
    assert torch.tpu.memory_allocated() > 0


def test_contiguous_and_clone_preserve_values(eager_mode: str) -> None:
    host = torch.randn(3, 4, 5)
    dev = host.to("tpu")
    assert torch.equal(dev.permute(2, 0, 1).contiguous().cpu(), host.permute(2, 0, 1).contiguous())
    cloned = dev.t() if dev.dim() == 2 else dev.transpose(0, 1)
    assert torch.equal(cloned.clone().cpu(), host.transpose(0, 1).clone())
    assert cloned.clone().stride() == host.transpose(0, 1).clone().stride()
