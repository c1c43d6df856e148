"""tpu_dist beside Gloo: all_reduce bus bandwidth over message sizes and latency at 4 KiB, on 2
ranks of this machine, with the memory copy bandwidth measured in the same run.

Two rank processes join one group ("cpu:gloo,tpu:tpu_dist"): Gloo reduces CPU tensors, tpu_dist
reduces tpu tensors (staged to and from the shared segment by the device's copies) and CPU
tensors. Each size is timed for each contender in turn, alternating, so that both see the same
machine state; a time is rank 0's median over repetitions, each between two barriers. The bus
bandwidth is NCCL's: 2 (n - 1) / n * bytes / time.

Then bench's gpt-small trains a few steps with DDP on the 2 ranks (one thread each) beside one
process of 2 threads on the same global batches: the steps/s ratio and the largest loss
difference.

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
DDP_MODEL = "gpt-small"
DDP_WARMUP, DDP_STEPS = 1, 3
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


def ddp_steps(rank: int | None, port: int, out: str) -> None:
    """bench's gpt-small trained on tpu (strict mode, AdamW) on one global batch per step: by one
    process of WORLD threads (rank None), or as one DDP rank of one thread on its share of each
    batch. Writes the median step time (each step synchronized) and the per-step losses."""
    from bench.models import MODELS
    from bench.steps import SEED, batches

    dist = torch.distributed
    torch.set_num_threads(WORLD if rank is None else 1)
    torch.manual_seed(SEED)
    model: torch.nn.Module = MODELS[DDP_MODEL].build().to("tpu")
    rows = slice(None)
    if rank is not None:
        dist.init_process_group(
            "tpu_dist", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD
        )
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(model)
        share = len(batches(DDP_MODEL, 1)[0][0]) // WORLD
        rows = slice(rank * share, (rank + 1) * share)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses, times = [], []
    for i, (x, y) in enumerate(batches(DDP_MODEL, DDP_WARMUP + DDP_STEPS)):
        x, y = x[rows].to("tpu"), y[rows].to("tpu")
        t0 = time.perf_counter()
        loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        torch.tpu.synchronize()
        if i >= DDP_WARMUP:
            times.append(time.perf_counter() - t0)
        losses.append(loss.detach())
    if rank is not None:
        for loss in losses:
            dist.all_reduce(loss, dist.ReduceOp.AVG)
    if rank in (None, 0):
        with open(out, "w") as f:
            json.dump(
                {"seconds": statistics.median(times), "losses": [v.item() for v in losses]}, f
            )
    if rank is not None:
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


def spawn(ranks: list[str], extra: list[str]) -> tuple[list[int], dict[str, Any] | None]:
    """Runs `python -m bench.dist --rank R ...extra` for each R; their exit codes and what rank 0
    (or the single process) wrote."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        args = ["--port", str(free_port()), "--out", out, *extra]
        cmd = [sys.executable, "-m", "bench.dist"]
        procs = [subprocess.Popen([*cmd, "--rank", r, *args], env=env) for r in ranks]
        codes = [p.wait(timeout=1800) for p in procs]
        if any(codes) or not os.path.exists(out):
            return codes, None
        with open(out) as f:
            return codes, json.load(f)


def run(sizes: list[int] | None = None, log: Any = print) -> dict[str, Any]:
    """Starts the ranks for the bandwidth sweep, then the DDP step beside one process."""
    ranks = [str(r) for r in range(WORLD)]
    codes, result = spawn(ranks, ["--sizes", *map(str, sizes or SIZES)])
    if result is None:
        return {"status": "n/a", "reason": f"rank exit codes {codes}"}
    result["summary"] = summarize(result["rows"], result["memcpy_gbps"])
    result["world"] = WORLD
    log(f"dist: DDP {DDP_MODEL} step, {WORLD} ranks of one thread, and one process of {WORLD}")
    _, single = spawn(["single"], ["--ddp"])
    codes, ddp = spawn(ranks, ["--ddp"])
    if single is None or ddp is None:
        result["ddp"] = {"status": "n/a", "reason": f"exit codes {codes}"}
        return result
    diff = max(abs(a - b) for a, b in zip(ddp["losses"], single["losses"], strict=True))
    result["ddp"] = {
        "status": "ok",
        "model": DDP_MODEL,
        "single_s": single["seconds"],
        "ddp_s": ddp["seconds"],
        "speed_ratio": single["seconds"] / ddp["seconds"],
        "max_loss_diff": diff,
        "losses": ddp["losses"],
        "single_losses": single["losses"],
    }
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

    def ratio(r: float | None) -> str:
        return "n/a" if r is None else fmt_ratio(r)

    def share(r: float | None) -> str:
        return "n/a" if r is None else f"{r:.0%}"

    lines = [
        f"### tpu_dist: all_reduce on {section['world']} ranks (bus bandwidth, median time)",
        "",
        md_table(header, body),
        "",
        "Each rank is a process with one thread (torch.set_num_threads(1)). "
        f"memcpy (one thread, 64 MiB): {section['memcpy_gbps']:.2f} GB/s. "
        f"At 64 MiB tpu_dist is {ratio(s['bandwidth_vs_gloo_64mib'])} Gloo's bus bandwidth and "
        f"{share(s['bandwidth_vs_memcpy_64mib'])} of memcpy's; at 4 KiB its latency is "
        f"{ratio(s['latency_vs_gloo_4kib'])} Gloo's.",
    ]
    d = section.get("ddp")
    if d and d["status"] == "ok":
        lines += [
            "",
            f"DDP {d['model']} train step on tpu (strict, AdamW), {section['world']} ranks of one "
            f"thread: {d['ddp_s']:.2f} s; one process of {section['world']} threads on the same "
            f"global batch: {d['single_s']:.2f} s; steps/s ratio {fmt_ratio(d['speed_ratio'])}; "
            f"losses differ by at most {d['max_loss_diff']:.1e}.",
        ]
    elif d:
        lines += ["", f"DDP step: n/a ({d['reason']})"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rank", help="a rank, or 'single' for --ddp's one process")
    parser.add_argument("--ddp", action="store_true", help="time the DDP step, not all_reduce")
    parser.add_argument("--port", type=int)
    parser.add_argument("--out")
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    args = parser.parse_args()
    if args.ddp:
        ddp_steps(None if args.rank == "single" else int(args.rank), args.port, args.out)
        return
    if args.rank is not None:
        rank_main(int(args.rank), args.port, args.out, args.sizes)
        return
    section = run(args.sizes)
    print(render(section))


if __name__ == "__main__":
    main()
