"""Peak memory of one step on PyTorch CPU, measured two ways.

* Live tensor bytes, the fair comparison with a device's peak: the bytes of every tensor alive when
  the step starts (parameters, buffers, optimizer state, gradients, the batch; counted by unique
  storage) plus the peak of bytes allocated during the step and not yet freed, from the CPU
  allocator's reports to torch.profiler (profile_memory=True, "Total Allocated").
* Peak RSS, what the operating system sees: measured in a fresh process (bench.rss_probe) so one
  contender's heap cannot serve another's step, as the step's rise of VmHWM over VmRSS after
  resetting the high-water mark (/proc/self/clear_refs), plus the absolute peak."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Protocol

import torch
from torch.profiler import ProfilerActivity, profile

from bench.machine import REPO
from bench.quiet import quiet_stderr


class HasModel(Protocol):
    model: torch.nn.Module
    opt: torch.optim.Optimizer | None
    data: list[tuple[torch.Tensor, torch.Tensor]]

    def run(self, i: int) -> None: ...


def storage_bytes(tensors: list[torch.Tensor]) -> int:
    seen: dict[int, int] = {}
    for t in tensors:
        s = t.untyped_storage()
        seen[s.data_ptr()] = s.nbytes()
    return sum(seen.values())


def live_tensors(r: HasModel, i: int) -> list[torch.Tensor]:
    ts = [*r.model.parameters(), *r.model.buffers()]
    ts += [p.grad for p in r.model.parameters() if p.grad is not None]
    if r.opt is not None:
        for state in r.opt.state.values():
            ts += [v for v in state.values() if isinstance(v, torch.Tensor)]
    x, y = r.data[i % len(r.data)]
    return [*ts, x, y]


def allocated_peak(prof: profile) -> int:
    """Peak of "Total Allocated" over the CPU allocator's reports during the profile."""
    peak = 0
    try:
        from torch._C._profiler import _EventType

        stack = list(prof.profiler.kineto_results.experimental_event_tree())
        while stack:
            node = stack.pop()
            if node.tag == _EventType.Allocation and node.extra_fields.device.type == "cpu":
                peak = max(peak, int(node.extra_fields.total_allocated))
            stack.extend(node.children)
        return peak
    except (AttributeError, ImportError):  # private API moved: read the exported trace instead
        path = Path(f"/tmp/bench-memtrace-{os.getpid()}.json")
        prof.export_chrome_trace(str(path))
        for ev in json.loads(path.read_text())["traceEvents"]:
            args = ev.get("args", {})
            if ev.get("name") == "[memory]" and args.get("Device Type") == 0:
                peak = max(peak, int(args.get("Total Allocated", 0)))
        path.unlink()
        return peak


def cpu_live_peak(r: HasModel, i: int) -> int:
    base = storage_bytes(live_tensors(r, i))
    with quiet_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        r.run(i)
    return base + allocated_peak(prof)


def rss_probe(model: str, task: str, contender: str, timeout_s: float = 600) -> dict[str, object]:
    cmd = [
        sys.executable,
        "-m",
        "bench.rss_probe",
        model,
        task,
        contender,
        str(torch.get_num_threads()),
    ]
    # CPU only: without the tpu autoload, the device runtime's own memory stays out of the RSS.
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1][:150]
        return {"rss_na": f"probe failed: {tail}"}
    return json.loads(done.stdout.strip().splitlines()[-1])
