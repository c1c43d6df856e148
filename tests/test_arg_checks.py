"""Arguments PyTorch's device-generic operator tests try (issue 38), in every eager mode: an out=
on another device or overlapping an input raises the RuntimeError CUDA raises, in place with a
self the result does not fit raises as CPU does, masks of the wrong dtype and unknown gelu
approximations are refused; and the unusual but valid ones compute as on CPU (a negative
avg_pool divisor, native_batch_norm's out= form)."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from _edge_helpers import quiet, sample

DEV = "tpu"


# An op with out= and a CPU tensor of the result's shape and dtype to pass as out.
HOST_OUT: dict[str, Callable[[torch.Tensor], object]] = {
    "abs_complex": lambda o: torch.abs(sample(3, dtype=torch.complex64).to(DEV), out=o),
    "logsumexp": lambda o: torch.logsumexp(sample(3, 4).to(DEV), 1, out=o),
    "addr": lambda o: torch.addr(sample(3, 3).to(DEV), sample(3).to(DEV), sample(3).to(DEV), out=o),
    "index_select": lambda o: torch.index_select(
        sample(4, 3).to(DEV), 0, torch.tensor([0, 2], device=DEV), out=o
    ),
    "native_batch_norm": lambda o: torch.native_batch_norm(
        sample(2, 3, 4).to(DEV),
        None,
        None,
        None,
        None,
        True,
        0.1,
        1e-5,
        out=(o, torch.empty(3, device=DEV), torch.empty(3, device=DEV)),
    ),
    "mm": lambda o: torch.mm(sample(2, 3).to(DEV), sample(3, 4).to(DEV), out=o),
    "take_fallback": lambda o: torch.take(
        sample(5).to(DEV), torch.tensor([1, 3], device=DEV), out=o
    ),
}
HOST_OUT_SHAPE = {
    "abs_complex": (3,),
    "logsumexp": (3,),
    "addr": (3, 3),
    "index_select": (2, 3),
    "native_batch_norm": (2, 3, 4),
    "mm": (2, 4),
    "take_fallback": (2,),
}


@pytest.mark.parametrize("op", HOST_OUT)
def test_out_on_another_device_is_refused(eager_mode: str, op: str) -> None:
    out = torch.full(HOST_OUT_SHAPE[op], 7.0)
    with pytest.raises(RuntimeError, match="device|on tpu"):
        quiet(lambda: HOST_OUT[op](out))
    assert torch.equal(out, torch.full(HOST_OUT_SHAPE[op], 7.0))
    torch.tpu.synchronize()


def test_complex_abs_into_an_overlapping_out_is_refused(eager_mode: str) -> None:
    """abs of a complex input runs on the host: TensorIterator's overlap checks come first."""
    for dev in ("cpu", DEV):
        z = torch.zeros(1, 1, dtype=torch.complex64, device=dev).expand(3, 2)
        with pytest.raises(RuntimeError, match="unsupported operation"):
            torch.abs(z, out=z)
        out = torch.zeros(1, device=dev).expand(3, 2)
        with pytest.raises(RuntimeError, match="unsupported operation"):
            torch.abs(z.contiguous(), out=out)


@pytest.mark.parametrize("aliased", ["self", "index", "internal"])
def test_index_select_out_overlapping_is_refused(eager_mode: str, aliased: str) -> None:
    x = torch.arange(12).reshape(4, 3)
    idx = torch.tensor([0, 1, 2])
    for dev in ("cpu", DEV):
        t, i = x.clone().to(dev), idx.clone().to(dev)
        out = {"self": t, "index": i, "internal": torch.zeros(1, dtype=t.dtype, device=dev)}
        target = out[aliased].expand(3, 3) if aliased == "internal" else out[aliased]
        with pytest.raises(RuntimeError, match="unsupported operation"):
            torch.index_select(t, 0, i, out=target)
    torch.tpu.synchronize()


