"""Fused against strict mode on the PJRT driver, beside the host driver and CPU eager.

One step is a chain of 48 elementwise ops on two float32 vectors, read back (4 elements) at its
end, so each fused step is one deferred graph. Each driver runs in its own process (one driver per
process); every figure is the mean of ``--iters`` steps after 3 warm-up steps, which compile.

    python -m bench.pjrt_fused [--sizes 1024 1048576] [--iters 30]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import torch


def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    for _ in range(8):
        x = torch.tanh(x * 1.01 + y) * 0.5 - y.sigmoid()
    return x[:4].cpu() if x.device.type != "cpu" else x[:4].clone()


def seconds_per_step(device: str, mode: str | None, n: int, iters: int) -> float:
    if mode:
        torch.tpu.set_eager_mode(mode)
    x, y = torch.randn(n, device=device), torch.randn(n, device=device)
    for _ in range(3):
        step(x, y)
    start = time.perf_counter()
    for _ in range(iters):
        step(x, y)
    return (time.perf_counter() - start) / iters


def child(n: int, iters: int) -> None:
    """Runs in a process whose TORCH_TPU_DRIVER is set: strict and fused, as JSON."""
    result = {mode: seconds_per_step("tpu", mode, n, iters) for mode in ("strict", "fused")}
    print(json.dumps(result))


def measure(driver: str, n: int, iters: int) -> dict[str, float]:
    env = {**os.environ, "TORCH_TPU_DRIVER": driver}
    code = f"import bench.pjrt_fused as b; b.child({n}, {iters})"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 1 << 20])
    parser.add_argument("--iters", type=int, default=30)
    args = parser.parse_args()
    from bench.machine import cpu_flags, cpu_model

    isa = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_tile") if f in cpu_flags()]
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, ISA: {' '.join(isa)}")
    for n in args.sizes:
        cpu = seconds_per_step("cpu", None, n, args.iters)
        row = [f"n={n}: CPU eager {cpu * 1e3:.2f} ms"]
        for driver in ("host", "pjrt"):
            t = measure(driver, n, args.iters)
            row.append(
                f"{driver} strict {t['strict'] * 1e3:.2f} ms, fused {t['fused'] * 1e3:.2f} ms "
                f"(fused {t['strict'] / t['fused']:.2f}x strict)"
            )
        print("; ".join(row))


if __name__ == "__main__":
    main()
