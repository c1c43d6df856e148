"""What the distributed examples share: bench's tiny GPT, the same batches on every rank, a
training loop, and the check against one CPU process training on whole batches."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.append(str(Path(__file__).resolve().parent.parent))
from bench.models import GPT, GPT_TINY  # noqa: E402

STEPS = 5


def models() -> tuple[torch.nn.Module, torch.nn.Module]:
    """Two tiny GPTs with the same weights: one to parallelize, one for the CPU reference."""
    torch.manual_seed(0)
    model, reference = GPT(GPT_TINY), GPT(GPT_TINY)
    reference.load_state_dict(model.state_dict())
    return model, reference


def batches(world: int) -> torch.Tensor:
    """STEPS global batches of world * GPT_TINY.batch sequences, the same on every rank."""
    g = torch.Generator().manual_seed(1)
    shape = (STEPS, world * GPT_TINY.batch, GPT_TINY.seq + 1)
    return torch.randint(0, GPT_TINY.vocab, shape, generator=g)


def train(model: torch.nn.Module, device: torch.device, data: torch.Tensor, part: slice) -> list:
    """SGD steps on rows `part` of each batch; the losses, averaged over the ranks when the ranks
    train on different rows."""
    # Per-parameter steps: tensor parallelism mixes DTensor and plain parameters, which the
    # foreach kernels cannot take in one list.
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, foreach=False)
    losses = []
    for batch in data:
        tokens = batch[part].to(device)
        loss = model(tokens[:, :-1], tokens[:, 1:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total = loss.detach().clone()
        if device.type != "cpu" and part != slice(None):
            dist.all_reduce(total, dist.ReduceOp.AVG)
        losses.append(total.item())
    return losses


def my_rows() -> slice:
    """This rank's share of a global batch (data parallelism)."""
    rank = dist.get_rank()
    return slice(rank * GPT_TINY.batch, (rank + 1) * GPT_TINY.batch)


def check(what: str, losses: list, reference: torch.nn.Module, data: torch.Tensor) -> None:
    """On rank 0: prints both loss curves and fails when they differ by more than 1e-4."""
    if dist.get_rank() != 0:
        return
    expected = train(reference, torch.device("cpu"), data, slice(None))
    worst = max(abs(a - b) for a, b in zip(losses, expected, strict=True))
    print(f"{what}, {dist.get_world_size()} ranks via {dist.get_backend_config()}:")
    print(f"  losses           {[round(v, 4) for v in losses]}")
    print(f"  one CPU process  {[round(v, 4) for v in expected]} (max diff {worst:.2e})")
    if worst > 1e-4:
        raise SystemExit(f"{what}: losses differ from one process's")