def test_addr_in_place_keeps_self_shape(eager_mode: str) -> None:
    """CPU's addr_ does not broadcast self: a 0-d or [1, n] self is refused."""
    v, w = sample(3), sample(4, seed=1)
    for self_shape, message in (((), "2D tensor expected"), ((1, 4), "size mismatch")):
        for dev in ("cpu", DEV):
            s = torch.ones(self_shape, device=dev)
            with pytest.raises(RuntimeError, match=message):
                s.addr_(v.to(dev), w.to(dev))
    results = []
    for dev in ("cpu", DEV):
        s = sample(3, 4, seed=2).to(dev)
        s.addr_(v.to(dev), w.to(dev), beta=0.5, alpha=2)
        results.append(s)
    torch.testing.assert_close(results[1].cpu(), results[0])


@pytest.mark.parametrize("op", ["masked_select", "masked_scatter_", "masked_scatter"])
def test_uint8_masks_are_refused(eager_mode: str, op: str) -> None:
    """uint8 masks, long deprecated, are refused on CPU and CUDA now; bool masks work."""
    x, src = sample(4), sample(4, seed=1)
    fns = {
        "masked_select": lambda t, m, s: torch.masked_select(t, m),
        "masked_scatter_": lambda t, m, s: t.masked_scatter_(m, s),
        "masked_scatter": lambda t, m, s: t.masked_scatter(m, s),
    }
    mask = torch.tensor([1, 0, 1, 0], dtype=torch.uint8)
    for dev in ("cpu", DEV):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # CPU warns of the deprecation before it refuses
            with pytest.raises(RuntimeError, match="[Bb]ool"):
                fns[op](x.clone().to(dev), mask.to(dev), src.to(dev))
    got = fns[op](x.clone().to(DEV), mask.bool().to(DEV), src.to(DEV))
    torch.testing.assert_close(got.cpu(), fns[op](x.clone(), mask.bool(), src))


@pytest.mark.parametrize("approximate", ["asdf", "Tanh", ""])
def test_gelu_refuses_unknown_approximations(eager_mode: str, approximate: str) -> None:
    x = sample(5)
    for dev in ("cpu", DEV):
        with pytest.raises(RuntimeError, match="approximate argument must be either"):
            F.gelu(x.to(dev), approximate=approximate)
        with pytest.raises(RuntimeError, match="approximate argument must be either"):
            torch.ops.aten.gelu_backward(x.to(dev), x.to(dev), approximate=approximate)


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("divisor", [-2, -3, 5])
def test_avg_pool_divisor_override_of_any_sign(eager_mode: str, dims: int, divisor: int) -> None:
    """PyTorch divides by a negative divisor_override as by any other nonzero one (avg_pool1d
    takes none)."""
    pool = F.avg_pool2d if dims == 2 else F.avg_pool3d
    x = sample(2, 3, *([5] * dims))
    results = []
    for dev in ("cpu", DEV):
        t = x.to(dev).requires_grad_()
        y = pool(t, 2, stride=2, padding=1, ceil_mode=True, divisor_override=divisor)
        (g,) = torch.autograd.grad(y.square().sum(), t)
        results.append((y, g))
    for got, want in zip(results[1], results[0], strict=True):
        torch.testing.assert_close(got.cpu(), want)
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        pool(x.to(DEV), 2, divisor_override=0)


@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm_out_form_gives_the_functional_result(
    eager_mode: str, training: bool
) -> None:
    """The out= form resizes its outs as CUDA does and fills them with what the functional form
    returns (saved statistics of size C in evaluation too, as CUDA)."""
    x, w, b = sample(3, 5, 4), sample(5, seed=1), sample(5, seed=2)
    rm, rv = sample(5, seed=3), sample(5, seed=4).abs()
    args = (x.to(DEV), w.to(DEV), b.to(DEV))
    expected = torch.native_batch_norm(*args, rm.to(DEV), rv.to(DEV), training, 0.1, 1e-5)
    for shapes in [((0,), (0,), (0,)), ((3, 5, 4), (5,), (5,))]:
        outs = tuple(torch.full(s, float("nan"), device=DEV) for s in shapes)
        running = (rm.to(DEV), rv.to(DEV))
        torch.native_batch_norm(*args, *running, training, 0.1, 1e-5, out=outs)
        for got, want in zip(outs, expected, strict=True):
            assert got.shape == want.shape
            torch.testing.assert_close(got.cpu(), want.cpu())
    wrong = tuple(torch.empty(0, dtype=torch.int64, device=DEV) for _ in range(3))
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.native_batch_norm(*args, rm.to(DEV), rv.to(DEV), training, 0.1, 1e-5, out=wrong)
