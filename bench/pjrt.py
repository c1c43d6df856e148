"""The PJRT driver (XLA's CPU plugin) beside the host driver and PyTorch CPU eager: bench's train
steps in each driver's strict and fused mode, with the compile, the disk cache's warm start and
where a step's time goes.

One driver runs per process, so every contender runs in a child process of its own, one after
the other, on the same seed, weights and batches (bench.steps). A child times its first step
(which compiles), its warm-up steps, then each timed step, and reports the driver's executable
counters (torch.tpu.compile_cache_stats). The PJRT contenders start from an empty disk cache (a
fresh TORCH_TPU_CACHE_DIR); a last child runs PJRT fused again on the cache its cold run filled:
its first step is the warm start.

    python -m bench.pjrt [--models gpt-tiny gpt-small]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import torch

from bench.checks import LOSS_RTOL
from bench.fmt import Footnotes, fmt_bytes, fmt_count, fmt_pct, fmt_ratio, fmt_s, md_table

# name -> (driver, eager mode); driver None: PyTorch CPU eager.
CONTENDERS: dict[str, tuple[str | None, str | None]] = {
    "cpu-eager": (None, None),
    "host-strict": ("host", "strict"),
    "host-fused": ("host", "fused"),
    "pjrt-strict": ("pjrt", "strict"),
    "pjrt-fused": ("pjrt", "fused"),
}
WARM = "pjrt-fused-warm"  # pjrt-fused again, on the disk cache its cold run wrote
# (warm-up steps after the first, timed steps) per model. gpt-small's PJRT fused steps compile
# new modules until step 4: storages the caching allocator hands out again keep the element type
# of their last contents, which the module text names, and that settles after a few steps.
RUNS = {"gpt-tiny": (2, 10), "gpt-small": (3, 2)}
# The host driver's gpt-small steps are in the models section; here they would cost a minute.
SKIP = {"gpt-small": ("host-strict", "host-fused")}
EXEC_KEYS = (
    "executables_compiled",
    "executables_loaded",
    "executable_compile_us",
    "executable_load_us",
    "executable_runs",
    "executable_run_us",
    "modules_lowered",
)


def executable_stats() -> dict[str, int]:
    """The driver's executable counters; empty on a driver that compiles none (host)."""
    stats = torch.tpu.compile_cache_stats()
    return {k: int(stats[k]) for k in EXEC_KEYS if k in stats}


def child(model: str, device: str, mode: str | None, warmup: int, timed: int) -> dict[str, Any]:
    """One contender's run, in this process (whose TORCH_TPU_DRIVER is already set)."""
    from bench.contenders import CPU_EAGER, Contender
    from bench.steps import StepRunner, batches

    c = CPU_EAGER if device == "cpu" else Contender(f"tpu-{mode}", mode or "", "", "tpu", mode)
    on_tpu = device == "tpu"
    runner = StepRunner(model, "train", c, batches(model, 1 + warmup + timed))
    if on_tpu:
        torch.tpu.reset_compile_cache_stats()
        torch.tpu.reset_peak_memory_stats()
    losses: list[float] = []
    start = time.perf_counter()
    runner.run(0)
    first_s = time.perf_counter() - start
    losses.append(float(runner.value()))  # type: ignore[arg-type]
    first = executable_stats() if on_tpu else {}
    for i in range(1, 1 + warmup):
        runner.run(i)
        losses.append(float(runner.value()))  # type: ignore[arg-type]
    if on_tpu:
        torch.tpu.reset_compile_cache_stats()
    step_s = []
    for i in range(1 + warmup, 1 + warmup + timed):
        start = time.perf_counter()
        runner.run(i)
        step_s.append(time.perf_counter() - start)
        losses.append(float(runner.value()))  # type: ignore[arg-type]
    out: dict[str, Any] = {"first_s": first_s, "step_s": step_s, "losses": losses}
    if on_tpu:
        out["first"] = first
        out["steady"] = executable_stats()
        out["peak_bytes"] = int(torch.tpu.max_memory_allocated())
        out["driver_fallback"] = torch.tpu.op_stats()["driver_fallback"]
    return out


def gemm_shapes(model: str) -> list[tuple[int, int, int]]:
    """(m, k, n) of each product of a GPT train step: per linear layer its forward x @ w, the
    input's gradient dy @ w.T (m, n, k) and the weight's x.T @ dy (k, m, n); attention's products
    are SDPA's, not counted."""
    from bench.models import GPT_SMALL, GPT_TINY

    c = {"gpt-tiny": GPT_TINY, "gpt-small": GPT_SMALL}[model]
    m, d = c.batch * c.seq, c.d_model
    layers = [(d, 3 * d), (d, d), (d, 4 * d), (4 * d, d)] * c.n_layers + [(d, c.vocab)]
    return [s for k, n in layers for s in ((m, k, n), (m, n, k), (k, m, n))]


