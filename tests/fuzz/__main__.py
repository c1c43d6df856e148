"""`python -m tests.fuzz --seconds N --seed S --modes debug,strict,fused [--jobs J]`

Runs the fuzzer for N seconds in J worker processes (program indices split between them), each
program in every mode given, then prints every distinct failure signature, new ones first, with
the reproducer of the first program that showed it (shrunk). A worker that crashes or hangs is
restarted after the program that did it, which becomes a failure of its own. Exits 1 when a new
failure (in neither known.ALLOWED nor known.OPEN_ISSUES) was found.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .report import format_groups

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Worker:
    slot: int
    start: int
    proc: subprocess.Popen[str]
    last_index: int = -1
    last_mode: str = "?"
    last_seen: float = field(default_factory=time.monotonic)
    done: bool = False


def _reader(w: Worker, q: queue.Queue[tuple[Worker, str | None]]) -> None:
    assert w.proc.stdout is not None
    for line in w.proc.stdout:
        q.put((w, line.rstrip("\n")))
    q.put((w, None))


def _spawn(
    args: argparse.Namespace, slot: int, start: int, seconds: float, q: queue.Queue[Any]
) -> Worker:
    cmd = [
        sys.executable,
        "-m",
        "tests.fuzz.worker",
        "--seed",
        str(args.seed),
        "--modes",
        args.modes,
        "--start",
        str(start),
        "--stride",
        str(args.jobs),
        "--seconds",
        str(max(0.0, seconds)),
        "--shrink-seconds",
        str(args.shrink_seconds),
    ]
    if args.no_shrink:
        cmd.append("--no-shrink")
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True, env=env)
    w = Worker(slot, start, proc)
    threading.Thread(target=_reader, args=(w, q), daemon=True).start()
    return w


def _crash_group(
    args: argparse.Namespace, index: int, mode: str, kind: str, detail: str
) -> dict[str, Any]:
    """A group for a program that killed or hung its worker. Its reproducer is rendered by
    another process (the program may break the one that draws it too)."""
    cmd = [sys.executable, "-m", "tests.fuzz.worker", "--seed", str(args.seed)]
    cmd += ["--modes", mode, "--render", str(index), "--render-kind", kind]
    try:
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
        info = json.loads(r.stdout) if r.returncode == 0 else {}
    except (subprocess.TimeoutExpired, json.JSONDecodeError):
        info = {}
    ops = info.get("ops", "?")
    how = f"python -m tests.fuzz --seed {args.seed} --program {index} --modes {mode}"
    repro = info.get("reproducer") or f"# could not render program {index}: run `{how}`"
    return {
        "signature": f"{kind}[{mode}] {ops}",
        "status": "new",
        "known": None,
        "kind": kind,
        "op": ops,
        "mode": mode,
        "detail": f"{detail} (`{how}`)",
        "index": index,
        "count": 0,
        "modes": [mode],
        "reproducer": repro,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=float(os.environ.get("FUZZ_SECONDS", 420)))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("FUZZ_SEED", 20)))
    ap.add_argument("--modes", default=os.environ.get("FUZZ_MODES", "debug,strict,fused"))
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("FUZZ_JOBS", 1)))
    ap.add_argument("--shrink-seconds", type=float, default=20.0)
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--hang-seconds", type=float, default=120.0)
    ap.add_argument("--json", help="also write the groups and counts to this file")
    ap.add_argument("--quiet", action="store_true", help="no reproducers of known-open groups")
    ap.add_argument(
        "--program",
        type=int,
        action="append",
        help="only check program N of the seed (repeatable) and print its shrunk reproducer",
    )
    args = ap.parse_args(argv)
    for m in args.modes.split(","):
        if m not in ("debug", "strict", "fused"):
            ap.error(f"unknown mode {m!r}")
    if args.program:
        return _show(args)

    began = time.monotonic()
    deadline = began + args.seconds
    q: queue.Queue[tuple[Worker, str | None]] = queue.Queue()
    workers = [_spawn(args, j, j, args.seconds, q) for j in range(args.jobs)]
    groups: dict[str, dict[str, Any]] = {}
    totals: dict[str, Any] = {"programs": 0, "steps": 0, "cpu_errors": 0, "gen_seconds": 0.0}
    totals.update(mode_seconds={}, shrink_seconds=0.0, oracle=0, noise=0)
    crashes = 0
    seen_programs = 0
    reports: dict[tuple[int, int], dict[str, Any]] = {}

    def restart(w: Worker, kind: str, detail: str) -> None:
        nonlocal crashes
        crashes += 1
        print(f"fuzz: {detail}", file=sys.stderr, flush=True)
        g = _crash_group(args, w.last_index, w.last_mode, kind, detail)
        g = groups.setdefault(g["signature"], g)
        g["count"] += 1
        left = deadline - time.monotonic()
        if left > 5:
            workers[w.slot] = _spawn(args, w.slot, w.last_index + args.jobs, left, q)

    while any(not w.done for w in workers):
        try:
            w, line = q.get(timeout=1.0)
        except queue.Empty:
            now = time.monotonic()
            for w in workers:
                if not w.done and now - w.last_seen > args.hang_seconds + args.shrink_seconds:
                    w.proc.kill()  # the worker this run started, by its own handle
            continue
        if w is not workers[w.slot] and line is not None:
            continue
        w.last_seen = time.monotonic()
        if line is None:
            rc = w.proc.wait()
            if w is workers[w.slot] and not w.done:
                w.done = True
                if rc != 0 and w.last_index >= 0:
                    hung = time.monotonic() - w.last_seen > args.hang_seconds
                    kind = "hang" if rc == -9 and hung else "crash"
                    restart(
                        w,
                        kind,
                        f"the worker died (exit status {rc}) in program "
                        f"{w.last_index}, {w.last_mode} mode",
                    )
            continue
        tag, _, rest = line.partition(" ")
        if tag == "P":
            idx, _, mode = rest.partition(" ")
            w.last_index, w.last_mode = int(idx), mode or w.last_mode
            if mode == "cpu":
                seen_programs += 1
        elif tag == "G":
            g = json.loads(rest)
            g["count"] = 0
            g["modes"] = []
            groups.setdefault(g["signature"], g)
        elif tag == "H":
            mode, _, sig = rest.partition(" ")
            g = groups.get(sig)
            if g is not None:
                g["count"] += 1
                if mode not in g["modes"]:
                    g["modes"].append(mode)
        elif tag == "R":
            reports[(w.slot, w.start)] = json.loads(rest)  # cumulative: keep the last

    for r in reports.values():
        for k in ("steps", "cpu_errors", "gen_seconds", "shrink_seconds", "oracle", "noise"):
            totals[k] += r[k]
        for m, sec in r["mode_seconds"].items():
            totals["mode_seconds"][m] = totals["mode_seconds"].get(m, 0.0) + sec
    totals["programs"] = seen_programs
    print(_summary(args, totals, groups, time.monotonic() - began))
    if args.json:
        Path(args.json).write_text(json.dumps({"totals": totals, "groups": groups}, indent=1))
    return 1 if any(g["status"] == "new" for g in groups.values()) else 0


def _show(args: argparse.Namespace) -> int:
    """Checks the programs named by --program in-process and prints each one's reproducer."""
    from .runner import fuzz, summary

    status = 0
    for index in args.program:
        rep = fuzz(
            args.seed,
            args.modes.split(","),
            programs=1,
            start=index,
            shrink_new=not args.no_shrink,
            shrink_seconds=args.shrink_seconds,
            shrink_known=True,
        )
        print(f"program {index}:")
        print(summary(rep, reproducers=True, allowed=True))
        status |= bool(rep.new())
    return int(status)


