"""The core's layers point one way (docs/ARCHITECTURE.md, "Layers"): a file may include headers of
its own layer and of the layers below it, never above. Drivers' own folders are reached only
through the driver interface: neither the core nor the binding includes a header of
`drivers/<name>/` other than its public header of extras, `drivers/<name>/<name>.h` (part of the
interface layer), and one driver does not include another's. The core's tests and fuzz targets
may include anything.

`python tests/lint_layers.py` (run by `make lint`) prints each offending include and exits 1.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "csrc" / "core"
BINDING = ROOT / "csrc" / "torch"

# Bottom to top. The driver interface names the core's types by pointer only, so it sits just
# above base, and every layer that reaches a chip (the chips, the allocator's arenas, the op
# fallback, the executor) may call it.
LAYERS = [
    "base",  # status, dtypes, environment
    "drivers",  # the driver interface and its selection (drivers/tpu_driver.h)
    "device",  # chips, streams, events, the address-space plan
    "mem",  # heaps, the caching allocator, pinned host memory
    "tensor",  # buffers and views of them
    "ops",  # the op table, op calls, the driver fallback, debug checks, traces, tapes
    "graph",  # graphs of op calls, their hashes and the compile cache
    "driver",  # a driver's own folder, drivers/<name>/: its kernels and lowerings
    "exec",  # submission, fused mode, recomputation
    "dist",  # collectives
    "top",  # the umbrella header and the registry of built-in drivers
]
RANK = {name: i for i, name in enumerate(LAYERS)}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def is_public_header(rel: str) -> bool:
    """drivers/<name>/<name>.h: a driver's extras (names and types), part of the interface."""
    parts = rel.split("/")
    return len(parts) == 3 and parts[0] == "drivers" and parts[2] == f"{parts[1]}.h"


def layer_of(rel: str) -> str | None:
    """The layer of a path relative to csrc/core, or None for files outside the layering."""
    parts = rel.split("/")
    if parts[0] in ("tests", "fuzz"):
        return None
    if parts[0] == "include" or rel.startswith("drivers/tpu_drivers."):
        return "top"
    if parts[0] == "drivers":
        return "driver" if len(parts) > 2 and not is_public_header(rel) else "drivers"
    return parts[0] if parts[0] in RANK else None


def driver_folder(rel: str) -> str | None:
    """The driver whose own files `rel` is among (its public header excepted), or None."""
    parts = rel.split("/")
    own = parts[0] == "drivers" and len(parts) > 2 and not is_public_header(rel)
    return parts[1] if own else None


def check_file(rel: str, text: str, in_binding: bool = False) -> list[str]:
    """The offending includes of one file (rel: its path under csrc/core, or under csrc/torch
    when in_binding)."""
    problems = []
    own = None if in_binding else layer_of(rel)
    for target in INCLUDE.findall(text):
        target = target.removeprefix("core/")
        folder = driver_folder(target)
        outsider = in_binding or own not in (None, "top")
        if folder and outsider and driver_folder(rel) != folder:
            problems.append(f"{target}: a driver's own header, reached only through the interface")
            continue
        theirs = layer_of(target)
        if own is not None and theirs is not None and RANK[theirs] > RANK[own]:
            problems.append(f"{target}: layer '{theirs}' is above '{own}'")
    return problems


def check_tree() -> list[str]:
    problems = []
    for path in sorted(CORE.rglob("*.[ch]")):
        rel = path.relative_to(CORE).as_posix()
        for p in check_file(rel, path.read_text()):
            problems.append(f"csrc/core/{rel}: {p}")
    for path in sorted(BINDING.rglob("*")):
        if path.suffix in (".cpp", ".h"):
            rel = path.relative_to(BINDING).as_posix()
            for p in check_file(rel, path.read_text(), in_binding=True):
                problems.append(f"csrc/torch/{rel}: {p}")
    return problems


def main() -> int:
    problems = check_tree()
    for p in problems:
        print(p)
    if problems:
        print("lint: the includes above point up the core's layers (docs/ARCHITECTURE.md)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