def gemm_floor_child(model: str, reps: int = 3) -> float:
    """Seconds the step's products take on this process's driver, each timed alone (the median
    of `reps` synchronized runs after one that compiles) and summed."""
    shapes = gemm_shapes(model)
    seconds: dict[tuple[int, int, int], float] = {}
    for m, k, n in sorted(set(shapes)):
        a, b = torch.randn(m, k, device="tpu"), torch.randn(k, n, device="tpu")
        times = []
        for _ in range(reps + 1):
            torch.tpu.synchronize()
            start = time.perf_counter()
            a @ b
            torch.tpu.synchronize()
            times.append(time.perf_counter() - start)
        seconds[(m, k, n)] = statistics.median(times[1:])
    return sum(seconds[s] for s in shapes)


def run_child(call: str, env: dict[str, str]) -> dict[str, Any]:
    """Runs `call`, an expression of bench.pjrt as b giving a JSON-able dict, in a child process
    with `env`; its result with status ok, or status n/a with the child's last error line."""
    code = f"import json, bench.pjrt as b; print('RESULT', json.dumps({call}))"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=3600
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"status": "n/a", "reason": f"exit {done.returncode}: {tail[:200]}"}
    return {"status": "ok", **json.loads(lines[-1].removeprefix("RESULT "))}


def gemm_floor(model: str) -> dict[str, Any]:
    """gemm_floor_child in a PJRT child process."""
    env = {**os.environ, "TORCH_TPU_DRIVER": "pjrt"}
    return run_child(f"{{'seconds': b.gemm_floor_child({model!r})}}", env)


def spawn(model: str, name: str, cache_dir: str, warmup: int, timed: int) -> dict[str, Any]:
    driver, mode = CONTENDERS[name.removesuffix("-warm")]
    env = {**os.environ, "TORCH_TPU_CACHE_DIR": cache_dir}
    if driver:
        env["TORCH_TPU_DRIVER"] = driver
    device = "tpu" if driver else "cpu"
    return run_child(f"b.child({model!r}, {device!r}, {mode!r}, {warmup}, {timed})", env)


def check_losses(got: list[float], ref: list[float]) -> str | None:
    """The first loss that differs from CPU eager's beyond the bench's train tolerance."""
    for i, (g, r) in enumerate(zip(got, ref, strict=True)):
        if abs(g - r) > LOSS_RTOL * abs(r):
            return f"step {i}: loss {g:.6g}, CPU eager {r:.6g}"
    return None


def run_model(model: str, warmup: int, timed: int, log: Any = print) -> dict[str, Any]:
    """Every contender on `model`'s train step; results keyed by contender name."""
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-pjrt-") as root:
        for name in [n for n in [*CONTENDERS, WARM] if n not in SKIP.get(model, ())]:
            cache = os.path.join(root, name.removesuffix("-warm"))
            log(f"pjrt: {model} {name}")
            results[name] = spawn(model, name, cache, warmup, timed)
    log(f"pjrt: {model} GEMM floor")
    floor = gemm_floor(model)
    ref = results["cpu-eager"]
    for name, r in results.items():
        if r["status"] != "ok":
            continue
        r["median_s"] = statistics.median(r["step_s"])
        if name != "cpu-eager" and ref["status"] == "ok":
            diff = check_losses(r["losses"], ref["losses"])
            if diff:
                r.update(status="wrong", reason=diff)
    return {
        "model": model,
        "task": "train",
        "warmup": warmup,
        "timed": timed,
        "results": results,
        "gemm_floor": floor,
    }


def run(models: list[str], log: Any = print) -> dict[str, Any]:
    """The bench section: one row per model."""
    return {"rows": [run_model(m, *RUNS[m], log=log) for m in models]}


def ratio(a: dict[str, Any], b: dict[str, Any]) -> float | None:
    """b's step time over a's (how many times faster a is), when both ran."""
    if a.get("status") != "ok" or b.get("status") != "ok":
        return None
    return b["median_s"] / a["median_s"]


def made(stats: dict[str, int]) -> str:
    """Executables compiled or loaded, and the time it took."""
    if stats["executables_loaded"]:
        return f"{stats['executables_loaded']} loaded in {fmt_s(stats['executable_load_us'] / 1e6)}"
    return f"{stats['executables_compiled']} in {fmt_s(stats['executable_compile_us'] / 1e6)}"


