"""A fuzz worker process: `python -m tests.fuzz.worker ARGS` runs `runner.fuzz` and reports on
stdout, one line per event, for the parent (__main__.py) to collect:

    P <index>        about to run program <index> (the parent's record for a crash or a hang)
    G <json>         a new failure group (Group.to_json)
    H <signature>    one more failure of a group
    R <json>         counts and seconds so far (every 1,000 programs, and at the end)
"""

from __future__ import annotations

import argparse
import json
import sys

from .check import STATS
from .runner import Group, Report, fuzz


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--modes", required=True)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--stride", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--programs", type=int, default=None)
    ap.add_argument("--shrink-seconds", type=float, default=20.0)
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--render", type=int, help="print program N's reproducer as JSON, run nothing")
    ap.add_argument("--render-kind", default="crash")
    a = ap.parse_args(argv)
    out = sys.stdout
    if a.render is not None:
        return _render(a.seed, a.render, a.modes, a.render_kind)

    def emit(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    def on_group(g: Group) -> None:
        emit("G " + json.dumps(g.to_json()))

    def progress(rep: Report) -> None:
        emit(
            "R "
            + json.dumps(
                {
                    "programs": rep.programs,
                    "steps": rep.steps,
                    "cpu_errors": rep.cpu_errors,
                    "gen_seconds": rep.gen_seconds,
                    "mode_seconds": rep.mode_seconds,
                    "shrink_seconds": rep.shrink_seconds,
                    "oracle": STATS["oracle"],
                    "noise": STATS["noise"],
                }
            )
        )

    rep = fuzz(
        a.seed,
        a.modes.split(","),
        programs=a.programs,
        seconds=a.seconds,
        start=a.start,
        stride=a.stride,
        shrink_new=not a.no_shrink,
        shrink_seconds=a.shrink_seconds,
        on_group=on_group,
        on_run=lambda i, m: emit(f"P {i} {m}"),
        on_hit=lambda g, f: emit(f"H {f.mode} {g.signature}"),
        on_progress=progress,
    )
    progress(rep)
    return 0


def _render(seed: int, index: int, mode: str, kind: str) -> int:
    from .check import Failure
    from .generate import generate
    from .shrink import reproducer

    prog, _ = generate(seed, index)
    ops = ",".join(sorted({s.op for s in prog.steps}))
    f = Failure(kind, mode, len(prog.steps) - 1, ops, "-", "-", f"program {index} of seed {seed}")
    print(json.dumps({"ops": ops, "reproducer": reproducer(prog, f)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
