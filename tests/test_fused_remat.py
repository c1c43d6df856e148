"""Fused mode computes cheap forward results again in backward instead of keeping them between the
forward and the backward graph (exec/tpu_remat.h): relu(batch_norm(conv)) outputs, gelu outputs.
The values are bit-identical to strict mode's; peaks come from the device allocator."""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch
import torch.nn as nn

from bench.models import SmallResNet

DEV = "tpu"


def conv_block() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(8, 16, 3, padding=1, bias=False),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.Conv2d(16, 16, 3, padding=1, bias=False),
        nn.BatchNorm2d(16),
        nn.ReLU(),
    )


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64))


class Step:
    """One training step of a copy of `model` in `mode`: loss, gradients, buffers, peak, stats."""

    def __init__(
        self,
        mode: str,
        model: nn.Module,
        x: torch.Tensor,
        hook: Callable[[nn.Module, torch.Tensor], None] | None = None,
    ) -> None:
        m = _copy(model).to(DEV)
        xd = x.to(DEV)
        torch.tpu.synchronize()
        torch.tpu.reset_peak_memory_stats()
        torch.tpu.reset_fused_stats()
        base = torch.tpu.memory_allocated()
        with torch.tpu.eager_mode(mode):
            out = m(xd)
            if hook is not None:
                hook(m, out)
            loss = out.square().mean()
            loss.backward()
            torch.tpu.synchronize()
        self.peak = torch.tpu.max_memory_allocated() - base
        self.stats = torch.tpu.fused_stats()
        self.loss = loss.cpu()
        self.grads = [p.grad.cpu() for p in m.parameters()]
        self.buffers = [b.cpu() for b in m.buffers()]
        self.model = m


def _copy(model: nn.Module) -> nn.Module:
    return copy.deepcopy(model)


def assert_same(a: Step, b: Step) -> None:
    # The loss is a fused group's reduction in fused mode (square and mean in one step, tiles of
    # float lanes into a double) and the sum kernel in strict mode: the same terms summed in
    # another order, so it agrees within rounding. Gradients and buffers agree bit for bit.
    torch.testing.assert_close(a.loss, b.loss, rtol=1e-6, atol=0)
    for ga, gb in zip(a.grads, b.grads, strict=True):
        assert torch.equal(ga, gb)
    for ba, bb in zip(a.buffers, b.buffers, strict=True):
        assert torch.equal(ba, bb)


def test_batch_norm_relu_outputs_are_recomputed_bit_for_bit() -> None:
    model, x = conv_block(), torch.randn(4, 8, 32, 32)
    strict, fused = Step("strict", model, x), Step("fused", model, x)
    # Both relu outputs (256 KiB each) are saved for backward, and computed again there; the running
    # statistics move once, as in strict mode.
    assert fused.stats["recomputed"] == 2
    assert fused.stats["recomputed_bytes"] == 2 * 4 * 16 * 32 * 32 * 4
    assert strict.stats["recomputed"] == 0
    assert_same(fused, strict)
    cpu = _copy(model)
    loss = cpu(x).square().mean()
    loss.backward()
    torch.testing.assert_close(fused.loss, loss.detach())
    for g, p in zip(fused.grads, cpu.parameters(), strict=True):
        torch.testing.assert_close(g, p.grad, rtol=1e-4, atol=1e-5)
    assert fused.peak < strict.peak


def test_gelu_outputs_are_recomputed() -> None:
    model, x = mlp(), torch.randn(256, 64)
    strict, fused = Step("strict", model, x), Step("fused", model, x)
    assert fused.stats["recomputed"] == 1
    assert_same(fused, strict)


def test_small_results_are_kept() -> None:
    model, x = mlp(), torch.randn(8, 64)  # the gelu output is 8 KiB
    fused = Step("fused", model, x)
    assert fused.stats["recomputed"] == 0
    assert_same(fused, Step("strict", model, x))


class HoldsMiddle(nn.Module):
    """conv_block that keeps its first relu's output, as a user's code might."""

    def __init__(self) -> None:
        super().__init__()
        self.block = conv_block()
        self.middle = torch.empty(0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b = self.block
        self.middle = b[2](b[1](b[0](x)))
        return b[5](b[4](b[3](self.middle)))


def test_a_result_the_user_holds_is_computed_when_read() -> None:
    model, x = HoldsMiddle(), torch.randn(2, 8, 32, 32)
    strict, fused = Step("strict", model, x), Step("fused", model, x)
    assert fused.stats["recomputed"] == 2
    assert_same(fused, strict)
    assert torch.equal(fused.model.middle.cpu(), strict.model.middle.cpu())


def test_a_write_to_a_recipe_input_waits_for_the_recipe() -> None:
    """A backward hook changes the first batch norm's bias (autograd does not save it) before the
    second conv's backward reads relu(batch_norm(...)): the recipe must read the old bias."""
    model, x = conv_block(), torch.randn(4, 8, 32, 32)

    def change_bias(m: nn.Module, out: torch.Tensor) -> None:
        def hook(grad: torch.Tensor) -> None:
            with torch.no_grad():
                m[1].bias.add_(1.0)

        out.register_hook(hook)

    strict = Step("strict", model, x, change_bias)
    fused = Step("fused", model, x, change_bias)
    assert fused.stats["recomputed"] >= 1
    assert_same(fused, strict)
    assert torch.equal(fused.model[1].bias.cpu(), strict.model[1].bias.cpu())


def test_resnet_training_matches_strict_bit_for_bit() -> None:
    """bench's ResNet-style CNN for three SGD steps: block outputs relu(bn(conv) + skip) are
    recomputed from other recomputed results (the identity skip), every step."""
    torch.manual_seed(0)
    model = SmallResNet(widths=(16, 32))
    gen = torch.Generator().manual_seed(1)
    batches = [(torch.randn(4, 3, 32, 32, generator=gen), torch.randint(10, (4,), generator=gen))]
    batches *= 3
    results = {}
    for mode in ("strict", "fused"):
        m = copy.deepcopy(model).to(DEV)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        losses, recomputed = [], []
        with torch.tpu.eager_mode(mode):
            for x, t in batches:
                torch.tpu.reset_fused_stats()
                loss = m(x.to(DEV), t.to(DEV))
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                losses.append(loss.cpu())
                recomputed.append(torch.tpu.fused_stats()["recomputed"])
        results[mode] = (losses, [p.cpu() for p in m.state_dict().values()], recomputed)
    assert all(n >= 4 for n in results["fused"][2])
    for a, b in zip(
        results["fused"][0] + results["fused"][1],
        results["strict"][0] + results["strict"][1],
        strict=True,
    ):
        assert torch.equal(a, b)