def split_cells(r: dict[str, Any]) -> list[str]:
    """First step (compile or load time), executables made while timed, executables run per step,
    their share of it, the host's time per run (the step time the runs leave, per run) and the
    modules lowered while timed (0 once every structure has its compiled module)."""
    if not r.get("first"):
        return [fmt_s(r["first_s"]), "", "", "", "", "", ""]
    f, s, n = r["first"], r["steady"], len(r["step_s"])
    late = made(s) if s["executables_compiled"] or s["executables_loaded"] else "0"
    total_s = sum(r["step_s"])
    run_share = s["executable_run_us"] / 1e6 / total_s
    host_us = (total_s - s["executable_run_us"] / 1e6) * 1e6 / max(s["executable_runs"], 1)
    return [
        fmt_s(r["first_s"]),
        made(f),
        late,
        fmt_count(s["executable_runs"] / n),
        fmt_pct(run_share),
        f"{host_us:.0f} µs",
        fmt_count(s["modules_lowered"] / n) if "modules_lowered" in s else "",
    ]


def floor_line(row: dict[str, Any], fn: Footnotes) -> str:
    """The model's GEMM floor and the most fused mode could gain over strict above it."""
    floor = row.get("gemm_floor")
    if not floor:
        return ""
    if floor["status"] != "ok":
        return f"\n\nGEMM floor: n/a {fn.mark(floor['reason'])}"
    strict = row["results"].get("pjrt-strict", {})
    bound = ratio({"status": "ok", "median_s": floor["seconds"]}, strict)
    gain = f"; pjrt-strict's step over it: {fmt_ratio(bound)}" if bound else ""
    return f"\n\nGEMM floor: {fmt_s(floor['seconds'])}{gain}"


def table(section: dict[str, Any], fn: Footnotes) -> str:
    """The Markdown of the section: one table per model."""
    parts = []
    for row in section["rows"]:
        res = row["results"]
        lines = []
        for name, r in res.items():
            if r["status"] != "ok":
                lines.append([name, f"{r['status']} {fn.mark(r['reason'])}", *[""] * 11])
                continue
            vs_cpu = ratio(r, res["cpu-eager"])
            strict = res.get(name.replace("fused", "strict").removesuffix("-warm"), {})
            vs_strict = ratio(r, strict) if "fused" in name else None
            fallback = ", ".join(f"{k} {v}" for k, v in r.get("driver_fallback", {}).items())
            lines.append(
                [
                    name,
                    fmt_s(r["median_s"]),
                    fmt_ratio(vs_cpu) if vs_cpu else "",
                    fmt_ratio(vs_strict) if vs_strict else "",
                    *split_cells(r),
                    fmt_bytes(r["peak_bytes"]) if "peak_bytes" in r else "",
                    fallback,
                ]
            )
        heads = [
            "contender",
            "step (median)",
            "speed vs CPU eager",
            "fused vs strict",
            "first step",
            "executables made",
            "made while timed",
            "runs / step",
            "run share",
            "host / run",
            "lowered / step",
            "device peak",
            "driver fallbacks (calls)",
        ]
        parts.append(
            f"#### {row['model']} {row['task']} ({row['warmup']} warm-up steps after the first, "
            f"{row['timed']} timed)\n\n"
            + md_table(heads, lines, [False] + [True] * 11 + [False])
            + floor_line(row, fn)
        )
    note = (
        "Each contender in its own process, one after the other. Speeds are CPU eager's (or "
        "strict's) median step time over the contender's. The first step compiles (cold: empty "
        f"disk cache) or loads ({WARM}: the cache pjrt-fused wrote); made while timed: "
        "executables compiled or loaded during the timed steps (new modules). Runs / step: "
        "executables launched per timed step; run share: the part of the step the device was "
        "busy with them, from a launch to its completion (launches return once enqueued, so the "
        "host's work overlaps this); host / run: the rest of the step (host work the device did "
        "not overlap: Python, lowering, copies and waiting) per run; lowered / step: runs "
        "lowered to a module during the timed steps (a run whose structure has its compiled "
        "module binds buffers and scalars only). Losses match CPU eager within rtol "
        f"{LOSS_RTOL} at every step, else the row says wrong. GEMM floor: the step's matrix "
        "products (forward, and both gradients of each), each run alone on PJRT and summed; no "
        "mode that runs them as XLA's dot does can step faster, so strict's step over it bounds "
        "what fused mode can gain."
    )
    return "### PJRT driver (XLA CPU plugin): train steps\n\n" + note + "\n\n" + "\n\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", nargs="+", default=list(RUNS))
    args = parser.parse_args()
    fn = Footnotes()
    section = run(args.models, log=lambda m: print(m, file=sys.stderr))
    print(table(section, fn))
    if fn.reasons:
        print("\n" + fn.render())


if __name__ == "__main__":
    main()
