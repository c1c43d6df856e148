"""DistributedDataParallel on tpu: `torchrun --nproc-per-node=2 examples/ddp.py`.

The script is CUDA's DDP recipe with no device or backend named: `dist.init_process_group()` picks
tpu_dist for the tpu accelerator. Each rank trains bench's tiny GPT on its half of every global
batch; DDP all-reduces the gradients, so every rank holds the same model. Rank 0 then checks the
losses against one process training on whole batches on CPU.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.append(str(Path(__file__).resolve().parent.parent))
from bench.models import GPT, GPT_TINY  # noqa: E402


def batches(steps: int, world: int) -> torch.Tensor:
    """`steps` global batches of world * GPT_TINY.batch sequences, the same on every rank."""
    g = torch.Generator().manual_seed(1)
    return torch.randint(
        0, GPT_TINY.vocab, (steps, world * GPT_TINY.batch, GPT_TINY.seq + 1), generator=g
    )


def losses_on(
    model: torch.nn.Module, device: torch.device, data: torch.Tensor, part: slice
) -> list[float]:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for batch in data:
        tokens = batch[part].to(device)
        loss = model(tokens[:, :-1], tokens[:, 1:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total = loss.detach()
        if dist.is_initialized() and device.type != "cpu":
            dist.all_reduce(total, dist.ReduceOp.AVG)
        losses.append(total.item())
    return losses


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    device = torch.accelerator.current_accelerator()
    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    data = batches(args.steps, world)
    torch.manual_seed(0)
    model = GPT(GPT_TINY)
    reference = GPT(GPT_TINY)
    reference.load_state_dict(model.state_dict())
    mine = slice(rank * GPT_TINY.batch, (rank + 1) * GPT_TINY.batch)
    losses = losses_on(DDP(model.to(device)), device, data, mine)
    if rank == 0:
        expected = losses_on(reference, torch.device("cpu"), data, slice(None))
        worst = max(abs(a - b) for a, b in zip(losses, expected, strict=True))
        rounded = [round(v, 4) for v in losses]
        print(f"{world} ranks on {device.type} via {dist.get_backend_config()}: losses {rounded}")
        rounded = [round(v, 4) for v in expected]
        print(f"one CPU process on whole batches: losses {rounded} (max diff {worst:.2e})")
        if worst > 1e-4:
            raise SystemExit("DDP losses differ from one process's")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
