"""The main job (`make demo`): the migration story from TorchTPU's announcement.

The script names no device: it trains a small GPT-style model on
`torch.accelerator.current_accelerator()` (the tpu device once torch_tpu is installed) in each
eager mode (debug, strict, fused), checks every loss against the same steps on CPU, and prints
steps per second, peak device memory and CPU-fallback calls per mode.
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
    print(f"cpu: {cpu_rate:.2f} steps/s")
    header = ("mode", "steps/s", "vs cpu", "peak MiB", "max |loss diff|", "fallbacks")
    print(" ".join(f"{h:>{w}}" for h, w in zip(header, (6, 8, 7, 9, 16, 9), strict=True)))
    all_match = True
    for mode in ("debug", "strict", "fused"):
        torch.accelerator.synchronize()
        torch.accelerator.reset_peak_memory_stats()
        torch.tpu.reset_op_stats()
        with torch.tpu.eager_mode(mode):
            dev_losses, dev_rate = train(device, args.steps)
            torch.accelerator.synchronize()
        diffs = [abs(a - b) for a, b in zip(cpu_losses, dev_losses, strict=True)]
        match = all(d <= 1e-3 * max(1.0, abs(a)) for d, a in zip(diffs, cpu_losses, strict=True))
        all_match = all_match and match
        peak = torch.accelerator.memory_stats()["allocated_bytes.all.peak"] / 2**20
        fallbacks = sum(torch.tpu.op_stats()["fallback"].values())
        print(
            f"{mode:>6} {dev_rate:>8.2f} {dev_rate / cpu_rate:>6.2f}x {peak:>9.1f} "
            f"{max(diffs):>16.2e} {fallbacks:>9}"
        )
    print(f"losses {'match' if all_match else 'DIFFER from'} CPU in every mode")
    return 0 if all_match else 1


if __name__ == "__main__":
    sys.exit(main())
