"""tpu_dist beside Gloo: all_reduce bus bandwidth over message sizes and latency at 4 KiB, on 2
ranks of this machine, with the memory copy bandwidth measured in the same run.

Two rank processes join one group ("cpu:gloo,tpu:tpu_dist"): Gloo reduces CPU tensors, tpu_dist
reduces tpu tensors (staged to and from the shared segment by the device's copies) and CPU
tensors. Each size is timed for each contender in turn, alternating, so that both see the same
machine state; a time is rank 0's median over repetitions, each between two barriers. The bus
bandwidth is NCCL's: 2 (n - 1) / n * bytes / time.

    python -m bench.dist [--sizes 4096 67108864]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from typing import Any

import torch

from bench.fmt import fmt_bytes, fmt_ratio, md_table

WORLD = 2
SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20]
# name -> (device of the tensor, label)
CONTENDERS = {
    "gloo": ("cpu", "Gloo, CPU tensors"),
    "tpu_dist": ("tpu", "tpu_dist, tpu tensors"),
    "tpu_dist-cpu": ("cpu", "tpu_dist, CPU tensors"),
}
MIN_TIME_S = 0.5  # per size and contender, after one warm-up
MAX_REPS = 200
LATENCY_BYTES = 4 << 10
TARGET_BYTES = 64 << 20


def bus_gbps(nbytes: int, seconds: float) -> float:
    return 2 * (WORLD - 1) / WORLD * nbytes / seconds / 1e9


def memcpy_gbps(nbytes: int = TARGET_BYTES) -> float:
    """One thread copying `nbytes` between two CPU tensors: bytes copied per second (best of 5)."""
    src, dst = torch.ones(nbytes // 4), torch.empty(nbytes // 4)
    best = float("inf")
    for _ in range(6):
        t0 = time.perf_counter()
        dst.copy_(src)
        best = min(best, time.perf_counter() - t0)
    return nbytes / best / 1e9


def time_all_reduce(t: torch.Tensor, group: Any, control: Any) -> tuple[float, int]:
    """Median seconds of one all_reduce of `t` after a warm-up, and the repetitions: as many as
    fit MIN_TIME_S on rank 0, which tells the other rank when to stop (through `control`)."""
    dist = torch.distributed
    dist.all_reduce(t, group=group)
    times: list[float] = []
    while True:
        dist.barrier(group=control)
        t0 = time.perf_counter()
        dist.all_reduce(t, group=group)
        times.append(time.perf_counter() - t0)
        go = torch.tensor([int(sum(times) < MIN_TIME_S and len(times) < MAX_REPS)])
        dist.broadcast(go, 0, group=control)
        if not go.item():
            return statistics.median(times), len(times)


def rank_main(rank: int, port: int, out: str, sizes: list[int]) -> None:
    torch.set_num_threads(1)
    dist = torch.distributed
    dist.init_process_group(
        "cpu:gloo,tpu:tpu_dist",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=WORLD,
        timeout=timedelta(seconds=300),
    )
    gloo = dist.new_group(backend="gloo")
    tpu_dist = dist.new_group(backend="tpu_dist")
    groups = {"gloo": gloo, "tpu_dist": tpu_dist, "tpu_dist-cpu": tpu_dist}
    rows = []
    for nbytes in sizes:
        for name, (device, _) in CONTENDERS.items():
            # Zeros: repeated sums stay finite (correctness is tests/test_dist.py's part).
            t = torch.zeros(nbytes // 4, device=device)
            seconds, reps = time_all_reduce(t, groups[name], gloo)
            rows.append(
                {
                    "contender": name,
                    "bytes": nbytes,
                    "seconds": seconds,
                    "reps": reps,
                    "bus_gbps": bus_gbps(nbytes, seconds),
                }
            )
            del t
    result = {"rows": rows, "memcpy_gbps": memcpy_gbps()}
    if rank == 0:
        with open(out, "w") as f:
            json.dump(result, f)
    dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def summarize(rows: list[dict[str, Any]], memcpy: float) -> dict[str, Any]:
    """The targets' figures: ratios at 64 MiB and at 4 KiB, and the share of memcpy bandwidth."""

    def at(name: str, nbytes: int) -> dict[str, Any] | None:
        return next((r for r in rows if r["contender"] == name and r["bytes"] == nbytes), None)

    big, big_gloo = at("tpu_dist", TARGET_BYTES), at("gloo", TARGET_BYTES)
    small, small_gloo = at("tpu_dist", LATENCY_BYTES), at("gloo", LATENCY_BYTES)
    return {
        "bandwidth_vs_gloo_64mib": big["bus_gbps"] / big_gloo["bus_gbps"]
        if big and big_gloo
        else None,
        "bandwidth_vs_memcpy_64mib": big["bus_gbps"] / memcpy if big else None,
        "latency_4kib_us": {
            n: r["seconds"] * 1e6 for n in CONTENDERS if (r := at(n, LATENCY_BYTES))
        },
        "latency_vs_gloo_4kib": small["seconds"] / small_gloo["seconds"]
        if small and small_gloo
        else None,
    }


def run(sizes: list[int] | None = None, log: Any = print) -> dict[str, Any]:
    """Starts the two ranks and returns the section's results."""
    sizes = sizes or SIZES
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "dist.json")
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        cmd = [sys.executable, "-m", "bench.dist", "--rank"]
        args = ["--port", str(port), "--out", out, "--sizes", *map(str, sizes)]
        procs = [subprocess.Popen([*cmd, str(r), *args], env=env) for r in range(WORLD)]
        codes = [p.wait(timeout=1800) for p in procs]
        if any(codes):
            return {"status": "n/a", "reason": f"rank exit codes {codes}"}
        with open(out) as f:
            result = json.load(f)
    result["summary"] = summarize(result["rows"], result["memcpy_gbps"])
    result["world"] = WORLD
    return result


def render(section: dict[str, Any]) -> str:
    """The Markdown table: bus bandwidth per size and contender, then the targets' figures."""
    if section.get("status") == "n/a":
        return f"dist: n/a ({section['reason']})\n"
    sizes = sorted({r["bytes"] for r in section["rows"]})
    header = ["size", *(label for _, label in CONTENDERS.values())]
    body = []
    for nbytes in sizes:
        cells = [fmt_bytes(nbytes)]
        for name in CONTENDERS:
            r = next(r for r in section["rows"] if r["contender"] == name and r["bytes"] == nbytes)
            cells.append(f"{r['bus_gbps']:.2f} GB/s ({r['seconds'] * 1e6:.0f} µs)")
        body.append(cells)
    s = section["summary"]
    lines = [
        f"### tpu_dist: all_reduce on {section['world']} ranks (bus bandwidth, median time)",
        "",
        md_table(header, body),
        "",
        "Each rank is a process with one thread (torch.set_num_threads(1)). "
        f"memcpy (one thread, 64 MiB): {section['memcpy_gbps']:.2f} GB/s. "
        f"At 64 MiB tpu_dist is {fmt_ratio(s['bandwidth_vs_gloo_64mib'])} Gloo's bus bandwidth and "
        f"{s['bandwidth_vs_memcpy_64mib']:.0%} of memcpy's; at 4 KiB its latency is "
        f"{fmt_ratio(s['latency_vs_gloo_4kib'])} Gloo's.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rank", type=int)
    parser.add_argument("--port", type=int)
    parser.add_argument("--out")
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    args = parser.parse_args()
    if args.rank is not None:
        rank_main(args.rank, args.port, args.out, args.sizes)
        return
    section = run(args.sizes)
    print(render(section))


if __name__ == "__main__":
    main()
