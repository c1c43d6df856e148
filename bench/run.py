"""`python -m bench.run --quick|--full [--only SECTIONS]`: measure, print the Markdown table of
ratios, write JSON and PNG plots to bench/results/."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import sys
import time
from pathlib import Path
from typing import Any

NOTES = [
    "Each contender gets the same seed, initial weights, batches (moved to its device before "
    "timing) and thread count. A timed step ends synchronized (torch.tpu.synchronize() on tpu); "
    "losses and outputs are read back after the timed region and checked.",
    "CPU compile on lstm: dynamo graph-breaks at nn.LSTM (torch._dynamo.config.allow_rnn is "
    "False; with True, inductor in torch 2.13 fails on aten.mkldnn_rnn_layer), so only the "
    "classifier head is compiled and the LSTM runs eagerly.",
    "Peak live tensor bytes (CPU) and the device peak (tpu) count the same things: parameters, "
    "optimizer state, the batch and every temporary of the step.",
]


def import_torch() -> None:
    """Import torch; if the torch_tpu autoload breaks the import, rerun without the autoload so
    the CPU contenders are still measured and every tpu column says why it is missing."""
    try:
        import torch  # noqa: F401
    except Exception as e:
        if os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD") == "0":
            raise
        cause = e.__cause__ or e
        detail = f"{type(cause).__name__}: {str(cause).strip()[:150]}"
        reason = f"import torch fails with the torch_tpu autoload ({detail})"
        env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0", BENCH_AUTOLOAD_ERROR=reason)
        print(f"bench: {reason}; rerunning with TORCH_DEVICE_BACKEND_AUTOLOAD=0", file=sys.stderr)
        os.execve(sys.executable, [sys.executable, "-m", "bench.run", *sys.argv[1:]], env)


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--quick",
        action="store_true",
        help="the make bench run: at most 10 minutes on 2 cores (default)",
    )
    g.add_argument("--full", action="store_true", help="more repetitions, every memory probe")
    p.add_argument(
        "--only",
        help="comma list of sections limits|ops|models|timesplit|pjrt|dist|compile, each "
        "optionally SECTION:SUBSTRING to filter, e.g. ops:gemm,models:gpt-tiny",
    )
    p.add_argument("--out", type=Path, help="results directory (default bench/results)")
    p.add_argument("--no-plots", action="store_true")
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    t_start = time.perf_counter()
    import_torch()  # before any bench module that imports torch
    from bench import checks, contenders, machine, models, ops, plan, steps
    from bench.limits import measure_limits, merge
    from bench.opbench import apply_roofline, run_ops
    from bench.plots import write_plots
    from bench.report import render
    from bench.results import SCHEMA, validate, write
    from bench.timesplit import device_split, time_split

    base = plan.FULL if args.full else plan.QUICK
    sections, filters = plan.parse_only(args.only)
    p = dataclasses.replace(base, sections=sections, filters=filters)
    threads = machine.thread_count()
    machine.apply_settings(threads)
    load_start = os.getloadavg()
    created = datetime.datetime.now().isoformat(timespec="seconds")

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t_start:6.0f}s] {msg}", file=sys.stderr, flush=True)

    model_cs, op_cs = contenders.model_contenders(), contenders.op_contenders()
    everyone = list({c.name: c for c in model_cs + op_cs}.values())
    avail = contenders.availability(everyone)
    for c in everyone:
        log(
            f"contender {c.name}: "
            + ("ready" if avail[c.name] is None else f"n/a: {avail[c.name]}")
        )

    limits: dict[str, Any] = {}
    if p.wants("limits"):
        log("limits: STREAM, FMA peak, torch.mm GEMM")
        limits = measure_limits(threads, quick=p.mode == "quick")
    op_rows: list[dict[str, object]] = []
    if p.wants("ops"):
        cases = [c for c in ops.all_cases(p.mode == "quick") if p.selects("ops", c.key)]
        log(f"ops: {len(cases)} cases")
        op_rows = run_ops(
            cases, op_cs, avail, p.op_warmup, p.op_reps, p.op_min_time_s, p.op_max_reps, log
        )
    model_rows: list[dict[str, object]] = []
    if p.wants("models"):
        names = [m for m in models.MODELS if p.selects("models", m)]
        log(f"models: {', '.join(names)}")
        model_rows = steps.run_models(
            names,
            model_cs,
            avail,
            p.model_runs,
            set(p.rss),
            log,
            p.model_min_time_s,
            p.model_max_reps,
        )
    split: dict[str, object] | None = None
    if p.wants("timesplit"):
        log("time split: gpt-small train, PyTorch CPU eager, torch.profiler")
        try:
            split = time_split()
        except Exception as e:
            split = {"status": "n/a", "reason": f"{type(e).__name__}: {contenders.first_line(e)}"}
        log("time split: gpt-tiny train on tpu, kernels by category (debug op trace)")
        try:
            split["device"] = device_split()
        except Exception as e:
            reason = f"{type(e).__name__}: {contenders.first_line(e)}"
            split["device"] = {"status": "n/a", "reason": reason}
    pjrt_section: dict[str, object] | None = None
    if p.wants("pjrt"):
        from bench import pjrt

        names = [m for m in pjrt.RUNS if p.selects("pjrt", m)]
        log(f"pjrt: {', '.join(names)}, each contender in its own process")
        pjrt_section = pjrt.run(names, log=log)
    dist_section: dict[str, object] | None = None
    if p.wants("dist"):
        from bench import dist

        log(f"dist: all_reduce on {dist.WORLD} ranks, Gloo and tpu_dist, 4 KiB to 256 MiB")
        dist_section = dist.run(log=log)
    compile_section: dict[str, object] | None = None
    if p.wants("compile"):
        from bench import compile_start

        log(f'compile: torch.compile(backend="tpu") on {compile_start.MODEL}, cold and warm')
        compile_section = compile_start.run(log=log)
    if p.wants("limits"):
        log("limits again: the roofs are the best repetitions over both passes")
        merge(limits, measure_limits(threads, quick=p.mode == "quick"))
    apply_roofline(op_rows, limits)  # type: ignore[arg-type]

    doc = {
        "schema": SCHEMA,
        "created": created,
        "mode": p.mode,
        "command": "python -m bench.run " + " ".join(argv),
        "runtime_s": 0.0,
        "machine": machine.machine_info(threads),
        "load_avg": {
            "start": [round(x, 2) for x in load_start],
            "end": [round(x, 2) for x in os.getloadavg()],
        },
        "settings": {
            "warmup": p.model_warmup,
            "reps": p.model_reps,
            "heavy_models": {k: {"warmup": w, "reps": r} for k, (w, r) in p.heavy.items()},
            "op_warmup": p.op_warmup,
            "op_reps": p.op_reps,
            "op_min_time_s": p.op_min_time_s,
            "model_min_time_s": p.model_min_time_s,
            "seed": steps.SEED,
            "adamw": {"lr": steps.LR, "weight_decay": steps.WEIGHT_DECAY},
            "tolerances": {
                "train loss rtol": checks.LOSS_RTOL,
                "param norm rtol": checks.NORM_RTOL,
                "infer loss rtol": checks.INFER_RTOL,
                "op normwise rtol": {
                    str(k).removeprefix("torch."): v for k, v in checks.TENSOR_RTOL.items()
                },
            },
            "sections": list(p.sections),
            "filters": p.filters,
            "torch_compile_inductor_cache": os.environ.get(
                "TORCHINDUCTOR_CACHE_DIR", "default (/tmp/torchinductor_$USER)"
            ),
        },
        "contenders": [
            {
                "name": c.name,
                "short": c.short,
                "label": c.label,
                "device": c.device,
                "eager_mode": c.eager_mode,
                "available": avail[c.name] is None,
                "reason": avail[c.name],
            }
            for c in everyone
        ],
        "model_contenders": [c.name for c in model_cs],
        "op_contenders": [c.name for c in op_cs],
        "limits": {k: v.to_json() for k, v in limits.items()},
        "ops": op_rows,
        "models": model_rows,
        "timesplit": split,
        "pjrt": pjrt_section,
        "dist": dist_section,
        "compile": compile_section,
        "notes": NOTES,
    }
    doc["runtime_s"] = round(time.perf_counter() - t_start, 1)
    errors = validate(doc)
    if errors:
        print(
            "bench: the results document does not match its schema:\n  " + "\n  ".join(errors),
            file=sys.stderr,
        )
        return 2
    out = args.out or machine.RESULTS
    path = write(doc, out)
    text = render(doc)
    (out / f"report-{p.mode}.md").write_text(text)
    pngs = [] if args.no_plots else write_plots(doc, out)
    print(text)
    log(f"wrote {path}, {out / f'report-{p.mode}.md'}" + "".join(f", {q}" for q in pngs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
