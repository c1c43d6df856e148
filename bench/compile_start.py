"""torch.compile(backend="tpu")'s compile time, cold and warm, on a model's training step.

A fresh process compiles the model and runs its first training steps with every cache directory
empty (cold: TORCH_TPU_CACHE_DIR and PyTorch's TORCHINDUCTOR_CACHE_DIR, which holds the
AOTAutograd, FX graph and Dynamo caches, both in a new temporary directory); then a second process
does the same and finds the first one's files there (warm). Each process reports its first step
(Dynamo's tracing, AOTAutograd, planning and the step itself) and its median steady step; the
compile time is the difference. The pair runs twice: as by default (Dynamo traces the Python code
in every process, AOTAutograd's cache gives the graphs) and with Dynamo's caching precompile on
(the cold process saves its caches with torch.compiler.save_cache_artifacts; the warm one gets the
guarded code and the compiled graphs from Dynamo's cache and traces nothing).

    python -m bench.compile_start [--model gpt-small]
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

from bench.fmt import fmt_ratio, fmt_s, md_table
from bench.models import MODELS, build_model

MODEL = "gpt-small"
STEADY_STEPS = 3
WARM_TARGET = 0.3  # the bound: warm compile time at most this share of the cold one


def child(model: str, precompile: bool) -> dict[str, float]:
    """In the measured process: the first step's and the steady steps' wall times."""
    torch.set_num_threads(2)
    torch._dynamo.config.caching_precompile = precompile
    m = build_model(model, 0).to("tpu")
    fn = torch.compile(m, backend="tpu")
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, fused=True)
    gen = torch.Generator().manual_seed(1)
    data = [tuple(t.to("tpu") for t in MODELS[model].batch(gen)) for _ in range(2)]
    times = []
    for i in range(1 + STEADY_STEPS):
        x, y = data[i % len(data)]
        torch.tpu.synchronize()
        t0 = time.perf_counter()
        fn(x, y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.tpu.synchronize()
        times.append(time.perf_counter() - t0)
    if precompile:
        torch.compiler.save_cache_artifacts()
    steady = statistics.median(times[1:])
    return {"first_s": times[0], "steady_s": steady, "compile_s": max(times[0] - steady, 0.0)}


def run(model: str = MODEL, log: Any = print) -> dict[str, Any]:
    """The default pair (its cold and warm processes at the top level) and the precompile pair
    (under "precompile")."""
    out: dict[str, Any] = {"model": model}
    for precompile in (False, True):
        pair = _pair(model, precompile, log)
        if pair.get("status") == "n/a":
            return pair
        out.update(pair) if not precompile else out.update(precompile=pair)
    out["status"] = "ok"
    return out


def _pair(model: str, precompile: bool, log: Any) -> dict[str, Any]:
    """Cold then warm: two processes sharing one new set of cache directories."""
    name = "precompile" if precompile else "default"
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-compile-") as root:
        env = {
            **os.environ,
            "TORCH_TPU_CACHE_DIR": os.path.join(root, "torch_tpu"),
            "TORCHINDUCTOR_CACHE_DIR": os.path.join(root, "inductor"),
        }
        for phase in ("cold", "warm"):
            command = ["--child", model] + (["--precompile"] if precompile else [])
            done = subprocess.run(
                [sys.executable, "-m", "bench.compile_start", *command],
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
            )
            if done.returncode != 0:
                tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
                return {"status": "n/a", "reason": f"{name} {phase} process failed: {tail}"}
            out[phase] = json.loads(done.stdout.strip().splitlines()[-1])
            log(f"compile: {model} {name} {phase} first step {out[phase]['first_s']:.2f} s")
    cold = out["cold"]["compile_s"]
    out["warm_vs_cold"] = out["warm"]["compile_s"] / cold if cold > 0 else None
    return out


def render(section: dict[str, Any]) -> str:
    if section.get("status") != "ok":
        return f"compile start: n/a ({section.get('reason')})\n"
    header = ["Dynamo", "process", "first step", "steady step", "compile time (first - steady)"]
    header.append("of cold")
    rows = []
    pairs = [("traces", section), ("precompile", section.get("precompile"))]
    for name, pair in pairs:
        for phase in ("cold", "warm") if pair else ():
            r = pair[phase]
            times = [fmt_s(r["first_s"]), fmt_s(r["steady_s"]), fmt_s(r["compile_s"])]
            share = _share(pair["warm_vs_cold"]) if phase == "warm" else ""
            rows.append([name, phase, *times, share])
    return "\n".join(
        [
            f'### torch.compile(backend="tpu"): compile time of {section["model"]} train, cold and '
            "warm",
            "",
            md_table(header, rows),
            "",
            "cold: empty cache directories; warm: a second process with the cold one's. "
            "traces: as by default, Dynamo traces the code in every process and AOTAutograd's "
            "cache gives the graphs; precompile: Dynamo's caching precompile on "
            "(torch._dynamo.config.caching_precompile), the cold process saves its caches "
            "(torch.compiler.save_cache_artifacts) and the warm one traces nothing. The target "
            f"for a warm start is at most {WARM_TARGET:.0%} of the cold time.",
            "",
        ]
    )


def _share(share: float | None) -> str:
    return "n/a" if share is None else f"{share:.0%} ({fmt_ratio(share)})"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=MODEL, choices=sorted(MODELS))
    ap.add_argument("--child", metavar="MODEL", help=argparse.SUPPRESS)
    ap.add_argument("--precompile", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.precompile)))
        return 0
    print(render(run(args.model)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
