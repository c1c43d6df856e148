"""Soak test (`make soak`, not in CI): trains bench's gpt-tiny on tpu for a long time in each eager
mode, with host reads, synchronizations and cache flushes at random steps, and checks that

- every CHECK_EVERY steps one step matches CPU: the CPU model and optimizer are loaded from the
  tpu ones, both take the same step, and the losses, the gradients and the updated parameters
  agree (a lockstep check, so rounding differences cannot accumulate over thousands of steps),
  within fixed floors or, where the model's state amplifies rounding, within AMPLIFICATION times
  the difference one rounding of the parameters makes to CPU's own step;
- memory does not grow: after the warm-up, the device's allocated bytes at every check equal
  those of the first check, and the process's resident memory and the compile cache's entries
  stay within small bounds.

`python -m tests.soak --minutes 60` (per mode); exits 1 on the first failed check.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import torch

sys.path.append(str(Path(__file__).resolve().parent.parent))
from bench.models import GPT, GPT_TINY  # noqa: E402

LR = 3e-3
CHECK_EVERY = 200
# tpu and CPU must agree within FLOORS (loss, gradients of the largest, parameters in lr), or
# within AMPLIFICATION times what one rounding of the parameters moves CPU's own step by.
FLOORS = (1e-4, 1e-4, 0.1)
AMPLIFICATION = 10
WARMUP_STEPS = 20
RSS_GROWTH_LIMIT = 64 << 20  # allocator caches and Python's arenas settle, then must stay
CACHE_GROWTH_LIMIT = 8  # compile cache entries: one set of graphs per random cut pattern seen


def rss_bytes() -> int:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * 4096


def batch(rng: torch.Generator, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    c = GPT_TINY
    data = torch.randint(0, c.vocab, (c.batch, c.seq + 1), generator=rng)
    return data[:, :-1].to(device), data[:, 1:].to(device)


def _step(
    model: torch.nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor
) -> tuple[float, list[torch.Tensor], list[torch.Tensor]]:
    """One training step: (loss, gradients, updated parameters), all on the host."""
    dev = next(model.parameters()).device
    loss = model(x.to(dev), y.to(dev))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    grads = [p.grad.detach().cpu() for p in model.parameters()]
    opt.step()
    return loss.item(), grads, [p.detach().cpu() for p in model.parameters()]


def _cpu_copy(
    model: torch.nn.Module, opt: torch.optim.Optimizer, noise: torch.Generator | None = None
) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    """A CPU copy of the model and its optimizer; with `noise`, every parameter moved by a random
    one-rounding relative perturbation (|delta| <= 2^-24)."""
    cpu_model = GPT(GPT_TINY)
    cpu_model.load_state_dict(model.state_dict())
    if noise is not None:
        with torch.no_grad():
            for p in cpu_model.parameters():
                p.mul_(1 + (torch.rand(p.shape, generator=noise) * 2 - 1) * 2.0**-24)
    cpu_opt = torch.optim.AdamW(cpu_model.parameters(), lr=LR, foreach=True)
    cpu_opt.load_state_dict(opt.state_dict())
    return cpu_model, cpu_opt


def lockstep_check(
    model: torch.nn.Module, opt: torch.optim.Optimizer, rng: torch.Generator
) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """One step on tpu and on a CPU copy of the model and optimizer from the same state and batch:
    the loss difference, the largest gradient difference relative to the largest gradient, and
    the largest parameter difference after the optimizer step relative to the learning rate
    (AdamW moves each parameter by about lr, more where a gradient is near zero, so that is the
    scale a rounding difference in a gradient shows up on). Also the same three between two CPU
    steps whose parameters differ by one rounding: how much this state amplifies rounding (late
    in training a step can turn a float32 rounding difference into a 1e-3 gradient difference)."""
    x, y = batch(rng, torch.device("cpu"))
    seed = int(torch.randint(1 << 30, (1,), generator=rng))
    copies = [_cpu_copy(model, opt), _cpu_copy(model, opt, torch.Generator().manual_seed(seed))]
    runs = [_step(model, opt, x, y)] + [_step(m, o, x, y) for m, o in copies]

    def diffs(a: tuple, b: tuple) -> tuple[float, float, float]:
        scale = max(g.abs().max().item() for g in b[1])
        grad = max((u - v).abs().max().item() for u, v in zip(a[1], b[1], strict=True)) / scale
        param = max((u - v).abs().max().item() for u, v in zip(a[2], b[2], strict=True))
        return abs(a[0] - b[0]), grad, param / LR

    return diffs(runs[0], runs[1]), diffs(runs[2], runs[1])


def soak(mode: str, seconds: float, seed: int) -> bool:
    torch.manual_seed(seed)
    device = torch.device("tpu")
    rng = torch.Generator().manual_seed(seed)
    events = random.Random(seed)
    model = GPT(GPT_TINY).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, foreach=True)
    base_allocated = base_rss = base_entries = -1
    worst_loss = worst_grad = worst_param = 0.0
    step = checks = 0
    end = time.monotonic() + seconds
    with torch.tpu.eager_mode(mode):
        while time.monotonic() < end:
            x, y = batch(rng, device)
            loss = model(x, y)
            if events.random() < 0.05:
                loss.item()  # a host read before backward: one more cut and a wait
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            roll = events.random()
            if roll < 0.05:
                torch.tpu.synchronize()
            elif roll < 0.07:
                next(model.parameters()).sum().item()  # a read of a result just updated
            elif roll < 0.08:
                torch.tpu.empty_cache()
            step += 1
            if step < WARMUP_STEPS or step % CHECK_EVERY:
                continue
            (loss_diff, grad_diff, param_diff), spread = lockstep_check(model, opt, rng)
            worst_loss, worst_grad = max(worst_loss, loss_diff), max(worst_grad, grad_diff)
            worst_param = max(worst_param, param_diff)
            torch.tpu.synchronize()
            allocated = torch.tpu.memory_allocated()
            entries = torch.tpu.compile_cache_stats()["entries"]
            if base_allocated < 0:
                base_allocated, base_rss, base_entries = allocated, rss_bytes(), entries
            checks += 1
            problems = []
            bounds = [
                max(floor, AMPLIFICATION * d) for floor, d in zip(FLOORS, spread, strict=True)
            ]
            if any(d > b for d, b in zip((loss_diff, grad_diff, param_diff), bounds, strict=True)):
                problems.append(
                    f"differs from CPU: loss {loss_diff:.2e}, gradients {grad_diff:.2e} of the "
                    f"largest, parameters {param_diff:.2e} lr (bounds {bounds[0]:.2e}, "
                    f"{bounds[1]:.2e}, {bounds[2]:.2e} lr)"
                )
            if allocated != base_allocated:
                problems.append(f"allocated {base_allocated} -> {allocated} bytes")
            if rss_bytes() - base_rss > RSS_GROWTH_LIMIT:
                problems.append(f"RSS grew {(rss_bytes() - base_rss) >> 20} MiB")
            if entries - base_entries > CACHE_GROWTH_LIMIT:
                problems.append(f"compile cache {base_entries} -> {entries} entries")
            if problems:
                print(f"{mode}: step {step}: " + "; ".join(problems))
                return False
    print(
        f"{mode:>6}: {step} steps, {checks} checks, max |loss diff| {worst_loss:.2e}, "
        f"gradients {worst_grad:.2e} of the largest, parameters {worst_param:.2e} lr, "
        f"allocated {base_allocated >> 10} KiB steady, "
        f"RSS {base_rss >> 20} -> {rss_bytes() >> 20} MiB, cache {base_entries} -> "
        f"{torch.tpu.compile_cache_stats()['entries']} entries"
    )
    return True


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--minutes", type=float, default=60.0, help="per eager mode")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--modes", default="debug,strict,fused")
    args = p.parse_args()
    ok = all(soak(m, args.minutes * 60, args.seed) for m in args.modes.split(","))
    print("soak: ok" if ok else "soak: FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
