"""Models train on tpu with losses, gradients and parameters matching the same steps on CPU."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from bench.models import GPT, GPTConfig, SmallResNet

Batch = tuple[torch.Tensor, torch.Tensor]


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(self.net(x), y)


class TinyLSTM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(8, 16, num_layers=2)
        self.fc = nn.Linear(16, 3)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return F.cross_entropy(self.fc(out[-1]), y)


GPT_TEST = GPTConfig(d_model=64, n_layers=2, n_heads=4, vocab=256, seq=32, batch=2)


def gpt_batch(gen: torch.Generator) -> Batch:
    idx = torch.randint(GPT_TEST.vocab, (GPT_TEST.batch, GPT_TEST.seq + 1), generator=gen)
    return idx[:, :-1], idx[:, 1:]


CASES: dict[str, tuple[Callable[[], nn.Module], Callable[[torch.Generator], Batch]]] = {
    "mlp": (MLP, lambda g: (torch.randn(8, 16, generator=g), torch.randint(4, (8,), generator=g))),
    "gpt": (lambda: GPT(GPT_TEST), gpt_batch),
    "cnn": (
        lambda: SmallResNet(widths=(8, 16)),
        lambda g: (torch.randn(4, 3, 16, 16, generator=g), torch.randint(10, (4,), generator=g)),
    ),
    "lstm": (
        TinyLSTM,
        lambda g: (torch.randn(6, 4, 8, generator=g), torch.randint(3, (4,), generator=g)),
    ),
}


def train(
    name: str,
    device: str,
    optimizer_name: str,
    steps: int = 3,
    compiled: dict[str, object] | None = None,
) -> tuple[list[float], list[torch.Tensor]]:
    """Steps of a test model; its forward compiled with torch.compile(**compiled) when given."""
    build, make_batch = CASES[name]
    torch.manual_seed(0)
    model = build().to(device)
    run = torch.compile(model, **compiled) if compiled is not None else model
    optimizer: torch.optim.Optimizer
    if optimizer_name == "adamw":
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, foreach=True)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(1)
    losses = []
    for _ in range(steps):
        x, y = make_batch(gen)
        loss = run(x.to(device), y.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, [p.detach().cpu() for p in model.parameters()]


@pytest.mark.parametrize("optimizer_name", ["adamw", "sgd"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_training_matches_cpu(eager_mode: str, name: str, optimizer_name: str) -> None:
    cpu_losses, cpu_params = train(name, "cpu", optimizer_name)
    tpu_losses, tpu_params = train(name, "tpu", optimizer_name)
    torch.testing.assert_close(tpu_losses, cpu_losses, rtol=1e-4, atol=1e-5)
    if optimizer_name == "adamw":
        # Adam divides by the gradient's own magnitude, so parameters whose true gradient is zero
        # (e.g. key biases under softmax) move by rounding noise: compare the losses only.
        return
    assert len(tpu_params) == len(cpu_params)
    for a, b in zip(tpu_params, cpu_params, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_tied_weights_stay_tied_on_transfer() -> None:
    model = GPT(GPT_TEST).to("tpu")
    assert model.head.weight is model.tok.weight
    assert model.head.weight.device.type == "tpu"
