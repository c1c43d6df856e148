"""The main job (`make demo`): the migration story from TorchTPU's announcement.

The script names no device: it trains a small GPT-style model on
`torch.accelerator.current_accelerator()` (the tpu device once torch_tpu is installed), checks
every loss against the same steps on CPU, and prints the device, steps per second and memory.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

# The fixed GPT definition lives in bench/ at the repository root.
sys.path.append(str(Path(__file__).resolve().parent.parent))
from bench.models import GPT, GPT_TINY  # noqa: E402


def train(device: torch.device, steps: int, seed: int = 0) -> tuple[list[float], float]:
    """Trains GPT_TINY for `steps` AdamW steps on `device`; returns the losses and the steps/s
    after the first (warm-up) step."""
    torch.manual_seed(seed)
    model = GPT(GPT_TINY).to(device)
    # The same AdamW implementation on both devices, so the losses compare op for op.
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, foreach=True)
    data = torch.randint(
        0,
        GPT_TINY.vocab,
        (steps, GPT_TINY.batch, GPT_TINY.seq + 1),
        generator=torch.Generator().manual_seed(seed + 1),
    )
    losses: list[float] = []
    start = 0.0
    for step in range(steps):
        if step == 1:
            start = time.perf_counter()
        inputs = data[step, :, :-1].to(device)
        targets = data[step, :, 1:].to(device)
        loss = model(inputs, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, (steps - 1) / (time.perf_counter() - start)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=8, help="at least 2")
    args = parser.parse_args()

    device = torch.accelerator.current_accelerator()
    if device is None:
        print("no accelerator: is torch_tpu installed?")
        return 1
    print(f"device: {device} ({torch.tpu.get_device_name()}), torch {torch.__version__}")
    print(
        f"model: GPT d_model={GPT_TINY.d_model} layers={GPT_TINY.n_layers} "
        f"vocab={GPT_TINY.vocab} seq={GPT_TINY.seq} batch={GPT_TINY.batch}"
    )

    cpu_losses, cpu_rate = train(torch.device("cpu"), args.steps)
    torch.accelerator.reset_peak_memory_stats()
    torch.tpu.reset_op_stats()
    dev_losses, dev_rate = train(device, args.steps)

    print(f"{'step':>4} {'cpu loss':>10} {device.type + ' loss':>10} {'abs diff':>9}")
    worst, match = 0.0, True
    for step, (a, b) in enumerate(zip(cpu_losses, dev_losses, strict=True)):
        worst = max(worst, abs(a - b))
        match = match and abs(a - b) <= 1e-3 * max(1.0, abs(a))
        print(f"{step:>4} {a:>10.5f} {b:>10.5f} {abs(a - b):>9.2e}")

    stats = torch.accelerator.memory_stats()
    ops = torch.tpu.op_stats()
    print(f"steps/s: cpu {cpu_rate:.2f}, {device.type} {dev_rate:.2f}")
    print(
        f"memory: peak allocated {stats['allocated_bytes.all.peak'] / 2**20:.1f} MiB, "
        f"reserved {stats['reserved_bytes.all.current'] / 2**20:.1f} MiB, "
        f"allocations {stats['allocation.all.allocated']}"
    )
    print(
        f"ops: {sum(ops['native'].values())} native calls, "
        f"{sum(ops['fallback'].values())} CPU-fallback calls "
        f"({len(ops['fallback'])} distinct ops fall back)"
    )
    print(f"losses {'match' if match else 'DIFFER from'} CPU (max abs diff {worst:.2e})")
    return 0 if match else 1


if __name__ == "__main__":
    sys.exit(main())
