"""Fresh-process peak RSS of one model step (see bench.memory): `python -m bench.rss_probe MODEL
TASK CONTENDER THREADS` prints one JSON line."""

from __future__ import annotations

import gc
import json
import re
import sys
from pathlib import Path


def status_bytes(field: str) -> int:
    m = re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)
    if not m:
        raise OSError(f"{field} missing from /proc/self/status")
    return int(m.group(1)) * 1024


def main(argv: list[str]) -> None:
    model, task, name, threads = argv[0], argv[1], argv[2], int(argv[3])
    from bench.contenders import CPU_COMPILE, CPU_EAGER, CPU_EAGER_FUSED
    from bench.machine import apply_settings
    from bench.steps import StepRunner, batches

    apply_settings(threads)
    c = {x.name: x for x in (CPU_EAGER, CPU_EAGER_FUSED, CPU_COMPILE)}[name]
    r = StepRunner(model, task, c, batches(model, 3))
    r.run(0)  # warm-up: lazy optimizer state, compiled code, first-touch of the allocator
    r.run(1)
    gc.collect()
    try:
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    except OSError as e:
        print(json.dumps({"rss_na": f"cannot reset the RSS high-water mark: {e}"}))
        return
    before = status_bytes("VmRSS")
    r.run(2)
    peak = status_bytes("VmHWM")
    print(json.dumps({"rss_step_bytes": peak - before, "rss_peak_bytes": peak}))


if __name__ == "__main__":
    main(sys.argv[1:])