def _summary(
    args: argparse.Namespace, t: dict[str, Any], groups: dict[str, dict[str, Any]], wall: float
) -> str:
    modes = args.modes.split(",")
    n = t["programs"]
    busy = t["gen_seconds"] + sum(t["mode_seconds"].values())
    share = t["gen_seconds"] / max(1, len(modes))
    rates = {m: n / max(1e-9, t["mode_seconds"].get(m, 0.0) + share) for m in modes}
    lines = [
        f"fuzz: seed {args.seed}, {n} programs ({t['steps']} ops, {t['cpu_errors']} ending in a "
        f"CPU error), each in {', '.join(modes)}; {wall:.0f}s wall, {args.jobs} job(s)",
        f"time: drawing + CPU {t['gen_seconds']:.0f}s, "
        + ", ".join(f"{m} {s:.0f}s" for m, s in t["mode_seconds"].items())
        + f", shrinking {t['shrink_seconds']:.0f}s; local oracle {t['oracle']} runs, "
        f"{t['noise']} rounding-only",
        "programs/s per mode (its runs + its share of drawing): "
        + ", ".join(f"{m} {r:.0f}" for m, r in rates.items())
        + f"; all modes {n / max(1e-9, busy):.0f} per job",
    ]
    lines += format_groups(list(groups.values()), open_reproducers=not args.quiet)
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
